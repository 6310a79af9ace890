"""The ZooKeeper -> KRaft migration (KIP-866) rehearsed on kadmin's sandbox (`sandbox up --mode migration`).

`Migration` moves the nodes of a migration sandbox through their phases with the sandbox's own commands (kill,
phase, start: what a roll's hooks run) and waits for what the controllers log. `observe()` records what a client
can see at a point of the migration: ZooKeeper's znodes, DescribeQuorum, DescribeCluster from each node,
ApiVersions (its ZkMigrationReady flag and finalized features), Kafka's own tools (kafka-metadata-quorum,
kafka-features, kafka-configs through --bootstrap-controller) and the controllers' migration log lines.

Run as a script it drives real Kafka 3.9.1 through the whole migration and a rollback, and writes every
observation as JSON (the referee for `kadmin migration status`; docs/migration-observed.md explains it):

    PYTHONPATH=. python -m tests.support.migration --out docs/migration-observed.json [--kafka-home DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.support.kafka import KAFKA_3_9, kafka_home, tool, zk_client
from tests.support.kafka_wire import exchange, request
from tests.support.sandbox import Sandbox, sandbox

QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
CONFIGS = "kafka.admin.ConfigCommand"

# what the 3.9.1 controllers log at each step (KRaftMigrationDriver, FeatureControlManager, QuorumController)
PRE_MIGRATION = "changing the migration state from NONE to PRE_MIGRATION"
COPY_DONE = "Completed migration of metadata from ZooKeeper to KRaft"
DUAL_WRITE = "from KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE state"
FINALIZED = "changing the migration state from MIGRATION to POST_MIGRATION"
MIGRATION_LINE = re.compile(r"KRaftMigrationDriver id=\d+\] \d+ transitioning|ZkMigrationStateRecord|"
                            r"Completed migration|pre-migration mode|Completing the ZK migration|"
                            r"Finalizing|migration state|ZkMigrationState", re.IGNORECASE)


class Migration:
    def __init__(self, sb: Sandbox, timeout: float = 300.0) -> None:
        self.sb = sb
        self.timeout = timeout
        self.marks: dict[Path, int] = {}  # controller log -> bytes already reported by new_log_lines()

    # ------------------------------------------------------------------ the sandbox's own commands
    def ok(self, *args: str) -> str:
        r = self.sb.run(*args)
        assert r.returncode == 0, f"kadmin {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-1500:]}"
        return r.stdout

    def status(self) -> dict[str, Any]:
        return self.sb.status()

    def ids(self, role: str) -> list[int]:
        return sorted(p["id"] for p in self.status()["processes"] if p["role"] == role)

    def roll(self, node_id: int, phase: str) -> None:
        """What a roll's hooks run for one node: stop it, configure its phase, start it (waits as `start` does)."""
        self.ok("sandbox", "kill", str(node_id))
        self.ok("sandbox", "phase", str(node_id), phase)
        self.ok("sandbox", "start", str(node_id))

    # ------------------------------------------------------------------ the controllers' logs
    def controller_logs(self) -> list[Path]:
        return sorted(self.sb.dir.glob("controller-*/logs/server.log"))

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.controller_logs())

    def wait_log(self, needle: str, timeout: float | None = None) -> str:
        """The first controller log line holding `needle`, once one does (polls the files)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for line in self.log_text().splitlines():
                if needle in line:
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no controller logged {needle!r} within {timeout or self.timeout} s")
            time.sleep(0.25)

    def new_log_lines(self) -> list[str]:
        """The controllers' migration lines logged since the last call (each cut to 400 characters)."""
        out = []
        for p in self.controller_logs():
            with open(p, "rb") as f:
                f.seek(self.marks.get(p, 0))
                data = f.read()
                self.marks[p] = f.tell()
            out += [f"{p.parent.parent.name}: {ln[:400]}" for ln in data.decode(errors="replace").splitlines()
                    if MIGRATION_LINE.search(ln)]
        return out

    def quorum_leader(self) -> int:
        return int(describe_quorum(self.status()["bootstrap_controllers"])["leader"])


# ---------------------------------------------------------------------------------------- ZooKeeper
kazoo = zk_client  # a KazooClient on the connect string for the duration (tests/support/kafka.py)


