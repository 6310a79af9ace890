"""kadmin.formats.zk_txnlog / zk_snapshot against logs and snapshots written by real ZooKeeper servers.

One module-scoped server per version (Debian's 3.8 and the 3.9 inside pip's pyspark) runs a Kafka-like
workload (kadmin's emulated brokers) plus kazoo operations covering every txn type a standalone server
logs, with snapCount=1000 so that it rolls several log files and snapshots. Then the parsers are checked
against ZooKeeper's own TxnLogToolkit and SnapshotFormatter on the same files, against what live kazoo
reads returned, and on damaged copies.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import signal
import struct
import time
import zlib
from collections import Counter, namedtuple
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError
from kazoo.protocol.serialization import Create2, long_struct
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from kadmin.formats import zk_snapshot, zk_txnlog
from kadmin.formats.zk_txnlog import Damage, Txn
from kadmin.sandbox.fleet import ThreadedFleet
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import DEBIAN_JAR, ZkServer, four_letter_word
from tests.support.kafka import in_ci
from tests.support.zk_tools import Row, java, toolkit_rows

pytestmark = pytest.mark.integration

CHROOT = "/kafka"
TOPICS = {"orders": {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 5]}, "payments": {0: [1, 2], 1: [2, 3]}}
# Every txn type a standalone server logs for this workload (reconfig needs an ensemble with reconfigEnabled).
EXPECTED_TYPES = {"createSession", "closeSession", "create", "create2", "setData", "delete", "setACL", "multi",
                  "error", "createContainer", "createTTL", "deleteContainer"}


class CreateContainer(Create2):  # kazoo has no API for it: a Create2 request with type 19 and flags 4
    type = 19


class CreateTTL(namedtuple("CreateTTL", "path data acl flags ttl")):  # type 21: Create2 + long ttl, flags 5
    type = 21

    def serialize(self) -> bytearray:
        return Create2.serialize(self) + long_struct.pack(self.ttl)  # type: ignore[arg-type]

    deserialize = Create2.deserialize


# ----------------------------------------------------------------------------- ZooKeeper versions


def pyspark_jars() -> Path | None:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    jars = Path(list(spec.submodule_search_locations)[0]) / "jars"
    return jars if glob.glob(str(jars / "zookeeper-3*.jar")) else None


def zk39_classpaths() -> tuple[str, str, str]:
    """(server classpath, tools classpath, version) from pyspark's jars; fail (CI) or skip without them."""
    jars = pyspark_jars()
    if jars is None:
        msg = "pyspark (with its ZooKeeper 3.9 jars) is not installed: pip install pyspark"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    zk_jar = sorted(glob.glob(str(jars / "zookeeper-3*.jar")))[-1]
    version = re.search(r"zookeeper-(\d+\.\d+\.\d+)", zk_jar).group(1)  # type: ignore[union-attr]
    # The tools need only these (a JVM with all ~280 pyspark jars starts 3x slower).
    tools = [zk_jar]
    for pattern in ("zookeeper-jute-*.jar", "slf4j-api-*.jar", "commons-cli-*.jar", "snappy-java-*.jar"):
        found = sorted(glob.glob(str(jars / pattern)))
        if not found:
            tools = [str(jars / "*")]
            break
        tools.append(found[-1])
    return str(jars / "*"), ":".join(tools), version


# ----------------------------------------------------------------------------- the workload


@dataclass
class Generated:
    label: str
    version: str  # what the server's `srvr` said
    datadir: Path  # .../version-2
    tools_cp: str
    registrations: list[tuple[int, int]]  # (broker id, czxid) as live kazoo reads returned them
    final: dict[str, Any]  # path -> (data, ZnodeStat) read with kazoo after the workload
    mark_zxid: int  # every znode in `final` was last changed before this zxid
    holding_zxid: int  # the snapshot taken after mark_zxid, while the brokers were still registered
    app_multi: tuple[str, str]  # (the successful multi's created path, the failed multi's)
    logs: list[Path] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)
    toolkit: dict[Path, str] = field(default_factory=dict)  # TxnLogToolkit -d stdout per log
    formatter: dict[Path, str] = field(default_factory=dict)  # SnapshotFormatter stdout per snapshot
    txns: dict[Path, list[Txn]] = field(default_factory=dict)


FLEET_SESSION_MS = 10000
WORKLOAD_SESSION_MS = 15000


