"""Driving `kadmin roll run` as an operator does, and counting what its hooks did (tests/kafka/test_real_roll.py).

- `write_hook(path, stop_cmd, start_cmd)`: the test's own hook, a small sh script `HOOK OP ID COUNTER [NODE]`:
  `stop` appends `stop-begin ID` to COUNTER, runs `STOP_CMD ID` (its output to COUNTER.log, never to kadmin's
  pipe: a hook a SIGKILLed kadmin leaves running must not die writing to a closed pipe), then, once that
  returned 0, `stop ID`; `start` the same with `start-begin ID` / `start ID`, except for node NODE, where it
  appends `start-skipped ID` and exits 0 without starting anything (a start command that starts nothing);
  `failstop` appends `stop-refused ID` and exits 3; `selfrestart` stops the node and starts it again (a stop that
  brings the node back by itself, as `kubectl delete pod` or systemd's Restart=always), with both pairs of lines;
  `startnoop` appends `start-noop ID` and starts nothing (the start of a node that came back by itself). A
  `stop ID` / `start ID` line is written only after the work was done: those lines count effective stops and
  starts; a `-begin` line without its end is an attempt that did not finish (or was cut short).
- `Counter(path)`: those lines, read back.
- `RollRun(args, env, ...)`: `kadmin roll run ARGS -o ndjson` in a subprocess; a thread reads its NDJSON
  events as they come. `kill_when(event)` (checked in that thread) SIGKILLs kadmin itself (never its hooks:
  they run in sessions of their own) once the event was seen. `freeze=SPEC` runs it under
  tests/support/roll_freeze.py: it stops right after journaling the first event matching SPEC (`wait_frozen`),
  to be SIGKILLed exactly there (`kill`) or let go on (`thaw`).
- `journal(dir)`: DIR/journal.ndjson's events; `windows`, `batches_run`: what they show.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

Event = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]

HOOK = """#!/bin/sh
# {path}: the roll tests' hook (tests/support/roll.py). HOOK OP ID COUNTER [NODE]
op=$1; id=$2; counter=$3; skip=${{4:-}}
case "$op" in
  stop)
    echo "stop-begin $id" >> "$counter"
    {stop} "$id" >> "$counter.log" 2>&1 || exit $?
    echo "stop $id" >> "$counter" ;;
  start)
    if [ "$id" = "$skip" ]; then echo "start-skipped $id" >> "$counter"; exit 0; fi
    echo "start-begin $id" >> "$counter"
    {start} "$id" >> "$counter.log" 2>&1 || exit $?
    echo "start $id" >> "$counter" ;;
  failstop)
    echo "stop-refused $id" >> "$counter"
    echo "refusing to stop node $id"
    exit 3 ;;
  selfrestart)
    echo "stop-begin $id" >> "$counter"
    {stop} "$id" >> "$counter.log" 2>&1 || exit $?
    echo "stop $id" >> "$counter"
    echo "start-begin $id" >> "$counter"
    {start} "$id" >> "$counter.log" 2>&1 || exit $?
    echo "start $id" >> "$counter" ;;
  startnoop)
    echo "start-noop $id" >> "$counter" ;;
  *) echo "unknown hook operation $op" >&2; exit 64 ;;
