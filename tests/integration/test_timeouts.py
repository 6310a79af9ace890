"""Timeouts mean what they say, and a watch is never silently disconnected.

A loopback TCP server that accepts connections and never answers is a hung ZooKeeper. A proxy in
front of the real ZooKeeper lets a test cut every connection and see kadmin say so on stderr.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from kadmin.sandbox.fleet import BrokerSpec
from tests.support.zkwatch import wait_for_new_watcher, watchers

pytestmark = pytest.mark.integration

TIMEOUT = 2.0
SLACK = 1.5  # thread start-up and a loaded machine; the defects took 2.7x (lists) and 10 s (waits)




@pytest.mark.parametrize("argv", [
    ["brokers", "list", "--connect-timeout", str(TIMEOUT)],
    ["partitions", "list", "--connect-timeout", str(TIMEOUT)],
    ["brokers", "wait", "1", "--registered", "--timeout", str(TIMEOUT)],
    ["brokers", "wait", "1", "--in-sync", "--timeout", str(TIMEOUT)],
    ["brokers", "watch", "--timeout", str(TIMEOUT)],
])
def test_a_hung_server_costs_the_timeout_not_more(run_nozk, hung, argv):
    start = time.monotonic()
    r = run_nozk(*argv, "-z", f"127.0.0.1:{hung.port}")
    elapsed = time.monotonic() - start
    assert r.exit_code == 4, r.stderr
    assert elapsed < TIMEOUT + SLACK, f"{argv} took {elapsed:.1f}s with --timeout {TIMEOUT}"


class Proxy:
    """TCP proxy to one ZooKeeper; `cut()` drops every connection through it (new ones still pass)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client = self.sock.accept()[0]
                upstream = socket.create_connection(self.target)
                with self.lock:
                    self.pairs.append((client, upstream))
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for a, b in pairs:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def close(self) -> None:
        self.sock.close()
        self.cut()




def test_watch_says_when_the_connection_is_lost_and_regained(zk_server, chroot, fleet):
    server = zk_server.servers[0]
    fleet.register(BrokerSpec(1))
    before = watchers(server.client_port, f"{chroot}/brokers/ids/1")
    proxy = Proxy(("127.0.0.1", server.client_port))
    p = subprocess.Popen(
        [sys.executable, "-m", "kadmin", "brokers", "watch", "-z", f"127.0.0.1:{proxy.port}{chroot}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for_new_watcher(server.client_port, f"{chroot}/brokers/ids/1", before)
        proxy.cut()
        lost = p.stderr.readline()
        assert "lost the connection" in lost, lost
        back = p.stderr.readline()
        assert "reconnected" in back, back
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=30)
        proxy.close()


def test_a_connection_lost_while_the_watchs_first_read_is_answered_is_said_too(zk_server, chroot, fleet, mocker):
    """The window run 18 of the suite hit: the connection went while the watch's first read was being answered
    (its watchers already set on the server), before the loop counted itself as watching. The drop was not said,
    nor the reconnection: only the re-read. Here the cut is made at that moment, by wrapping the first read."""
    from kazoo.protocol.states import KazooState

    from kadmin.cluster.zookeeper import ZkCluster, ZkConnection

    server = zk_server.servers[0]
    fleet.register(BrokerSpec(1))
    proxy = Proxy(("127.0.0.1", server.client_port))
    said: list[str] = []
    c = ZkCluster(ZkConnection(hosts=f"127.0.0.1:{proxy.port}", chroot=chroot), on_connection=said.append).start()
    try:
        real_ids = c._ids
        cut = threading.Event()

        def ids_then_cut(*args, **kwargs):
            got = real_ids(*args, **kwargs)
            if not cut.is_set():  # the first read only: cut, and return once kazoo has seen the drop
                cut.set()
                proxy.cut()
                deadline = time.monotonic() + 30
                while c.zk.state == KazooState.CONNECTED and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert c.zk.state != KazooState.CONNECTED, "kazoo never saw the cut"
            return got

        mocker.patch.object(c, "_ids", side_effect=ids_then_cut)
        ticks = c.watch_brokers(60)
        first = next(ticks)
        assert set(first.generations) == {1}
        assert said[:1] == [f"lost the connection to {c.conn.where}; reconnecting"], said
        resynced = next(ticks)  # everything read again once back
        assert resynced.resynced and set(resynced.generations) == {1}
        assert len(said) == 2 and said[1].startswith("reconnected to 127.0.0.1:"), said
        ticks.close()
    finally:
        c.close()
        proxy.close()
