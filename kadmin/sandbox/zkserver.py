"""Run real ZooKeeper servers on loopback: Debian's `zookeeper` jars, else the ones inside pyspark.

Used by `kadmin sandbox` and by the test suite's fixtures (the same code).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kadmin.errors import SandboxError
from kadmin.sandbox.ports import free_port, hold_port

DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
DEBIAN_EXTRA_JARS = ("/usr/share/java/netty-codec.jar",)
JVM_FLAGS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


def jvm_flags(heap: str | None = None) -> list[str]:
    """JVM_FLAGS, with -Xmx`heap` instead of the default when given (millions of znodes need GiBs)."""
    if heap is None:
        return list(JVM_FLAGS)
    return [f"-Xmx{heap}" if f.startswith("-Xmx") else f for f in JVM_FLAGS]


def zookeeper_classpath() -> str:
    """The classpath of a ZooKeeper server on this machine, or a SandboxError saying how to get one."""
    override = os.environ.get("KADMIN_ZOOKEEPER_CLASSPATH")
    if override:
        return override
    if os.path.exists(DEBIAN_JAR):
        # The jar's manifest Class-Path brings in its runtime dependencies, except Netty's codec,
        # which the Netty connection factory (TLS client ports) needs.
        extra = [j for j in DEBIAN_EXTRA_JARS if os.path.exists(j)]
        return ":".join([DEBIAN_JAR, *extra])
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        jars = Path(list(spec.submodule_search_locations)[0]) / "jars"
        if glob.glob(str(jars / "zookeeper-*.jar")):
            return str(jars / "*")
    raise SandboxError(
        "no ZooKeeper server found: install Debian's `zookeeper` package "
        "(apt-get install -y zookeeper default-jre-headless) or pip install pyspark"
    )


def java_binary() -> str:
    java = shutil.which("java")
    if java is None:
        raise SandboxError("no `java` on PATH: install a JRE (apt-get install -y default-jre-headless)")
    return java


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter word and read the whole answer (until the server closes)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            d = s.recv(65536)
            if not d:
                break
            chunks.append(d)
    return b"".join(chunks).decode("utf-8", "replace")


def server_mode(host: str, port: int, timeout: float = 1.0) -> str | None:
    """`standalone`, `leader`, `follower`, `observer`, or None when not serving."""
    try:
        out = four_letter_word(host, port, "srvr", timeout)
    except OSError:
        return None
    for line in out.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


@dataclass
class ZkServer:
    """One ZooKeeper server process (standalone or an ensemble member)."""

    data_dir: Path
    client_port: int
    myid: int = 0
    peers: Sequence[tuple[int, int, int]] = ()  # (myid, quorum port, election port)
    peer_client_ports: Mapping[int, int] = field(default_factory=dict)  # myid -> its client port, in server.N lines
    tick_ms: int = 500
    pid: int | None = None
    extra_cfg: dict[str, str] = field(default_factory=dict)
    heap: str | None = None  # the JVM's -Xmx (e.g. "3g"); None: JVM_FLAGS' 256 MiB

    @property
    def cfg_path(self) -> Path:
        return self.data_dir / "zoo.cfg"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    def write_config(self) -> None:
        data = self.data_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_ms}",
            f"dataDir={data}",
            f"clientPort={self.client_port}",
            "clientPortAddress=127.0.0.1",
            "4lw.commands.whitelist=*",
            "admin.enableServer=false",
            "preAllocSize=1024",
            "maxClientCnxns=0",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
        ]
        if self.peers:
            lines += ["initLimit=20", "syncLimit=10"]
            # server.N=host:quorum:election[;clientHost:clientPort]: with the client address, the membership that
            # `conf` shows tells where clients reach each member (how `quorum describe` names one that is down)
            lines += [f"server.{i}=127.0.0.1:{q}:{e}" + (f";127.0.0.1:{self.peer_client_ports[i]}"
                                                        if i in self.peer_client_ports else "")
                      for i, q, e in self.peers]
            (data / "myid").write_text(f"{self.myid}\n")
        lines += [f"{k}={v}" for k, v in self.extra_cfg.items()]
        self.cfg_path.write_text("\n".join(lines) + "\n")

    def start(self) -> int:
        if not self.cfg_path.exists():
            self.write_config()
        hold_port(self.client_port)
        log = open(self.data_dir / "zookeeper.log", "ab")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            [java_binary(), *jvm_flags(self.heap), "-cp", zookeeper_classpath(), MAIN, str(self.cfg_path)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.pid = proc.pid
        self._proc = proc
        return proc.pid

    def alive(self) -> bool:
        return self.pid is not None and pid_alive(self.pid)

    def mode(self) -> str | None:
        return server_mode("127.0.0.1", self.client_port)

    def stop(self, sig: int = signal.SIGTERM, wait: float = 10.0) -> None:
        if self.pid is None:
            return
        stop_pid(self.pid, sig, wait)
        proc = getattr(self, "_proc", None)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
        self.pid = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; treat it as dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def stop_pid(pid: int, sig: int = signal.SIGTERM, wait: float = 10.0) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not pid_alive(pid):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def tls_config(secure_port: int, server_pem: Path, ca_pem: Path, client_auth: str = "none",
               port_unification: bool = False) -> dict[str, str]:
    """zoo.cfg lines for a TLS client port (PEM key+certificate and CA, Netty connection factory).

    `port_unification` makes the plain clientPort accept TLS clients too (client.portUnification).
    """
    cfg = {
        "secureClientPort": str(secure_port),
        "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
        "ssl.keyStore.location": str(server_pem),
        "ssl.keyStore.type": "PEM",
        "ssl.trustStore.location": str(ca_pem),
        "ssl.trustStore.type": "PEM",
        "ssl.clientAuth": client_auth,
    }
    if port_unification:
        cfg["client.portUnification"] = "true"
    return cfg


class Ensemble:
    """1 (standalone) or 3 ZooKeeper servers on loopback under `base`."""

    def __init__(self, base: Path, size: int = 1, tick_ms: int = 500, heap: str | None = None) -> None:
        if size not in (1, 3):
            raise SandboxError(f"ensemble size must be 1 or 3, not {size}")
        self.base = Path(base)
        peers = [(i, free_port(), free_port()) for i in range(1, size + 1)] if size > 1 else []
        clients = {i: free_port() for i in range(1, size + 1)}
        self.servers = [
            ZkServer(self.base / f"zk{i}", clients[i], myid=i if size > 1 else 0, peers=peers,
                     peer_client_ports=clients if peers else {}, tick_ms=tick_ms, heap=heap)
            for i in range(1, size + 1)
        ]

    @property
    def connect_string(self) -> str:
        return ",".join(s.address for s in self.servers)

    @property
    def hosts(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", s.client_port) for s in self.servers]

    def start(self, timeout: float = 60.0) -> None:
        for s in self.servers:
            s.write_config()
            s.start()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [s for s in self.servers if s.alive()]
            if not live:
                break
            modes = [s.mode() for s in live]
            if all(modes) and (len(self.servers) == 1 or "leader" in modes):
                return
            time.sleep(0.05)
        logs = [s.data_dir / "zookeeper.log" for s in self.servers]
        tail = ""
        for log in logs:
            if log.exists():
                tail = log.read_text(errors="replace")[-600:]
        self.stop()
        raise SandboxError(f"ZooKeeper did not start within {timeout:.0f}s; log tail: {tail.strip()[-300:]}")

    def leader(self) -> ZkServer | None:
        for s in self.servers:
            if s.alive() and s.mode() in ("leader", "standalone"):
                return s
        return None

    def stop(self) -> None:
        for s in self.servers:
            s.stop()