esac
"""


def write_hook(path: Path, stop_cmd: Sequence[str], start_cmd: Sequence[str]) -> Path:
    """The hook script at `path`; `stop_cmd` / `start_cmd` are argv prefixes, the node id is appended."""
    path.write_text(HOOK.format(path=path, stop=shlex.join(stop_cmd), start=shlex.join(start_cmd)))
    path.chmod(0o755)
    return path


def hook_args(hook: Path, counter: Path, skip_start: int | None = None, fail_stop: bool = False,
              stop_op: str = "stop", start_op: str = "start", record: Path | None = None) -> list[str]:
    """`--stop CMD --start CMD` for `kadmin roll run` with the test's hook and this counter file. `record`: the
    stop command first writes the node's `{rack}`, `{host}` (each a placeholder kadmin quotes) and
    $KADMIN_ROLL_RACK to RECORD-ID, one per line, so a test sees what the hook received."""
    h, c = shlex.quote(str(hook)), shlex.quote(str(counter))
    stop = f"{h} {'failstop' if fail_stop else stop_op} {{id}} {c}"
    if record is not None:
        stop = (f"printf '%s\\n' {{rack}} {{host}} \"$KADMIN_ROLL_RACK\" > {shlex.quote(str(record))}-{{id}} && "
                + stop)
    start = f"{h} {start_op} {{id}} {c}" + ("" if skip_start is None else f" {skip_start}")
    return ["--stop", stop, "--start", start]


class Counter:
    """The lines the hook appended: [(what, node)] in order, e.g. ("stop-begin", 2), ("stop", 2)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[tuple[str, int]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            what, _, node = line.partition(" ")
            out.append((what, int(node)))
        return out

    def tally(self) -> Tally[tuple[str, int]]:
        return Tally(self.lines())

    def nodes(self) -> set[int]:
        return {n for _, n in self.lines()}

    def log(self) -> str:
        p = self.path.with_name(self.path.name + ".log")
        return p.read_text(errors="replace")[-3000:] if p.exists() else ""

    def assert_each_restarted_once(self, nodes: Iterable[int], besides: Iterable[tuple[str, int]] = ()) -> None:
        """Each node: one stop and one start attempted, both finished; nothing else, but the lines `besides`."""
        nodes = sorted(set(nodes))
        t = self.tally() - Tally(besides)
        want = {(w, n): 1 for n in nodes for w in ("stop-begin", "stop", "start-begin", "start")}
        assert dict(t) == want, f"the hooks' counter {self.path}: {self.lines()} (expected each of {nodes} " \
                                f"stopped and started exactly once, besides {list(besides)})\n{self.log()}"


_live: set[subprocess.Popen[str]] = set()


@atexit.register
def _kill_leftovers() -> None:
    for p in list(_live):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)


class RollRun:
    """`kadmin roll run ARGS -o ndjson` (or another `verb` with roll run's engine: `migration roll`) running; its
    events as they come (a reader thread)."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str], stderr_file: Path,
                 kill_when: Callable[[Event], bool] | None = None, freeze: Mapping[str, Any] | None = None,
                 cwd: Path | None = None, verb: Sequence[str] = ("roll", "run")) -> None:
        self.args = list(args)
        self.stderr_file = stderr_file
        self.kill_when = kill_when
        self.events: list[Event] = []
        self.killed_after: Event | None = None
        self.noise: list[str] = []
        self._cond = threading.Condition()
        self._eof = False
        self._err: IO[bytes] = open(stderr_file, "ab")  # noqa: SIM115 - closed in wait()
        self.marker = stderr_file.with_name(stderr_file.name + ".frozen")
        env = dict(env)
        cmd = [sys.executable, "-m", "kadmin"]
        if freeze is not None:
            self.marker.unlink(missing_ok=True)
            cmd = [sys.executable, "-m", "tests.support.roll_freeze", json.dumps(dict(freeze)), str(self.marker)]
            env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
        self.proc = subprocess.Popen([*cmd, *verb, *self.args, "-o", "ndjson"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self._err, text=True, bufsize=1, env=env,
                                     start_new_session=True, cwd=cwd)
        _live.add(self.proc)
        self._reader = threading.Thread(target=self._read, daemon=True, name="roll-run-reader")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                with self._cond:
                    self.noise.append(line.rstrip("\n"))
                continue
            if self.kill_when is not None and self.killed_after is None and self.kill_when(ev):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGKILL)
                self.killed_after = ev
            with self._cond:
                self.events.append(ev)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def wait_event(self, pred: Callable[[Event], bool], timeout: float, what: str) -> Event:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for ev in self.events:
                    if pred(ev):
                        return ev
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    raise AssertionError(f"`roll run` {'ended' if self._eof else f'ran {timeout:g}s'} without "
                                         f"{what}; last events {self.events[-3:]}\n{self.stderr()}")
                self._cond.wait(left)

    def wait_frozen(self, timeout: float) -> Event:
        """The event the run froze after (see roll_freeze), once it has; fails if it ends first."""
        deadline = time.monotonic() + timeout
        while not self.marker.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"`roll run` exited {self.proc.returncode} before its freeze point; last "
                                     f"events {self.events[-3:]}\n{self.stderr()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"`roll run` did not reach its freeze point within {timeout:g}s; last events "
                                     f"{self.events[-3:]}\n{self.stderr()}")
            time.sleep(0.02)
        return dict(json.loads(self.marker.read_text()))

    def kill(self) -> int:
        """SIGKILL kadmin (only its own process) and wait for it: -9."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        return self.wait(60)

    def thaw(self) -> None:
        self.marker.with_name(self.marker.name + ".go").touch()

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            raise AssertionError(f"`roll run` did not end within {timeout:g}s (killed); last events "
                                 f"{self.events[-3:]}\n{self.stderr()}") from None
        finally:
            self._reader.join(30)
            self._err.close()
            _live.discard(self.proc)
        return code

    def stderr(self, chars: int = 4000) -> str:
        try:
            return self.stderr_file.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def on(node: int, step: str, status: str) -> Callable[[Event], bool]:
    """A predicate: the step event of `node`'s `step` with `status`."""
    return lambda ev: (ev.get("event") == "step" and ev.get("node") == node and ev.get("step") == step
                       and ev.get("status") == status)


