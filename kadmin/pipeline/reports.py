"""`kadmin history report`: bounces, generations, controllers, ISR churn and epochs, from the events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from kadmin.domain import history as h

KINDS = ("bounces", "generations", "controllers", "isr-churn", "epochs")


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def load(spark: Any, directory: str, cluster: str | None, since_ms: int | None, until_ms: int | None) -> Any:
    """The committed events of the table in `directory` (see kadmin.pipeline.table), filtered."""
    from pyspark.sql import functions as F

    from kadmin.pipeline.table import Table

    df = Table(directory).read(spark)
    df = df.withColumn("ts_ms", F.unix_millis(F.col("ts")))
    if cluster:
        df = df.filter(F.col("cluster") == cluster)
    if since_ms is not None:
        df = df.filter(F.col("ts_ms") >= since_ms)
    if until_ms is not None:
        df = df.filter(F.col("ts_ms") < until_ms)
    return df


# What ends a generation besides a deregistration: in KRaft, a fence or the start of a controlled shutdown.
ENDS = ("broker_deregistered", "broker_fenced", "broker_controlled_shutdown")


def _generations(df: Any) -> list[h.Generation]:
    from pyspark.sql import functions as F

    events = ("broker_registered", *ENDS)
    cols = ("broker_id", "position", "ts_ms", "event", "epoch",
            F.get_json_object("detail", "$.incarnation_id").alias("incarnation_id"))
    rows = (df.filter(F.col("event").isin(*events))
            .filter(F.col("source") != "kadmin-ndjson")
            .select(*cols).collect())
    if not rows:  # only kadmin's own NDJSON was ingested
        rows = df.filter(F.col("event").isin(*events)).select(*cols).collect()
    return h.generations(h.RegEvent(r.broker_id, r.position, r.ts_ms, r.event == "broker_registered", r.epoch,
                                    r.incarnation_id)
                         for r in rows if r.broker_id is not None)


def report(spark: Any, df: Any, kind: str) -> list[dict[str, Any]]:
    gens = _generations(df)
    if kind == "generations":
        return [{"broker_id": g.broker_id, "epoch": g.epoch, "start": iso(g.start_ms), "end": iso(g.end_ms),
                 "gap_ms": g.gap_ms} for g in gens]
    if kind == "bounces":
        return [{"broker_id": s.broker_id, "generations": s.generations, "bounces": s.bounces,
                 "downtime_p50_ms": s.downtime_p50_ms, "downtime_p90_ms": s.downtime_p90_ms,
                 "downtime_max_ms": s.downtime_max_ms} for s in h.bounce_stats(gens)]
    if kind == "epochs":
        return [{"at": iso(ts), "max_broker_epoch": e, "broker_id": b} for ts, e, b in h.max_epoch_over_time(gens)]
    if kind == "controllers":
        return controllers(df)
    if kind == "isr-churn":
        return isr_churn(spark, df, gens)
    raise ValueError(kind)


def controllers(df: Any) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    rows = (df.filter(F.col("event").isin("controller_changed", "controller_epoch_changed", "quorum_leader_changed"))
            .select("position", "ts_ms", "event", "controller_id", "epoch", "leader", "leader_epoch")
            .collect())
    # one multi creates /controller and bumps /controller_epoch: the election first, then its epoch
    rows = sorted(rows, key=lambda r: (r.position, r.event != "controller_changed"))
    out: list[dict[str, Any]] = []
    epoch = None
    for r in rows:
        if r.event == "controller_epoch_changed":
            epoch = r.epoch
            if out and out[-1]["controller_epoch"] is None:
                out[-1]["controller_epoch"] = epoch
            continue
        cid = r.controller_id if r.event == "controller_changed" else r.leader
        if r.event == "controller_changed" and cid == -1:
            out.append({"at": iso(r.ts_ms), "event": "resigned", "controller_id": None, "controller_epoch": None})
            continue
        out.append({"at": iso(r.ts_ms), "event": "elected" if r.event == "controller_changed" else "quorum_leader",
                    "controller_id": cid,
                    "controller_epoch": r.leader_epoch if r.event == "quorum_leader_changed" else None})
    return out


def isr_churn(spark: Any, df: Any, gens: Sequence[h.Generation]) -> list[dict[str, Any]]:
    """Per broker: ISR shrinks and expands, and after each bounce the time until it had rejoined every
    ISR it rejoined before its next generation (the last expand naming it)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    changes = (df.filter(F.col("event") == "isr_changed")
               .withColumn("prev", F.from_json(F.get_json_object("detail", "$.previous_isr"),
                                               T.ArrayType(T.IntegerType())))
               .select("ts_ms", F.array_except("prev", "isr").alias("removed"),
                       F.array_except("isr", "prev").alias("added")))
    removed = changes.select("ts_ms", F.explode("removed").alias("broker_id")).withColumn("kind", F.lit("shrink"))
    added = changes.select("ts_ms", F.explode("added").alias("broker_id")).withColumn("kind", F.lit("expand"))
    per = removed.unionByName(added).persist()
    try:
        counts = {(r.broker_id, r.kind): r["count"] for r in per.groupBy("broker_id", "kind").count().collect()}
        bounces = [g for i, g in enumerate(gens) if i > 0 and gens[i - 1].broker_id == g.broker_id]
        rejoin: dict[int, list[int]] = {}
        if bounces:
            gdf = spark.createDataFrame(
                [(g.broker_id, g.start_ms, g.end_ms if g.end_ms is not None else 2**62) for g in bounces],
                "broker_id int, start_ms long, end_ms long")
            joined = (per.filter(F.col("kind") == "expand").join(gdf, "broker_id")
                      .filter((F.col("ts_ms") >= F.col("start_ms")) & (F.col("ts_ms") < F.col("end_ms")))
                      .groupBy("broker_id", "start_ms").agg(F.max("ts_ms").alias("last")))
            for r in joined.collect():
                rejoin.setdefault(r.broker_id, []).append(r["last"] - r.start_ms)
    finally:
        per.unpersist()
    brokers = sorted({b for b, _ in counts} | set(rejoin))
    return [{"broker_id": b, "isr_shrinks": counts.get((b, "shrink"), 0), "isr_expands": counts.get((b, "expand"), 0),
             "rejoins": len(rejoin.get(b, [])), "rejoin_p50_ms": h.percentile(rejoin.get(b, []), 0.5),
             "rejoin_max_ms": max(rejoin[b]) if rejoin.get(b) else None} for b in brokers]


def timeline_png(gens: Sequence[h.Generation], path: str, title: str) -> None:
    """A timeline of broker generations: one row per broker, one bar per generation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    brokers = sorted({g.broker_id for g in gens})
    if not gens:
        raise ValueError("no broker generations to draw")
    end_all = max(max(g.end_ms or g.start_ms for g in gens), max(g.start_ms for g in gens)) + 1
    fig, ax = plt.subplots(figsize=(10, 1 + 0.4 * len(brokers)))
    for row, b in enumerate(brokers):
        for g in (x for x in gens if x.broker_id == b):
            end = g.end_ms if g.end_ms is not None else end_all
            ax.barh(row, (end - g.start_ms) / 1000, left=(g.start_ms - gens[0].start_ms) / 1000, height=0.6)
            ax.text((g.start_ms - gens[0].start_ms) / 1000, row, f" {g.epoch}", va="center", fontsize=7)
    ax.set_yticks(range(len(brokers)), [f"broker {b}" for b in brokers])
    ax.set_xlabel(f"seconds since {iso(gens[0].start_ms)}")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