def _decode(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace")


def znodes(connect: str) -> dict[str, Any]:
    """/controller, /controller_epoch, /migration and /brokers/ids/* under the sandbox's chroot: content and stat
    (None: the znode does not exist)."""
    from kazoo.exceptions import NoNodeError

    out: dict[str, Any] = {}
    with kazoo(connect) as k:
        ids = sorted(k.get_children("/brokers/ids"), key=int) if k.exists("/brokers/ids") else []
        for path in ["/controller", "/controller_epoch", "/migration", *(f"/brokers/ids/{i}" for i in ids)]:
            try:
                data, stat = k.get(path)
            except NoNodeError:
                out[path] = None
                continue
            out[path] = {"data": _decode(data), "czxid": stat.czxid, "mzxid": stat.mzxid, "version": stat.version,
                         "ephemeral": bool(stat.ephemeralOwner)}
    return out


def delete_znodes(connect: str, *paths: str) -> dict[str, Any]:
    """Kafka's rollback step: `get /migration`, then `rmr` each path; returns what each held."""
    held = {}
    with kazoo(connect) as k:
        for p in paths:
            if k.exists(p):
                held[p] = _decode(k.get(p)[0])
                k.delete(p, recursive=True)
    return held


# ---------------------------------------------------------------------------------------- the Kafka protocol
def _uvarint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _compact_str(buf: bytes, i: int) -> tuple[str, int]:
    n, i = _uvarint(buf, i)
    return buf[i:i + n - 1].decode(), i + n - 1


def _skip_tags(buf: bytes, i: int) -> int:
    n, i = _uvarint(buf, i)
    for _ in range(n):
        _, i = _uvarint(buf, i)
        size, i = _uvarint(buf, i)
        i += size
    return i


def api_versions(port: int) -> dict[str, Any]:
    """ApiVersions v3 (raw, from the protocol guide): the tagged fields kafka-python drops, ZkMigrationReady
    ("set by a KRaft controller if the required configurations for ZK migration are present") and the
    finalized features with their epoch."""
    body = b"\x07kadmin\x02" + b"1" + b"\x00"  # compact strings name, version; no tagged fields
    frame = exchange(port, request(18, 3, body, header_version=2))
    i = 4  # response header v0: the correlation id
    (error,) = struct.unpack_from(">h", frame, i)
    n, i = _uvarint(frame, i + 2)
    keys = {}
    for _ in range(n - 1):
        k, lo, hi = struct.unpack_from(">hhh", frame, i)
        keys[k] = hi
        i = _skip_tags(frame, i + 6)
    i += 4  # throttle
    tags, i = _uvarint(frame, i)
    out: dict[str, Any] = {"error": error, "zk_migration_ready": None, "finalized_features_epoch": None,
                           "finalized_features": None, "controlled_shutdown_v": keys.get(7),
                           "broker_registration_v": keys.get(62), "api_keys": len(keys)}
    for _ in range(tags):
        tag, i = _uvarint(frame, i)
        size, i = _uvarint(frame, i)
        field = frame[i:i + size]
        if tag == 1:
            out["finalized_features_epoch"] = struct.unpack(">q", field)[0]
        elif tag == 2:
            feats, j = {}, 0
            m, j = _uvarint(field, j)
            for _ in range(m - 1):
                name, j = _compact_str(field, j)
                hi, lo = struct.unpack_from(">hh", field, j)
                feats[name] = hi
                j = _skip_tags(field, j + 4)
            out["finalized_features"] = feats
        elif tag == 3:
            out["zk_migration_ready"] = bool(field[0])
        i += size
    return out


def describe_cluster(bootstrap: str, controllers: bool = False) -> dict[str, Any]:
    """DescribeCluster (kadmin's client, kafka-python underneath): the ids listed with their fencing, and the
    controller id the node names."""
    from kadmin.cluster.kraft import KraftClient

    client = KraftClient(bootstrap, {}, 10.0, controllers=controllers)
    try:
        d = client.describe_cluster()
    finally:
        client.close()
    return {"controller_id": d.controller_id, "nodes": {b.id: {"fenced": b.fenced, "port": b.port}
                                                        for b in d.brokers}}


def describe_quorum(bootstrap_controllers: str) -> dict[str, Any]:
    from kadmin.cluster.kraft import KraftClient

    client = KraftClient(bootstrap_controllers, {}, 10.0, controllers=True)
    try:
        q = client.describe_quorum()[0]
    finally:
        client.close()
    return {"leader": q.leader_id, "epoch": q.leader_epoch, "voters": sorted(v.id for v in q.voters),
            "observers": sorted(o.id for o in q.observers)}


def _tool(home: Path, main: str, *args: str) -> str:
    r = tool(home, main, *args, check=False, timeout=120)
    return (r.stdout.strip() + (f"\n[exit {r.returncode}] {r.stderr.strip()[-600:]}" if r.returncode else ""))


def _config_lines(text: str) -> list[str]:
    keys = ("zookeeper.metadata.migration.enable=", "zookeeper.connect=", "process.roles=",
            "inter.broker.protocol.version=", "controller.quorum.voters=")
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith(keys) or "exit" in ln[:8]]


