"""A Ctrl-C that a library swallows: SIGINT delivered from inside kazoo's wake-up of its connection thread.

kazoo's KazooClient._call has a bare `except:` around `write_sock.send`: a KeyboardInterrupt raised there is
swallowed and the request fails with ConnectionClosedError instead (seen in CI as exit 70 from `brokers watch`).
kadmin gives it back (kadmin/cluster/zookeeper/session.py `_Kazoo`, kadmin/interrupts.py `interrupted`)."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any


def ctrl_c_inside_kazoo(mocker: Any, once_on: type) -> list[Any]:
    """From now on, the first `once_on` request the main thread makes through kazoo gets a SIGINT while kazoo
    wakes its connection thread for it: the handler runs inside kazoo's try. Returns the list the request is put
    in once it was (empty until then). May be called while a command runs (from its main thread): kazoo's
    `_call` is patched on the class, so a client opened before sees it too."""
    from kazoo.client import KazooClient

    real = KazooClient._call
    fired: list[Any] = []

    def call(self: Any, request: Any, async_object: Any) -> Any:
        if fired or not isinstance(request, once_on) or threading.current_thread() is not threading.main_thread():
            # (the fleet's emulated brokers use kazoo too, from their own threads)
            return real(self, request, async_object)
        fired.append(request)
        sock = self._connection._write_sock

        class CtrlCOnWake:
            def send(self, data: bytes) -> int:
                os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, inside kazoo's try
                return sock.send(data)

        self._connection._write_sock = CtrlCOnWake()
        try:
            return real(self, request, async_object)
        finally:
            self._connection._write_sock = sock

    mocker.patch.object(KazooClient, "_call", call)
    return fired