def wait_for(cond: Any, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def snapshot_in_progress(server: ZkServer) -> bool:
    """Whether the server is writing a snapshot now: its "Snapshot Thread", in a JVM thread dump.

    ZooKeeper's SyncRequestProcessor rolls the log and starts that thread before it passes the request
    on, so once a write is acknowledged, the snapshot it started (if any) shows in a dump until its
    file is whole. A roll while one is still being written starts none ("Too busy to snap, skipping"):
    counting snapshot files against log files cannot tell a skipped snapshot from a late one.
    """
    assert server.pid is not None
    log = server.data_dir / "zookeeper.log"  # the JVM's stdout
    with open(log, "rb") as f:
        pos = f.seek(0, os.SEEK_END)
        os.kill(server.pid, signal.SIGQUIT)  # HotSpot prints a thread dump to stdout and runs on
        deadline = time.monotonic() + 60
        text = ""
        while True:
            f.seek(pos)
            text = f.read().decode("utf-8", "replace")
            start = text.find("Full thread dump")
            end = text.find("JNI global refs", start) if start >= 0 else -1
            if end >= 0:
                return '"Snapshot Thread"' in text[start:end]
            assert time.monotonic() < deadline and server.alive(), f"no thread dump from ZooKeeper: {text[-500:]}"
            time.sleep(0.05)


def snapshot_zxids(datadir: Path) -> list[int]:
    return sorted(z for n in os.listdir(datadir) if (z := zk_txnlog.zxid_from_name(n, "snapshot")) is not None)


def run_workload(server: ZkServer) -> tuple[list[tuple[int, int]], dict[str, Any], int, int, tuple[str, str]]:
    # 15 s (the server allows up to 20 s), for the reason the brokers' sessions below have 10 s: this client's
    # 800-create rounds went seconds without a turn at load 16 and its 5 s session expired (run 35)
    zk = KazooClient(hosts=server.address, timeout=WORKLOAD_SESSION_MS / 1000)
    zk.start(timeout=15)
    # 10 s (the server allows up to 20 s): the brokers' sessions must outlive the bulk writes below on a loaded
    # 2-core machine, where this process's threads can go seconds without a turn (3 s expired three of them in
    # run 14); broker 4's crash then takes 10 s to expire
    fleet = ThreadedFleet([("127.0.0.1", server.client_port)], chroot=CHROOT, session_timeout_ms=FLEET_SESSION_MS)
    try:
        fleet.setup_cluster()
        regs: list[tuple[int, int]] = []

        def czxid(bid: int) -> int:
            return int(zk.get(f"{CHROOT}/brokers/ids/{bid}")[1].czxid)

        for bid in range(1, 6):
            fleet.register(bid)  # multi(create ephemeral, setData); the first one also elects a controller
            regs.append((bid, czxid(bid)))
        for name, assignment in TOPICS.items():
            fleet.create_topic(name, assignment)
        for bid in (2, 3):  # bounces: closeSession, createSession, multi
            fleet.bounce(bid)
            regs.append((bid, czxid(bid)))
        fleet.stop(1)  # the controller goes: broker 2 wins the next election (another multi)
        fleet.crash(4)  # no closeSession from the client: the server expires the session

        # kazoo: every other type
        zk.create("/app", b"v0")
        zk.create("/app/c2", b"x", include_data=True)  # create2
        zk.set("/app", b"v1", version=0)  # setData, logged version 1
        with pytest.raises(BadVersionError):
            zk.set("/app", b"bad", version=7)  # error -103
        with pytest.raises(NodeExistsError):
            zk.create("/app", b"dup")  # error -110
        seq = zk.create("/app/seq-", b"s", sequence=True)
        zk.create("/app/seq-", b"s", sequence=True)
        zk.create("/app/deep/er/path", b"", makepath=True)
        zk.create("/app/eph", b"e", ephemeral=True)  # listed by the closeSession of zk.stop()
        zk.set_acls("/app/c2", [make_digest_acl("u", "p", all=True), *OPEN_ACL_UNSAFE])
        tx = zk.transaction()
        tx.create("/app/m1", b"m")
        tx.set_data("/app", b"v2")
        tx.check("/app/c2", 0)
        tx.delete(seq)
        result = tx.commit()
        assert result[0] == "/app/m1" and result[2:] == [True, True], result
        tx = zk.transaction()  # fails on its check: a logged multi that changed nothing
        tx.create("/app/m2", b"m")
        tx.check("/app/c2", 5)
        tx.delete("/app/nope")
        assert isinstance(tx.commit()[1], BadVersionError)
        zk.delete("/app/deep/er/path")

        def call(req: Any) -> Any:
            result = zk.handler.async_result()
            zk._call(req, result)
            return result.get(timeout=5)

        call(CreateContainer("/cont", b"c", OPEN_ACL_UNSAFE, 4))
        zk.create("/cont/child", b"")
        zk.delete("/cont/child")  # the empty container goes with a deleteContainer from the server
        call(CreateTTL("/ttl", b"t", OPEN_ACL_UNSAFE, 5, 100))  # expires: deleteContainer too
        wait_for(lambda: zk.exists(f"{CHROOT}/brokers/ids/4") is None, what="broker 4's session to expire")
        wait_for(lambda: zk.exists("/cont") is None and zk.exists("/ttl") is None, what="the container manager")

        final: dict[str, Any] = {}
        for bid in zk.get_children(f"{CHROOT}/brokers/ids"):
            final[f"{CHROOT}/brokers/ids/{bid}"] = zk.get(f"{CHROOT}/brokers/ids/{bid}")
        for name, assignment in TOPICS.items():
            topic = f"{CHROOT}/brokers/topics/{name}"
            paths = [topic, f"{topic}/partitions"]
            for p in assignment:
                paths += [f"{topic}/partitions/{p}", f"{topic}/partitions/{p}/state"]
            for path in paths:
                final[path] = zk.get(path)
        for path in (f"{CHROOT}/controller", f"{CHROOT}/controller_epoch", "/app/c2", "/app/m1"):
            final[path] = zk.get(path)
        assert zk.exists("/app/m2") is None  # the failed multi's create did not happen
        mark_zxid = zk.create("/mark", b"", include_data=True)[1].czxid

        # Enough writes for snapCount=1000 (a roll every 501-1000 txns) to roll the log and snapshot a few
        # times, in rounds of 800: after each, wait until no snapshot is being written, so that the next
        # round's first roll always takes one (none is skipped as "too busy"). Stop once a snapshot taken
        # after the mark exists, before the brokers' sessions close: it holds their registrations.
        datadir = server.data_dir / "data" / "version-2"
        holding: int | None = None
        for i in range(12):
            for r in [zk.create_async(f"/app/bulk{i}-{j}", b"x" * 100) for j in range(800)]:
                r.get(timeout=60)
            wait_for(lambda: not snapshot_in_progress(server), timeout=120, what="the snapshot being written")
            snaps = snapshot_zxids(datadir)
            if len(zk_txnlog.log_files(os.listdir(datadir))) >= 3 and len(snaps) >= 3 and snaps[-1] >= mark_zxid:
                holding = snaps[-1]
                break
        assert holding is not None, os.listdir(datadir)
        return regs, final, mark_zxid, holding, ("/app/m1", "/app/m2")
    finally:
        fleet.shutdown()
        zk.stop()
        zk.close()


@pytest.fixture(scope="module", params=["3.8", "3.9"])
def gen(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    if request.param == "3.8":
        server_cp, tools_cp = None, DEBIAN_JAR
        if not os.path.exists(DEBIAN_JAR):
            pytest.fail("Debian's zookeeper package is missing (apt-get install -y zookeeper)")
    else:
        server_cp, tools_cp, _ = zk39_classpaths()
    base = tmp_path_factory.mktemp(f"zklogs{request.param}")
    server = ZkServer(base, free_port(), tick_ms=250,
                      extra_cfg={"snapCount": "1000", "extendedTypesEnabled": "true", "maxSessionTimeout": "20000"})
    saved = dict(os.environ)
    try:  # the server process inherits these
        os.environ["JAVA_TOOL_OPTIONS"] = "-Dznode.container.checkIntervalMs=100"
        if server_cp:
            os.environ["KADMIN_ZOOKEEPER_CLASSPATH"] = server_cp
        server.write_config()
        server.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        wait_for(lambda: server.mode() is not None, timeout=60, what=f"ZooKeeper {request.param} to start")
        srvr = four_letter_word("127.0.0.1", server.client_port, "srvr")
        version = re.search(r"Zookeeper version: (\S+)", srvr).group(1)  # type: ignore[union-attr]
        assert version.startswith(request.param), srvr
        regs, final, mark, holding, multis = run_workload(server)
        # the sessions' closes may have rolled the log too: let that snapshot finish before the stop
        wait_for(lambda: not snapshot_in_progress(server), timeout=120, what="the snapshot being written")
    finally:
        server.stop()  # SIGTERM: everything logged is on disk
    datadir = base / "data" / "version-2"
    g = Generated(request.param, version, datadir, tools_cp, regs, final, mark, holding, multis)
    names = os.listdir(datadir)
    g.logs = [datadir / n for n in zk_txnlog.log_files(names)]
    g.snapshots = sorted((datadir / n for n in names if zk_txnlog.zxid_from_name(n, "snapshot") is not None),
                         key=lambda p: zk_snapshot.snapshot_zxid(p.name))
    assert len(g.logs) >= 3 and len(g.snapshots) >= 3, names
    procs = {p: java(tools_cp, "org.apache.zookeeper.server.persistence.TxnLogToolkit", "-d", str(p))
             for p in g.logs}
    procs.update({p: java(tools_cp, "org.apache.zookeeper.server.SnapshotFormatter", str(p)) for p in g.snapshots})
    for p, proc in procs.items():
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{p.name}: exit {proc.returncode}"
        (g.toolkit if p in g.logs else g.formatter)[p] = out.decode("utf-8", "replace")
    g.txns = {p: list(zk_txnlog.iter_file(p)) for p in g.logs}
    yield g


# ----------------------------------------------------------------------------- TxnLogToolkit output

def my_rows(txns: list[Txn]) -> list[Row]:
    rows: list[Row] = []
    for t in txns:
        detail: Any
        if t.type == "closeSession":
            detail = t.paths
        elif t.type == "error":
            detail = t.error
        elif t.type == "createSession":
            detail = t.timeout
        elif t.type == "multi":
            detail = tuple((s.type.lower(), s.path if s.type != "error" else None) for s in t.sub)
        else:
            detail = t.path
        rows.append((t.session, t.cxid, t.zxid, t.type.lower(), detail))
    return rows


def test_same_txns_as_txn_log_toolkit(gen: Generated) -> None:
    total = 0
    for log in gen.logs:
        count, theirs = toolkit_rows(gen.toolkit[log])
        mine = gen.txns[log]
        assert count == len(mine) == len(theirs), log.name
        diffs = [(a, b) for a, b in zip(theirs, my_rows(mine), strict=True) if a != b]
        assert not diffs, f"{log.name}: {len(diffs)} differences, first: {diffs[:3]}"
        assert mine[0].zxid == zk_txnlog.log_zxid(log.name)  # a log is named after its first zxid
        total += count
    everything = [t for log in gen.logs for t in gen.txns[log]]
    zxids = [t.zxid for t in everything]
    assert zxids == sorted(zxids) and len(set(zxids)) == len(zxids) == total
    seen = Counter(t.type for t in everything)
    assert set(seen) >= EXPECTED_TYPES, f"missing {EXPECTED_TYPES - set(seen)}"
    assert "unknown" not in seen
    assert {s.type for t in everything for s in t.sub} >= {"create", "setData", "check", "delete", "error"}


def test_txn_semantics(gen: Generated) -> None:
    everything = [t for log in gen.logs for t in gen.txns[log]]
    by_path: dict[str, list[Txn]] = {}
    for t in everything:
        for x in (t, *t.sub):
            if x.path:
                by_path.setdefault(x.path, []).append(x)
    app_sets = [t for t in by_path["/app"] if t.type == "setData"]
    assert [(t.data, t.version) for t in app_sets] == [(b"v1", 1), (b"v2", 2)]  # the NEW version
    c2 = by_path["/app/c2"]
    assert c2[0].type == "create2" and c2[0].data == b"x" and c2[0].ephemeral is False
    assert [t.version for t in c2 if t.type == "setACL"] == [1]
    ok_path, failed_path = gen.app_multi
    ok = next(t for t in everything if t.type == "multi" and any(s.path == ok_path for s in t.sub))
    bad = next(t for t in everything if t.type == "multi" and any(s.path == failed_path for s in t.sub))
    assert not ok.failed and [s.type for s in ok.sub] == ["create", "setData", "check", "delete"]
    assert ok.sub[2].version == 1  # check("/app/c2", 0) is logged as the version + 1
    assert all((s.zxid, s.session, s.offset) == (ok.zxid, ok.session, ok.offset) for s in ok.sub)
    assert bad.failed and any(s.type == "error" and s.error == -103 for s in bad.sub)  # BadVersion
    errors = Counter(t.error for t in everything if t.type == "error")
    assert errors[-103] >= 1 and errors[-110] >= 1 and errors[-101] >= 1  # bad version, dup create, makepath
    assert all(t.failed for t in everything if t.type == "error")
    eph = next(t for t in by_path["/app/eph"] if t.type == "create")
    assert eph.ephemeral is True
    closes = [t for t in everything if t.type == "closeSession"]
    assert any(t.session == eph.session and "/app/eph" in t.paths for t in closes)
    # broker 4 crashed: its session was expired by the server (cxid 0), listing its registration
    assert any(f"{CHROOT}/brokers/ids/4" in t.paths and t.cxid == 0 for t in closes)
    assert sorted(t.path or "" for t in everything if t.type == "deleteContainer") == ["/cont", "/ttl"]
    assert all(t.session == 0 for t in everything if t.type == "deleteContainer")
    ttl = next(t for t in everything if t.type == "createTTL")
    assert (ttl.path, ttl.ttl, ttl.data) == ("/ttl", 100, b"t")
    assert next(t for t in everything if t.type == "createContainer").path == "/cont"
    sessions = [t for t in everything if t.type == "createSession"]
    # the brokers' and kazoo's negotiated timeouts
    assert {t.timeout for t in sessions} >= {FLEET_SESSION_MS, WORKLOAD_SESSION_MS}
    seqs = [t.path for t in everything if t.type == "create" and (t.path or "").startswith("/app/seq-")]
    assert len(seqs) == 2 and all(re.fullmatch(r"/app/seq-\d{10}", p or "") for p in seqs), seqs


def test_broker_epochs_are_registration_multi_zxids(gen: Generated) -> None:
    """KIP-380: a broker's epoch (the czxid of /brokers/ids/<id>) is the zxid of the multi that registered it."""
    registrations: dict[int, tuple[Txn, Txn]] = {}
    for t in (t for log in gen.logs for t in gen.txns[log]):
        if t.type == "multi" and t.sub and t.sub[0].type == "create" and t.sub[0].path:
            m = re.fullmatch(rf"{CHROOT}/brokers/ids/(\d+)", t.sub[0].path)
            if m:
                registrations[t.zxid] = (t, t.sub[0])
    assert len(gen.registrations) == 7
    for bid, czxid in gen.registrations:
        assert czxid in registrations, f"broker {bid}: epoch {czxid:#x} is no multi's zxid"
        multi, create = registrations[czxid]
        assert create.path == f"{CHROOT}/brokers/ids/{bid}" and create.ephemeral is True
        assert not multi.failed and [s.type for s in multi.sub] == ["create", "setData"]
        assert multi.sub[1].version == 1 and b'"version":5' in (multi.sub[1].data or b"")
    assert len(registrations) == 7  # no other registration happened


def test_damaged_copies(gen: Generated, tmp_path: Path) -> None:
    log = gen.logs[0]
    raw = log.read_bytes()
    whole = gen.txns[log]
    assert list(zk_txnlog.iter_txns(raw)) == whole  # bytes and mmap agree
    # a record in the middle with a body long enough to flip a byte in
    k = next(i for i in range(len(whole) // 2, len(whole) - 1) if whole[i + 1].offset - whole[i].offset > 80)
    victim = whole[k]
    nxt = whole[k + 1].offset
    damages: list[Damage] = []

    # truncated mid-record: every record before it, and Damage at its offset
    cut = raw[: victim.offset + (nxt - victim.offset) // 2]
    assert list(zk_txnlog.iter_txns(cut, on_damage=damages.append)) == whole[:k]
    assert damages == [Damage(victim.offset, damages[0].reason)] and "torn record" in damages[0].reason
    damages.clear()
    # A cut inside the 12-byte record header is torn when it holds a non-zero byte. The checksum is an Adler-32 in
    # a long, so its first 4 bytes are always zero and the fifth is zero 1 time in 256: a cut there is the zero-filled
    # preallocated tail as far as any reader can see, a quiet end (what a test cutting at +5 hit once in run 17).
    header = raw[victim.offset: victim.offset + 12]
    assert header[:4] == bytes(4)
    assert list(zk_txnlog.iter_txns(raw[: victim.offset + 4], on_damage=damages.append)) == whole[:k]
    assert damages == []
    first = next(i for i, b in enumerate(header) if b)
    assert first < 11  # the checksum is not 0, so a cut after its first non-zero byte is inside the header
    cut = raw[: victim.offset + first + 1]  # inside the record header
    assert list(zk_txnlog.iter_txns(cut, on_damage=damages.append)) == whole[:k]
    assert [d.offset for d in damages] == [victim.offset] and "header" in damages[0].reason
    damages.clear()
    (tmp_path / log.name).write_bytes(cut)
    assert list(zk_txnlog.iter_file(tmp_path / log.name, on_damage=damages.append)) == whole[:k]
    assert [d.offset for d in damages] == [victim.offset]

    # a flipped byte in a record's body: a checksum Damage at that record
    flipped = bytearray(raw)
    flipped[victim.offset + 12 + 40] ^= 0x01
    damages.clear()
    assert list(zk_txnlog.iter_txns(flipped, on_damage=damages.append)) == whole[:k]
    assert [d.offset for d in damages] == [victim.offset] and "checksum" in damages[0].reason
    # ...which verify=False does not see
    assert len(list(zk_txnlog.iter_txns(flipped, verify=False))) == len(whole)

    # an unknown txn type, with a checksum fixed up to match: "unknown", and reading goes on
    patched = bytearray(raw)
    ln = struct.unpack_from(">i", patched, victim.offset + 8)[0]
    struct.pack_into(">i", patched, victim.offset + 12 + 28, 99)
    struct.pack_into(">q", patched, victim.offset, zlib.adler32(patched[victim.offset + 12 : victim.offset + 12 + ln]))
    damages.clear()
    got = list(zk_txnlog.iter_txns(patched, on_damage=damages.append))
    assert not damages and len(got) == len(whole)
    assert (got[k].type, got[k].type_code, got[k].zxid, got[k].offset) == ("unknown", 99, victim.zxid, victim.offset)
    assert got[:k] == whole[:k] and got[k + 1 :] == whole[k + 1 :]

    # not a txn log
    with pytest.raises(ValueError, match="not a ZooKeeper transaction log"):
        zk_txnlog.read_header(b"ZKSN" + raw[4:16])
    with pytest.raises(ValueError, match="not a ZooKeeper transaction log"):
        list(zk_txnlog.iter_file(gen.snapshots[0]))
    assert zk_txnlog.read_header(raw) == 0


def test_split_points_ranges_concatenate_to_the_whole(gen: Generated) -> None:
    for log in gen.logs:
        raw = log.read_bytes()
        for target in (1, 4096, 50_000, 1 << 30):
            points = zk_txnlog.split_points(raw, target)
            assert points[0] == 16 and points == sorted(set(points))
            ends: list[int | None] = [*points[1:], None]
            parts = [t for a, b in zip(points, ends, strict=True) for t in zk_txnlog.iter_txns(raw, a, b)]
            assert parts == gen.txns[log], (log.name, target)
            assert {t.offset for t in gen.txns[log]} >= set(points)  # record-aligned
        assert len(zk_txnlog.split_points(raw, 1)) == len(gen.txns[log])


# ----------------------------------------------------------------------------- snapshots

def formatter_nodes(text: str) -> tuple[dict[str, dict[str, int]], dict[int, tuple[int, int]]]:
    """SnapshotFormatter's `path` blocks (the zxids/versions/lengths as ints) and its session details."""
    nodes: dict[str, dict[str, int]] = {}
    sessions: dict[int, tuple[int, int]] = {}
    current: dict[str, int] | None = None
    in_sessions = False
    for line in text.splitlines():
        if line.startswith("Session Details"):
            in_sessions = True
        elif in_sessions:
            m = re.fullmatch(r"0x([0-9a-f]+), (\d+), (\d+)", line)
            if m:
                sessions[int(m.group(1), 16)] = (int(m.group(2)), int(m.group(3)))
        elif line.startswith("/"):
            current = nodes[line] = {}
        elif current is not None and line.startswith("  ") and " = " in line:
            key, value = line.strip().split(" = ", 1)
            if key not in ("ctime", "mtime"):
                current[key] = int(value, 16) if value.startswith("0x") else int(value)
    return nodes, sessions


def test_snapshots_match_snapshot_formatter(gen: Generated) -> None:
    for snap in gen.snapshots:
        parsed = zk_snapshot.read_snapshot_file(snap)
        theirs, sessions = formatter_nodes(gen.formatter[snap])
        mine = {n.path: {"cZxid": n.czxid, "mZxid": n.mzxid, "pZxid": n.pzxid, "cversion": n.cversion,
                         "dataVersion": n.version, "aclVersion": n.aversion, "ephemeralOwner": n.ephemeral_owner,
                         "dataLength": len(n.data or b"")} for n in parsed.nodes}
        assert len(mine) == len(parsed.nodes)  # no path twice
        assert mine == theirs, snap.name
        assert {sid: t for sid, (t, _) in sessions.items()} == parsed.header.sessions
        owners = Counter(n.ephemeral_owner for n in parsed.nodes if n.ephemeral_owner)
        assert {sid: owners.get(sid, 0) for sid in sessions} == {sid: c for sid, (_, c) in sessions.items()}
        assert parsed.nodes[0].path == "/" and parsed.header.dbid == -1
        assert all(n.acl in parsed.header.acls or n.acl == -1 for n in parsed.nodes)
        tr = parsed.trailer
        assert tr.checksum_ok and tr.digest_version == 2
        zxid = zk_snapshot.snapshot_zxid(snap.name)
        assert tr.digest_zxid is not None and tr.digest_zxid >= zxid
        if gen.label == "3.8":
            assert tr.last_zxid is None
        else:
            assert tr.last_zxid is not None and tr.last_zxid >= zxid


def test_snapshot_matches_live_reads(gen: Generated) -> None:
    """The snapshot taken during the bulk writes holds the brokers and topics kazoo read before them."""
    snap = next(p for p in gen.snapshots if zk_snapshot.snapshot_zxid(p.name) == gen.holding_zxid)
    assert zk_snapshot.snapshot_zxid(snap.name) >= gen.mark_zxid
    header, it = zk_snapshot.iter_snapshot(snap.read_bytes())
    nodes = {n.path: n for n in it}
    assert it.trailer is not None and it.trailer.checksum_ok
    assert {p for p in nodes if re.fullmatch(rf"{CHROOT}/brokers/ids/\d+", p)} == {
        p for p in gen.final if re.fullmatch(rf"{CHROOT}/brokers/ids/\d+", p)}
    for path, (data, stat) in gen.final.items():
        n = nodes[path]
        assert (n.data, n.czxid, n.mzxid, n.version, n.cversion, n.aversion, n.ephemeral_owner, n.pzxid) == (
            data, stat.czxid, stat.mzxid, stat.version, stat.cversion, stat.aversion, stat.ephemeralOwner,
            stat.pzxid), path
        if n.ephemeral_owner:
            assert n.ephemeral_owner in header.sessions
    assert "/app/m2" not in nodes and "/cont" not in nodes
    acl = header.acls[nodes["/app/c2"].acl]
    assert [(a.perms, a.scheme) for a in acl] == [(31, "digest"), (31, "world")]


def test_snapshot_events_are_the_logs_events(gen: Generated) -> None:
    """history ingest reads snapshots too: their registrations come out as the very events (same ids)
    the logs give for the transactions that created them, so ingesting both adds each once."""
    from kadmin.pipeline import events as ev
    from kadmin.pipeline.ingest import classify, parse_range

    snap = next(p for p in gen.snapshots if zk_snapshot.snapshot_zxid(p.name) == gen.holding_zxid)
    assert classify(snap) == "zk-snapshot"
    snap_rows = [r for r in parse_range(("zk-snapshot", str(snap), 0, None), "c", None) if r[4] != "_damage"]
    log_rows = [r for log in gen.logs for r in parse_range(("zk-txnlog", str(log), 0, None), "c", None)]
    regs = [r for r in snap_rows if r[4] == "broker_registered"]
    live = set(gen.registrations)
    assert regs, "the snapshot taken during the bulk writes holds registrations"
    key = {c: i for i, c in enumerate(ev.COLUMNS)}
    for r in regs + [r for r in snap_rows if r[4] == "controller_changed"]:
        same = [x for x in log_rows if all(x[key[c]] == r[key[c]] for c in
                                           ("position", "event", "broker_id", "controller_id", "sub", "session",
                                            "ts_ms", "detail"))]
        assert len(same) == 1, r
    assert {(r[key["broker_id"]], r[key["epoch"]]) for r in regs} <= live
