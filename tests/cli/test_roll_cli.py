"""`kadmin roll` through the real Typer app, without a cluster: the usage errors (exit 2, one line), `roll status`
on journals written by hand (done, failed, interrupted, refused, unfinished, running), and what `roll run` decides
before it connects (its hooks, the lock, the journal). Against a cluster (emulated brokers in a real ZooKeeper):
tests/integration/test_roll_zk.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run

pytestmark = pytest.mark.timeout(60)

NOWHERE = "127.0.0.1:1"  # refuses connections


def one_line_error(r: Any, code: int, *says: str) -> str:
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("kadmin: error: "), lines
    assert "Traceback" not in r.stderr + r.stdout
    for s in says:
        assert s in lines[0], (s, lines[0])
    return lines[0]


# ------------------------------------------------------------------------------------------------ usage errors
HOOKS = ("--stop", "kadmin sandbox kill {id}", "--start", "kadmin sandbox start {id}")


@pytest.mark.parametrize(("argv", "says"), [
    (("roll", "run", "--state", "{d}", "--stop", "x"), ("give --stop CMD and --start CMD (or --restart CMD)",)),
    (("roll", "run", "--state", "{d}", "--start", "x"), ("give --stop CMD and --start CMD",)),
    (("roll", "run", "--state", "{d}"), ("give --stop CMD and --start CMD",)),
    (("roll", "run", "--state", "{d}", "--restart", "x", "--stop", "y"), ("give --restart CMD, or --stop CMD and "
                                                                          "--start CMD, not both",)),
    (("roll", "run", "--state", "{d}", "--restart", "x", "--start", "y", "--stop", "z"), ("not both",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--nodes", "a,b"), ("--nodes: 'a' is not a node id",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--nodes", "1,,2"), ("--nodes: '' is not a node id",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--nodes", "-1"), ("--nodes: '-1' is not a node id",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--nodes", "²"), ("--nodes: '²' is not a node id",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--nodes", "2147483648"), ("is not a node id",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--controllers", "other"), ("--controllers: 'other' is not first "
                                                                           "or skip",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--parallel", "0"), ("--parallel", "at least 1")),
    (("roll", "run", "--state", "{d}", *HOOKS, "--parallel", "two"), ("--parallel",)),
    (("roll", "run", "--state", "{d}", *HOOKS, "--step-timeout", "0"), ("--step-timeout",)),
    (("roll", "run", *HOOKS), ("Missing option '--state'",)),
    (("roll", "run", "--state", "{d}", "--stop", "", "--start", "x"), ("--stop is empty",)),
    (("roll", "run", "--state", "{d}", "--restart", " "), ("--restart is empty",)),
    (("roll", "plan", "--nodes", "a,b"), ("--nodes: 'a' is not a node id",)),
    (("roll", "plan", "--controllers", "other"), ("--controllers: 'other' is not first or skip",)),
    (("roll", "plan", "--parallel", "0"), ("--parallel", "at least 1")),
    (("roll", "plan", "--parallel", "1001"), ("--parallel",)),
    (("roll", "status"), ("Missing option '--state'",)),
    (("roll", "status", "--state", "{d}"), ("--state", "no roll there (no journal.ndjson)")),
    (("roll", "status", "--state", "{d}/nowhere"), ("no roll there",)),
])
def test_usage_errors_exit_2_in_one_line_before_any_connection(run_nozk: Run, tmp_path: Path, argv: tuple[str, ...],
                                                               says: tuple[str, ...]) -> None:
    args = [a.replace("{d}", str(tmp_path)) for a in argv]
    one_line_error(run_nozk(*args, "-z", NOWHERE, "--connect-timeout", "1") if args[1] != "status" else
                   run_nozk(*args), 2, *says)
    assert not (tmp_path / "journal.ndjson").exists()


def test_usage_errors_in_json_too(run_nozk: Run, tmp_path: Path) -> None:
    r = run_nozk("roll", "run", "--state", str(tmp_path), "--restart", "x", "--stop", "y", "-o", "json")
    doc = json.loads(r.stdout)
    assert (r.exit_code, doc["command"], doc["exit_code"], doc["status"]) == (2, "roll run", 2, "error")
    assert doc["errors"][0]["code"] == "usage" and doc["data"] is None


def test_roll_help_lists_its_commands(run_nozk: Run) -> None:
    r = run_nozk("roll", "--help")
    assert r.exit_code == 0
    for c in ("plan", "run", "status"):
        assert c in r.stdout
    for cmd, opts in [("plan", ("--nodes", "--controllers", "--parallel", "--only-if", "--restart")),
                      ("run", ("--state", "--stop", "--start", "--restart", "--only-if", "--step-timeout",
                               "--settle")),
                      ("status", ("--state",))]:
        h = run_nozk("roll", cmd, "--help", env={"COLUMNS": "200"}).stdout
        assert all(o in h for o in opts), (cmd, h)
    assert "{id}" in run_nozk("roll", "run", "--help", env={"COLUMNS": "200"}).stdout


# ------------------------------------------------------------------------------------------------ journals by hand
AT = "2026-03-01T10:00:{:02d}.000Z"


class Journal:
    """A journal written as `roll run` writes one (docs/roll.md): each event one compact JSON line."""

    def __init__(self, directory: Path, nodes: list[int], mode: str = "zookeeper", cluster_id: str = "C-1",
                 **head: Any) -> None:
        self.dir = directory
        self.t = 0
        self.events: list[dict[str, Any]] = []
        self.add("roll_started", journal_version=1, cluster_id=cluster_id, mode=mode, nodes_asked=None,
                 controllers="first", parallel=1, nodes=[{"id": n, "role": "broker", "host": f"h{n}", "port": 9092,
                                                          "rack": None} for n in nodes],
                 order=nodes, step_timeout=600.0, pid=12345, **head)

    def add(self, event: str, **fields: Any) -> Journal:
        self.events.append({"event": event, "at": AT.format(self.t), **fields})
        self.t += 1
        return self

    def step(self, node: int, step: str, status: str, elapsed: float = 0.0, **kw: Any) -> Journal:
        return self.add("step", node=node, role="broker", step=step, status=status, elapsed_s=elapsed, **kw)

    def steps(self, node: int, *names: str, epochs: tuple[int, int] | None = None) -> Journal:
        for s in names:
            self.step(node, s, "started", detail={"old_epoch": epochs[0]} if epochs and s == "stop" else None)
            detail = {"new_epoch": epochs[1]} if epochs and s == "wait_restarted" else None
            self.step(node, s, "done", 1.0, **({"detail": detail} if detail else {}))
        return self

    def node_done(self, node: int, epochs: tuple[int, int]) -> Journal:
        return self.add("node_done", node=node, role="broker", status="done", elapsed_s=11.0,
                        detail={"old_epoch": epochs[0], "new_epoch": epochs[1]})

    def write(self) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "journal.ndjson").write_text(
            "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in self.events))
        return self.dir


ALL = ("can_stop", "drain", "shutdown", "stop", "wait_stopped", "start", "wait_restarted", "wait_in_sync", "undrain",
       "wait_healthy", "settle")
UNTIL_STOP = ("can_stop", "drain", "shutdown")
REPORT_KEYS = {"state_dir", "cluster_id", "mode", "status", "nodes", "failure", "started_at", "finished_at",
               "elapsed_s"}
NODE_KEYS = {"node", "role", "status", "phase", "step", "steps", "old_epoch", "new_epoch", "started_at",
             "finished_at", "elapsed_s"}


def done_roll(d: Path) -> Journal:
    j = Journal(d, [2, 3, 1])
    for n, epochs in ((2, (100, 200)), (3, (101, 201)), (1, (102, 202))):
        j.steps(n, *ALL, epochs=epochs).node_done(n, epochs)
    return j.add("roll_done", elapsed_s=33.5)


def failed_roll(d: Path) -> Journal:
    j = Journal(d, [2, 3, 1])
    j.steps(2, *ALL, epochs=(100, 200)).node_done(2, (100, 200))
    j.steps(3, *UNTIL_STOP).step(3, "stop", "started", detail={"old_epoch": 101})
    j.step(3, "stop", "failed", 0.5, message="the --stop hook `false` exited 1")
    msg = "node 3: the --stop hook `false` exited 1"
    return j.add("roll_failed", node=3, step="stop", reason="hook_failed", message=msg, exit_code=9)


def unfinished_roll(d: Path) -> Journal:
    """A run killed (SIGKILL) while node 3's start hook ran: no roll_failed."""
    j = Journal(d, [2, 3, 1])
    j.steps(2, *ALL, epochs=(100, 200)).node_done(2, (100, 200))
    return j.steps(3, *UNTIL_STOP, "stop", "wait_stopped").step(3, "start", "started")


