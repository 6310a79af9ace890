"""The roll's state directory (kadmin/services/roll_journal.py): the journal's append and read (the raw JSON objects,
and the typed events of kadmin/domain/roll_events.py), a last line a crash cut short, a corrupt line, a write the
disk refuses, and the lock one live `roll run` holds (flock, with its pid for the others)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from kadmin.domain import roll_events as ev
from kadmin.errors import ConfigError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.services.roll_journal import JOURNAL, LOCK, Journal, JournalUnwritable, RollLocked, now_iso

pytestmark = pytest.mark.timeout(60)

EVENTS = [
    {"event": "roll_started", "at": "2026-01-01T00:00:00.000Z", "cluster_id": "C", "nodes": [{"id": 1}]},
    {"event": "step", "node": 1, "step": "can_stop", "status": "started", "detail": {"ü": "ß", "n": None}},
    {"event": "step", "node": 1, "step": "can_stop", "status": "done", "elapsed_s": 0.25},
]


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = Journal(tmp_path / "roll")
    yield j
    j.close()


def written(j: Journal, events: list[dict[str, object]]) -> None:
    j.lock()
    for e in events:
        j.append_object(e)
    j.close()


def objects(j: Journal) -> list[dict[str, object]]:
    return [o for _, o in j.read_objects()]


# ------------------------------------------------------------------------------------------------ the journal
def test_append_then_read_round_trips(journal: Journal) -> None:
    assert not journal.exists() and journal.read() == []
    written(journal, EVENTS)
    assert journal.exists()
    assert objects(Journal(journal.dir)) == EVENTS
    raw = journal.path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == len(EVENTS)  # one compact line per event
    assert all(b": " not in line for line in raw.splitlines())
    # a Journal appends after what is there (a resumed run)
    j2 = Journal(journal.dir)
    j2.append_object({"event": "roll_resumed", "path": Path("/x")})  # what JSON lacks is written as text
    j2.close()
    assert objects(Journal(journal.dir)) == [*EVENTS, {"event": "roll_resumed", "path": "/x"}]


def test_now_iso_is_utc_milliseconds() -> None:
    t = now_iso()
    assert t.endswith("Z") and len(t) == len("2026-01-01T00:00:00.000Z") and t[10] == "T"


@pytest.mark.parametrize("cut", [b'{"event":"step","node":1,"st', b"{", b'{"event":"roll_done"}'])
def test_a_last_line_cut_short_is_ignored_then_cut_off_by_the_next_append(journal: Journal, cut: bytes) -> None:
    """A crash mid-write leaves a last line without its newline (even one that parses): never acted on, and the
    next event starts a line of its own."""
    written(journal, EVENTS[:2])
    with open(journal.path, "ab") as f:
        f.write(cut)
    assert objects(Journal(journal.dir)) == EVENTS[:2]
    j = Journal(journal.dir)
    j.append_object(EVENTS[2])
    j.close()
    raw = journal.path.read_bytes()
    assert cut not in raw.splitlines()
    assert [json.loads(line) for line in raw.splitlines()] == EVENTS  # only complete lines
    assert raw.endswith(b"\n") and objects(Journal(journal.dir)) == EVENTS


def test_a_journal_that_is_only_a_cut_short_line(journal: Journal) -> None:
    journal.dir.mkdir()
    journal.path.write_bytes(b'{"event":"roll_sta')
    assert journal.exists() and journal.read() == []
    journal.append_object(EVENTS[0])
    journal.close()
    assert journal.path.read_bytes() == (json.dumps(EVENTS[0], separators=(",", ":")) + "\n").encode()


def test_blank_lines_are_skipped(journal: Journal) -> None:
    journal.dir.mkdir()
    journal.path.write_text('\n{"event":"a"}\n   \n{"event":"b"}\n')
    assert [e["event"] for e in objects(journal)] == ["a", "b"]
    assert journal.read() == []  # events of kinds this kadmin does not know (a newer one's) are left out


@pytest.mark.parametrize(("lines", "line_no", "says"), [
    (['{"event":"a"}', "not json at all", '{"event":"b"}'], 2, "is not JSON"),
    (['{"event":"a"}', '{"event":"b"', '{"event":"c"}'], 2, "is not JSON"),  # a torn line that is not the last
    (['{"event":"a"}', "[" * 100_000 + "]" * 100_000], 2, "is not JSON"),  # too deep to parse: no RecursionError
    (["", '{"event":"a"}', "[1, 2]"], 3, "is no kadmin roll event"),
    (['{"step":"drain"}'], 1, "is no kadmin roll event"),
    (['{"event":7}'], 1, "is no kadmin roll event"),
    (['"event"'], 1, "is no kadmin roll event"),
])
def test_a_malformed_complete_line_is_a_configuration_error_naming_it(journal: Journal, lines: list[str],
                                                                      line_no: int, says: str) -> None:
    journal.dir.mkdir()
    journal.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as e:
        journal.read()
    assert e.value.code == "journal_corrupt" and int(e.value.exit_code) == 3
    assert f"{JOURNAL} line {line_no} {says}" in e.value.message and str(journal.dir) in e.value.message


TYPED = [
    {"event": "roll_started", "at": "t", "journal_version": 2, "cluster_id": "C", "mode": "kraft", "nodes_asked": None,
     "controllers": "first", "parallel": 1, "nodes": [{"id": 1, "role": "broker"}], "order": [1],
     "step_timeout": 600.0, "pid": 1},
    {"event": "step", "at": "t", "node": 1, "role": "broker", "step": "stop", "status": "started"},
    {"event": "seen_stopped", "at": "t", "node": 1, "role": "broker", "how": "fenced", "step": "stop"},
]


def test_read_gives_typed_events(journal: Journal) -> None:
    written(journal, TYPED)
    got = journal.read()
    assert [type(e) for e in got] == [ev.RollStarted, ev.StepEvent, ev.SeenStopped]
    j = Journal(journal.dir)
    j.append(ev.RollDone(now_iso(), 1.5))
    j.close()
    assert isinstance(Journal(journal.dir).read()[-1], ev.RollDone)


@pytest.mark.parametrize(("bad", "says"), [
    ({**TYPED[1], "node": "1"}, "line 2: a step event's 'node' is '1'"),
    ({**TYPED[0], "journal_version": 9}, "of version 9, which this kadmin does not know"),
])
def test_a_known_event_it_cannot_trust_or_a_newer_journal_is_corrupt(journal: Journal, bad: dict[str, object],
                                                                      says: str) -> None:
    written(journal, [bad] if bad["event"] == "roll_started" else [TYPED[0], bad])
    with pytest.raises(ConfigError, match=says) as e:
        journal.read()
    assert e.value.code == "journal_corrupt"


@pytest.mark.parametrize("failure", ["short_then_enospc", "enospc", "zero"])
def test_a_write_the_disk_refuses_leaves_the_journal_as_it_was(journal: Journal, failure: str, mocker: object) -> None:
    """A short write, then a full disk: the journal is cut back to its last whole line, the error says what was not
    recorded (exit 3), and the next append starts a clean line."""
    written(journal, TYPED[:2])
    before = journal.path.read_bytes()
    real = os.write
    state = {"n": 0}

    def refusing(fd: int, data: object) -> int:
        state["n"] += 1
        if failure == "zero":
            return 0
        if failure == "short_then_enospc" and state["n"] == 1:
            return real(fd, bytes(data)[:5])  # type: ignore[call-overload]
        raise OSError(28, "No space left on device")

    j = Journal(journal.dir)
    mocker.patch("kadmin.services.roll_journal.os.write", side_effect=refusing)  # type: ignore[attr-defined]
    with pytest.raises(JournalUnwritable) as e:
        j.append(ev.SeenStopped(now_iso(), 1, "broker", "fenced", "stop"))
    mocker.stopall()  # type: ignore[attr-defined]
    assert int(e.value.exit_code) == 3 and e.value.code == "journal_unwritable"
    assert "node" not in e.value.message or "seen_stopped" in e.value.message
    assert journal.path.read_bytes() == before
    j.append(ev.RollDone(now_iso(), 1.0))
    j.close()
    assert [type(x) for x in Journal(journal.dir).read()] == [ev.RollStarted, ev.StepEvent, ev.RollDone]


def test_invalid_utf8_is_corrupt_too(journal: Journal) -> None:
    journal.dir.mkdir()
    journal.path.write_bytes(b'{"event":"a"}\n{"event":"\xff\xfe"}\n')
    with pytest.raises(ConfigError, match="line 2 is not JSON") as e:
        journal.read()
    assert e.value.code == "journal_corrupt"


def test_a_journal_that_is_no_regular_file_is_refused(journal: Journal) -> None:
    (journal.dir / JOURNAL).mkdir(parents=True)
    with pytest.raises(UsageError):  # kadmin.inputs refuses a directory (exit 2)
        journal.read()


# ------------------------------------------------------------------------------------------------ the lock
HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kadmin.services.roll_journal import Journal
    j = Journal(Path(sys.argv[1]))
    j.lock()
    print("locked", flush=True)
    sys.stdin.readline()
""")

