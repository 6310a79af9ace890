"""Servers that stop answering: what a hung ZooKeeper or broker looks like to a client.

- `Hung`: accepts TCP connections and never sends a byte (a black hole from the first byte).
- `Proxy`: forwards to a real server until it is frozen, then forwards nothing more either way while keeping every
  connection open and accepting new ones, as a SIGSTOPped server does (the kernel still accepts). It freezes when
  told (`freeze()`) or by itself when a client sends bytes that `freeze_on` picks (e.g. a request for
  `/controller`), so a test can freeze a server at an exact point of a command without watching the command.
  `kill()` instead closes every connection and stops listening (a SIGKILLed server: refused from then on);
  `delay` slows every answer down (a slow server).
- `signalled(pid, sig)`: SIGSTOP or SIGKILL a real server and return once the signal has taken hold.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

R = TypeVar("R")


class Hung:
    """Accepts TCP connections and never sends a byte; `accepted` is set at the first connection."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.accepted = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.conns.append(self.sock.accept()[0])
                self.accepted.set()

    def __enter__(self) -> Hung:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


SIGNAL_HOLDS = 60.0  # s for a signal to take hold of every thread: the run queue at load 16 is milliseconds


def thread_states(pid: int) -> list[str] | None:
    """The state letter of each of `pid`'s threads (/proc/PID/task/TID/stat), None once the process is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return None
    states = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                line = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue  # that thread ended meanwhile
        states.append(line[line.rindex(")") + 2])  # after the command name, which may hold spaces and parentheses
    return states


def signalled(pid: int, sig: int) -> None:
    """Send `sig` (SIGSTOP or SIGKILL) to `pid` and return once every thread is stopped (T) or has exited (Z, X,
    gone). kill() returns before that: the kernel stops or kills each thread only as it next returns to user space,
    so on a loaded machine a thread still running can answer a request sent after kill() returned. CI's run of stop
    46 saw it: a ZooKeeper SIGSTOPped by a proxy's trigger answered the very read the proxy forwarded next."""
    assert sig in (signal.SIGSTOP, signal.SIGKILL), sig
    held = {"T", "t"} if sig == signal.SIGSTOP else {"Z", "X"}
    os.kill(pid, sig)
    end = time.monotonic() + SIGNAL_HOLDS
    while True:
        states = thread_states(pid)
        if states is None or all(s in held for s in states):
            return
        if time.monotonic() > end:
            raise AssertionError(f"signal {sig} sent to {pid} has not taken hold after {SIGNAL_HOLDS:g} s: "
                                 f"thread states {''.join(sorted(states))}")
        time.sleep(0.001)  # between looks only: the threads' states are the answer


def run_queue_s() -> float:
    """Seconds this thread has waited on a run queue so far: runnable, but given no CPU (/proc's schedstat)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def timed(run: Callable[..., R], *argv: str, **kw: Any) -> tuple[R, float]:
    """`run(*argv, **kw)` in this thread and the seconds it took, less the time this thread waited for a CPU. A
    command's time bounds are on what it waits for and the work it does; on a machine at load 15 (a seventh of a
    core each) the run queue alone stretched a 2 s wait past 4 s of wall time. A wait that is too long, or work
    that burns CPU, still counts in full."""
    start, queued = time.monotonic(), run_queue_s()
    r = run(*argv, **kw)
    return r, time.monotonic() - start - (run_queue_s() - queued)


@pytest.fixture
def hung() -> Iterator[Hung]:
    h = Hung()
    yield h
    h.close()


def zookeeper_request(op: int, path: bytes) -> Callable[[bytes], bool]:
    """For `Proxy(freeze_on=...)` in front of ZooKeeper: a chunk holding a request of type `op` (1 create, 4 getData,
    8 getChildren, 12 getChildren2, 14 multi, ...) whose bytes hold `path`. A request frame is
    `int length | int xid | int type | body`."""
    def hit(chunk: bytes) -> bool:
        at = 0
        while at + 12 <= len(chunk):
            length = int.from_bytes(chunk[at:at + 4], "big")
            frame = chunk[at + 4:at + 4 + length]
            if int.from_bytes(frame[4:8], "big", signed=True) == op and path in frame:
                return True
            at += 4 + max(length, 0)
        return False

    return hit


def kafka_request_other_than_api_versions(chunk: bytes) -> bool:
    """For `Proxy(freeze_on=...)` in front of a Kafka node: a client's first bytes on a connection are its
    ApiVersions request (API key 18, after the 4-byte size) and it waits for the answer before the next request,
    so a chunk starting with another key is a request after connecting: freezing there is a node black-holed
    after the connection was made."""
    return len(chunk) >= 6 and int.from_bytes(chunk[4:6], "big") != 18


class Proxy:
    """A TCP proxy to `target` (HOST:PORT) that can freeze (see the module's docstring).

    `freeze_on(chunk)`: called with each chunk a client sends; True freezes the proxy before that chunk is
    forwarded (or, with `kill_on_trigger`, kills it). `frozen` is set once frozen, `killed` once killed.
    """

    def __init__(self, target: str, freeze_on: Callable[[bytes], bool] | bytes | None = None,
                 kill_on_trigger: bool = False, delay: float = 0.0) -> None:
        host, _, port = target.rpartition(":")
        self.target = (host, int(port))
        if isinstance(freeze_on, bytes):
            pattern = freeze_on
            self.freeze_on: Callable[[bytes], bool] | None = lambda chunk: pattern in chunk
        else:
            self.freeze_on = freeze_on
        self.kill_on_trigger = kill_on_trigger
        self.delay = delay
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.frozen = threading.Event()
        self.killed = threading.Event()
        self._flowing = threading.Event()  # cleared while frozen: the pumps hold what they read
        self._flowing.set()
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client = self.sock.accept()[0]
                try:
                    upstream = socket.create_connection(self.target, timeout=10)
                except OSError:
                    client.close()
                    continue
                upstream.settimeout(None)
                with self._lock:
                    self._socks += [client, upstream]
                threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
                threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if from_client and self.freeze_on is not None and not self.frozen.is_set() and self.freeze_on(data):
                    if self.kill_on_trigger:
                        self.kill()
                        return
                    self.freeze()
                self._flowing.wait()
                if self.killed.is_set():
                    return
                if not from_client and self.delay:
                    time.sleep(self.delay)
                dst.sendall(data)
        if not self.frozen.is_set():  # one side closed: close the other (a frozen server closes nothing)
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def freeze(self) -> None:
        """Forward nothing more either way; connections stay open and new ones are accepted (SIGSTOP)."""
        self._flowing.clear()
        self.frozen.set()

    def thaw(self) -> None:
        """Forward again, what was held first (SIGCONT)."""
        self.frozen.clear()
        self._flowing.set()

    def kill(self) -> None:
        """Close every connection and stop listening: connecting is refused from now on (SIGKILL)."""
        self.killed.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # stops listening now (close alone waits for accept() to return)
        self.sock.close()
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self._flowing.set()  # release the pumps: they see `killed` and end

    def close(self) -> None:
        self.kill()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
