"""The executor side of `history ingest` on Arrow: each file range parsed straight into Arrow record
batches (one list per column, no per-event dict or Row), handed to Spark by `mapInArrow`.

The rows are the ones `kadmin.pipeline.events` defines (its COLUMNS, same values): the partition
state writes that make up the bulk of a Kafka cluster's ZooKeeper log (a plain setData or create
of `.../partitions/<p>/state`) and the PartitionRecord / PartitionChangeRecord that make up the bulk of
a KRaft metadata log are appended column by column here; every other transaction, KRaft record and
NDJSON line goes through `events` and is appended from its row. `tests/pipeline/test_arrow.py` and
`tests/pipeline/test_kraft_columns.py` compare the two paths event by event.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any

import pyarrow as pa

from kadmin.domain.znodes import loads_strict
from kadmin.errors import in_words
from kadmin.pipeline import events as ev

BATCH_ROWS = 65_536

SCHEMA = pa.schema([
    ("cluster", pa.string()), ("source", pa.string()), ("position", pa.int64()), ("ts_ms", pa.int64()),
    ("event", pa.string()), ("broker_id", pa.int32()), ("epoch", pa.int64()), ("session", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()), ("leader", pa.int32()), ("leader_epoch", pa.int32()),
    ("isr", pa.list_(pa.int32())), ("controller_id", pa.int32()), ("detail", pa.string()), ("sub", pa.int32()),
    ("topic_id", pa.string()),
])
assert tuple(SCHEMA.names) == ev.COLUMNS

WORK_DDL = "kind string, path string, start long, end long"


class Columns:
    """Column lists of up to BATCH_ROWS events; `batches()` yields them as Arrow record batches."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.cols: list[list[Any]] = [[] for _ in ev.COLUMNS]
        self.n = 0

    def add(self, r: dict[str, Any]) -> None:
        for col, name in zip(self.cols, ev.COLUMNS, strict=True):
            col.append(r[name])
        self.n += 1

    def batch(self) -> pa.RecordBatch:
        arrays = [pa.array(col, type=f.type) for col, f in zip(self.cols, SCHEMA, strict=True)]
        self.cols = [[] for _ in ev.COLUMNS]
        self.n = 0
        return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


_STATE_WRITERS = frozenset({"setData", "create", "create2"})


@lru_cache(maxsize=64)
def _root_detail(root: str) -> str | None:
    return json.dumps({"chroot": root}) if root else None


