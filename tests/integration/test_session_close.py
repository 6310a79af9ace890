"""Ending a command fast without leaving its ZooKeeper session to expire (issue 13 §3).

A command's session is closed with ZooKeeper's CloseSession, written without waiting for the server's
reply, and the `kadmin` process then ends without tearing the interpreter down. Checked against a real
ZooKeeper: the server's own session list (the `dump` four-letter word) drops the session long before the
session timeout could have expired it. How fast the exit is is bench/brokers.py's business.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kadmin.cluster.zookeeper import ZkCluster, ZkConnection
from kadmin.cluster.zookeeper.reads import SMALL_READS
from kadmin.sandbox.fleet import BrokerSpec
from kadmin.sandbox.zkserver import four_letter_word
from tests.support.zkwatch import wait_for_new_watcher, watchers

pytestmark = pytest.mark.integration

SESSION_TIMEOUT = 60.0  # what kadmin asks for with a 60 s connect timeout; the test server grants up to 60 s
GONE_WITHIN = 20.0  # a closed session leaves the server's list in milliseconds; an expiring one after 60 s


def sessions(port: int) -> set[str]:
    """The session ids (hex) the server holds now: the SessionTracker part of `dump`."""
    out = four_letter_word("127.0.0.1", port, "dump", timeout=5.0)
    tracker = out.split("ephemeral nodes dump:")[0]
    return {w for line in tracker.splitlines() for w in line.split() if w.startswith("0x")}


def wait_gone(port: int, why: str, still_open: Callable[[set[str]], set[str]]) -> None:
    """Until `still_open(the server's sessions)` is empty: the sessions in question have left the server."""
    deadline = time.monotonic() + GONE_WITHIN
    while left := still_open(sessions(port)):
        assert time.monotonic() < deadline, f"sessions {left} still open {GONE_WITHIN:g}s after {why}: not " \
                                            f"closed, left to expire ({SESSION_TIMEOUT:g}s)"
        time.sleep(0.02)


class HoldingProxy:
    """A TCP proxy to a ZooKeeper server that, once `hold()` is called, keeps back what the server sends."""

    def __init__(self, port: int) -> None:
        self.upstream = ("127.0.0.1", port)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.holding = threading.Event()
        self.released = threading.Event()
        self.held = bytearray()
        self.socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.sock.accept()
                server = socket.create_connection(self.upstream)
                self.socks += [client, server]
                threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
                threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_server: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if from_server and self.holding.is_set() and not self.released.is_set():
                    self.held += data
                    continue
                dst.sendall(data)

    def hold(self) -> None:
        self.holding.set()

    def close(self) -> None:
        self.released.set()
        self.sock.close()
        for s in self.socks:
            with contextlib.suppress(OSError):
                s.close()


@pytest.fixture
def proxy(zk_server) -> Iterator[HoldingProxy]:
    p = HoldingProxy(zk_server.servers[0].client_port)
    yield p
    p.close()


def test_close_ends_the_session_without_waiting_for_the_reply(proxy, zk_server, fleet, chroot):
    """close() returns once CloseSession is written, while the server's reply is still held back, and the
    server has ended the session (before: kazoo waited for that reply, here until its ping timed out)."""
    port = zk_server.servers[0].client_port
    c = ZkCluster(ZkConnection(hosts=proxy.address, chroot=chroot, timeout=SESSION_TIMEOUT)).start()
    sid = hex(c.zk.client_id[0])
    assert sid in sessions(port)
    assert c.list_brokers().brokers == []  # reads through the proxy (kazoo and the bulk reader's session)
    proxy.hold()
    closer = threading.Thread(target=c.close, daemon=True)
    closer.start()
    closer.join(GONE_WITHIN)
    assert not closer.is_alive(), "close() waited for the reply to CloseSession"
    wait_gone(port, "close() returned", lambda now: now & {sid})
    assert not proxy.released.is_set()  # all this while the reply was held back


def test_a_command_process_closes_its_session_before_it_exits(fleet, zk, zk_server, chroot):
    """`brokers wait --epoch-gt` in a real process, as a rolling-bounce script runs it: its session is closed
    on the server, not left to expire, although the process ends without waiting for the reply."""
    port, path = zk_server.servers[0].client_port, f"{chroot}/brokers/ids/4"
    e = fleet.register(BrokerSpec(4))
    before = watchers(port, path)
    p = subprocess.Popen([sys.executable, "-m", "kadmin", "brokers", "wait", "4", "--epoch-gt", str(e),
                          "--timeout", str(SESSION_TIMEOUT), "-z", zk, "-o", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sid = wait_for_new_watcher(port, path, before, alive=lambda: p.poll() is None)
        assert sid in sessions(port)
        new = fleet.bounce(4)[1]
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert json.loads(out)["data"]["epoch"] == new
    wait_gone(port, "the process exited", lambda now: now & {sid})


def test_a_command_that_read_with_the_bulk_reader_closes_both_sessions(fleet, zk, zk_server):
    """`partitions list` over more than SMALL_READS partitions reads through kazoo and the pipelined bulk reader
    (two sessions): neither is left open."""
    port = zk_server.servers[0].client_port
    fleet.register(BrokerSpec(1))
    fleet.create_topic("wide", {p: [1] for p in range(SMALL_READS + 6)})
    before = sessions(port)
    p = subprocess.run([sys.executable, "-m", "kadmin", "partitions", "list", "-o", "json", "-z", zk,
                        "--connect-timeout", str(SESSION_TIMEOUT)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)["data"]) == SMALL_READS + 6
    wait_gone(port, "`partitions list` exited", lambda now: now - before)


def test_a_gate_on_a_small_cluster_opens_one_session(fleet, zk, zk_server):
    """`brokers max-epoch` reads a handful of znodes: through kazoo's session alone, no bulk reader's session
    (ZooKeeper logs the creation and the close of each session: a second one would cost two transactions)."""
    port = zk_server.servers[0].client_port
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2))
    proxy = HoldingProxy(port)  # counts the connections the command opens
    try:
        p = subprocess.run([sys.executable, "-m", "kadmin", "brokers", "max-epoch", "-z",
                            f"{proxy.address}{zk[zk.index('/'):]}"], capture_output=True, text=True, timeout=120)
    finally:
        proxy.close()
    assert p.returncode == 0, p.stderr
    assert len(proxy.socks) == 2  # one client connection (and its upstream side)


CHILD = """
import atexit, sys, threading

atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
{setup}
sys.argv = ["kadmin", *{argv!r}]
from kadmin.cli.main import main  # what the `kadmin` console script runs
main()
"""


def child(argv: list[str], setup: str = "", verbose: bool = False) -> subprocess.CompletedProcess[str]:
    """`kadmin ARGV` run as the console script runs it; with `verbose`, under `python -v`, which reports the
    interpreter's teardown (module clean-up at exit) on stderr, in lines such as `# cleanup[2] removing x`."""
    code = textwrap.dedent(CHILD).format(setup=setup, argv=argv)
    return subprocess.run([sys.executable, *(["-v"] if verbose else []), "-c", code], capture_output=True,
                          text=True, timeout=60)


def teardown_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("# cleanup[", "# destroy ", "# clear "))]


def test_the_process_ends_without_the_interpreter_teardown():
    p = child(["--version"], verbose=True)
    assert p.returncode == 0 and p.stdout.startswith("kadmin ")
    assert "atexit ran" in p.stderr.splitlines()  # atexit handlers run ...
    assert teardown_lines(p.stderr) == []  # ... the teardown (40-100 ms of freeing modules) does not


def test_exit_codes_and_output_are_as_before():
    from kadmin.cli.app import app
    from kadmin.cli.completion import script

    p = child(["brokers", "list", "--no-such-option"])
    assert p.returncode == 2 and "no such option" in p.stderr.lower()
    p = child(["completion", "bash"])  # more than stdout's 8 KiB buffer: the rest is flushed before the exit
    assert p.returncode == 0 and p.stderr == "atexit ran\n"
    assert p.stdout == script("bash", app)


def test_a_thread_still_running_is_waited_for_as_python_does():
    """A non-daemon thread still running: the normal exit, which waits for it, then tears down."""
    setup = ("def after_main():\n    threading.main_thread().join()  # ends as Python starts its exit\n"
             "    sys.stderr.write('thread done\\n')\n"
             "threading.Thread(target=after_main).start()")
    p = child(["--version"], setup, verbose=True)
    assert p.returncode == 0 and p.stdout.startswith("kadmin ")
    lines = p.stderr.splitlines()
    assert lines.index("thread done") < lines.index("atexit ran")
    assert teardown_lines(p.stderr)
