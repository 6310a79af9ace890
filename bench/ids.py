"""Benchmark seed 002's missing-id scan (`kadmin ids missing`, `kadmin ids resolve`) at 100k partitions.

Setup (all on 127.0.0.1, all cleaned up): a standalone ZooKeeper (kadmin.sandbox.zkserver) under
the chroot /kafka; ThreadedFleet.setup_cluster() and brokers 1..6, each registered from its own
session; then --topics x --partitions partitions seeded with BulkWriter in Kafka's 3.9 layout
(topic znode v3, partitions, partitions/<p>, partitions/<p>/state). Replicas are 3 brokers
round-robin over 1..8, and brokers 7 and 8 are never registered: they are the missing ids.

Measured, each as a real `python -m kadmin ... -z 127.0.0.1:PORT/kafka` subprocess, median of 3:
  1. `ids hosts -o json`: start-up + connect + a few reads, no topic scan (the baseline).
  2. `ids missing -o json`: the seed's scan (every /brokers/topics/<t>); checks that it reports
     exactly [7, 8] with the partition counts the fixture assigned them.
  3. `ids resolve --host x -o json`: the same scan, then the seed's procedure (two missing ids:
     exit 1, human intervention needed; checked).
Compared with the seed's own estimate: ~1 ms per topic read one at a time (~1 s per 1,000 topics).
Prints human-readable lines, then one final line of JSON with every number.
Usage: python bench/ids.py [--topics 10000] [--partitions 10]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kadmin.domain import znodes
from kadmin.sandbox.bulk_writer import BulkWriter
from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.zkserver import Ensemble, four_letter_word

KADMIN = [sys.executable, "-m", "kadmin"]
CHROOT = "/kafka"
ALL_BROKERS = range(1, 9)  # named in replica assignments
LIVE = range(1, 7)  # registered; 7 and 8 are missing
MISSING = sorted(set(ALL_BROKERS) - set(LIVE))
SEED_MS_PER_TOPIC = 1.0  # the seed: "~1s for 1k topics with 1ms each"


def replicas_of(g: int) -> list[int]:  # g: global partition index, round-robin over brokers 1..8
    return [(g + k) % len(ALL_BROKERS) + 1 for k in range(3)]


def seed_items(topics: int, parts: int) -> Iterator[tuple[str, bytes | None]]:
    for t in range(topics):
        assignment = {p: replicas_of(t * parts + p) for p in range(parts)}
        yield f"/brokers/topics/t{t:05d}", znodes.encode_topic(assignment, topic_id=f"{t:022d}")
        yield f"/brokers/topics/t{t:05d}/partitions", None
        for p, reps in assignment.items():
            isr = [b for b in reps if b in LIVE]  # the missing brokers fell out of every ISR
            yield f"/brokers/topics/t{t:05d}/partitions/{p}", None
            yield f"/brokers/topics/t{t:05d}/partitions/{p}/state", znodes.encode_partition_state(isr[0], 0, 1, isr)


def expected_counts(topics: int, parts: int) -> dict[int, int]:
    c: Counter[int] = Counter()
    for g in range(topics * parts):
        c.update(b for b in replicas_of(g) if b not in LIVE)
    return dict(sorted(c.items()))


def timed3(args: list[str], connect: str, ok: tuple[int, ...]) -> tuple[float, list[float], int, dict[str, Any], int]:
    """Median wall time of 3 runs, every wall time, the last run's exit code, parsed JSON and stdout size."""
    walls, rc, doc, size = [], 0, {}, 0
    for _ in range(3):
        t0 = time.monotonic()
        p = subprocess.run([*KADMIN, *args, "-z", connect], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=600)
        walls.append(time.monotonic() - t0)
        rc = p.returncode
        if rc not in ok:
            raise RuntimeError(f"kadmin {' '.join(args)} exited {rc}: {p.stderr.strip()[-500:]}")
        doc, size = json.loads(p.stdout), len(p.stdout)
    return statistics.median(walls), walls, rc, doc, size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10)
    args = ap.parse_args()
    if args.topics < 1 or args.partitions < 1:
        raise SystemExit("--topics and --partitions must be at least 1")
    logging.basicConfig(level=logging.CRITICAL)  # kazoo's connection chatter
    n = args.topics * args.partitions
    expected = expected_counts(args.topics, args.partitions)
    res: dict[str, Any] = {"topics": args.topics, "partitions": n, "registered": list(LIVE), "missing": MISSING,
                           "expected_missing_partitions": {str(b): c for b, c in expected.items()},
                           "python": sys.version.split()[0], "cpus": os.cpu_count()}
    problems: list[str] = []
    tmp = tempfile.mkdtemp(prefix="kadmin-bench-ids-")
    ens = Ensemble(Path(tmp), size=1)
    fleet: ThreadedFleet | None = None
    try:
        ens.start(timeout=60)
        host, port = ens.hosts[0]
        connect = f"{ens.connect_string}{CHROOT}"
        print(f"ZooKeeper standalone on {host}:{port}, cluster at {connect}", flush=True)
        fleet = ThreadedFleet(ens.hosts, chroot=CHROOT)
        fleet.setup_cluster()
        for b in LIVE:
            fleet.register(BrokerSpec(b, port=9090 + b))
        t0 = time.perf_counter()
        with BulkWriter(ens.hosts, chroot=CHROOT, timeout=30) as w:
            created = w.create_many(seed_items(args.topics, args.partitions))
        dt = time.perf_counter() - t0
        print(f"seeded {args.topics:,} topics x {args.partitions} = {n:,} partitions ({created:,} znodes) in "
              f"{dt:.1f} s = {created / dt:,.0f} creates/s; brokers {LIVE[0]}..{LIVE[-1]} registered, "
              f"{', '.join(map(str, MISSING))} assigned but not registered "
              f"({', '.join(f'{b}: {c:,} partitions' for b, c in expected.items())})", flush=True)
        res["seed"] = {"znodes": created, "wall_s": round(dt, 2)}
        mntr = four_letter_word(host, port, "mntr", timeout=10)
        count = next((int(line.split()[1]) for line in mntr.splitlines() if line.startswith("zk_znode_count")), None)
        print(f"ZooKeeper zk_znode_count: {count}", flush=True)
        res["zk_znode_count"] = count

        wall, walls, _, doc, _ = timed3(["ids", "hosts", "-o", "json"], connect, (0,))
        print(f"ids hosts -o json (baseline: start-up + connect, no scan): median {wall:.2f} s", flush=True)
        res["hosts_baseline"] = {"median_s": round(wall, 3), "runs_s": [round(x, 3) for x in walls]}
        base = wall

        wall, walls, rc, doc, size = timed3(["ids", "missing", "-o", "json"], connect, (0,))
        got = {r["broker_id"]: r["partitions"] for r in doc["data"]}
        listed = {r["broker_id"]: len(r["assignments"]) for r in doc["data"]}
        ok = got == expected and listed == expected and not doc["errors"]
        if not ok:
            problems.append(f"ids missing reported {got} (assignments listed: {listed}, errors {doc['errors']}), "
                            f"expected {expected}")
        print(f"ids missing -o json: median {wall:.2f} s (runs {', '.join(f'{x:.2f}' for x in walls)}), "
              f"exit {rc}, {size / 1e6:.1f} MB of JSON: {sorted(got)} with "
              f"{', '.join(f'{b}: {c:,}' for b, c in sorted(got.items()))} partitions"
              f"{'' if ok else f'  <-- expected {expected}'}", flush=True)
        res["missing_cmd"] = {"median_s": round(wall, 3), "runs_s": [round(x, 3) for x in walls], "exit_code": rc,
                              "reported": {str(b): c for b, c in sorted(got.items())}, "stdout_bytes": size,
                              "correct": ok}
        missing_wall = wall

        wall, walls, rc, doc, _ = timed3(["ids", "resolve", "--host", "x", "-o", "json"], connect, (0, 1))
        errs = doc.get("errors") or []
        text = " ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errs)
        ok = rc == 1 and "human intervention" in text
        if not ok:
            problems.append(f"ids resolve --host x: exit {rc}, {doc}")
        print(f"ids resolve --host x -o json: median {wall:.2f} s (runs {', '.join(f'{x:.2f}' for x in walls)}), "
              f"exit {rc}{'' if ok else '  <-- expected 1 (two missing ids: human intervention)'}: {text[:160]}",
              flush=True)
        res["resolve_cmd"] = {"median_s": round(wall, 3), "runs_s": [round(x, 3) for x in walls], "exit_code": rc,
                              "error": text, "correct": ok}

        estimate = args.topics * SEED_MS_PER_TOPIC / 1000
        print(f"seed 002's estimate for {args.topics:,} topics read one at a time (~1 ms each): ~{estimate:.1f} s; "
              f"ids missing took {missing_wall:.2f} s ({estimate / missing_wall:.1f}x faster), of which "
              f"~{missing_wall - base:.2f} s beyond the no-scan baseline "
              f"({(missing_wall - base) * 1e6 / args.topics:.0f} us per topic)", flush=True)
        res["seed_estimate_s"] = estimate
        res["speedup_vs_seed_estimate"] = round(estimate / missing_wall, 1)
        res["scan_beyond_baseline_s"] = round(missing_wall - base, 3)
    finally:
        if fleet is not None:
            fleet.shutdown()
        ens.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    res["problems"] = problems
    for p in problems:
        print(f"PROBLEM: {p}", flush=True)
    print(json.dumps(res))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
