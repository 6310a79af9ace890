"""`roll run`'s progress view (kadmin/render/roll_progress.py) off a terminal (a log: one line per step, no hook
output) and its live table's content (the frames themselves are proven on a real roll in a pseudo-terminal:
tests/kafka/test_real_roll.py::TestZooKeeperMode::test_the_live_view_at_a_terminal). The clock is the test's."""

from __future__ import annotations

import io

from kadmin.payloads_ops import RollNodeResult
from kadmin.render.renderer import Renderer
from kadmin.render.roll_progress import RollProgress, clock_text


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def planned(node: int, status: str = "pending", elapsed: float | None = None) -> RollNodeResult:
    return RollNodeResult(node, "broker", status, "untouched", None, (), None, None, None, None, elapsed)


def step(node: int, name: str, status: str, elapsed: float = 0.0) -> dict[str, object]:
    return {"event": "step", "node": node, "role": "broker", "step": name, "status": status, "elapsed_s": elapsed}


def test_off_a_terminal_one_line_per_step_and_no_hook_output() -> None:
    err = io.StringIO()
    p = RollProgress(Renderer("plain", io.StringIO(), err), err)
    with p:
        p.plan([planned(1), planned(2)])
        p.update(step(1, "drain", "started"))
        p.update(step(1, "drain", "done", 1.25))
        p.hook_started(1, "stop", "systemctl stop kafka")
        p.update(step(1, "stop", "started"))
        p.hook_output(1, "stop", "Stopping Kafka...")
        p.update(step(1, "stop", "done", 3.5))
        p.update({"event": "node_done", "node": 1, "role": "broker", "status": "done", "elapsed_s": 9.0})
    assert err.getvalue().splitlines() == [
        "kadmin: roll: node 1 (broker): drain done (1.25 s)",
        "kadmin: roll: node 1 (broker): stop: systemctl stop kafka",
        "kadmin: roll: node 1 (broker): stop done (3.5 s)",
        "kadmin: roll: node 1 (broker): done (9.0 s)",
    ]


def test_the_rows_show_every_planned_node_what_runs_ticks_and_what_it_waits_for() -> None:
    clock = Clock()
    err = io.StringIO()
    p = RollProgress(Renderer("plain", io.StringIO(), err), err, clock=clock)
    p.plan([planned(1, "done", 40.0), planned(2), planned(3)])  # a resumed roll: node 1 done before
    assert p.cells()[1] == [["1", "broker", "done", "-", "40.0", "-"], ["2", "broker", "pending", "-", "-", "-"],
                            ["3", "broker", "pending", "-", "-", "-"]]
    p.update(step(2, "wait_in_sync", "started"))
    p.waiting(2, "broker 2 back in the ISR of 12 of 14 partitions; not yet in the ISR of 2 partitions: t-0, t-1")
    clock.now += 2.5
    row = p.cells()[1][1]
    assert row[2:5] == ["running", "wait_in_sync", "2.5"]  # its time ticks with no event
    assert row[5].startswith("broker 2 back in the ISR of 12 of 14 partitions")
    p.update(step(2, "wait_in_sync", "done", 2.5))
    p.hook_started(2, "start", "start-kafka 2")
    p.update(step(2, "start", "started"))
    assert p.cells()[1][1][5] == "its start hook"
    assert p.hook_lines() == ["node 2 start: $ start-kafka 2"]  # below the table: a long command widens nothing
    p.hook_output(2, "start", "JVM up")
    p.hook_output(2, "start", "listening on 9092")
    assert p.hook_lines() == ["node 2 start: listening on 9092"]  # the running hook's last line, not every line
    p.update(step(2, "start", "done", 4.0))
    assert p.hook_lines() == []
    assert "time left: after the first node" in p.summary()  # none done in this run yet: no estimate


def one_done(clock: Clock) -> RollProgress:
    """Three brokers planned; node 1 done in 60 s; node 2's first step just begun."""
    err = io.StringIO()
    p = RollProgress(Renderer("plain", io.StringIO(), err), err, clock=clock)
    p.plan([planned(1), planned(2), planned(3)])
    p.update(step(1, "can_stop", "started"))
    clock.now += 60
    p.update({"event": "node_done", "node": 1, "role": "broker", "status": "done", "elapsed_s": 60.0})
    p.update(step(2, "can_stop", "started"))
    return p


def test_the_time_left_is_estimated_from_the_nodes_done_in_this_run() -> None:
    clock = Clock()
    p = one_done(clock)
    clock.now += 20
    # node 2 has ~40 s left of its 60, node 3 all 60: about 1m40s
    assert p.summary() == "1m20s so far; 1 of 3 node(s) done; about 1m40s left (1m00s per node so far)"


def test_the_live_view_counts_a_running_node_from_its_first_step_in_this_run() -> None:
    clock = Clock()
    p = one_done(clock)
    clock.now += 10
    p.update(step(2, "can_stop", "done", 10.0))
    p.update(step(2, "drain", "started"))  # a new step: node 2 is still 10 s into its 60
    clock.now += 10
    assert p.summary() == "1m20s so far; 1 of 3 node(s) done; about 1m40s left (1m00s per node so far)"


def test_clock_text() -> None:
    assert [clock_text(s) for s in (0, 59.4, 61, 3599, 3725)] == ["0s", "59s", "1m01s", "59m59s", "1h02m05s"]


def test_a_view_taller_than_the_terminal_names_the_finished_and_the_pending_on_a_line_each() -> None:
    from rich.console import Console

    err = io.StringIO()
    p = RollProgress(Renderer("plain", io.StringIO(), err), err)
    p.plan([planned(n, "done" if n < 20 else "pending", 30.0 if n < 20 else None) for n in range(1, 41)])
    p.update(step(20, "drain", "started"))
    out = io.StringIO()
    Console(file=out, width=80, height=24).print(p)
    text = out.getvalue()
    assert len(text.splitlines()) < 24, text
    lines = text.splitlines()
    done = " ".join(line.strip() for line in lines if not line.startswith(("┃", "│", "┏", "┡", "└", "kadmin")))
    assert [int(x) for x in done.split("pending:")[0].removeprefix("done:").split(",")] == list(range(1, 20))
    assert [int(x) for x in done.split("pending:")[1].split(",")] == list(range(21, 41))
    assert any(line.startswith("│ 20") for line in lines), text
