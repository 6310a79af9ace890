"""A rich progress bar for long scans, on stderr, and only when stderr is a terminal."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import IO, Any


class ScanProgress:
    """Usable as the `progress(phase, total, advance)` callback the scans accept; a no-op off a TTY."""

    def __init__(self, stream: IO[str] | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> ScanProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeRemainingColumn(), console=Console(file=self.stream), transient=True)
            self._progress.start()
        return self

    def __call__(self, phase: str, total: int | None, advance: int) -> None:
        if self._progress is None:
            return
        task = self._tasks.get(phase)
        if task is None:
            task = self._tasks[phase] = self._progress.add_task(f"reading {phase}", total=total)
        if advance:
            self._progress.advance(task, advance)

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
