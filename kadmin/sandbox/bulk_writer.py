"""Fast pipelined znode creates, for seeding big fixtures (tests, benchmarks, the sandbox).

Not part of the client layer: kadmin itself never creates znodes in bulk. It reuses the client
layer's pipelining engine (`kadmin.cluster.bulk.BulkSession`: connection, failover, window), so a
fixture is seeded as fast as `BulkReader` scans it.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterable, Iterator

from kadmin.cluster.bulk import BulkSession

__all__ = ["BulkWriter"]

_INT = struct.Struct(">i")
_TYPE_STRLEN = struct.Struct(">ii")  # request type, then the length of the path string
OP_CREATE = 1
OK = 0
NODEEXISTS = -110

# create(): ACL list [OPEN_ACL_UNSAFE = (perms ALL=31, world:anyone)], then flags 0 (persistent).
_WORLD, _ANYONE = b"world", b"anyone"
_OPEN_ACL_FLAGS = (
    _INT.pack(1)
    + _INT.pack(31)
    + _INT.pack(len(_WORLD))
    + _WORLD
    + _INT.pack(len(_ANYONE))
    + _ANYONE
    + _INT.pack(0)
)
_NULL_BUFFER = _INT.pack(-1)


class BulkWriter(BulkSession):
    """Fast pipelined creates, for seeding big fixtures (tests, benchmarks, the sandbox)."""

    created = 0  # totals over every create_many call of this writer
    skipped = 0

    def create_many(self, items: Iterable[tuple[str, bytes | None]]) -> int:
        """Create persistent znodes (OPEN_ACL_UNSAFE) pipelined; return how many were created.

        Items are created in the order given, so a parent must come before its children (ZooKeeper
        applies one session's requests in order, so a parent and its child may be in flight
        together). A znode that already exists is skipped (counted in `self.skipped`); any other
        error raises KadminError (AuthFailed for NOAUTH). After a failover, creates that had been
        applied but not answered are sent again and count as skipped.
        """
        created = skipped = 0
        try:
            with contextlib.closing(self._pipeline(self._create_requests(items))) as replies:
                for path, err, _, _, _ in replies:
                    if err == OK:
                        created += 1
                    elif err == NODEEXISTS:
                        skipped += 1
                    else:
                        self._raise_for("create", path, err)
        finally:
            self.created += created
            self.skipped += skipped
        return created

    def _create_requests(self, items: Iterable[tuple[str, bytes | None]]) -> Iterator[tuple[str, bytes]]:
        pack = _TYPE_STRLEN.pack
        pack_int = _INT.pack
        for path, data in items:
            full = self._full_path(path)
            payload = _NULL_BUFFER if data is None else pack_int(len(data)) + data
            yield path, pack(OP_CREATE, len(full)) + full + payload + _OPEN_ACL_FLAGS
