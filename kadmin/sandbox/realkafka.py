"""The sandbox's real-Kafka engine: Apache Kafka JVMs from any installation's `libs/*.jar`.

`kadmin sandbox up --kafka-home DIR` runs, on loopback, either N brokers in ZooKeeper mode (Kafka 3.x,
under the sandbox's real ZooKeeper), a KRaft cluster (1 or 3 controllers in a static quorum + N brokers), or
(`--mode migration`) the ZooKeeper-mode cluster plus 3 controllers ready to migrate it to KRaft (KIP-866),
each node configured for its migration phase (`PHASES`; `phase_properties`).
This module knows Kafka: versions, server.properties, log4j files, StorageTool, the JVM command line,
and what "registered" means (a /brokers/ids/<id> znode; a DescribeCluster row that is not fenced).
The sandbox manager owns the state file and the pid-identity rules for signalling processes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kadmin.errors import SandboxError
from kadmin.sandbox import cds
from kadmin.sandbox.ports import hold_port
from kadmin.sandbox.zkserver import java_binary

MODES = ("zk", "kraft", "migration")
CONTROLLERS = (3001, 3002, 3003)  # KRaft controller node ids (broker ids are 1..N)
# A migration sandbox's phases per role, in the order the migration goes (Kafka 3.9's "ZooKeeper to KRaft
# Migration"): a broker zk -> migrating (ZooKeeper mode, registered with the KRaft quorum too) -> kraft
# (process.roles=broker, node.id = its broker.id); a controller migrating (zookeeper.metadata.migration.enable)
# -> finalized (no migration flag, no ZooKeeper). Going back: a broker from migrating to zk (the documented
# rollback while the controllers are still in migration mode).
PHASES = {"broker": ("zk", "migrating", "kraft"), "controller": ("migrating", "finalized")}
JVM = ["-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
HEAP = {"broker": "-Xmx384m", "controller": "-Xmx256m", "tool": "-Xmx256m"}
_JAR = re.compile(r"^kafka(?:_2\.1[0-3]|-clients)-(\d+\.\d+\.\d+)(?:[-.][\w.-]*)?\.jar$")

# One config per logging backend in the sandbox directory; each JVM gets -Dkafka.logs.dir=<its dir>/logs.
LOG4J = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
"""
LOG4J2 = """\
appender.file.type=File
appender.file.name=FILE
appender.file.fileName=${sys:kafka.logs.dir}/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=FILE
logger.request.name=kafka.request.logger
logger.request.level=WARN
"""
TOOLS_LOG4J = "log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" \
              "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\nlog4j.appender.stderr.Target=System.err\n"
TOOLS_LOG4J2 = "appender.e.type=Console\nappender.e.name=E\nappender.e.target=SYSTEM_ERR\n" \
               "appender.e.layout.type=PatternLayout\nappender.e.layout.pattern=%p %m%n\n" \
               "rootLogger.level=WARN\nrootLogger.appenderRef.e.ref=E\n"

_children: list[subprocess.Popen[bytes]] = []  # kept so that a still-running child is not reported as leaked


def major(version: str) -> int:
    return int(version.split(".", 1)[0])


def _minor(version: str) -> tuple[int, int]:
    return major(version), int(version.split(".")[1])


def detect_version(home: Path) -> str:
    """Kafka's version from `HOME/libs/kafka_2.13-<v>.jar` (or kafka-clients-<v>.jar)."""
    libs = Path(home) / "libs"
    if not libs.is_dir():
        raise SandboxError(f"--kafka-home {home}: no libs/ directory (expected a Kafka installation's libs/*.jar)")
    found = {}
    for jar in libs.glob("*.jar"):
        m = _JAR.match(jar.name)
        if m:
            found[jar.name.startswith("kafka_")] = m.group(1)
    if not found:
        raise SandboxError(f"--kafka-home {home}: no kafka_2.13-<version>.jar or kafka-clients-<version>.jar "
                           f"in {libs}")
    if True not in found:
        raise SandboxError(f"--kafka-home {home}: {libs} holds Kafka's client jar but no server "
                           "(kafka_2.13-<version>.jar)")
    return found[True]