def observe(m: Migration, home: Path, label: str) -> dict[str, Any]:
    """Everything a client sees now, from ZooKeeper and from each running node."""
    st = m.status()
    procs = {(p["role"], p["id"]): p for p in st["processes"] if p["role"] in ("broker", "controller")}
    running = {k: p for k, p in procs.items() if p["alive"]}
    bc = st.get("bootstrap_controllers")
    brokers = [p for (role, _), p in running.items() if role == "broker"]
    bs = ",".join(f"127.0.0.1:{p['port']}" for p in brokers)
    out: dict[str, Any] = {"label": label, "at": time.strftime("%H:%M:%S"),
                           "phases": {f"{r}-{i}": (p["phase"], "running" if p["alive"] else "stopped")
                                      for (r, i), p in procs.items()}}
    jobs: dict[str, Callable[[], Any]] = {}
    if st.get("zookeeper"):
        jobs["znodes"] = lambda: znodes(st["zookeeper"])
    for (role, i), p in running.items():
        jobs[f"api_versions {role}-{i}"] = lambda p=p: api_versions(p["port"])  # type: ignore[misc]
        jobs[f"describe_cluster via {role}-{i}"] = (  # type: ignore[misc]
            lambda p=p, role=role: describe_cluster(f"127.0.0.1:{p['port']}", controllers=role == "controller"))
    if bc and any(r == "controller" for r, _ in running):
        jobs["describe_quorum"] = lambda: describe_quorum(bc)
        jobs["tool: kafka-metadata-quorum describe --status"] = lambda: _tool(
            home, QUORUM, "--bootstrap-controller", bc, "describe", "--status")
        jobs["tool: kafka-metadata-quorum describe --replication"] = lambda: _tool(
            home, QUORUM, "--bootstrap-controller", bc, "describe", "--replication")
        jobs["tool: kafka-features --bootstrap-controller describe"] = lambda: _tool(
            home, FEATURES, "--bootstrap-controller", bc, "describe")
        ctrl = next(i for r, i in running if r == "controller")
        jobs[f"tool: kafka-configs --bootstrap-controller --describe broker {ctrl} --all"] = lambda: _config_lines(
            _tool(home, CONFIGS, "--bootstrap-controller", bc, "--describe", "--entity-type", "brokers",
                  "--entity-name", str(ctrl), "--all"))
    if bs:
        jobs["tool: kafka-features --bootstrap-server describe"] = lambda: _tool(
            home, FEATURES, "--bootstrap-server", bs, "describe")
        for p in brokers:
            jobs[f"tool: kafka-configs --bootstrap-server --describe broker {p['id']} --all"] = (  # type: ignore[misc]
                lambda p=p: _config_lines(_tool(home, CONFIGS, "--bootstrap-server", f"127.0.0.1:{p['port']}",
                                                "--describe", "--entity-type", "brokers", "--entity-name",
                                                str(p["id"]), "--all")))

    def run(job: Callable[[], Any]) -> Any:
        try:
            return job()
        except Exception as e:  # noqa: BLE001 - what failed is an observation too
            return {"error": f"{type(e).__name__}: {e}"[:400]}

    with ThreadPoolExecutor(3) as pool:
        results = dict(zip(jobs, pool.map(run, jobs.values()), strict=True))
    out.update(results)
    out["controller_log"] = m.new_log_lines()
    return out


# ---------------------------------------------------------------------------------------- the drive
PARTS = ("zk", "forward", "rollback", "none")


