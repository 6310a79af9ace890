"""ZooKeeper snapshots (`version-2/snapshot.<hex zxid>`), as written by ZooKeeper 3.x (verified: 3.8.0, 3.9.5).

Pure: bytes in, nodes out (stdlib only). `read_snapshot_file` is the one helper that reads a file.

Layout, read off ZooKeeper 3.8.0 and 3.9.5 with javap (FileSnap.serialize, SerializeUtils.serializeSnapshot,
DataTree.serialize/serializeNode, ReferenceCountedACLCache.serialize, DataNode.serialize,
SnapStream.sealStream, DataTree.serializeZxidDigest/serializeLastProcessedZxid); jute big-endian:
- FileHeader: magic `ZKSN`, int version 2, long dbid (-1 as written by FileSnap);
- sessions: int count, then `long id, int timeout` each;
- the ACL cache: int count, then `long index, vector<ACL{int perms, ustring scheme, ustring id}>` each;
- the nodes, parents before children: `ustring path` + DataNode `buffer data, long acl (an index into
  the ACL cache), StatPersisted{long czxid, mzxid, ctime, mtime, int version, cversion, aversion,
  long ephemeralOwner, pzxid}`; the root's path is "" (reported here as "/"); a path "/" ends the list;
- a seal: `long adler32 of every byte before it, ustring "/"`;
- 3.6+ with digests enabled: ZxidDigest `long zxid, int digestVersion, long digest` and another seal;
- 3.9+: `long lastProcessedZxid` and another seal.
The Adler-32 runs over the uncompressed stream (`snapshot.<zxid>.gz` is gzip of the same bytes;
`.snappy` is not supported: no stdlib codec). The zxid of a snapshot is in its name; the snapshot
is fuzzy: it may contain changes up to `Last zxid` (SnapshotFormatter) beyond that zxid.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kadmin.formats.zk_txnlog import zxid_from_name

MAGIC = b"ZKSN"
VERSION = 2

_FILE_HDR = struct.Struct(">4siq")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_SESSION = struct.Struct(">qi")
_NODE_TAIL = struct.Struct(">qqqqqiiiqq")  # acl index + StatPersisted
_DIGEST = struct.Struct(">qiq")

Buffer = Any  # bytes | bytearray | memoryview | mmap.mmap


class SnapshotError(ValueError):
    """A snapshot that cannot be read: bad magic/version, or torn at `offset`."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{reason} (at byte {offset})")
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True)
class Acl:
    perms: int
    scheme: str
    id: str


@dataclass(frozen=True)
class SnapshotHeader:
    dbid: int
    sessions: dict[int, int]  # session id -> timeout (ms)
    acls: dict[int, tuple[Acl, ...]]  # the ACL cache: SnapNode.acl -> its ACL list


@dataclass(frozen=True)
class SnapNode:
    path: str  # "/" for the root
    data: bytes | None
    acl: int  # index into SnapshotHeader.acls
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    pzxid: int


@dataclass(frozen=True)
class SnapshotTrailer:
    checksum: int  # the stored Adler-32 of the stream before the first seal
    checksum_ok: bool
    digest_zxid: int | None = None  # 3.6+ (digest enabled): the zxid the tree digest was computed at
    digest_version: int | None = None
    digest: int | None = None
    last_zxid: int | None = None  # 3.9+: the last processed zxid


@dataclass(frozen=True)
class Snapshot:
    header: SnapshotHeader
    nodes: list[SnapNode]
    trailer: SnapshotTrailer


_new = object.__new__


def _string(mv: memoryview, q: int) -> tuple[str, int]:
    (n,) = _I32.unpack_from(mv, q)
    q += 4
    if n < 0:
        return "", q
    if q + n > len(mv):
        raise SnapshotError(q, f"string of {n} bytes runs past the end")
    return str(mv[q : q + n], "utf-8"), q + n


def _view(buf: Buffer) -> memoryview:
    mv = memoryview(buf)
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