def status(run_nozk: Run, d: Path) -> tuple[int, dict[str, Any], str]:
    r = run_nozk("roll", "status", "--state", str(d), "-o", "json")
    doc = json.loads(r.stdout)
    assert doc["command"] == "roll status" and doc["exit_code"] == r.exit_code
    return r.exit_code, doc["data"], r.stderr


def test_status_of_a_finished_roll(run_nozk: Run, tmp_path: Path) -> None:
    d = done_roll(tmp_path / "roll").write()
    code, data, err = status(run_nozk, d)
    assert code == 0
    assert set(data) == REPORT_KEYS
    assert (data["state_dir"], data["cluster_id"], data["mode"], data["status"], data["failure"]) == \
        (str(d), "C-1", "zookeeper", "done", None)
    assert data["started_at"] == AT.format(0) and data["finished_at"] is not None and data["elapsed_s"] == 33.5
    assert [n["node"] for n in data["nodes"]] == [2, 3, 1]  # the roll's order
    for n, (old, new) in zip(data["nodes"], [(100, 200), (101, 201), (102, 202)], strict=True):
        assert set(n) == NODE_KEYS
        assert (n["status"], n["phase"], n["step"], n["old_epoch"], n["new_epoch"]) == ("done", "done", None, old, new)
        assert [s["step"] for s in n["steps"]] == list(ALL) and n["elapsed_s"] == 11.0
        assert n["started_at"] and n["finished_at"] and n["started_at"] < n["finished_at"]
    assert "roll in" in err and ": done; 3 of 3 node(s) done" in err


