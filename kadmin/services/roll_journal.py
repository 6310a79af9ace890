"""The roll's state directory: its journal (NDJSON, appended and fsynced one event at a time) and its lock.

`DIR/journal.ndjson` holds one JSON object per line (docs/roll.md documents each event). A line is written
with one write() on a file opened O_APPEND and fsynced before the step it records goes on, so a SIGKILL
leaves every event written before it, and at most the last line cut short: a read ignores a last line
without its newline (the next append first cuts it off). `DIR/lock` is held (flock) by the one live
`roll run`; it holds that run's pid, for the message another one gets.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kadmin.domain import roll_events as ev
from kadmin.domain.znodes import loads_strict
from kadmin.errors import ConfigError, KadminError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.inputs import read_input

JOURNAL = "journal.ndjson"
LOCK = "lock"
LOCK_PATIENCE = 2.0  # s: how long a held lock is asked again before its holder is believed (see lock())


class RollLocked(KadminError):
    """Another live `roll run` holds the state directory."""

    exit_code = ExitCode.UNSAFE


class JournalUnwritable(KadminError):
    """An event could not be written whole (a full disk, an I/O error): the roll stops before the step it records
    goes on, and the journal is left as it was before the write (no torn line for the next run to trip on)."""

    exit_code = ExitCode.CONFIG


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Journal:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.path = directory / JOURNAL
        self._lock_fd: int | None = None
        self._fd: int | None = None

    # ------------------------------------------------------------------ reading
    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> list[ev.Event]:
        """Every complete event, in order, typed (events of kinds a newer kadmin wrote are left out); a cut-short
        last line is left out. A malformed complete line, or a journal of a version this kadmin does not know, is
        a configuration error (exit 3) naming its line: the journal is the roll's memory, and guessing past it
        could restart a node twice."""
        out: list[ev.Event] = []
        for n, raw in self.read_objects():
            try:
                parsed = ev.parse(raw)
            except ev.BadEvent as e:
                raise ConfigError(f"--state {self.dir}: {JOURNAL} line {n}: {e}; the roll cannot be resumed from it "
                                  "safely: see docs/roll.md", code="journal_corrupt") from e
            if isinstance(parsed, ev.RollStarted) and parsed.journal_version not in ev.READABLE_VERSIONS:
                raise ConfigError(f"--state {self.dir}: {JOURNAL} is of version {parsed.journal_version}, which this "
                                  "kadmin does not know (a newer kadmin wrote it): resume it with that kadmin",
                                  code="journal_corrupt")
            if parsed is not None:
                out.append(parsed)
        return out

    def read_objects(self) -> list[tuple[int, dict[str, Any]]]:
        """Every complete line as (its line number, its JSON object)."""
        if not self.path.exists():
            return []
        try:
            raw = read_input(self.path, "--state")
        except OSError as e:
            raise ConfigError(f"--state {self.dir}: cannot read {JOURNAL}: {e.strerror or e}") from e
        lines = raw.split(b"\n")
        complete, tail = lines[:-1], lines[-1]  # tail: after the last newline (b"" when the file ends with one)
        events: list[tuple[int, dict[str, Any]]] = []
        for n, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            try:
                obj = loads_strict(line)
            except (ValueError, UnicodeDecodeError) as e:
                raise ConfigError(f"--state {self.dir}: {JOURNAL} line {n} is not JSON ({e}); the roll cannot be "
                                  "resumed from it safely: see docs/roll.md", code="journal_corrupt") from e
            if not isinstance(obj, dict) or not isinstance(obj.get("event"), str):
                raise ConfigError(f"--state {self.dir}: {JOURNAL} line {n} is no kadmin roll event",
                                  code="journal_corrupt")
            events.append((n, obj))
        del tail  # a write cut short by a crash: never acted on
        return events

    # ------------------------------------------------------------------ the lock
    def lock(self) -> None:
        """Take the directory for this run (created if need be), or raise RollLocked (exit 7) naming the pid
        of the run that holds it."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"--state {self.dir}: cannot create it: {e.strerror or e}") from e
        if not self.dir.is_dir():
            raise UsageError(f"--state {self.dir}: not a directory")
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        # A run that just ended may still have its lock shared for an instant by a hook's child forked before its
        # exec (the lock is close-on-exec): asked again for LOCK_PATIENCE before a holder is believed.
        give_up = time.monotonic() + LOCK_PATIENCE
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < give_up:
                    time.sleep(0.05)
                    continue
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RollLocked(f"another `kadmin roll run` (pid {holder}) holds --state {self.dir}: one roll at a "
                             "time; wait for it, or stop it (Ctrl-C) and run this again to continue",
                             code="roll_locked") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd

    def locked_by_other(self) -> int | None:
        """The pid of a live `roll run` holding the directory (for `roll status`), else None."""
        try:
            fd = os.open(self.dir / LOCK, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        finally:
            os.close(fd)
        return None

    # ------------------------------------------------------------------ writing
    def append(self, event: ev.Event) -> None:
        """Write one event and fsync it before returning. A write that cannot be completed (ENOSPC, EIO, a short
        write that makes no progress) cuts the journal back to where it was and raises JournalUnwritable: the
        journal stays readable, and the step it would have recorded does not go on."""
        self.append_object(ev.to_json(event))

    def append_object(self, obj: Mapping[str, Any]) -> None:
        if self._fd is None:
            self._open_for_append()
        assert self._fd is not None
        line = (json.dumps(obj, separators=(",", ":"), default=str) + "\n").encode()
        fd = self._fd
        before: int | None = None
        try:
            before = os.fstat(fd).st_size
            view = memoryview(line)
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(28, "the write made no progress")
                view = view[n:]
            os.fsync(fd)
        except OSError as e:
            if before is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, before)
                    os.fsync(fd)
            raise JournalUnwritable(
                f"--state {self.dir}: cannot write {JOURNAL}: {e.strerror or e}; the roll stopped before "
                f"{_what(obj)} (free the disk, then run the same command again to continue)",
                code="journal_unwritable") from e

    def _open_for_append(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o644)
        size = os.fstat(fd).st_size
        if size:  # a last line cut short by a crash: cut it off, so the next event starts a line
            tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
            keep = size - (len(tail) - (tail.rfind(b"\n") + 1))
            if keep != size:
                os.ftruncate(fd, keep)
        self._fd = fd
        created = size == 0
        if created:
            with contextlib.suppress(OSError):
                dfd = os.open(self.dir, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)

    def close(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._lock_fd = None


def _what(obj: Mapping[str, Any]) -> str:
    """What an event would have recorded, for JournalUnwritable's message."""
    if obj.get("event") == "step":
        return f"node {obj.get('node')}'s {obj.get('step')} {obj.get('status')} was recorded"
    return f"its {obj.get('event')} event was recorded"
