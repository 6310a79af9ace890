"""Ctrl-C after a change was committed must not hide that it was.

The CLI runs every command under `deferring()`. Before a mutation is sent (a ZooKeeper multi, a
ControlledShutdown request) the client layer calls `arm()`: from then on SIGINT is recorded instead
of raised, so the committed result is still reported. `disarm()` ends that when nothing was
committed after all (the multi failed, the controller refused), raising the recorded interrupt.
`pending()` lets a loop that goes on after a commit (gc, shutdown --wait) stop early.

Decision: a command interrupted after its change committed exits with the committed result's own
code (the change happened: 0 means it did), and says on stderr that it was interrupted.
Nothing here works outside the main thread (signals are delivered there only): it does nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_armed = False
_pending = False
_installed = False
_raised = False


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def arm() -> None:
    """A mutation is about to be sent: record Ctrl-C from now on instead of raising it."""
    global _armed
    if _installed and _main_thread():
        _armed = True


def disarm() -> None:
    """Nothing was committed after all: Ctrl-C interrupts again (and one that came meanwhile does now)."""
    global _armed, _pending
    if not _armed:
        return
    _armed = False
    if _pending:
        _pending = False
        raise KeyboardInterrupt


def settle() -> bool:
    """A committed step's result was taken (a roll goes on to its next step): Ctrl-C interrupts again. True when
    one came meanwhile; it is consumed, and the caller stops as it would have."""
    global _armed, _pending
    came = _pending
    _armed = _pending = False
    return came


def interrupted() -> bool:
    """A Ctrl-C was raised as KeyboardInterrupt during this command, whatever became of it: a library may have
    swallowed it and failed instead (kazoo's bare `except:` around waking its connection thread turns it into
    ConnectionClosedError, "lost the connection"). A failure that comes after one is the interrupt's doing:
    the command exits 130, not with an error that would blame the cluster or kadmin."""
    return _raised


def pending() -> bool:
    """A Ctrl-C came after a commit (and was deferred)."""
    return _pending


@contextmanager
def like_ctrl_c(*signums: int) -> Iterator[None]:
    """While inside: `signums` (SIGTERM from `timeout` or CI cancelling, SIGHUP from a dropped ssh session) act as
    Ctrl-C does, through the SIGINT handler in force (deferred while a mutation is armed, else KeyboardInterrupt):
    a roll journals the running hook's outcome and stops resumably instead of dying mid-step."""
    if not _main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> Any:
        current = signal.getsignal(signal.SIGINT)
        if callable(current):
            return current(signal.SIGINT, frame)
        if current == signal.SIG_IGN:
            return None
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextmanager
def deferring() -> Iterator[None]:
    """Run a command with SIGINT deferrable by `arm()`; restores the previous handler afterwards."""
    global _armed, _pending, _installed, _raised
    if not _main_thread() or _installed:
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> Any:
        global _pending, _raised
        if _armed:
            _pending = True
            return None
        if previous == signal.SIG_IGN:
            return None
        _raised = True
        if callable(previous):
            return previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    _installed, _raised = True, False
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _installed = _armed = _pending = False  # _raised stays for run_guarded, which looks after this
