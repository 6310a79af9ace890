"""`roll run`'s progress on stderr: a live view on a terminal (rich), one line per step elsewhere.

On a terminal: one row per planned node from the start (pending, running, done, skipped, failed), the running
step with its time ticking and what it waits for in words (the cluster's answer: "broker 3 back in the ISR of 12
of 14 partitions", "quorum leader 3002 to hear from controller 3001"), or the last line of its running hook (the
hooks' whole output is in DIR/hooks, never on the terminal); above the table the time so far and an estimate of
the time left from the nodes done. kadmin's own lines (settings, notes) print above the view.

Not on a terminal (a log, CI): one line per step that ends, `kadmin: roll: node 2 (broker): drain done (1.4 s)`,
each hook's command as it begins, and kadmin's own lines; no hook output (it is in DIR/hooks).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from kadmin.domain.roll_estimate import Progress, clock_text, time_left
from kadmin.payloads_ops import RollNodeResult
from kadmin.render import views
from kadmin.render.renderer import Renderer

REFRESH_PER_SECOND = 4
_STATUS = {"in_progress": "running", "pending": "pending", "done": "done", "skipped": "skipped", "failed": "failed"}


@dataclass
class _Row:
    role: str
    status: str = "pending"  # pending, running, done, skipped, failed
    step: str = ""
    since: float = 0.0  # monotonic: when the running step began
    began: float | None = None  # monotonic: when its first step in this run began
    seconds: float | None = None  # a finished step's (or node's) time
    waiting: str = ""  # what the running step waits for
    hook: str = ""  # the hook running now (stop, start, restart, only-if)
    last: str = ""  # its command, then its last line


class RollProgress:
    def __init__(self, renderer: Renderer, err: IO[str], clock: Any = time.monotonic) -> None:
        self.r = renderer
        self.err = err
        self.clock = clock
        self.live_view = err.isatty()
        self.rows: dict[int, _Row] = {}
        self.began = clock()
        self.parallel = 1
        self.node_seconds: list[tuple[str, float]] = []  # the nodes done in this run (role, time): the estimate
        self.paused: str | None = None  # who paused the roll (`roll pause`, --pause-after), until `continued`
        self._lock = threading.Lock()  # hooks' lines arrive from their reader threads
        self._live: Any = None
        self._console: Any = None

    def __enter__(self) -> RollProgress:
        if self.live_view:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.err)
            # the view itself is the renderable: each refresh draws it anew, so the running step's time ticks
            self._live = Live(self, console=self._console, refresh_per_second=REFRESH_PER_SECOND, transient=False)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    # ---------------------------------------------------------------- kadmin's own lines
    def say(self, message: str) -> None:
        text = f"kadmin: roll: {views.inert(message)}"
        if self._console is not None:
            # wrapped by rich at the terminal's width: a soft-wrapped print would crop the view drawn with it
            self._console.print(text, markup=False, highlight=False, overflow="fold")
        else:
            print(text, file=self.err, flush=True)

    # ---------------------------------------------------------------- the engine's Watcher
    def plan(self, nodes: Sequence[RollNodeResult]) -> None:
        with self._lock:
            for n in nodes:
                row = self.rows.setdefault(n.node, _Row(n.role))
                row.status = _STATUS.get(n.status, n.status)
                row.step = n.step or ""
                row.seconds = n.elapsed_s
                row.since = self.clock()

    def waiting(self, node: int, text: str) -> None:
        with self._lock:
            row = self.rows.get(node)
            if row is not None:
                row.waiting = text

    def hook_started(self, node: int, hook: str, cmd: str) -> None:
        with self._lock:
            row = self.rows.get(node)
            if row is not None:
                row.hook, row.last = hook, f"$ {cmd}"
        if not self.live_view:
            role = row.role if row is not None else "node"
            self.say(f"node {node} ({role}): {hook}: {cmd}")

    def hook_output(self, node: int, hook: str, line: str) -> None:
        with self._lock:
            row = self.rows.get(node)
            if row is not None and row.hook == hook:
                row.last = line

    # ---------------------------------------------------------------- the journal's events
    def update(self, ev: Mapping[str, Any]) -> None:
        kind, node = ev.get("event"), ev.get("node")
        if kind == "roll_started" and isinstance(ev.get("parallel"), int):
            self.parallel = max(1, int(ev["parallel"]))
        if kind == "paused":
            self.paused = str(ev.get("by") or "roll pause")
        elif kind == "continued":
            self.paused = None
        if kind == "step" and isinstance(node, int):
            with self._lock:
                row = self.rows.setdefault(node, _Row(str(ev.get("role") or "")))
                row.step, row.waiting = str(ev.get("step") or ""), ""
                if ev.get("status") == "started":
                    row.status, row.since, row.seconds = "running", self.clock(), None
                    row.began = row.since if row.began is None else row.began
                    if ev.get("step") not in ("stop", "start", "restart", "only_if"):
                        row.hook, row.last = "", ""
                else:
                    row.hook, row.last = "", ""
                    row.seconds = _float(ev.get("elapsed_s"))
                    row.status = "failed" if ev.get("status") == "failed" else "running"
                    row.since = self.clock()
            if ev.get("status") != "started" and not self.live_view:
                extra = f": {ev['message']}" if ev.get("message") else ""
                self.say(f"node {node} ({ev.get('role')}): {ev.get('step')} {ev.get('status')} "
                         f"({ev.get('elapsed_s')} s){extra}")
        elif kind == "seen_stopped" and isinstance(node, int) and not self.live_view:
            self.say(f"node {node} ({ev.get('role')}): seen stopped ({ev.get('how')})")
        elif kind == "node_done" and isinstance(node, int):
            with self._lock:
                row = self.rows.setdefault(node, _Row(str(ev.get("role") or "")))
                row.status = "skipped" if ev.get("status") == "skipped" else "done"
                row.step, row.waiting, row.hook, row.last = "", "", "", ""
                row.seconds = _float(ev.get("elapsed_s"))
                if row.status == "done" and row.seconds is not None:
                    self.node_seconds.append((row.role, row.seconds))
            if not self.live_view:
                self.say(f"node {node} ({ev.get('role')}): {ev.get('status')} ({ev.get('elapsed_s')} s)")
        if self._live is not None:
            self._live.refresh()

    # ---------------------------------------------------------------- the view
    def summary(self) -> str:
        """The time so far, the nodes done, and the time left estimated from the nodes done in this run."""
        now = self.clock()
        with self._lock:
            rows = list(self.rows.values())
            took = list(self.node_seconds)
        done = sum(1 for r in rows if r.status in ("done", "skipped"))
        text = f"{clock_text(now - self.began)} so far; {done} of {len(rows)} node(s) done"
        if self.paused is not None:
            text += f"; PAUSED ({self.paused}) until `kadmin roll continue`"
        left = [r for r in rows if r.status not in ("done", "skipped")]
        nodes = [Progress(role, "done", s) for role, s in took] + \
            [Progress(r.role, "running", now - (r.since if r.began is None else r.began)) for r in left
             if r.status == "running"] + [Progress(r.role, "pending") for r in left if r.status == "pending"]
        estimate = time_left(nodes, self.parallel)
        if estimate is not None:
            per = sum(s for _, s in took) / len(took)
            text += f"; about {clock_text(estimate)} left ({clock_text(per)} per node so far)"
        elif left and not took:
            text += "; time left: after the first node"
        return text

    def cells(self, rows: dict[int, _Row] | None = None) -> tuple[list[str], list[list[str]]]:
        now = self.clock()
        headers = ["NODE", "ROLE", "STATUS", "STEP", "SECONDS", "WAITING FOR"]
        out = []
        with self._lock:
            for node, row in sorted((rows if rows is not None else self.rows).items()):
                if row.status == "running":
                    secs = f"{now - row.since:.1f}"
                else:
                    secs = "-" if row.seconds is None else f"{row.seconds:.1f}"
                what = (row.waiting or (f"its {row.hook} hook" if row.hook else "")) if row.status == "running" else ""
                out.append([str(node), row.role, row.status, row.step or "-", secs, what or "-"])
        return headers, out

    def hook_lines(self) -> list[str]:
        """Each running hook's command, then its last line: below the table, so a long command does not widen it."""
        with self._lock:
            return [f"node {node} {row.hook}: {row.last}" for node, row in sorted(self.rows.items())
                    if row.status == "running" and row.hook and row.last]

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        from kadmin.render.tables import Fitted

        if not self.rows:  # the plan not made yet
            yield Text(f"kadmin roll: {clock_text(self.clock() - self.began)} so far; reading the cluster")
            return
        yield Text(f"kadmin roll: {self.summary()}", overflow="fold")
        with self._lock:
            rows = dict(self.rows)
        hooks = self.hook_lines()
        folded: list[str] = []
        if len(rows) + len(hooks) + 8 > options.size.height:  # taller than the terminal: the finished and the
            # pending go on a line each (every id named), the running and the failed keep their rows
            for status in ("done", "skipped", "pending"):
                ids = [n for n, r in sorted(rows.items()) if r.status == status]
                if ids:
                    folded.append(f"{status}: {', '.join(map(str, ids))}")
            rows = {n: r for n, r in rows.items() if r.status in ("running", "failed")}
        if rows:
            # the table rule of every table (kadmin/render/tables.py), fitted anew at each redraw: a resize follows
            yield Fitted(*self.cells(rows))
        for line in folded + hooks:
            yield Text(views.inert(line), overflow="fold")


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) else None
