"""Loopback ports for the sandbox's servers, chosen so that no other process takes one before its server binds it.

A port found free by binding port 0 comes from the kernel's ephemeral range, the same range every outgoing
connection draws its local port from: between the choice and the JVM's bind (seconds, while a JVM starts), a
client connecting anywhere may take it, and the server dies with "Address already in use". Several sandboxes
started at once (parallel tests, two operators on one host) make that likely. So a port is chosen outside the
ephemeral range, and reserved: a marker file per port under a per-user directory, written under a lock, keeps
every other sandbox from choosing it for `RESERVE_SECONDS`; a node refreshes its marker each time it starts
(`hold_port`), which covers a restart's window as well.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from kadmin.errors import SandboxError

RESERVE_SECONDS = 900.0
# Linux's default ephemeral range is 32768-60999; a machine may set another (read below)
_DEFAULT_EPHEMERAL = (32768, 60999)
_FLOOR = 10000  # below it, well-known services (and other tools' defaults) are more likely
_ATTEMPTS = 500


def ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL


def candidate_ranges() -> list[tuple[int, int]]:
    """The port ranges outside the ephemeral one, widest first; the ephemeral one itself if nothing else is left."""
    lo, hi = ephemeral_range()
    ranges = [(_FLOOR, lo - 1), (hi + 1, 65535)]
    ranges = [r for r in ranges if r[1] - r[0] >= 1000]
    return sorted(ranges, key=lambda r: r[0] - r[1]) or [(lo, hi)]


def _registry() -> Path:
    d = Path(os.environ.get("KADMIN_PORTS_DIR") or Path(tempfile.gettempdir()) / f"kadmin-ports-{os.getuid()}")
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


@contextlib.contextmanager
def _locked(d: Path) -> Iterator[None]:
    with open(d / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _reserved(marker: Path, now: float) -> bool:
    try:
        return now - marker.stat().st_mtime < RESERVE_SECONDS
    except FileNotFoundError:
        return False


def _prune(d: Path, now: float) -> None:
    """Forget the reservations that have lapsed (their servers bound the ports long ago, or never will)."""
    for marker in d.iterdir():
        if marker.name.isdigit() and not _reserved(marker, now):
            with contextlib.suppress(FileNotFoundError):
                marker.unlink()


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
                return False
            raise
    return True


def free_port() -> int:
    """A loopback port outside the ephemeral range that nothing binds now and no other sandbox reserved."""
    d = _registry()
    ranges = candidate_ranges()
    rng = random.SystemRandom()
    with _locked(d):
        now = time.time()
        _prune(d, now)
        for _ in range(_ATTEMPTS):
            lo, hi = ranges[0] if len(ranges) == 1 or rng.random() < 0.8 else rng.choice(ranges[1:])
            port = rng.randint(lo, hi)
            marker = d / str(port)
            if _reserved(marker, now) or not _bindable(port):
                continue
            marker.touch()
            os.utime(marker, (now, now))
            return port
    raise SandboxError(f"no free loopback port found in {_ATTEMPTS} tries outside the ephemeral range "
                       f"{'-'.join(map(str, ephemeral_range()))}; reservations are in {d}")


def hold_port(port: int) -> None:
    """Refresh `port`'s reservation (a node about to start binds it again): no other sandbox chooses it meanwhile."""
    d = _registry()
    with _locked(d):
        (d / str(port)).touch()