def zk_txnlog_batches(path: str, start: int, end: int | None, cluster: str, chroot: str | None,
                      on_damage: Callable[[Any], None], rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The events of the ZooKeeper log range [start, end) of `path` as record batches."""
    import mmap

    from kadmin.formats import zk_txnlog

    c = Columns(cluster)
    (cl, so, po, ts, evn, bid, epo, ses, top, par, lea, lep, isr_c, cid, det, sub_c, tid_c) = c.cols
    state_match = ev._STATE.match
    loads = loads_strict  # bounded depth and numbers: garbage in a log is skipped, never a crash
    root_ok = ev._root_ok
    zk = ev.ZK
    name = os.path.basename(path)
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            zk_txnlog.read_header(mm)
            for txn in zk_txnlog.iter_txns(mm, start=max(start, 16), end=end, on_damage=on_damage):
                code = txn.type_code
                if ((code == 5 or code == 1 or code == 15) and txn.type in _STATE_WRITERS
                        and (m := state_match(txn.path or "")) is not None):
                    # ev._state for a plain setData/create of a state znode (sub 0; no other pattern of
                    # ev._zk_op matches a state path), appended column by column
                    try:
                        doc = loads((txn.data or b"").decode("utf-8"))
                    except ValueError:  # UnicodeDecodeError too
                        continue
                    if not isinstance(doc, dict) or not root_ok(m["root"], chroot):
                        continue
                    isr = doc.get("isr")
                    cl.append(cluster)
                    so.append(zk)
                    po.append(txn.zxid)
                    ts.append(txn.time_ms)
                    evn.append("partition_state")
                    bid.append(None)
                    epo.append(doc.get("controller_epoch"))
                    ses.append(None)
                    top.append(m["topic"])
                    par.append(int(m["p"]))
                    lea.append(doc.get("leader"))
                    lep.append(doc.get("leader_epoch"))
                    isr_c.append([int(x) for x in isr] if isinstance(isr, list) else None)
                    cid.append(None)
                    det.append(_root_detail(m["root"]))
                    sub_c.append(0)
                    tid_c.append(None)
                    c.n += 1
                else:
                    for r in ev.zk_events(txn, cluster, chroot, name):
                        c.add(r)
                if c.n >= rows:
                    yield c.batch()
                    (cl, so, po, ts, evn, bid, epo, ses, top, par, lea, lep, isr_c, cid, det, sub_c, tid_c) = c.cols
    if c.n:
        yield c.batch()


@lru_cache(maxsize=1 << 16)
def _tid_detail(raw: bytes) -> str:
    """A partition record's detail (ev.kraft_events: `{"topic_id": ...}`) from its raw topic id."""
    from kadmin.pipeline.kraft_fast import uuid_text

    return json.dumps({"topic_id": uuid_text(raw)})


def kraft_log_batches(path: str, start: int, cluster: str, on_damage: Callable[[Any], None],
                      crc: Callable[[bytes], int] | None = None, rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The events of the KRaft metadata log `path` from byte `start` as record batches.

    PartitionRecord and PartitionChangeRecord v2 (nearly every record of a real log) are read by
    `kraft_fast`'s hand reader straight into the columns: no LogRecord, MetadataRecord, fields dict or
    event dict per record. Every other record, and a partition record of a shape the hand reader leaves
    to the schema codec, is decoded as `kraft_log.iter_records` decodes it (`decode_one`, damage reported
    the same way) and goes through `ev.kraft_events`. The batches are the same that `iter_records` walks,
    each read whole before its records (`batch_tuples`), so a damaged batch adds no event here either."""
    import mmap

    from kadmin.formats import kraft_log as kl
    from kadmin.pipeline.kraft_fast import (
        FAST_DECODER,
        FAST_ERRORS,
        partition_change_parts,
        partition_record_parts,
        uuid_text,
    )

    c = Columns(cluster)
    (cl, so, po, ts, evn, bid, epo, ses, top, par, lea, lep, isr_c, cid, det, sub_c, tid_c) = c.cols
    kraft = ev.KRAFT
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for batch in kl.iter_batches(mm, start, on_damage, crc):
                try:
                    records = kl.batch_tuples(batch)
                except ValueError as e:  # as iter_records reports it
                    on_damage(kl.Damage(batch.base_offset, f"batch of {batch.records_count} record(s) skipped: {e}",
                                        batch.position))
                    continue
                control = batch.control
                for t in records:
                    value = t[4]
                    parts: tuple[str, int, bytes, int | None, int | None, list[int] | None] | None = None
                    # the frame (kl.parse_frame): uvarints frameVersion 1, apiKey 3 or 5, version 2, in a byte each
                    if (not control and value is not None and len(value) > 3 and value[0] == 1 and value[2] == 2
                            and ((api := value[1]) == 3 or api == 5)):
                        try:
                            if api == 3:
                                p = partition_record_parts(2, value[3:])
                                parts = ("partition_state", p[0], p[1], p[6], p[7], p[3])
                            else:
                                q = partition_change_parts(2, value[3:])
                                parts = ("partition_change", q[0], q[1], None if q[3] == -2 else q[3], None, q[2])
                        except FAST_ERRORS:
                            pass
                    if parts is not None:  # ev.kraft_events' row of the record, column by column
                        event, pid, tid, leader, epoch, isr = parts
                        cl.append(cluster)
                        so.append(kraft)
                        po.append(t[0])
                        ts.append(t[1])
                        evn.append(event)
                        bid.append(None)
                        epo.append(None)
                        ses.append(None)
                        top.append(None)
                        par.append(pid)
                        lea.append(leader)
                        lep.append(epoch)
                        isr_c.append(isr)
                        cid.append(None)
                        det.append(_tid_detail(tid))
                        sub_c.append(0)
                        tid_c.append(uuid_text(tid))
                        c.n += 1
                    else:
                        for r in ev.kraft_events(kl.decode_one(batch, kl.LogRecord(*t), FAST_DECODER, on_damage),
                                                 cluster):
                            c.add(r)
                    if c.n >= rows:
                        yield c.batch()
                        (cl, so, po, ts, evn, bid, epo, ses, top, par, lea, lep, isr_c, cid, det, sub_c, tid_c) = c.cols
    if c.n:
        yield c.batch()


def rows_batches(rows: Iterable[dict[str, Any]], cluster: str, n: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Event rows (dicts of ev.COLUMNS) as record batches."""
    c = Columns(cluster)
    for r in rows:
        c.add(r)
        if c.n >= n:
            yield c.batch()
    if c.n:
        yield c.batch()


def parse_range_batches(work: tuple[str, str, int, int | None], cluster: str, chroot: str | None,
                        crc: Callable[[bytes], int] | None = None) -> Iterator[pa.RecordBatch]:
    """On an executor: the events of one range as record batches, then its `_damage` rows."""
    from kadmin.pipeline import ingest as ing

    kind, path, start, end = work
    damage: list[Any] = []
    try:
        if kind == "zk-txnlog":
            yield from zk_txnlog_batches(path, start, end, cluster, chroot, damage.append)
        elif kind == "kraft-log":
            yield from kraft_log_batches(path, start, cluster, damage.append, crc)
        else:
            yield from rows_batches(ing._rows(kind, path, start, end, cluster, chroot, damage.append, crc), cluster)
    except (OSError, ValueError) as e:
        damage.append(ing._Damage(start, in_words(e)))
    if damage:
        yield from rows_batches((ing.damage_row(d, cluster, kind, path) for d in damage), cluster)


def map_ranges(cluster: str, chroot: str | None,
               crc: Callable[[bytes], int] | None) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function for `DataFrame.mapInArrow` over a frame of work items (WORK_DDL)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for w in b.to_pylist():
                yield from parse_range_batches((w["kind"], w["path"], w["start"], w["end"]), cluster, chroot, crc)

    return run
