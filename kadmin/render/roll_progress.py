"""`roll run`'s progress on stderr: a live table on a terminal (rich), one line per step elsewhere.

On a terminal: one row per node (its current step, since when, what it waits for), finished nodes with their
time; lines said meanwhile (a hook's output, a note) scroll above the table. Not on a terminal (a log, CI): one
line per step that ends, `kadmin: roll: node 2 (broker): drain done (1.4 s)`, and the lines said meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import IO, Any

from kadmin.render import Renderer, views


class RollProgress:
    def __init__(self, renderer: Renderer, err: IO[str]) -> None:
        self.r = renderer
        self.err = err
        self.live_view = err.isatty()
        self.rows: dict[int, dict[str, Any]] = {}
        self._live: Any = None
        self._console: Any = None

    def __enter__(self) -> RollProgress:
        if self.live_view:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.err)
            self._live = Live(self._table(), console=self._console, refresh_per_second=4, transient=False)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.stop()
            self._live = None

    def say(self, message: str) -> None:
        text = f"kadmin: roll: {views.inert(message)}"
        if self._console is not None:
            self._console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.err, flush=True)

    def update(self, ev: Mapping[str, Any]) -> None:
        kind, node = ev.get("event"), ev.get("node")
        if kind == "step" and isinstance(node, int):
            row = self.rows.setdefault(node, {"role": ev.get("role"), "since": time.monotonic(), "done": 0.0})
            row.update(step=ev.get("step"), status=ev.get("status"), message=ev.get("message", ""))
            if ev.get("status") == "started":
                row["since"] = time.monotonic()
            elif not self.live_view:
                took = ev.get("elapsed_s")
                extra = f": {ev['message']}" if ev.get("message") else ""
                self.say(f"node {node} ({ev.get('role')}): {ev.get('step')} {ev.get('status')} ({took} s){extra}")
        elif kind == "seen_stopped" and isinstance(node, int) and not self.live_view:
            self.say(f"node {node} ({ev.get('role')}): seen stopped ({ev.get('how')})")
        elif kind == "node_done" and isinstance(node, int):
            self.rows.setdefault(node, {"role": ev.get("role"), "since": time.monotonic()})
            self.rows[node].update(step="", status=ev.get("status"), done=ev.get("elapsed_s"), message="")
            if not self.live_view:
                self.say(f"node {node} ({ev.get('role')}): {ev.get('status')} ({ev.get('elapsed_s')} s)")
        if self._live is not None:
            self._live.update(self._table())

    def _table(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        t = Table("NODE", "ROLE", "STEP", "STATUS", "SECONDS", "WAITING FOR", title="kadmin roll", header_style="bold")
        for node, row in sorted(self.rows.items()):
            busy = row.get("status") == "started"
            secs = time.monotonic() - row["since"] if busy else row.get("done") or 0.0
            t.add_row(*[Text(str(c)) for c in (node, row.get("role") or "", row.get("step") or "",
                                               row.get("status") or "", f"{float(secs):.1f}",
                                               row.get("message") or "")])
        return t