def journal(state: Path) -> list[Event]:
    text = (state / "journal.ndjson").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def at(ev: Event) -> float:
    """An event's `at` (ISO 8601 UTC, milliseconds) as a POSIX time."""
    return datetime.datetime.fromisoformat(str(ev["at"]).replace("Z", "+00:00")).timestamp()


def steps_of(events: Iterable[Event], node: int, status: str | None = None) -> list[str]:
    """The steps of `node`, in journal order, as `step:status` (or only the names, for one `status`)."""
    out = []
    for ev in events:
        if ev.get("event") == "step" and ev.get("node") == node:
            if status is None:
                out.append(f"{ev['step']}:{ev['status']}")
            elif ev.get("status") == status:
                out.append(str(ev["step"]))
    return out


def first(events: Iterable[Event], node: int, step: str, status: str) -> Event | None:
    return next((ev for ev in events if on(node, step, status)(ev)), None)


def restart_order(events: Iterable[Event]) -> list[int]:
    """The nodes in the order their (first) stop hook was started."""
    out: list[int] = []
    for ev in events:
        if ev.get("event") == "step" and ev.get("step") in ("stop", "restart") and ev.get("status") == "started" \
                and ev["node"] not in out:
            out.append(int(ev["node"]))
    return out


def windows(events: Sequence[Event]) -> dict[int, tuple[float, float]]:
    """Per node: (its stop started, its wait_restarted done), the time it was (or may have been) down."""
    out = {}
    for n in restart_order(events):
        down, back = first(events, n, "stop", "started"), first(events, n, "wait_restarted", "done")
        assert down is not None and back is not None, f"node {n}: no stop started / wait_restarted done"
        out[n] = (at(down), at(back))
    return out


def down_together(events: Sequence[Event]) -> list[set[int]]:
    """The groups of nodes whose down windows overlap (each node once, in order)."""
    w = windows(events)
    groups: list[set[int]] = []
    for n in w:
        for g in groups:
            if any(w[n][0] < w[m][1] and w[m][0] < w[n][1] for m in g):
                g.add(n)
                break
        else:
            groups.append({n})
    return groups


def taken_together(events: Sequence[Event], nodes: Sequence[int], step: str) -> bool:
    """Did `nodes` take `step` as one (a batch's joint drain or undrain): their `started` events one after the
    other, then their `done` events one after the other, each with the same duration?"""
    idx = [(i, e) for i, e in enumerate(events)
           if e.get("event") == "step" and e.get("step") == step and e.get("node") in nodes]
    k = len(nodes)
    if [e["status"] for _, e in idx] != ["started"] * k + ["done"] * k:
        return False
    at = [i for i, _ in idx]
    return (at[k - 1] - at[0] == k - 1 and at[-1] - at[k] == k - 1
            and len({e["elapsed_s"] for _, e in idx[k:]}) == 1 and {e["node"] for _, e in idx} == set(nodes))


def batches_run(events: Sequence[Event]) -> list[list[int]]:
    """The batches as they ran: a node begins a new batch when its first event comes after every node seen so
    far is done (node_done); within a batch, in the order of their first events."""
    batches: list[list[int]] = []
    done: set[int] = set()
    seen: list[int] = []
    for ev in events:
        n = ev.get("node")
        if ev.get("event") == "node_done":
            done.add(int(n))  # type: ignore[arg-type]
        elif ev.get("event") == "step" and n not in seen:
            if not batches or all(m in done for m in seen):
                batches.append([])
            batches[-1].append(int(n))  # type: ignore[arg-type]
            seen.append(int(n))  # type: ignore[arg-type]
    return batches
