"""Synchronise a test with another process's ZooKeeper watches, as bench/brokers.py does.

`wchp` lists, per watched path, the sessions holding a data watch on it (ZooKeeper 3.8 does not list
child watches there).
A test that starts `kadmin brokers wait` in a subprocess waits until a session it did not see
before watches the broker's znode, instead of sleeping and hoping the process got that far.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kadmin.sandbox.zkserver import four_letter_word


def watchers(port: int, path: str, host: str = "127.0.0.1") -> set[str]:
    """The session ids (hex, as `wchp` prints them) with a watch on `path` now."""
    out = four_letter_word(host, port, "wchp", timeout=5.0)
    sessions: set[str] = set()
    current = None
    for line in out.splitlines():
        if line.startswith("/"):
            current = line.strip()
        elif current == path and line.strip():
            sessions.add(line.strip())
    return sessions


def wait_for_new_watcher(port: int, path: str, before: set[str], alive: Callable[[], bool] = lambda: True,
                         timeout: float = 60.0) -> str:
    """Wait until a session not in `before` watches `path`; returns its id. `alive` false ends the wait."""
    deadline = time.monotonic() + timeout
    while True:
        new = watchers(port, path) - before
        if new:
            return sorted(new)[0]
        assert alive(), f"the process exited before it watched {path}"
        assert time.monotonic() < deadline, f"no new session watched {path} within {timeout:g}s"
        time.sleep(0.02)
