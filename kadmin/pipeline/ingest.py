"""`kadmin history ingest`: ZooKeeper txn logs, KRaft metadata logs and kadmin NDJSON → Parquet events.

The driver only lists files and collects metadata (split offsets, damage reports, counts). Stage 1
walks each ZooKeeper log's record lengths on an executor and returns record-aligned split offsets,
so one big log uses every core; stage 2 parses the ranges in the executors straight into Arrow record
batches (`kadmin.pipeline.arrow`, handed to Spark by `mapInArrow`: no Python rows); then partition states
are classified (leader_changed / isr_changed) with window functions against the previous state of
each partition, which for the first state of a partition in this ingest is the last one the table
already holds (so ingesting logs in parts gives what ingesting them at once gives); events get a
stable id, and only ids not already in the table are written (re-ingesting the same files adds
nothing). The new rows go to the run's staging directory and are committed by `table.Table.commit`;
the caller holds the table's lock throughout.
"""

from __future__ import annotations

import contextlib
import functools
import json
import operator
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kadmin.errors import in_words
from kadmin.pipeline import events as ev
from kadmin.pipeline.table import Table, fault

SPLIT_BYTES = 32 * 1024 * 1024
DAMAGE = "_damage"
# The descriptions of the ingest's Spark jobs, one per step (`spark.step`: the Spark UI and event log name them so).
# The windows, ids and dedupe are one action: Spark runs them lazily, in the stages of one count.
SPLIT, PARSE, CLASSIFY, AGAINST_TABLE, WRITE = (
    f"kadmin ingest: {s}" for s in ("split offsets", "read + parse into Arrow", "classify (windows), ids + dedupe",
                                     "dedupe against the table", "Parquet write"))


@dataclass(frozen=True)
class Source:
    kind: str  # "zk-txnlog" | "zk-snapshot" | "kraft-log" | "kraft-checkpoint" | "kadmin-ndjson"
    path: str
    size: int


@dataclass
class IngestSummary:
    files: int = 0
    ranges: int = 0
    bytes: int = 0
    events_parsed: int = 0
    events_added: int = 0
    damage: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    committed_files: int = 0


@dataclass
class Discovery:
    sources: list[Source]
    skipped: list[str]  # files given by name that are no log kadmin reads
    unreadable: list[str]  # directories that could not be listed (permissions, I/O errors)


def classify(path: Path) -> str | None:
    name = path.name
    if name.startswith("log.") and all(c in "0123456789abcdef" for c in name[4:]) and name[4:]:
        return "zk-txnlog"
    if name.startswith("snapshot.") and all(c in "0123456789abcdef" for c in name[9:]) and name[9:]:
        return "zk-snapshot"
    if name.endswith(".checkpoint") and not name.endswith(".part"):
        return "kraft-checkpoint"
    if name.endswith(".log") and name[:-4].isdigit():
        return "kraft-log"
    if name.endswith((".ndjson", ".jsonl")):
        return "kadmin-ndjson"
    return None


def discover(paths: list[str]) -> Discovery:
    """Files to ingest under the given files and directories (walked), what was passed over, and the
    directories that could not be read."""
    found: list[Source] = []
    skipped: list[str] = []
    unreadable: list[str] = []

    def unlisted(e: OSError) -> None:
        unreadable.append(str(e.filename) if e.filename else str(e))

    for p in paths:
        root = Path(p)
        if not root.exists():
            raise FileNotFoundError(p)
        if root.is_file():
            candidates = [root]
        else:
            candidates = []
            for d, dirs, files in os.walk(root, onerror=unlisted):
                dirs.sort()
                candidates += [Path(d) / f for f in sorted(files)]
            candidates = [c for c in candidates if c.is_file()]
        for f in candidates:
            kind = classify(f)
            if kind is None:
                if root.is_file():
                    skipped.append(str(f))
                continue
            found.append(Source(kind, str(f.resolve()), f.stat().st_size))
    return Discovery(found, skipped, unreadable)