class SnapNodes(Iterator[SnapNode]):
    """The nodes of a snapshot, decoded lazily in file order (parents first).

    Once exhausted, `trailer` holds the seal (checksum checked) and the digest/last-zxid sections.
    Raises SnapshotError on a torn or malformed snapshot.
    """

    def __init__(self, mv: memoryview, offset: int) -> None:
        self._mv = mv
        self._pos = offset
        self._done = False
        self.trailer: SnapshotTrailer | None = None
        self.end_offset: int | None = None  # the byte after the trailer, once exhausted

    def __iter__(self) -> SnapNodes:
        return self

    def __next__(self) -> SnapNode:
        if self._done:
            raise StopIteration
        mv = self._mv
        pos = self._pos
        try:
            (n,) = _I32.unpack_from(mv, pos)
            q = pos + 4
            if n == 1 and mv[q] == 0x2F:  # "/": the end of the node list
                self._done = True
                self._pos = q + 1
                self.trailer = self._read_trailer(pos + 5)
                raise StopIteration
            if n < 0 or q + n > len(mv):
                raise SnapshotError(pos, f"bad path length {n}")
            path = str(mv[q : q + n], "utf-8") if n else "/"
            q += n
            (dn,) = _I32.unpack_from(mv, q)
            q += 4
            if dn < 0:
                data = None
            else:
                if q + dn > len(mv):
                    raise SnapshotError(q - 4, f"node data of {dn} bytes runs past the end")
                data = bytes(mv[q : q + dn])
                q += dn
            acl, czxid, mzxid, ctime, mtime, version, cversion, aversion, owner, pzxid = _NODE_TAIL.unpack_from(mv, q)
        except struct.error as e:
            raise SnapshotError(pos, f"torn node record: {e}") from e
        except UnicodeDecodeError as e:
            raise SnapshotError(pos, f"node path is not UTF-8: {e}") from e
        self._pos = q + _NODE_TAIL.size
        node: SnapNode = _new(SnapNode)  # as in zk_txnlog._make: the frozen __init__ is 4x slower
        node.__dict__.update(path=path, data=data, acl=acl, czxid=czxid, mzxid=mzxid, ctime=ctime, mtime=mtime,
                             version=version, cversion=cversion, aversion=aversion, ephemeral_owner=owner,
                             pzxid=pzxid)
        return node

    def _read_trailer(self, pos: int) -> SnapshotTrailer:
        mv = self._mv

        def seal(at: int) -> tuple[int, bool, int]:
            try:
                (value,) = _I64.unpack_from(mv, at)
                marker, after = _string(mv, at + 8)
            except struct.error as e:
                raise SnapshotError(at, "torn snapshot: no checksum seal after the nodes") from e
            if marker != "/":
                raise SnapshotError(at + 8, f"bad seal marker {marker!r}")
            return value, zlib.adler32(mv[:at]) == value, after

        checksum, ok, pos = seal(pos)
        rest = len(mv) - pos
        digest: tuple[int, int, int] | None = None
        last_zxid = None
        if rest >= _DIGEST.size + 12:
            digest = _DIGEST.unpack_from(mv, pos)
            _, ok2, pos = seal(pos + _DIGEST.size)
            ok = ok and ok2
            rest = len(mv) - pos
        if rest >= 8 + 12:
            (last_zxid,) = _I64.unpack_from(mv, pos)
            _, ok3, pos = seal(pos + 8)
            ok = ok and ok3
        self.end_offset = pos
        if digest is None:
            return SnapshotTrailer(checksum, ok, last_zxid=last_zxid)
        return SnapshotTrailer(checksum, ok, digest_zxid=digest[0], digest_version=digest[1], digest=digest[2],
                               last_zxid=last_zxid)


def iter_snapshot(buf: Buffer) -> tuple[SnapshotHeader, SnapNodes]:
    """The header (dbid, sessions, ACL cache), read now, and a lazy iterator over the nodes.

    SnapshotError (a ValueError) when `buf` is not a version-2 snapshot or is torn.
    """
    mv = _view(buf)
    if len(mv) < 16:
        raise SnapshotError(0, "not a ZooKeeper snapshot: shorter than its 16-byte header")
    magic, version, dbid = _FILE_HDR.unpack_from(mv, 0)
    if magic != MAGIC:
        raise SnapshotError(0, f"not a ZooKeeper snapshot: magic {bytes(magic)!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise SnapshotError(4, f"not a ZooKeeper snapshot: unsupported version {version}")
    pos = 16
    try:
        (count,) = _I32.unpack_from(mv, pos)
        pos += 4
        sessions: dict[int, int] = {}
        for _ in range(count):
            sid, timeout = _SESSION.unpack_from(mv, pos)
            sessions[sid] = timeout
            pos += _SESSION.size
        (count,) = _I32.unpack_from(mv, pos)
        pos += 4
        acls: dict[int, tuple[Acl, ...]] = {}
        for _ in range(count):
            (index,) = _I64.unpack_from(mv, pos)
            (n,) = _I32.unpack_from(mv, pos + 8)
            pos += 12
            entries = []
            for _ in range(max(n, 0)):
                (perms,) = _I32.unpack_from(mv, pos)
                scheme, pos = _string(mv, pos + 4)
                ident, pos = _string(mv, pos)
                entries.append(Acl(perms, scheme, ident))
            acls[index] = tuple(entries)
    except struct.error as e:
        raise SnapshotError(pos, f"torn snapshot header: {e}") from e
    return SnapshotHeader(int(dbid), sessions, acls), SnapNodes(mv, pos)


def read_snapshot(buf: Buffer) -> Snapshot:
    """The whole snapshot: header, every node (file order) and the trailer."""
    header, nodes = iter_snapshot(buf)
    listed = list(nodes)
    assert nodes.trailer is not None
    return Snapshot(header, listed, nodes.trailer)


def read_snapshot_file(path: str | os.PathLike[str]) -> Snapshot:
    """Read `snapshot.<zxid>` (or `.gz`). SnapshotError for a `.snappy` one or a bad file."""
    name = os.fspath(path)
    if name.endswith(".snappy"):
        raise SnapshotError(0, "snappy-compressed snapshots are not supported")
    with open(name, "rb") as f:
        raw = f.read()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return read_snapshot(raw)


def snapshot_zxid(name: str) -> int:
    """The zxid in a `snapshot.<hex zxid>` name; ValueError for another name."""
    z = zxid_from_name(name, "snapshot")
    if z is None:
        raise ValueError(f"{name!r} is not a ZooKeeper snapshot name (snapshot.<hex zxid>)")
    return z