def test_status_of_a_failed_roll(run_nozk: Run, tmp_path: Path) -> None:
    d = failed_roll(tmp_path / "roll").write()
    code, data, err = status(run_nozk, d)
    assert code == 0  # a report, whatever the roll's outcome
    assert data["status"] == "failed" and data["finished_at"] is None and data["elapsed_s"] is None
    assert data["failure"] == {"node": 3, "step": "stop", "reason": "hook_failed", "exit_code": 9,
                               "message": "node 3: the --stop hook `false` exited 1", "down": [], "drained": []}
    rows = {n["node"]: n for n in data["nodes"]}
    assert (rows[2]["status"], rows[2]["phase"]) == ("done", "done")
    assert (rows[3]["status"], rows[3]["phase"], rows[3]["step"], rows[3]["old_epoch"], rows[3]["new_epoch"]) == \
        ("failed", "stopping", "stop", 101, None)
    assert [s["step"] for s in rows[3]["steps"]] == list(UNTIL_STOP) and rows[3]["finished_at"] is None
    assert (rows[1]["status"], rows[1]["phase"], rows[1]["step"], rows[1]["steps"], rows[1]["started_at"]) == \
        ("pending", "untouched", None, [], None)
    assert ": failed; 1 of 3 node(s) done; stopped at node 3 (stop): node 3: the --stop hook `false` exited 1" in err


def test_status_of_a_roll_resumed_past_its_failure_and_finished(run_nozk: Run, tmp_path: Path) -> None:
    j = failed_roll(tmp_path / "roll").add("roll_resumed", pid=2)
    j.step(3, "stop", "started").step(3, "stop", "done").steps(3, *ALL[4:], epochs=(101, 201)).node_done(3, (101, 201))
    j.steps(1, *ALL, epochs=(102, 202)).node_done(1, (102, 202)).add("roll_done", elapsed_s=60.0)
    code, data, _ = status(run_nozk, j.write())
    assert (code, data["status"], data["failure"]) == (0, "done", None)
    assert [(n["status"], n["phase"]) for n in data["nodes"]] == [("done", "done")] * 3


def test_status_of_an_unfinished_roll(run_nozk: Run, tmp_path: Path) -> None:
    d = unfinished_roll(tmp_path / "roll").write()
    code, data, err = status(run_nozk, d)
    assert (code, data["status"], data["failure"], data["finished_at"]) == (0, "unfinished", None, None)
    rows = {n["node"]: n for n in data["nodes"]}
    assert (rows[3]["status"], rows[3]["phase"], rows[3]["step"]) == ("in_progress", "starting", "start")
    assert (rows[1]["status"], rows[1]["phase"]) == ("pending", "untouched")
    assert ": unfinished; 1 of 3 node(s) done" in err


@pytest.mark.parametrize(("reason", "code", "status_"), [("interrupted", 130, "interrupted"),
                                                          ("refused", 7, "refused"),
                                                          ("gate_not_met", 1, "failed"), ("error", 4, "failed")])
def test_status_names_how_the_roll_stopped(run_nozk: Run, tmp_path: Path, reason: str, code: int,
                                           status_: str) -> None:
    j = Journal(tmp_path / "roll", [1, 2])
    j.add("roll_failed", node=None, step=None, reason=reason, message="why", exit_code=code)
    _, data, _ = status(run_nozk, j.write())
    assert data["status"] == status_
    assert data["failure"] == {"node": None, "step": None, "reason": reason, "message": "why", "exit_code": code,
                               "down": [], "drained": []}
    assert [n["status"] for n in data["nodes"]] == ["pending", "pending"]


