"""The event table under `--out`: readers read what a manifest lists; one ingest writes at a time.

    OUT/_kadmin.lock                    flock()ed by the ingest that writes; names it (pid, host, start, run)
    OUT/_kadmin_manifest.json           the committed runs and their files; replaced atomically
    OUT/_staging/RUN/                   one run's Spark output until it commits (Spark's _temporary inside)
    OUT/cluster=C/date=D/part-RUN-N.parquet   committed files

A run writes its Parquet into its staging directory; then, holding the lock, it records in
`_staging/RUN/_commit.json` where its files will go, moves them into the partition directories, and
commits by replacing the manifest (write a temporary file, fsync, rename, fsync the directory). A run
killed at any moment before that rename has changed nothing a reader reads: kadmin reads only the
files the manifest lists, and Spark's own readers skip names starting with `_`. The next ingest,
under the lock, removes the dead run's staging directory and the files it had already moved.

The lock is flock(2) on `_kadmin.lock`: the kernel releases it when its holder dies however it dies,
so a lock left by a killed ingest is stale by construction and the next ingest simply takes it (and
says whose it was). A live holder is named in the message of the one that must wait or give up.

A directory without a manifest whose `cluster=*/date=*/*.parquet` files an older kadmin wrote is read
as one committed run, which the next commit adopts into the manifest.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kadmin.domain.znodes import loads_strict
from kadmin.errors import in_words

LOCK = "_kadmin.lock"
MANIFEST = "_kadmin_manifest.json"
STAGING = "_staging"
INTENT = "_commit.json"
VERSION = 1


class TableError(Exception):
    """Something about `--out` (or a report's directory) that stops the command; the message is one line."""


class NotATable(TableError):
    pass


class NotWritable(TableError):
    pass


@dataclass(frozen=True)
class Holder:
    pid: int | None
    host: str | None
    started: str | None
    run_id: str | None

    def describe(self) -> str:
        if self.pid is None:
            return "another ingest"
        return f"pid {self.pid} on {self.host} since {self.started}"


class Locked(TableError):
    def __init__(self, root: Path, holder: Holder) -> None:
        super().__init__(f"{root} is being written by another kadmin history ingest ({holder.describe()}); "
                         "try again later, or wait with --wait-lock SECONDS")
        self.holder = holder


def fault(point: str) -> None:
    """Failure injection for tests, at named points of a run: KADMIN_FAULT=kill@POINT SIGKILLs this
    process there; KADMIN_FAULT=pause@POINT:FIFO blocks there until a line is written to FIFO."""
    spec = os.environ.get("KADMIN_FAULT")
    if not spec:
        return
    action, _, rest = spec.partition("@")
    where, _, arg = rest.partition(":")
    if where != point:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "pause" and arg:
        with open(arg, encoding="utf-8") as fh:
            fh.readline()


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _write_json_atomically(path: Path, doc: Any) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _reason(e: OSError) -> str:
    return in_words(e)


class Table:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    # ------------------------------------------------------------------------ reading
    def manifest(self) -> dict[str, Any] | None:
        try:
            text = (self.root / MANIFEST).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise NotATable(f"{self.root / MANIFEST}: cannot read ({_reason(e)})") from e
        try:
            doc = loads_strict(text)
        except ValueError as e:
            raise NotATable(f"{self.root / MANIFEST}: not a kadmin table manifest ({e})") from e
        if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
            raise NotATable(f"{self.root / MANIFEST}: not a kadmin table manifest")
        return doc

    def _legacy(self) -> list[str]:
        """Files an older kadmin committed (no manifest): Spark's layout, `_` and `.` names skipped."""
        if not self.root.is_dir():
            return []
        return sorted(str(p.relative_to(self.root)) for p in self.root.glob("cluster=*/date=*/*.parquet")
                      if not p.name.startswith(("_", ".")))

    def committed(self) -> list[str]:
        """The committed files, relative to the table's directory."""
        doc = self.manifest()
        if doc is None:
            return self._legacy()
        return [f for run in doc["runs"] for f in run.get("files", [])]

    def exists(self) -> bool:
        return self.manifest() is not None or bool(self._legacy())

    def foreign(self) -> list[str]:
        """Entries of the table's directory that are not the table's (a README, someone's Parquet file)."""
        if not self.root.is_dir():
            return []
        return sorted(str(p) for p in self.root.iterdir()
                      if not p.name.startswith(("_", ".")) and not (p.is_dir() and p.name.startswith("cluster=")))

    def read(self, spark: Any) -> Any:
        """The committed events as a DataFrame (an empty one when nothing is committed)."""
        from kadmin.pipeline.ingest import table_schema

        schema = table_schema()
        files = [str(self.root / f) for f in self.committed()]
        if not files:
            return spark.createDataFrame([], schema)
        return spark.read.schema(schema).option("basePath", str(self.root)).parquet(*files)

    # ------------------------------------------------------------------------ writing
    def prepare(self) -> None:
        """Create the directory when needed; refuse one that is a file or cannot be created."""
        if self.root.exists() and not self.root.is_dir():
            raise NotWritable(f"{self.root}: not a directory")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise NotWritable(f"{self.root}: cannot create the table's directory ({_reason(e)})") from e

    @contextlib.contextmanager
    def lock(self, run_id: str, wait: float = 0.0, on_wait: Callable[[Holder], None] | None = None,
             sleep: Callable[[float], None] = time.sleep,
             clock: Callable[[], float] = time.monotonic) -> Iterator[Holder | None]:
        """Hold the table's lock; yield the previous holder when it died holding it (None otherwise).

        A live holder: raise Locked, or with `wait` seconds poll until it is released."""
        path = self.root / LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise NotWritable(f"{self.root}: cannot write here ({_reason(e)})") from e
        try:
            deadline = clock() + wait
            told = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = _holder(fd)
                    left = deadline - clock()
                    if left <= 0:
                        raise Locked(self.root, holder) from None
                    if on_wait is not None and not told:
                        on_wait(holder)
                        told = True
                    sleep(min(0.25, left))
                except OSError as e:
                    raise NotWritable(f"{path}: cannot lock ({_reason(e)})") from e
            previous = _holder(fd)
            me = {"pid": os.getpid(), "host": socket.gethostname(), "started": _now(), "run_id": run_id}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
            os.fsync(fd)
            try:
                yield previous if previous.pid is not None else None
            finally:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def recover(self) -> list[str]:
        """Under the lock: remove what unfinished runs left (staging directories, files moved but not
        committed, an older kadmin's Spark `_temporary`, temporary manifests). Returns the run ids."""
        listed = set(self.committed())
        runs: list[str] = []
        staging = self.root / STAGING
        for d in sorted(staging.iterdir()) if staging.is_dir() else []:
            intent = d / INTENT
            if intent.exists():
                try:
                    moved = loads_strict(intent.read_text(encoding="utf-8")).get("files", [])
                except ValueError:
                    moved = []
                for rel in moved:
                    if rel not in listed:
                        target = self.root / rel
                        target.unlink(missing_ok=True)
                        for parent in (target.parent, target.parent.parent):
                            with contextlib.suppress(OSError):
                                parent.rmdir()  # only when empty
            shutil.rmtree(d, ignore_errors=True)
            runs.append(d.name)
        with contextlib.suppress(OSError):
            staging.rmdir()
        shutil.rmtree(self.root / "_temporary", ignore_errors=True)  # an older kadmin's killed write
        for tmp in self.root.glob(f"{MANIFEST}.tmp-*"):
            tmp.unlink(missing_ok=True)
        return runs

    def staging(self, run_id: str) -> Path:
        d = self.root / STAGING
        try:
            d.mkdir(exist_ok=True)
        except OSError as e:
            raise NotWritable(f"{self.root}: cannot write here ({_reason(e)})") from e
        return d / run_id

    def commit(self, run_id: str, cluster: str, events: int) -> list[str]:
        """Under the lock: move the run's finished Parquet files into their partitions and list them in
        the manifest (the commit point). Returns the committed files."""
        stage = self.root / STAGING / run_id
        staged = sorted(stage.glob("cluster=*/date=*/*.parquet"))
        doc = self.manifest()
        if doc is None:  # a new table, or one an older kadmin wrote: list what is there before moving anything
            doc = {"kadmin_table_version": VERSION, "runs": []}
            legacy = self._legacy()
            if legacy:
                doc["runs"].append({"run_id": "adopted", "cluster": None, "committed_at": _now(), "events": None,
                                    "files": legacy})
            _write_json_atomically(self.root / MANIFEST, doc)
        moves = [(p, f"{p.parent.parent.name}/{p.parent.name}/part-{run_id}-{n:05d}.parquet")
                 for n, p in enumerate(staged)]
        _write_json_atomically(stage / INTENT, {"run_id": run_id, "files": [t for _, t in moves]})
        dirs: set[Path] = set()
        for n, (src, rel) in enumerate(moves):
            target = self.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(src, "rb") as fh:
                os.fsync(fh.fileno())
            os.rename(src, target)
            dirs.add(target.parent)
            if n == 0:
                fault("commit")
        for d in dirs:
            _fsync_dir(d)
        files = [rel for _, rel in moves]
        if files:
            doc["runs"].append({"run_id": run_id, "cluster": cluster, "committed_at": _now(), "events": events,
                                "files": files})
            _write_json_atomically(self.root / MANIFEST, doc)  # the commit
        shutil.rmtree(stage, ignore_errors=True)
        with contextlib.suppress(OSError):
            stage.parent.rmdir()  # `_staging` itself, when no other run's directory is in it
        return files


def _holder(fd: int) -> Holder:
    try:
        doc = loads_strict(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
    except (OSError, ValueError):
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    pid = doc.get("pid")
    return Holder(pid if isinstance(pid, int) else None, doc.get("host"), doc.get("started"), doc.get("run_id"))


def cluster_name_ok(name: str) -> bool:
    """A cluster name is a partition directory's value: letters, digits, '.', '_', '-', starting with a
    letter or digit (not empty, no '/', not '.' or '..', nothing Spark would escape or readers skip)."""
    return bool(name) and len(name) <= 200 and name[0].isascii() and name[0].isalnum() and all(
        c.isascii() and (c.isalnum() or c in "._-") for c in name)
