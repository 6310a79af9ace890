"""How the `kadmin` process ends once its command is done: at once, not after tearing the interpreter down."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_now(code: str | int | None) -> NoReturn:
    """End the process with `code` as `sys.exit(code)` would, less Python's interpreter teardown.

    When a command has printed its result and closed its connections, what a normal exit still does is free
    every module (typer, click, rich, kazoo, ...) and collect their objects: 40-100 ms on a busy machine, and
    a script that waits for kadmin (a rolling bounce waiting for `brokers wait --epoch-gt`) waits for that too
    (issue 13 §3). Here the atexit handlers run (weakref finalizers, logging's flush, kazoo's and Spark's
    clean-ups), stdout and stderr are flushed, and os._exit ends the process; the kernel closes its sockets.

    Where that could differ from a normal exit, this is sys.exit(code) instead: a code that is not an int or
    None (sys.exit prints it), a non-daemon thread still running (Python waits for it first), or a flush
    that fails (Python reports it and exits 120).
    """
    if code is None:
        code = 0
    if not isinstance(code, int) or isinstance(code, bool):
        sys.exit(code)
    me = threading.current_thread()
    if me is not threading.main_thread() or any(
        not t.daemon for t in threading.enumerate() if t is not me
    ):
        sys.exit(code)
    atexit._run_exitfuncs()  # what Py_Finalize runs first; it clears them, so a fallback does not run them twice
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code & 0xFF)  # what the exit status keeps of it, as with sys.exit