def test_status_table_and_plain(run_nozk: Run, tmp_path: Path) -> None:
    d = failed_roll(tmp_path / "roll").write()
    r = run_nozk("roll", "status", "--state", str(d), "-o", "table", env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.stderr
    assert "roll: failed" in r.stdout
    r = run_nozk("roll", "status", "--state", str(d), "-o", "plain")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NODE", "ROLE", "STATUS", "STEP", "SECONDS", "OLD", "EPOCH", "NEW", "EPOCH"]
    assert [ln.split() for ln in lines[1:]] == [
        ["2", "broker", "done", "-", "11.0", "100", "200"],  # SECONDS: the node's steps' times added up
        ["3", "broker", "failed", "stop", "3.0", "101"],  # a failed step's time is not counted
        ["1", "broker", "pending", "-"],  # no step: `-`, so the columns after it stay where they are
    ]


@pytest.mark.parametrize(("content", "says"), [
    ('{"event":"roll_started"}\nnot json\n', "journal.ndjson line 2 is not JSON"),
    ('["a"]\n', "journal.ndjson line 1 is no kadmin roll event"),
])
def test_status_of_a_corrupt_journal_is_exit_3(run_nozk: Run, tmp_path: Path, content: str, says: str) -> None:
    (tmp_path / "journal.ndjson").write_text(content)
    one_line_error(run_nozk("roll", "status", "--state", str(tmp_path)), 3, says)
    r = run_nozk("roll", "status", "--state", str(tmp_path), "-o", "json")
    assert json.loads(r.stdout)["errors"][0]["code"] == "journal_corrupt"


def test_status_ignores_a_last_line_cut_short(run_nozk: Run, tmp_path: Path) -> None:
    d = unfinished_roll(tmp_path / "roll").write()
    with open(d / "journal.ndjson", "a") as f:
        f.write('{"event":"step","node":3,"step":"start","status":"do')
    code, data, _ = status(run_nozk, d)
    assert code == 0 and {n["node"]: n["phase"] for n in data["nodes"]}[3] == "starting"


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


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A state directory whose lock another live process (a `roll run`, as far as anyone can tell) holds."""
    d = tmp_path / "roll"
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(d)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, cwd=Path(__file__).resolve().parents[2])
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    try:
        yield d, p.pid
    finally:
        assert p.stdin is not None
        p.stdin.close()
        p.wait(10)


def test_status_of_a_roll_another_run_holds_is_running(run_nozk: Run, held: tuple[Path, int]) -> None:
    d, _ = held
    unfinished_roll(d).write()
    code, data, err = status(run_nozk, d)
    assert (code, data["status"]) == (0, "running")


def test_run_on_a_held_directory_is_exit_7_naming_the_holder(run_nozk: Run, held: tuple[Path, int]) -> None:
    d, pid = held
    r = run_nozk("roll", "run", "--state", str(d), *HOOKS, "-z", NOWHERE, "--connect-timeout", "1")
    one_line_error(r, 7, f"another `kadmin roll run` (pid {pid}) holds --state {d}")
    r = run_nozk("roll", "run", "--state", str(d), *HOOKS, "-z", NOWHERE, "-o", "json")
    doc = json.loads(r.stdout)
    assert (r.exit_code, doc["exit_code"], doc["errors"][0]["code"]) == (7, 7, "roll_locked")
    assert not (d / "journal.ndjson").exists()


# ------------------------------------------------------------------------------------------------ before connecting
def test_run_on_a_corrupt_journal_is_exit_3_before_connecting(run_nozk: Run, tmp_path: Path) -> None:
    (tmp_path / "journal.ndjson").write_text('{"event":"roll_started"}\n{oops}\n')
    r = run_nozk("roll", "run", "--state", str(tmp_path), *HOOKS, "-z", NOWHERE, "--connect-timeout", "1")
    one_line_error(r, 3, "journal.ndjson line 2 is not JSON", "cannot be resumed from it safely")
    assert (tmp_path / "journal.ndjson").read_text() == '{"event":"roll_started"}\n{oops}\n'  # left as it was


def test_run_and_plan_without_a_cluster_are_exit_4(run_nozk: Run, tmp_path: Path) -> None:
    r = run_nozk("roll", "plan", "-z", NOWHERE, "--connect-timeout", "1")
    assert r.exit_code == 4, r.stderr
    r = run_nozk("roll", "run", "--state", str(tmp_path / "roll"), *HOOKS, "-z", NOWHERE, "--connect-timeout", "1",
                 "--step-timeout", "1")
    assert r.exit_code == 4, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "roll" / "journal.ndjson").exists()  # nothing began


def test_the_controllers_alone_cannot_list_the_brokers_a_roll_restarts(run_nozk: Run, tmp_path: Path) -> None:
    """KRaft: a roll needs --bootstrap-server (the controllers describe only themselves, KIP-919): exit 3 in one
    line, before anything begins."""
    for argv in (("roll", "plan"), ("roll", "run", "--state", str(tmp_path / "roll"), *HOOKS)):
        r = run_nozk(*argv, "--bootstrap-controller", NOWHERE, "--connect-timeout", "1", "-o", "json")
        one_line_error(r, 3, f"{' '.join(argv[:2])} cannot list the brokers through the controllers", "KIP-919",
                       "use --bootstrap-server")
        assert json.loads(r.stdout)["errors"][0]["code"] == "controllers_list_no_brokers"
    assert not (tmp_path / "roll" / "journal.ndjson").exists()


# ------------------------------------------------------------------------------------------------ roll confirm
def test_confirm_journals_the_operators_word_and_status_shows_it(run_nozk: Run, tmp_path: Path) -> None:
    d = failed_roll(tmp_path / "roll").write()  # node 3's stop hook failed; kadmin never saw it go
    r = run_nozk("roll", "confirm", "--state", str(d), "--node", "3", "--never-went-down", "-o", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["command"] == "roll confirm" and doc["data"] == {"state_dir": str(d), "node": 3, "went_down": False,
                                                                "phase_before": "stopping",
                                                                "phase_after": "before_stop"}
    assert "its hook runs again when the roll continues" in r.stderr
    last = json.loads((d / "journal.ndjson").read_text().splitlines()[-1])
    assert {k: last[k] for k in ("event", "node", "went_down")} == {"event": "confirmed", "node": 3,
                                                                     "went_down": False}
    code, data, _ = status(run_nozk, d)
    assert {n["node"]: n["phase"] for n in data["nodes"]}[3] == "before_stop"
    r = run_nozk("roll", "confirm", "--state", str(d), "--node", "3", "--went-down", "-o", "plain")
    assert r.exit_code == 2 and "nothing to confirm" in r.stderr  # before its stop again: nothing to say


@pytest.mark.parametrize(("args", "says"), [
    ((), "give --went-down or --never-went-down"),
    (("--went-down", "--never-went-down"), "give --went-down or --never-went-down"),
    (("--went-down", "--node", "9"), "--node 9: not a node of the roll"),
    (("--went-down", "--node", "2"), "--node 2: it is done: there is nothing to confirm"),
])
def test_confirm_refuses_in_one_line(run_nozk: Run, tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    d = failed_roll(tmp_path / "roll").write()
    before = (d / "journal.ndjson").read_bytes()
    argv = ("--node", "3", *args) if "--node" not in args else args
    r = run_nozk("roll", "confirm", "--state", str(d), *argv)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("kadmin: error: ")]
    assert len(errors) == 1 and says in errors[0], r.stderr
    assert (d / "journal.ndjson").read_bytes() == before  # nothing journaled


# ------------------------------------------------------------------------------------------------ pause, continue
def test_pause_and_continue_write_and_remove_the_marker_and_say_so(run_nozk: Run, tmp_path: Path) -> None:
    d = failed_roll(tmp_path / "roll").write()
    for cmd, paused, changed in (("pause", True, True), ("pause", True, False), ("continue", False, True),
                                 ("continue", False, False)):
        r = run_nozk("roll", cmd, "--state", str(d), "-o", "json")
        assert r.exit_code == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["command"] == f"roll {cmd}"
        assert doc["data"] == {"state_dir": str(d), "paused": paused, "changed": changed}
        assert (d / "pause").exists() == paused
    r = run_nozk("roll", "pause", "--state", str(d), "-o", "plain")
    assert r.stdout == f"{d}\tpaused\tchanged\n"


@pytest.mark.parametrize(("value", "says"), [
    ("25:00", "is no time of day"),
    ("2020-01-01T00:00+00:00", "has passed already"),
    ("2999-01-01T00:00", "has no offset"),
    ("tomorrow", "is neither ISO 8601"),
])
def test_until_refuses_what_is_no_future_time_in_one_line(run_nozk: Run, tmp_path: Path, value: str,
                                                          says: str) -> None:
    r = run_nozk("roll", "run", "--state", str(tmp_path / "roll"), *HOOKS, "--until", value,
                 "--bootstrap-server", NOWHERE)
    one_line_error(r, 2, "--until", says)
    assert not (tmp_path / "roll" / "journal.ndjson").exists()