def drive(home: Path, base: Path, record: Callable[[dict[str, Any]], None], parts: tuple[str, ...] = PARTS) -> None:
    """zk: a ZooKeeper-mode cluster with no controllers (ZK). forward: ZK -> PRE_MIGRATION -> brokers migrating
    one by one -> MIGRATION -> brokers into KRaft one by one -> controllers finalized -> POST_MIGRATION. rollback:
    from MIGRATION back to ZooKeeper mode, on a cluster of its own. none: a KRaft cluster that never migrated."""
    if "zk" in parts:
        with sandbox(base / "zk", "--kafka-home", str(home), "--brokers", "3") as sb:
            record(observe(Migration(sb), home, "zk: a ZooKeeper-mode cluster, no controllers"))
    if "forward" in parts:
        _forward(home, base, record)
    if "rollback" in parts:
        _rollback(home, base, record)
    if "none" in parts:
        with sandbox(base / "kraft", "--kafka-home", str(home), "--mode", "kraft", "--brokers", "1") as sb:
            record(observe(Migration(sb), home, "none: a KRaft cluster that never migrated"))


def _forward(home: Path, base: Path, record: Callable[[dict[str, Any]], None]) -> None:
    with sandbox(base / "mig", "--kafka-home", str(home), "--mode", "migration", "--brokers", "3") as sb:
        m = Migration(sb)
        m.wait_log(PRE_MIGRATION)
        record(observe(m, home, "pre-migration: controllers up, brokers zk"))
        brokers = m.ids("broker")
        for n, b in enumerate(brokers, 1):
            m.roll(b, "migrating")
            if n < len(brokers):
                record(observe(m, home, f"pre-migration: {n} of {len(brokers)} brokers migrating"))
        m.wait_log(COPY_DONE)
        m.wait_log(DUAL_WRITE)
        record(observe(m, home, "migration: all brokers migrating, metadata copied (dual write)"))
        for n, b in enumerate(brokers, 1):
            m.roll(b, "kraft")
            record(observe(m, home, f"migration: {n} of {len(brokers)} brokers kraft"))
        leader = m.quorum_leader()
        for c in [c for c in m.ids("controller") if c != leader] + [leader]:
            m.roll(c, "finalized")
            if c != leader:
                record(observe(m, home, f"migration: controller {c} finalized (not the leader)"))
        m.wait_log(FINALIZED)
        record(observe(m, home, "post-migration: every controller finalized"))


def _rollback(home: Path, base: Path, record: Callable[[dict[str, Any]], None]) -> None:
    with sandbox(base / "rollback", "--kafka-home", str(home), "--mode", "migration", "--brokers", "3") as sb:
        m = Migration(sb)
        for b in m.ids("broker"):
            m.roll(b, "migrating")
        m.wait_log(DUAL_WRITE)
        m.new_log_lines()
        record(observe(m, home, "rollback: MIGRATION (brokers migrating), before the rollback"))
        for c in m.ids("controller"):  # "Deprovision the KRaft controller quorum"
            m.ok("sandbox", "kill", str(c))
        record(observe(m, home, "rollback: controllers stopped"))
        held = delete_znodes(sb.status()["zookeeper"], "/controller", "/migration")
        obs = observe(m, home, "rollback: /controller and /migration deleted")
        obs["deleted"] = held
        record(obs)
        for b in m.ids("broker"):
            m.roll(b, "zk")
        record(observe(m, home, "rollback: brokers zk again"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="JSON file for the observations")
    ap.add_argument("--kafka-home", type=Path, help="a Kafka 3.x installation (default: the fetched 3.9.1)")
    ap.add_argument("--dir", type=Path, help="where the sandboxes live (default: a temporary directory)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"which drives, of {','.join(PARTS)} (default: all)")
    ap.add_argument("--append", action="store_true", help="add to the observations already in --out")
    args = ap.parse_args(argv)
    home = args.kafka_home or kafka_home(KAFKA_3_9)
    parts = tuple(args.parts.split(","))
    seen: list[dict[str, Any]] = json.loads(args.out.read_text()) if args.append and args.out.exists() else []

    def record(obs: dict[str, Any]) -> None:
        seen.append(obs)
        args.out.write_text(json.dumps(seen, indent=1, default=str) + "\n")
        print(f"{obs['at']} {obs['label']}", file=sys.stderr, flush=True)

    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
        drive(home, args.dir, record, parts)
    else:
        with tempfile.TemporaryDirectory(prefix="kadmin-migration-") as d:
            drive(home, Path(d), record, parts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