# flock only (the pid not written yet): the moment between a run's flock and its pid's write
BARE_HOLDER = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    sys.stdin.readline()
""")


def holder(script: str, path: Path) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", script, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, cwd=Path(__file__).resolve().parents[2])
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    return p


def release(p: subprocess.Popen[str]) -> None:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.close()
    assert p.wait(10) == 0
    p.stdout.close()


def test_a_lock_held_by_another_process_names_its_pid(journal: Journal) -> None:
    child = holder(HOLDER, journal.dir)
    try:
        with pytest.raises(RollLocked) as e:
            journal.lock()
        assert e.value.exit_code == ExitCode.UNSAFE == 7 and e.value.code == "roll_locked"
        assert f"(pid {child.pid}) holds --state {journal.dir}" in e.value.message
        assert journal.locked_by_other() == child.pid
        assert (journal.dir / LOCK).read_text() == f"{child.pid}\n"
    finally:
        release(child)
    assert journal.locked_by_other() is None
    journal.lock()  # free again: this run takes it and writes its own pid
    assert (journal.dir / LOCK).read_text() == f"{os.getpid()}\n"


def test_a_second_lock_in_the_same_process_conflicts_too(journal: Journal) -> None:
    """flock belongs to the open file description: a second os.open of the lock, even in this process, is refused
    (two `roll run` in one process, or a status asking while this run holds it)."""
    journal.lock()
    other = Journal(journal.dir)
    with pytest.raises(RollLocked, match=f"pid {os.getpid()}"):
        other.lock()
    assert other.locked_by_other() == os.getpid()
    journal.close()
    assert other.locked_by_other() is None
    other.lock()
    other.close()


def test_a_run_killed_leaves_no_lock(journal: Journal) -> None:
    """SIGKILL closes the holder's descriptor: its pid stays in the file, and it holds nothing."""
    child = holder(HOLDER, journal.dir)
    child.send_signal(signal.SIGKILL)
    assert child.wait(10) == -signal.SIGKILL
    assert child.stdin is not None and child.stdout is not None
    child.stdin.close()
    child.stdout.close()
    assert (journal.dir / LOCK).read_text() == f"{child.pid}\n"
    assert journal.locked_by_other() is None
    journal.lock()
    assert (journal.dir / LOCK).read_text() == f"{os.getpid()}\n"


def test_a_holder_that_has_not_written_its_pid_yet(journal: Journal) -> None:
    journal.dir.mkdir()
    child = holder(BARE_HOLDER, journal.dir / LOCK)
    try:
        with pytest.raises(RollLocked, match=r"\(pid \?\)"):
            journal.lock()
        assert journal.locked_by_other() == -1
    finally:
        release(child)


def test_no_lock_file_no_holder(journal: Journal) -> None:
    assert journal.locked_by_other() is None
    journal.dir.mkdir()
    assert journal.locked_by_other() is None


def test_a_state_path_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UsageError, match="cannot create it"):
        Journal(f).lock()
    with pytest.raises(UsageError, match="cannot create it"):
        Journal(f / "below").lock()


def test_lock_creates_the_directory_and_close_is_idempotent(tmp_path: Path) -> None:
    j = Journal(tmp_path / "a" / "b")
    j.lock()
    assert (tmp_path / "a" / "b" / LOCK).is_file()
    j.close()
    j.close()
