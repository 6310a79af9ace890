"""`kadmin history report`: bounces, generations, controllers, ISR churn and epochs, from the events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from kadmin.domain import fences as g
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


def broker_history(df: Any) -> g.History:
    """Generations and fence episodes from the lifecycle events. What ends a generation besides a
    deregistration: in KRaft, the start of a controlled shutdown, or a fence that no unfence of the same
    registration follows (one that is followed is a fence episode: kadmin.domain.fences)."""
    from pyspark.sql import functions as F

    events = g.LIFECYCLE
    cols = ("broker_id", "position", "ts_ms", "event", "epoch",
            F.get_json_object("detail", "$.incarnation_id").alias("incarnation_id"))
    rows = (df.filter(F.col("event").isin(*events))
            .filter(F.col("source") != "kadmin-ndjson")
            .select(*cols).collect())
    if not rows:  # only kadmin's own NDJSON was ingested
        rows = df.filter(F.col("event").isin(*events)).select(*cols).collect()
    return g.history(g.LifeEvent(r.broker_id, r.position, r.ts_ms, r.event, r.epoch, r.incarnation_id)
                     for r in rows if r.broker_id is not None)


def _generations(df: Any) -> list[h.Generation]:
    return broker_history(df).generations


def report(spark: Any, df: Any, kind: str) -> list[dict[str, Any]]:
    hist = broker_history(df)
    gens = hist.generations
    if kind == "generations":
        return [{"broker_id": x.broker_id, "epoch": x.epoch, "start": iso(x.start_ms), "end": iso(x.end_ms),
                 "gap_ms": x.gap_ms, "fence_episodes": len(hist.episodes_of(x)), "fenced_ms": hist.fenced_ms(x)}
                for x in gens]
    if kind == "bounces":
        fences = g.fence_stats(hist)
        return [{"broker_id": s.broker_id, "generations": s.generations, "bounces": s.bounces,
                 "downtime_p50_ms": s.downtime_p50_ms, "downtime_p90_ms": s.downtime_p90_ms,
                 "downtime_max_ms": s.downtime_max_ms, "fence_episodes": fences[s.broker_id].fence_episodes,
                 "fenced_ms": fences[s.broker_id].fenced_ms, "fenced_max_ms": fences[s.broker_id].fenced_max_ms}
                for s in h.bounce_stats(gens)]
    if kind == "epochs":
        return [{"at": iso(ts), "max_broker_epoch": e, "broker_id": b} for ts, e, b in h.max_epoch_over_time(gens)]
    if kind == "controllers":
        return controllers(df)
    if kind == "isr-churn":
        return isr_churn(spark, df, hist)
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


def isr_churn(spark: Any, df: Any, hist: g.History) -> list[dict[str, Any]]:
    """Per broker: ISR shrinks and expands, and after each bounce the time until it had rejoined every
    ISR it rejoined before its next generation or its first fence episode (the last expand naming it).
    A fence episode is no bounce: the shrinks and expands around it count, but not as a rejoin."""
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
        windows = g.rejoin_windows(hist)
        rejoin: dict[int, list[int]] = {}
        if windows:
            gdf = spark.createDataFrame(
                [(b, start, end if end is not None else 2**62) for b, start, end in windows],
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


TITLES = {"generations": "broker generations", "bounces": "broker bounces and downtime",
          "controllers": "controller changes", "isr-churn": "ISR shrinks and expands per broker",
          "epochs": "max broker epoch over time"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


NOTHING = {"bounces": "no brokers", "controllers": "no controller changes", "isr-churn": "no ISR changes",
           "epochs": "no broker epochs"}


def chart(kind: str, rows: Sequence[dict[str, Any]], title: str, hist: g.History | None = None) -> Any:
    """The matplotlib Figure of report `kind`: its rows (as `report` returns them) drawn, or for generations the
    timeline of `hist` (generations and fence episodes). ValueError says when there is nothing to draw."""
    if kind == "generations":
        if hist is None:
            raise ValueError("generations are drawn from the broker history")
        return _timeline(hist.generations, title, hist.episodes)
    if not rows:
        raise ValueError(f"{NOTHING[kind]} to draw")
    if kind == "bounces":
        return _bounces(rows, title)
    if kind == "isr-churn":
        return _isr_churn(rows, title)
    if kind == "controllers":
        return _steps(rows, title, "controller_id", "controller (-1: none)")
    if kind == "epochs":
        return _steps(rows, title, "max_broker_epoch", "max broker epoch (-1: no live broker)")
    raise ValueError(kind)


def save_png(fig: Any, path: str, kind: str) -> None:
    """Write the figure (its title and kind in the PNG's text chunks) and free it."""
    plt = _pyplot()
    try:
        fig.tight_layout()
        fig.savefig(path, dpi=100, metadata={"Title": fig.axes[0].get_title(), "Description": f"kadmin history "
                                             f"report {kind}", "Software": "kadmin"})
    finally:
        plt.close(fig)


def _seconds(rows: Sequence[dict[str, Any]]) -> tuple[list[float], str]:
    """Each row's "at" as seconds since the first, and the axis label naming that first time."""
    ms = [datetime.fromisoformat(r["at"].replace("Z", "+00:00")).timestamp() * 1000 for r in rows]
    t0 = min(ms)
    return [(m - t0) / 1000 for m in ms], f"seconds since {iso(int(t0))}"


def _steps(rows: Sequence[dict[str, Any]], title: str, key: str, ylabel: str) -> Any:
    """A value over time, held until the next change (controllers: who leads; epochs: the max broker epoch)."""
    rows = sorted(rows, key=lambda r: r["at"])
    xs, xlabel = _seconds(rows)
    ys = [r[key] if r[key] is not None else -1 for r in rows]
    fig, ax = _pyplot().subplots(figsize=(10, 3.5))
    ax.step(xs, ys, where="post", marker="o", label=key)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig


def _grouped(ax: Any, brokers: list[int], series: dict[str, list[float]]) -> None:
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        ax.bar([b + (i - (len(series) - 1) / 2) * width for b in range(len(brokers))], values, width, label=name)
    ax.set_xticks(range(len(brokers)), [f"broker {b}" for b in brokers])
    ax.legend(fontsize=8)


def _bounces(rows: Sequence[dict[str, Any]], title: str) -> Any:
    """Per broker: bounces (left), and downtime p50/p90/max in seconds (right)."""
    rows = sorted(rows, key=lambda r: r["broker_id"])
    brokers = [r["broker_id"] for r in rows]
    fig, (left, right) = _pyplot().subplots(1, 2, figsize=(10, 3.5))
    _grouped(left, brokers, {"bounces": [r["bounces"] for r in rows]})
    left.set_ylabel("bounces")
    left.set_title(title)
    _grouped(right, brokers, {q: [(r[f"downtime_{q}_ms"] or 0) / 1000 for r in rows] for q in ("p50", "p90", "max")})
    right.set_ylabel("downtime (s)")
    return fig


def _isr_churn(rows: Sequence[dict[str, Any]], title: str) -> Any:
    rows = sorted(rows, key=lambda r: r["broker_id"])
    fig, ax = _pyplot().subplots(figsize=(10, 3.5))
    _grouped(ax, [r["broker_id"] for r in rows], {"isr_shrinks": [r["isr_shrinks"] for r in rows],
                                                  "isr_expands": [r["isr_expands"] for r in rows]})
    ax.set_ylabel("ISR changes")
    ax.set_title(title)
    return fig


def _timeline(gens: Sequence[h.Generation], title: str, episodes: Sequence[g.FenceEpisode] = ()) -> Any:
    """A timeline of broker generations: one row per broker, one bar per generation, its fence episodes
    hatched over it."""
    brokers = sorted({x.broker_id for x in gens})
    if not gens:
        raise ValueError("no broker generations to draw")
    end_all = max(max(x.end_ms or x.start_ms for x in gens), max(x.start_ms for x in gens)) + 1
    t0 = gens[0].start_ms
    fig, ax = _pyplot().subplots(figsize=(10, 1 + 0.4 * len(brokers)))
    for row, b in enumerate(brokers):
        for x in (x for x in gens if x.broker_id == b):
            end = x.end_ms if x.end_ms is not None else end_all
            ax.barh(row, (end - x.start_ms) / 1000, left=(x.start_ms - t0) / 1000, height=0.6)
            ax.text((x.start_ms - t0) / 1000, row, f" {x.epoch}", va="center", fontsize=7)
        for e in (e for e in episodes if e.broker_id == b):
            ax.barh(row, e.fenced_ms / 1000, left=(e.start_ms - t0) / 1000, height=0.6, color="white",
                    edgecolor="black", hatch="//", linewidth=0.5)
    ax.set_yticks(range(len(brokers)), [f"broker {b}" for b in brokers])
    ax.set_xlabel(f"seconds since {iso(t0)} (hatched: fenced)")
    ax.set_title(title)
    return fig
