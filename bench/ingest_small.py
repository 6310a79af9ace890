"""Benchmark a small `kadmin history ingest` in a warm Spark session: kadmin's sized shuffles against 8 of them.

A post-mortem or a test ingests a few MiB of logs, a few hundred events; there a Spark job's fixed costs are the
work. One process, one local[2] session (kadmin.pipeline.spark.session), one KRaft metadata log written by
tests/support/kraft_log_writer.py (--partitions partitions of one topic, each moved through --changes ISR
changes, brokers 1-3 registered): a warm-up ingest, then --rounds rounds, each two ingests into fresh
tables in alternating order:
  - sized: kadmin's default, one shuffle partition per 32 MiB of logs (here 1);
  - fixed: the session's 8 for every shuffle (what an operator's `--conf spark.sql.shuffle.partitions=8` gives).
Per ingest: wall time and the CPU of the whole process tree (this Python, the Spark JVM, its Python workers, from
/proc). Both tables must hold the same rows, or the bench fails. Prints a line per round, then the medians and one
final line of JSON.
Usage: python bench/ingest_small.py [--partitions 100] [--changes 4] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import history as zkbench  # noqa: E402  (bench/history.py: a process's descendants, `_tree`)
from scan import cpu_of  # noqa: E402  (bench/scan.py: a process's CPU from /proc)


def tree_cpu(root: int) -> float:
    """User + system CPU seconds of `root` and its live descendants (/proc)."""
    return sum(cpu_of(pid) or 0.0 for pid in [root, *zkbench._tree(root)])


def write_log(d: Path, partitions: int, changes: int) -> int:
    import tests.support.kraft_log_writer as W

    tid, t0 = uuid.UUID(int=7), 1_700_000_000_000
    batches = [W.batch(0, 1, t0, [W.register_broker(2, b, uuid.UUID(int=b), b, [("PLAINTEXT", f"b{b}", 9092, 0)],
                                                    [], None) for b in (1, 2, 3)]),
               W.batch(3, 1, t0 + 1000, [W.topic("orders", tid)] + [
                   W.partition(0, p, tid, [1, 2, 3], [1, 2, 3], [], [], 1, 0, 0) for p in range(partitions)])]
    offset, isrs = 4 + partitions, ([1, 3], [1, 3, 2])
    for c in range(changes):
        values = [W.partition_change(0, p, tid, isr=isrs[c % 2]) for p in range(partitions)]
        batches.append(W.batch(offset, 1, t0 + 2000 + c * 1000, values))
        offset += len(values)
    W.write_file(d / f"{0:020d}.log", batches)
    return offset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--changes", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()

    from kadmin.pipeline.ingest import discover, ingest
    from kadmin.pipeline.spark import SIZED, session
    from kadmin.pipeline.table import Table, new_run_id

    work = Path(tempfile.mkdtemp(prefix="kadmin-bench-ingest-"))
    logs = work / "logs"
    records = write_log(logs, a.partitions, a.changes)
    spark = session("local[2]")
    runs = 0
    tables: list[Table] = []

    def one(sized: bool) -> tuple[float, float, int]:
        nonlocal runs
        runs += 1
        spark.conf.set(SIZED, "true" if sized else "false")
        table, run_id = Table(str(work / f"out{runs}")), new_run_id()
        tables.append(table)
        found = discover([str(logs)])
        cpu0, t0 = tree_cpu(os.getpid()), time.perf_counter()
        table.prepare()
        with table.lock(run_id):  # as `kadmin history ingest` does (kadmin.services.history)
            table.recover()
            got = ingest(spark, found, "bench", table, run_id)
        wall, cpu = time.perf_counter() - t0, tree_cpu(os.getpid()) - cpu0
        return wall, cpu, got.events_added

    print(f"{records} records, {(logs / f'{0:020d}.log').stat().st_size} bytes; warm-up", file=sys.stderr)
    one(True)
    one(False)
    res: dict[str, list[tuple[float, float]]] = {"sized": [], "fixed": []}
    events: set[int] = set()
    for r in range(a.rounds):
        order = ("sized", "fixed") if r % 2 == 0 else ("fixed", "sized")
        for kind in order:
            wall, cpu, added = one(kind == "sized")
            events.add(added)
            res[kind].append((wall, cpu))
        print(f"round {r + 1}: " + ", ".join(f"{k} {res[k][-1][0]:.2f} s wall {res[k][-1][1]:.2f} CPU-s"
                                             for k in ("sized", "fixed")), file=sys.stderr)
    ids = [frozenset(r.event_id for r in t.read(spark).select("event_id").collect()) for t in tables]
    if len(events) != 1 or len(set(ids)) != 1:
        sys.exit(f"the ingests' tables differ: events added {sorted(events)}, {len(set(ids))} distinct sets of ids")
    med = {k: {"wall_s": round(statistics.median(w for w, _ in v), 3),
               "cpu_s": round(statistics.median(c for _, c in v), 3)} for k, v in res.items()}
    ratio = round(med["sized"]["cpu_s"] / med["fixed"]["cpu_s"], 3)
    load = os.getloadavg()[0]
    print(f"median sized: {med['sized']['wall_s']} s wall, {med['sized']['cpu_s']} CPU-s; fixed (8): "
          f"{med['fixed']['wall_s']} s wall, {med['fixed']['cpu_s']} CPU-s; CPU ratio {ratio}; load {load:.1f}")
    spark.stop()
    print(json.dumps({"bench": "ingest_small", "events": events.pop(), "records": records, "median": med,
                      "cpu_ratio_sized_to_fixed": ratio, "load_1m": round(load, 1)}))


if __name__ == "__main__":
    main()
