"""zk_txnlog / zk_snapshot on synthetic files built here with a tiny jute writer (no ZooKeeper needed).

tests/integration/test_zk_logs.py checks the same parsers against files written by real servers.
"""

from __future__ import annotations

import dataclasses
import gzip
import pickle
import struct
import zlib
from pathlib import Path

import pytest

from kadmin.formats import zk_snapshot, zk_txnlog
from kadmin.formats.zk_txnlog import Damage, Txn

OPEN_ACL = [(31, "world", "anyone")]


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def ustr(s: str | None) -> bytes:
    if s is None:
        return i32(-1)
    b = s.encode()
    return i32(len(b)) + b


def buf(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def acls(entries: list[tuple[int, str, str]]) -> bytes:
    return i32(len(entries)) + b"".join(i32(p) + ustr(s) + ustr(i) for p, s, i in entries)


def create_body(path: str, data: bytes | None, ephemeral: bool, pcv: bool = True,
                acl: list[tuple[int, str, str]] = OPEN_ACL) -> bytes:
    return ustr(path) + buf(data) + acls(acl) + bytes([ephemeral]) + (i32(3) if pcv else b"")


DIGEST = i32(2) + i64(0x1234)


def record(code: int, body: bytes, zxid: int, session: int = 0x100, cxid: int = 1, digest: bool = True) -> bytes:
    txn = i64(session) + i32(cxid) + i64(zxid) + i64(1_700_000_000_000 + zxid) + i32(code) + body
    if digest and code != -1:
        txn += DIGEST
    return i64(zlib.adler32(txn)) + i32(len(txn)) + txn + b"B"


def multi(subs: list[tuple[int, bytes]]) -> bytes:
    return i32(len(subs)) + b"".join(i32(c) + buf(b) for c, b in subs)


HEADER = b"ZKLG" + i32(2) + i64(0)
RECORDS = [
    record(-10, i32(4000), 1, cxid=0),
    record(1, create_body("/a", b"x", False), 2),
    record(15, create_body("/a/e", None, True, acl=[(31, "digest", "u:pw"), (1, "world", "anyone")]), 3),
    record(1, create_body("/old", b"v0", False, pcv=False), 4, digest=False),  # CreateTxnV0 (pre 3.3)
    record(5, ustr("/a") + buf(b"y") + i32(1), 5),
    record(7, ustr("/a") + acls(OPEN_ACL) + i32(1), 6),
    record(14, multi([(1, create_body("/m", b"m", False)), (5, ustr("/a") + buf(b"z") + i32(2)),
                      (13, ustr("/a") + i32(3)), (2, ustr("/old"))]), 7),
    record(14, multi([(1, create_body("/m2", b"", False)), (-1, i32(-103)), (-1, i32(-2))]), 8),
    record(-1, i32(-110), 9),
    record(19, ustr("/c") + buf(b"c") + acls(OPEN_ACL) + i32(0), 10),
    record(21, ustr("/t") + buf(b"t") + acls(OPEN_ACL) + i32(0) + i64(100), 11),
    record(20, ustr("/c"), 12, session=0, cxid=0),
    record(2, ustr("/a/e"), 13),
    record(16, ustr("/zookeeper/config") + buf(b"server.1=...") + i32(4), 14),
    record(99, b"\x00" * 7, 15),
    record(-11, i32(2) + ustr("/a/e") + ustr("/x"), 16, cxid=0),
    record(-11, b"", 17, digest=False),  # closeSession before 3.6: no body
]
LOG = HEADER + b"".join(RECORDS) + b"\x00" * 300  # the preallocated zero tail
OFFSETS = [16 + sum(len(r) for r in RECORDS[:i]) for i in range(len(RECORDS))]


def txns(data: object = LOG, **kw: object) -> list[Txn]:
    return list(zk_txnlog.iter_txns(data, **kw))  # type: ignore[arg-type]


def test_every_type_decodes() -> None:
    t = txns()
    assert [x.type for x in t] == ["createSession", "create", "create2", "create", "setData", "setACL", "multi",
                                   "multi", "error", "createContainer", "createTTL", "deleteContainer", "delete",
                                   "reconfig", "unknown", "closeSession", "closeSession"]
    assert [x.offset for x in t] == OFFSETS and [x.zxid for x in t] == list(range(1, 18))
    assert t[0].timeout == 4000 and t[0].cxid == 0 and t[0].session == 0x100
    assert t[0].time_ms == 1_700_000_000_001
    assert (t[1].path, t[1].data, t[1].ephemeral) == ("/a", b"x", False)
    assert (t[2].path, t[2].data, t[2].ephemeral) == ("/a/e", None, True)
    assert (t[3].path, t[3].data, t[3].ephemeral) == ("/old", b"v0", False)
    assert (t[4].path, t[4].data, t[4].version) == ("/a", b"y", 1)
    assert (t[5].path, t[5].version) == ("/a", 1)
    ok, bad = t[6], t[7]
    assert not ok.failed and [(s.type, s.path) for s in ok.sub] == [("create", "/m"), ("setData", "/a"),
                                                                   ("check", "/a"), ("delete", "/old")]
    assert ok.sub[1].version == 2 and ok.sub[2].version == 3
    assert all((s.offset, s.zxid, s.session, s.cxid, s.time_ms) == (ok.offset, 7, 0x100, 1, ok.time_ms)
               for s in ok.sub)
    assert bad.failed and [(s.type, s.error) for s in bad.sub] == [("create", None), ("error", -103), ("error", -2)]
    assert (t[8].failed, t[8].error) == (True, -110)
    assert (t[9].path, t[9].data, t[9].ephemeral, t[9].ttl) == ("/c", b"c", False, None)
    assert (t[10].path, t[10].ttl) == ("/t", 100)
    assert (t[11].path, t[11].session) == ("/c", 0)
    assert (t[13].path, t[13].data, t[13].version) == ("/zookeeper/config", b"server.1=...", 4)
    assert (t[14].type_code, t[14].path) == (99, None)
    assert t[15].paths == ("/a/e", "/x") and t[16].paths == ()


def test_fast_construction_makes_ordinary_txns() -> None:
    t = txns()[1]
    same = Txn(offset=t.offset, session=0x100, cxid=1, zxid=2, time_ms=t.time_ms, type="create", type_code=1,
               path="/a", data=b"x", ephemeral=False)
    assert t == same and hash(t) == hash(same) and repr(t) == repr(same)
    assert pickle.loads(pickle.dumps(t)) == t  # Spark ships them between processes
    assert dataclasses.replace(t, path="/b").path == "/b" and dataclasses.asdict(t)["sub"] == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.path = "/c"  # type: ignore[misc]


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_buffer_kinds(wrap: type) -> None:
    assert txns(wrap(LOG)) == txns()


def test_header() -> None:
    assert zk_txnlog.read_header(LOG) == 0
    for bad in (b"", b"ZKLG", b"ZKSN" + LOG[4:], LOG[:4] + i32(1) + LOG[8:]):
        with pytest.raises(ValueError, match="not a ZooKeeper transaction log"):
            zk_txnlog.read_header(bad)


def damaged(data: bytes | bytearray) -> tuple[list[Txn], list[Damage]]:
    out: list[Damage] = []
    return txns(bytes(data), on_damage=out.append), out


def test_clean_ends() -> None:
    end = HEADER + b"".join(RECORDS)
    assert damaged(end) == (txns(), [])  # EOF right after a record
    assert damaged(end + b"\x00" * 5) == (txns(), [])  # a short zero tail
    assert damaged(HEADER) == ([], [])


def test_damage() -> None:
    whole = txns()
    k = 6
    off = OFFSETS[k]
    got, dmg = damaged(LOG[: off + 30])  # torn mid-record
    assert got == whole[:k] and [d.offset for d in dmg] == [off] and "torn record" in dmg[0].reason
    got, dmg = damaged(LOG[: off + 5])  # torn record header
    assert got == whole[:k] and [d.offset for d in dmg] == [off] and "header" in dmg[0].reason
    flipped = bytearray(LOG)
    flipped[off + 50] ^= 0x10
    got, dmg = damaged(flipped)
    assert got == whole[:k] and [d.offset for d in dmg] == [off] and "checksum" in dmg[0].reason
    assert len(txns(bytes(flipped), verify=False)) == len(whole)
    no_marker = bytearray(LOG)
    no_marker[OFFSETS[k + 1] - 1] = 0x41
    got, dmg = damaged(no_marker)
    assert got == whole[:k] and [d.offset for d in dmg] == [off] and "end-of-record" in dmg[0].reason
    negative = bytearray(LOG)
    struct.pack_into(">i", negative, off + 8, -5)
    got, dmg = damaged(negative)
    assert got == whole[:k] and "length" in dmg[0].reason
    stray = bytearray(LOG)
    struct.pack_into(">q", stray, len(HEADER) + sum(map(len, RECORDS)), 7)  # checksum on the zero tail
    got, dmg = damaged(stray)
    assert got == whole and [d.offset for d in dmg] == [len(LOG) - 300]
    # without a callback, damage just ends the iteration
    assert txns(LOG[: off + 30]) == whole[:k]


def test_undecodable_body_with_a_good_checksum() -> None:
    body = i32(1000) + b"/a"  # a path length past the record
    log = HEADER + RECORDS[0] + record(1, body, 2) + RECORDS[2]
    got, dmg = damaged(log)
    assert [t.type for t in got] == ["createSession", "create", "create2"]
    assert got[1].path is None and [d.offset for d in dmg] == [OFFSETS[1]] and "decode" in dmg[0].reason


@pytest.mark.parametrize("target", [1, 50, 200, 10_000])
def test_split_points(target: int) -> None:
    points = zk_txnlog.split_points(LOG, target)
    assert points[0] == 16 and set(points) <= set(OFFSETS) and points == sorted(points)
    ends: list[int | None] = [*points[1:], None]
    assert [t for a, b in zip(points, ends, strict=True) for t in txns(LOG, start=a, end=b)] == txns()
    if target == 1:
        assert points == OFFSETS
    with pytest.raises(ValueError):
        zk_txnlog.split_points(LOG, 0)


def test_iter_file(tmp_path: Path) -> None:
    p = tmp_path / "log.1"
    p.write_bytes(LOG)
    assert list(zk_txnlog.iter_file(p)) == txns()
    (tmp_path / "log.2").write_bytes(b"")
    with pytest.raises(ValueError):
        list(zk_txnlog.iter_file(tmp_path / "log.2"))


def test_names() -> None:
    assert zk_txnlog.log_zxid("log.1a") == 0x1A
    assert zk_txnlog.zxid_from_name("dir/snapshot.ff.snappy") == 0xFF
    assert zk_txnlog.zxid_from_name("log.1", "snapshot") is None and zk_txnlog.zxid_from_name("log.") is None
    assert zk_snapshot.snapshot_zxid("snapshot.0") == 0
    with pytest.raises(ValueError):
        zk_snapshot.snapshot_zxid("log.1")


# ----------------------------------------------------------------------------- snapshots

def node(path: str, data: bytes | None, acl: int, czxid: int, owner: int = 0) -> bytes:
    return ustr(path) + buf(data) + i64(acl) + i64(czxid) + i64(czxid + 1) + i64(10) + i64(11) + i32(2) + i32(3) \
        + i32(1) + i64(owner) + i64(czxid + 2)


def snapshot(digest: bool = True, last_zxid: bool = False) -> bytes:
    body = b"ZKSN" + i32(2) + i64(-1)
    body += i32(2) + i64(0x100) + i32(4000) + i64(0x101) + i32(6000)
    body += i32(1) + i64(1) + acls([(31, "world", "anyone")])
    body += node("", b"", -1, 0) + node("/a", b"x", 1, 5) + node("/a/e", None, 1, 6, owner=0x100) + ustr("/")
    body += i64(zlib.adler32(body)) + ustr("/")
    if digest:
        body += i64(9) + i32(2) + i64(777)
        body += i64(zlib.adler32(body)) + ustr("/")
    if last_zxid:
        body += i64(12)
        body += i64(zlib.adler32(body)) + ustr("/")
    return body


@pytest.mark.parametrize(("digest", "last"), [(False, False), (True, False), (True, True), (False, True)])
def test_snapshot(digest: bool, last: bool) -> None:
    snap = zk_snapshot.read_snapshot(snapshot(digest, last))
    assert snap.header.dbid == -1 and snap.header.sessions == {0x100: 4000, 0x101: 6000}
    assert snap.header.acls == {1: (zk_snapshot.Acl(31, "world", "anyone"),)}
    assert [n.path for n in snap.nodes] == ["/", "/a", "/a/e"]
    e = snap.nodes[2]
    assert (e.data, e.acl, e.czxid, e.mzxid, e.ctime, e.mtime, e.version, e.cversion, e.aversion,
            e.ephemeral_owner, e.pzxid) == (None, 1, 6, 7, 10, 11, 2, 3, 1, 0x100, 8)
    assert snap.nodes[2] == zk_snapshot.SnapNode("/a/e", None, 1, 6, 7, 10, 11, 2, 3, 1, 0x100, 8)
    tr = snap.trailer
    assert tr.checksum_ok
    assert (tr.digest_zxid, tr.digest_version, tr.digest) == ((9, 2, 777) if digest else (None, None, None))
    assert tr.last_zxid == (12 if last else None)


def test_snapshot_damage(tmp_path: Path) -> None:
    raw = snapshot()
    with pytest.raises(zk_snapshot.SnapshotError, match="not a ZooKeeper snapshot"):
        zk_snapshot.iter_snapshot(b"ZKLG" + raw[4:])
    header, nodes = zk_snapshot.iter_snapshot(raw[:120])
    with pytest.raises(zk_snapshot.SnapshotError):
        list(nodes)
    bad = bytearray(raw)
    bad[60] ^= 1  # an ACL's perms in the ACL cache: still parses, but the seal no longer matches
    assert not zk_snapshot.read_snapshot(bytes(bad)).trailer.checksum_ok
    (tmp_path / "snapshot.9.gz").write_bytes(gzip.compress(raw))
    assert zk_snapshot.read_snapshot_file(tmp_path / "snapshot.9.gz") == zk_snapshot.read_snapshot(raw)
    with pytest.raises(zk_snapshot.SnapshotError, match="snappy"):
        zk_snapshot.read_snapshot_file(tmp_path / "snapshot.9.snappy")
