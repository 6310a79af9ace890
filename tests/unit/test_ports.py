"""The sandbox's ports: outside the ephemeral range, never the same for two sandboxes choosing at once, never a
bound one. (CI lost a run to a KRaft controller whose port, found free by binding port 0, was taken by a client
connection before the JVM bound it.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kadmin.errors import SandboxError
from kadmin.sandbox import ports


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "ports"
    monkeypatch.setenv("KADMIN_PORTS_DIR", str(d))
    return d


def test_a_port_is_outside_the_ephemeral_range_and_reserved(registry: Path) -> None:
    lo, hi = ports.ephemeral_range()
    chosen = {ports.free_port() for _ in range(50)}
    assert len(chosen) == 50
    assert all(not lo <= p <= hi for p in chosen)
    assert {int(m.name) for m in registry.iterdir() if m.name.isdigit()} == chosen


def test_processes_choosing_at_once_never_get_the_same_port(registry: Path) -> None:
    code = ("import sys\nfrom kadmin.sandbox.ports import free_port\n"
            "print(' '.join(str(free_port()) for _ in range(40)))")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "KADMIN_PORTS_DIR": str(registry)}) for _ in range(6)]
    got = [int(p) for proc in procs for p in proc.communicate(timeout=60)[0].split()]
    assert all(proc.returncode == 0 for proc in procs)
    assert len(got) == 240 and len(set(got)) == 240


def test_a_bound_port_and_a_reserved_one_are_skipped(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        reserved = taken + 1 if taken < 65535 else taken - 1
        registry.mkdir(exist_ok=True)
        (registry / str(reserved)).touch()
        span = (min(taken, reserved), max(taken, reserved))
        monkeypatch.setattr(ports, "candidate_ranges", lambda: [span])
        with pytest.raises(SandboxError, match="no free loopback port"):
            ports.free_port()


def test_a_lapsed_reservation_is_forgotten_and_hold_renews_one(registry: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    registry.mkdir(exist_ok=True)
    marker = registry / str(port)
    marker.touch()
    old = time.time() - ports.RESERVE_SECONDS - 1
    os.utime(marker, (old, old))
    monkeypatch.setattr(ports, "candidate_ranges", lambda: [(port, port)])
    assert ports.free_port() == port  # lapsed: chosen again
    os.utime(marker, (old, old))
    ports.hold_port(port)  # a node restarting on it renews it
    with pytest.raises(SandboxError):
        ports.free_port()