def check(home: Path, mode: str) -> str:
    """Validate an installation for `mode` before anything starts; returns the Kafka version."""
    if mode not in MODES:
        raise SandboxError(f"--mode {mode!r}: expected zk or kraft")
    version = detect_version(home)
    if mode in ("zk", "migration") and major(version) >= 4:
        raise SandboxError(f"--kafka-home {home} is Kafka {version}: ZooKeeper mode was removed in Kafka 4.0; "
                           "use --mode kraft (or a 3.x installation)")
    if mode == "migration" and _minor(version) < (3, 5):
        raise SandboxError(f"--kafka-home {home} is Kafka {version}: the sandbox's migration mode needs 3.5 or "
                           "newer (the ZooKeeper to KRaft migration is production-ready from 3.6)")
    if mode == "kraft" and _minor(version) < (3, 3):
        raise SandboxError(f"--kafka-home {home} is Kafka {version}: the sandbox's KRaft mode needs 3.3 or newer")
    java_binary()  # a SandboxError when there is no java
    return version


def new_cluster_id() -> str:
    """A random cluster id as Kafka writes one (URL-safe base64 of 16 bytes, never starting with '-')."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def write_logging(sandbox_dir: Path) -> None:
    (sandbox_dir / "log4j.properties").write_text(LOG4J)
    (sandbox_dir / "log4j2.properties").write_text(LOG4J2)
    (sandbox_dir / "tools-log4j.properties").write_text(TOOLS_LOG4J)
    (sandbox_dir / "tools-log4j2.properties").write_text(TOOLS_LOG4J2)


def _logging_flags(sandbox_dir: Path, version: str, tools: bool = False) -> list[str]:
    prefix = "tools-" if tools else ""
    if major(version) >= 4:  # log4j2
        return [f"-Dlog4j2.configurationFile={sandbox_dir / f'{prefix}log4j2.properties'}"]
    return [f"-Dlog4j.configuration=file:{sandbox_dir / f'{prefix}log4j.properties'}"]  # reload4j


def _internal_topics(brokers: int, version: str) -> dict[str, str]:
    rf = str(min(3, brokers))
    props = {
        "num.partitions": "1",
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        # small thread pools: two busy cores run the whole cluster
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "2",
        "log.cleaner.enable": "false",
    }
    if major(version) >= 4:
        props["share.coordinator.state.topic.replication.factor"] = rf
        props["share.coordinator.state.topic.min.isr"] = "1"
    return props


def zk_broker_properties(node: dict[str, Any], zk_connect: str, brokers: int, version: str) -> dict[str, str]:
    return {
        "broker.id": str(node["id"]),
        "zookeeper.connect": zk_connect,
        "zookeeper.session.timeout.ms": "6000",
        "zookeeper.connection.timeout.ms": "60000",
        "listeners": f"PLAINTEXT://127.0.0.1:{node['port']}",
        "log.dirs": str(Path(node["dir"]) / "data"),
        "controlled.shutdown.enable": "true",
        **_internal_topics(brokers, version),
    }


def voters(controllers: Sequence[dict[str, Any]]) -> str:
    return ",".join(f"{c['id']}@127.0.0.1:{c['port']}" for c in controllers)


def kraft_properties(node: dict[str, Any], controllers: Sequence[dict[str, Any]], brokers: int,
                     version: str) -> dict[str, str]:
    props = {
        "process.roles": node["role"],
        "node.id": str(node["id"]),
        "controller.quorum.voters": voters(controllers),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(Path(node["dir"]) / "data"),
        "num.io.threads": "2",
        "num.network.threads": "2",
        "background.threads": "2",
    }
    if node["role"] == "controller":
        props["listeners"] = f"CONTROLLER://127.0.0.1:{node['port']}"
    else:
        props["listeners"] = f"PLAINTEXT://127.0.0.1:{node['port']}"
        props["inter.broker.listener.name"] = "PLAINTEXT"
        props.update(_internal_topics(brokers, version))
    return props


def phase_properties(node: dict[str, Any], phase: str, zk_connect: str, controllers: Sequence[dict[str, Any]],
                     brokers: int, version: str) -> dict[str, str]:
    """A migration sandbox node's server.properties in `phase` (PHASES), as Kafka 3.9's migration guide has them.

    Broker, zk: the ZooKeeper-mode broker. migrating: the same broker plus inter.broker.protocol.version (this
    release), zookeeper.metadata.migration.enable, controller.quorum.voters, controller.listener.names and the
    CONTROLLER listener's protocol. kraft: process.roles=broker with node.id = the old broker.id, no ZooKeeper
    settings and no inter.broker.protocol.version (metadata.version rules); same log.dirs (the broker keeps its
    meta.properties v0) and port.
    Controller, migrating: a KRaft controller plus the migration flag, zookeeper.connect (with the chroot) and
    inter.broker.listener.name (the listener it sends the ZooKeeper brokers' RPCs to). finalized: a plain KRaft
    controller."""
    if phase not in PHASES[node["role"]]:
        raise SandboxError(f"{node['role']} {node['id']}: no phase {phase!r} "
                           f"(one of {', '.join(PHASES[node['role']])})")
    if node["role"] == "controller":
        props = kraft_properties(node, controllers, brokers, version)
        if phase == "migrating":
            props.update({"zookeeper.metadata.migration.enable": "true", "zookeeper.connect": zk_connect,
                          "zookeeper.session.timeout.ms": "6000", "inter.broker.listener.name": "PLAINTEXT"})
        return props
    if phase == "kraft":
        return kraft_properties(node, controllers, brokers, version)
    props = zk_broker_properties(node, zk_connect, brokers, version)
    if phase == "migrating":
        props.update({
            "inter.broker.protocol.version": "{}.{}".format(*_minor(version)),
            "zookeeper.metadata.migration.enable": "true",
            "controller.quorum.voters": voters(controllers),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        })
    return props


def write_config(node: dict[str, Any], props: dict[str, str]) -> Path:
    d = Path(node["dir"])
    (d / "logs").mkdir(parents=True, exist_ok=True)
    cfg = d / "server.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return cfg


def command(home: str, version: str, sandbox_dir: Path, node: dict[str, Any]) -> list[str]:
    """The JVM command line of a node (what bin/kafka-server-start.sh runs)."""
    return [java_binary(), HEAP[node["role"]], *JVM, *cds.flags(home), *_logging_flags(sandbox_dir, version),
            f"-Dkafka.logs.dir={Path(node['dir']) / 'logs'}", "-cp", f"{home}/libs/*", "kafka.Kafka",
            str(Path(node["dir"]) / "server.properties")]


def launch(home: str, version: str, sandbox_dir: Path, node: dict[str, Any]) -> tuple[int, list[str]]:
    """Start a node's JVM in its own session (returns at once); its stdout/stderr go to logs/stdout.log.
    Returns (pid, command line)."""
    logs = Path(node["dir"]) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    argv = command(home, version, sandbox_dir, node)
    hold_port(int(node["port"]))
    with open(logs / "stdout.log", "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    _children.append(proc)
    return proc.pid, argv


def format_storage(home: str, version: str, sandbox_dir: Path, nodes: Iterable[dict[str, Any]],
                   cluster_id: str, timeout: float = 300.0, release_version: str | None = None) -> None:
    """`kafka-storage format -t ID -c server.properties` for every node (in parallel), once, before the first
    start. A static quorum (controller.quorum.voters) needs neither --standalone nor --initial-controllers.
    `--cluster-id=ID` in one argument: a ZooKeeper-mode cluster's id may start with '-' (argparse would read it
    as an option). `release_version`: `--release-version X.Y`, the feature levels of that release instead of the
    newest."""
    procs = []
    for n in nodes:
        cmd = [java_binary(), HEAP["tool"], *JVM, *cds.flags(home, server=False),
               *_logging_flags(sandbox_dir, version, tools=True),
               "-cp", f"{home}/libs/*", "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
               "-c", str(Path(n["dir"]) / "server.properties"),
               *(["--release-version", release_version] if release_version else [])]
        procs.append((n, subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)))
    failed = []
    for n, p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        if p.returncode != 0:
            last = (err.strip() or out.strip()).splitlines()[-1:] or [f"exit {p.returncode}"]
            failed.append(f"{n['role']} {n['id']}: {last[0]}")
    if failed:
        raise SandboxError("kafka-storage format failed: " + "; ".join(failed))


def log_problem(node: dict[str, Any]) -> str:
    """The last ERROR/FATAL line of a node's logs (or its last line), to say why it did not come up."""
    lines: list[str] = []
    for name in ("server.log", "stdout.log"):
        f = Path(node["dir"]) / "logs" / name
        if f.exists():
            lines += f.read_text(errors="replace").splitlines()
    bad = [ln for ln in lines if " ERROR " in ln or " FATAL " in ln or "Exception" in ln]
    return ((bad or lines or ["(no log)"])[-1]).strip()[:400]