# ---------------------------------------------------------------------------- executor-side functions
def split_source(src: Source, target: int) -> list[tuple[str, str, int, int | None]]:
    """On an executor: record-aligned ranges of one source (ZooKeeper logs are split by size)."""
    if src.kind != "zk-txnlog" or src.size <= target:
        return [(src.kind, src.path, 0, None)]
    import mmap

    from kadmin.formats import zk_txnlog

    with open(src.path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        points = zk_txnlog.split_points(mm, target)
    ends: list[int | None] = [*points[1:], None]
    return [(src.kind, src.path, start, end) for start, end in zip(points, ends, strict=True)]


def parse_range(work: tuple[str, str, int, int | None], cluster: str, chroot: str | None,
                crc: Callable[[bytes], int] | None = None) -> Iterator[tuple[Any, ...]]:
    """On an executor: the event rows of one range (plus `_damage` rows describing broken records), as
    tuples. The row path: the ingest runs on Arrow (`kadmin.pipeline.arrow`); this one is kept as the
    reference the Arrow path is compared with (tests/pipeline/test_arrow.py)."""
    kind, path, start, end = work
    damage: list[Any] = []

    def on_damage(d: Any) -> None:
        damage.append(d)

    rows: Iterator[dict[str, Any]]
    try:
        rows = _rows(kind, path, start, end, cluster, chroot, on_damage, crc)
        for r in rows:
            yield tuple(r[c] for c in ev.COLUMNS)
    except (OSError, ValueError) as e:
        damage.append(_Damage(start, in_words(e)))
    for d in damage:
        r = damage_row(d, cluster, kind, path)
        yield tuple(r[c] for c in ev.COLUMNS)


def damage_row(d: Any, cluster: str, kind: str, path: str) -> dict[str, Any]:
    """The `_damage` row of one Damage (collected by the driver, never written)."""
    return ev.row(cluster, kind, int(d.offset), 0, DAMAGE, detail=json.dumps({"file": path, "offset": d.offset,
                                                                                "reason": d.reason}))


@dataclass(frozen=True)
class _Damage:
    offset: int
    reason: str


def _rows(kind: str, path: str, start: int, end: int | None, cluster: str, chroot: str | None,
          on_damage: Callable[[Any], None], crc: Callable[[bytes], int] | None = None) -> Iterator[dict[str, Any]]:
    import mmap

    if kind == "kadmin-ndjson":
        with open(path, encoding="utf-8", errors="replace") as fh:
            yield from ev.ndjson_events(fh, cluster, os.path.basename(path))
        return
    if kind == "zk-snapshot":  # read whole: its nodes keep slices of the buffer
        from kadmin.formats import zk_snapshot

        with open(path, "rb") as fh:
            buf = fh.read()
        try:
            _, nodes = zk_snapshot.iter_snapshot(buf)
            for node in nodes:
                yield from ev.zk_snapshot_events(node, cluster, chroot)
        except zk_snapshot.SnapshotError as e:
            on_damage(_Damage(getattr(e, "offset", 0) or 0, f"snapshot: {e}"))
        return
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            if kind == "zk-txnlog":
                from kadmin.formats import zk_txnlog

                zk_txnlog.read_header(mm)
                for txn in zk_txnlog.iter_txns(mm, start=max(start, 16), end=end, on_damage=on_damage):
                    yield from ev.zk_events(txn, cluster, chroot, os.path.basename(path))
            else:
                from kadmin.formats import kraft_log
                from kadmin.pipeline.kraft_fast import FAST_DECODER  # partition records by hand, else DECODER

                for rec in kraft_log.iter_records(mm, FAST_DECODER, start=start, on_damage=on_damage, crc=crc):
                    yield from ev.kraft_events(rec, cluster)


def crc32c_impl() -> tuple[str, Callable[[bytes], int] | None]:
    """Which CRC-32C checks KRaft batches: the C one of the `crc32c` package when it is installed, else
    kadmin's pure-Python one (None: `kadmin.formats.kraft_log.crc32c`, the readers' default)."""
    try:
        import crc32c
    except ImportError:
        return "pure Python (kadmin.formats.kraft_log; pip install crc32c for the C one)", None
    return "C (the crc32c package)", crc32c.crc32c


# ---------------------------------------------------------------------------- the job
def spark_schema() -> Any:
    from pyspark.sql import types as T

    return T.StructType([
        T.StructField("cluster", T.StringType()), T.StructField("source", T.StringType()),
        T.StructField("position", T.LongType()), T.StructField("ts_ms", T.LongType()),
        T.StructField("event", T.StringType()), T.StructField("broker_id", T.IntegerType()),
        T.StructField("epoch", T.LongType()), T.StructField("session", T.StringType()),
        T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
        T.StructField("leader", T.IntegerType()), T.StructField("leader_epoch", T.IntegerType()),
        T.StructField("isr", T.ArrayType(T.IntegerType())), T.StructField("controller_id", T.IntegerType()),
        T.StructField("detail", T.StringType()), T.StructField("sub", T.IntegerType()),
        T.StructField("topic_id", T.StringType()),  # internal: the KRaft topic id (also in detail), not written
    ])


OUTPUT_COLUMNS = ["event_id", "cluster", "source", "position", "ts", "event", "broker_id", "epoch", "session",
                  "topic", "partition", "leader", "leader_epoch", "isr", "controller_id", "detail", "date"]


def table_schema() -> Any:
    """The table as readers see it: the Parquet files' columns, then the partition columns."""
    from pyspark.sql import types as T

    return T.StructType([
        T.StructField("event_id", T.StringType()), T.StructField("source", T.StringType()),
        T.StructField("position", T.LongType()), T.StructField("ts", T.TimestampType()),
        T.StructField("event", T.StringType()), T.StructField("broker_id", T.IntegerType()),
        T.StructField("epoch", T.LongType()), T.StructField("session", T.StringType()),
        T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
        T.StructField("leader", T.IntegerType()), T.StructField("leader_epoch", T.IntegerType()),
        T.StructField("isr", T.ArrayType(T.IntegerType())), T.StructField("controller_id", T.IntegerType()),
        T.StructField("detail", T.StringType()),
        T.StructField("cluster", T.StringType()), T.StructField("date", T.DateType()),
    ])


def ingest(spark: Any, found: Discovery, cluster: str, table: Table, run_id: str, chroot: str | None = None,
           split_bytes: int = SPLIT_BYTES, executor: str = "arrow") -> IngestSummary:
    """Parse, classify, keep what the table lacks, write it to the run's staging directory and commit.
    The caller holds the table's lock (`Table.lock`) and has cleaned up after dead runs (`Table.recover`).
    `executor`: "arrow" (ranges parsed into Arrow batches, `mapInArrow`) or "rows" (the row path the
    Arrow path is tested against)."""
    sources = found.sources
    summary = IngestSummary(files=len(sources), bytes=sum(s.size for s in sources), skipped=found.skipped,
                            unreadable=found.unreadable)
    if not sources:
        return summary
    with _shuffle_partitions(spark, summary.bytes):
        return _ingest(spark, sources, summary, cluster, table, run_id, chroot, split_bytes, executor)


@contextlib.contextmanager
def _shuffle_partitions(spark: Any, size: int) -> Iterator[None]:
    """This ingest's shuffle partitions: one per SPLIT_BYTES of logs, at most the session's setting (kadmin's
    default 8, `kadmin.pipeline.spark`), in a session whose shuffles kadmin sizes. A small ingest's windows and
    dedupe then sort one partition, not eight near-empty ones, and its Parquet write is one task: a fifth less
    CPU for a few hundred events (the map side writes a file per partition, whatever adaptive execution
    coalesces after). A number the operator set holds as set. Put back as it was after."""
    from kadmin.pipeline.spark import SHUFFLE_PARTITIONS, SIZED

    before = spark.conf.get(SHUFFLE_PARTITIONS)
    if spark.conf.get(SIZED, "false") != "true" or not before.isdigit():
        yield
        return
    spark.conf.set(SHUFFLE_PARTITIONS, str(max(1, min(int(before), -(-size // SPLIT_BYTES)))))
    try:
        yield
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, before)


def _ingest(spark: Any, sources: list[Source], summary: IngestSummary, cluster: str, table: Table, run_id: str,
            chroot: str | None, split_bytes: int, executor: str) -> IngestSummary:
    from pyspark.sql import functions as F

    from kadmin.pipeline.spark import step

    sc = spark.sparkContext
    zk = [s for s in sources if s.kind == "zk-txnlog"]
    work: list[tuple[str, str, int, int | None]] = [(s.kind, s.path, 0, None) for s in sources if s.kind != "zk-txnlog"]
    if zk:
        target = split_bytes
        with step(spark, SPLIT):
            work += sc.parallelize(zk, len(zk)).flatMap(lambda s: split_source(s, target)).collect()
    summary.ranges = len(work)
    crc = crc32c_impl()[1]
    if executor == "rows":
        rdd = sc.parallelize(work, len(work)).flatMap(lambda w: parse_range(w, cluster, chroot, crc))
        raw = spark.createDataFrame(rdd, spark_schema()).persist()
    else:
        from kadmin.pipeline.arrow import WORK_DDL, map_ranges

        # one work item per partition (a task per range), each parsed into Arrow record batches
        items = spark.createDataFrame(sc.parallelize(work, len(work)), WORK_DDL)
        raw = items.mapInArrow(map_ranges(cluster, chroot, crc), spark_schema()).persist()
    prior = table.read(spark).filter(F.col("cluster") == cluster)
    try:
        with step(spark, PARSE):  # the first reader of `raw`: parses every range into its cache
            damaged = raw.filter(F.col("event") == DAMAGE).select("detail").collect()
        summary.damage = [json.loads(r.detail) for r in damaged]
        events = classify_partitions(raw.filter(F.col("event") != DAMAGE), prior)
        key = F.concat_ws("|", *[F.coalesce(F.col(c).cast("string"), F.lit("")) for c in
                                 ("cluster", "source", "position", "event", "broker_id", "topic", "partition", "sub")])
        events = (events.withColumn("event_id", F.sha2(key, 256))
                  .withColumn("ts", F.timestamp_millis(F.col("ts_ms")))
                  .withColumn("date", F.to_date(F.col("ts")))
                  .dropDuplicates(["event_id"])
                  .persist())  # counted, then anti-joined and written: compute the windows once
        cached = events
        with step(spark, CLASSIFY):
            summary.events_parsed = events.count()
        events = events.join(prior.select("event_id"), "event_id", "left_anti")
        new = events.select(*OUTPUT_COLUMNS).persist()
        try:
            with step(spark, AGAINST_TABLE):
                summary.events_added = new.count()
            if summary.events_added:
                stage = table.staging(run_id)
                with step(spark, WRITE):
                    new.write.mode("errorifexists").partitionBy("cluster", "date").parquet(str(stage))
                fault("staged")
                summary.committed_files = len(table.commit(run_id, cluster, summary.events_added))
        finally:
            new.unpersist()
            cached.unpersist()
    finally:
        raw.unpersist()
    return summary


def classify_partitions(df: Any, prior: Any = None) -> Any:
    """Partition states → leader_changed / isr_changed, against the partition's previous state.

    ZooKeeper state znodes carry the whole state; KRaft PartitionChangeRecords carry only what
    changed (leader or ISR; null = unchanged), so values are carried forward first. KRaft records
    name the topic by id: TopicRecord's name is joined in. `prior` (the table's events of this
    cluster) supplies what an earlier ingest saw: topic names, and for each partition the last state
    before this ingest's first one, which then is the previous state of that first one (as it would
    be had both ingests been one).
    """
    from pyspark.sql import functions as F

    others = df.filter(~F.col("event").isin("partition_state", "partition_change"))
    filled = windowed_states(df, prior)
    base = [c for c in df.columns if c not in ("event", "leader", "isr", "leader_epoch", "sub", "detail")]
    # 0, 1 or 2 events per state, from one pass over the window (two filtered copies of `filled` would
    # sort and window every state twice): k 0 leader_changed (sub*2), k 1 isr_changed (sub*2+1)
    kinds = F.array_compact(F.array(
        F.when(F.col("first") | (F.col("leader_f") != F.col("prev_leader")), F.lit(0)),
        F.when(~F.col("first") & (F.col("isr_f") != F.col("prev_isr")), F.lit(1))))
    prev_detail = F.to_json(F.struct(F.col("prev_leader").alias("previous_leader"),
                                     F.col("prev_isr").alias("previous_isr")))
    changed = filled.withColumn("k", F.explode(kinds)).select(
        *base, F.when(F.col("k") == 0, F.lit("leader_changed")).otherwise(F.lit("isr_changed")).alias("event"),
        F.col("leader_f").alias("leader"), F.col("isr_f").alias("isr"), F.col("epoch_f").alias("leader_epoch"),
        (F.col("sub") * 2 + F.col("k")).alias("sub"), prev_detail.alias("detail"))
    cols = df.columns
    return others.select(*cols).unionByName(changed.select(*cols))


def windowed_states(df: Any, prior: Any = None) -> Any:
    """classify_partitions' states, each with its partition's state carried forward (`leader_f`, `isr_f`,
    `epoch_f`), the previous state's (`prev_leader`, `prev_isr`) and whether it is the partition's `first`;
    topic names joined in for KRaft ids, `prior`'s seeds used and dropped."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    states = df.filter(F.col("event").isin("partition_state", "partition_change"))

    def topic_ids(frame: Any, tid: Any) -> Any:
        return (frame.filter((F.col("event") == "topic_created") & (F.col("source") == ev.KRAFT))
                .select(tid.alias("tid"), F.col("topic").alias("tname")))

    # the raw frame carries the topic id as a column (ev.COLUMNS); the table has it in detail only
    topics = topic_ids(df, F.col("topic_id"))
    if prior is not None:
        topics = topics.unionByName(topic_ids(prior, F.get_json_object("detail", "$.topic_id")))
    topics = topics.dropDuplicates(["tid"])
    # only KRaft states name their topic by id (ZooKeeper ones carry the name)
    states = (states.withColumn("tid", F.when(F.col("source") == ev.KRAFT, F.col("topic_id")))
              .join(F.broadcast(topics), "tid", "left")  # small: the states are not shuffled for it
              .withColumn("topic", F.coalesce(F.col("topic"), F.col("tname"), F.col("tid")))
              .drop("tid", "tname")
              .withColumn("seed", F.lit(False)))
    keys = ["cluster", "source", "topic", "partition"]
    if prior is not None:
        states = states.unionByName(_seeds(states, prior, keys, df.columns))
    # Exact duplicate states (one log ingested from several controllers or ZooKeeper members: a row names no
    # file) are dropped before the windows below, inside the sort they need anyway: ordered by every column,
    # a duplicate follows its twin, and the windows read each state once. A duplicate added no event (its twin
    # is its previous state), so the events are the same; distinct logs pay one more pass over sorted rows.
    rest = [c for c in states.columns if c not in keys]
    order = ["position", "sub", *[c for c in rest if c not in ("position", "sub")]]
    w = Window.partitionBy(*keys).orderBy(*order)
    twin = functools.reduce(operator.and_, [F.lag(c).over(w).eqNullSafe(F.col(c)) for c in rest])  # not a
    # lag of one struct of them: Spark would build that struct before the shuffle and ship every value twice
    states = states.withColumn("twin", twin).filter(~F.col("twin")).drop("twin")
    upto = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    filled = (states.withColumn("leader_f", F.last("leader", ignorenulls=True).over(upto))
              .withColumn("isr_f", F.last("isr", ignorenulls=True).over(upto))
              .withColumn("epoch_f", F.last("leader_epoch", ignorenulls=True).over(upto)))
    filled = (filled.withColumn("prev_leader", F.lag("leader_f").over(w))
              .withColumn("prev_isr", F.lag("isr_f").over(w))
              .withColumn("first", F.lag("position").over(w).isNull())
              .filter(~F.col("seed")))
    return filled


def _seeds(states: Any, prior: Any, keys: list[str], columns: list[str]) -> Any:
    """Per partition of this ingest, the table's last leader_changed/isr_changed event before this
    ingest's first state of it, shaped as a state row marked `seed` (it sets the previous state and
    is not itself classified). Both events of one state carry the same leader, ISR and epoch."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    firsts = states.groupBy(*keys).agg(F.min("position").alias("first_position"))
    known = (prior.filter(F.col("event").isin("leader_changed", "isr_changed"))
             .join(firsts, keys)
             .filter(F.col("position") < F.col("first_position")))
    latest = Window.partitionBy(*keys).orderBy(F.col("position").desc(), F.col("event"))
    last = known.withColumn("n", F.row_number().over(latest)).filter(F.col("n") == 1)
    shaped = last.select(
        *[F.col(c) for c in keys], F.col("position"), F.unix_millis(F.col("ts")).alias("ts_ms"),
        F.lit("partition_state").alias("event"), F.col("leader"), F.col("leader_epoch"), F.col("isr"),
        F.col("epoch"), F.lit(-1).alias("sub"), F.lit(None).cast("string").alias("detail"),
        F.lit(True).alias("seed"))
    missing = [c for c in columns if c not in shaped.columns]
    types = dict(states.dtypes)
    return shaped.select(*shaped.columns, *[F.lit(None).cast(types[c]).alias(c) for c in missing])