# ------------------------------------------------------------------------------------ what the cluster shows
def zk_view(hosts: Sequence[tuple[str, int]], chroot: str,
            ids: Iterable[int]) -> tuple[dict[int, tuple[int, int]], int | None]:
    """({broker id: (registered port, czxid)}, controller id) as ZooKeeper holds them under `chroot`.

    Raises OSError / a kadmin error when ZooKeeper cannot be read."""
    from kadmin.sandbox.zkwire import NoNodeError, ZkSession

    async def read() -> tuple[dict[int, tuple[int, int]], int | None]:
        s = await ZkSession.open(hosts, chroot=chroot, timeout_ms=6000)
        try:
            regs: dict[int, tuple[int, int]] = {}
            for i in ids:
                try:
                    data, stat = await s.get(f"/brokers/ids/{i}")
                except NoNodeError:
                    continue
                regs[i] = (int(json.loads(data or b"{}").get("port", -1)), int(stat.czxid))
            try:
                controller = int(json.loads((await s.get("/controller"))[0] or b"{}")["brokerid"])
            except (NoNodeError, KeyError, ValueError):
                controller = None
            return regs, controller
        finally:
            await s.close()

    return asyncio.run(asyncio.wait_for(read(), 20))


def zk_cluster_id(hosts: Sequence[tuple[str, int]], chroot: str) -> str | None:
    """The cluster id the ZooKeeper-mode brokers wrote to /cluster/id (None before the first broker did)."""
    from kadmin.sandbox.zkwire import NoNodeError, ZkSession

    async def read() -> str | None:
        s = await ZkSession.open(hosts, chroot=chroot, timeout_ms=6000)
        try:
            return str(json.loads((await s.get("/cluster/id"))[0] or b"{}")["id"])
        except (NoNodeError, KeyError, ValueError):
            return None
        finally:
            await s.close()

    return asyncio.run(asyncio.wait_for(read(), 20))


def kraft_view(bootstrap: str, controllers: bool = False,
               timeout: float = 5.0) -> tuple[dict[int, bool | None], int]:
    """({node id: fenced}, controller id) from DescribeCluster (v2 with fenced brokers through a broker;
    the controllers themselves through `controllers=True`). Raises a KadminError when nothing answers."""
    from kadmin.cluster.kraft import KraftClient

    client = KraftClient(bootstrap, {}, timeout, controllers=controllers)
    try:
        d = client.describe_cluster()
    finally:
        client.close()
    return {b.id: b.fenced for b in d.brokers}, d.controller_id


def quorum_view(bootstrap_controllers: str, timeout: float = 5.0) -> Any:
    """The metadata quorum as its leader reports it (DescribeQuorum through the controllers)."""
    from kadmin.cluster.kraft import KraftClient

    client = KraftClient(bootstrap_controllers, {}, timeout, controllers=True)
    try:
        return client.describe_quorum()[0]
    finally:
        client.close()
