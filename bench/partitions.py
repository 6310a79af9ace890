"""Benchmark kadmin's partition commands at 100k partitions, and what one `wait --in-sync` update costs.

Setup (all on 127.0.0.1, all cleaned up): a standalone ZooKeeper (kadmin.sandbox.zkserver) under
the chroot /kafka; ThreadedFleet.setup_cluster() and brokers 1..6, each registered from its own
session; then --topics x --partitions partitions seeded with BulkWriter in Kafka's 3.9 layout
(topic znode v3, partitions, partitions/<p>, partitions/<p>/state) plus /config/topics/<t> with
min.insync.replicas=2. Replicas are 3 brokers round-robin over 1..6; broker 1 is out of the ISR of
exactly --lagging of the partitions that list it (spread evenly), in the ISR everywhere else.

Measured, each as a real `python -m kadmin ... -z 127.0.0.1:PORT/kafka` subprocess:
  1. `partitions list -o json`: wall time, median of 3 (checks the row count).
  2. `partitions check -o json`: wall time, median of 3, and its exit code (1 expected: under-replicated).
  3. `brokers can-stop 2 -o json`: wall time, median of 3 (and its exit code).
  4. `brokers wait 1 --in-sync`: a stderr reader thread timestamps each status line ("not yet in the
     ISR of N partitions"). Time to first status = start-up + full scan + watch set-up. Then, one at
     a time, --updates lagging state znodes are rewritten with broker 1 in the ISR (kazoo set());
     latency = set() returned -> the status line with the decremented count read. The wait's CPU
     (utime+stime from /proc/PID/stat) is sampled before the first and after the last update.
     Then the remaining lagging partitions are fixed in bulk (kazoo set_async) and the wait must
     exit 0. Reports median/p99 (nearest rank) latency, CPU ms per update, and the ratio of the
     time to first status to the median update latency.
  5. ZooKeeper's `mntr` zk_znode_count, to document the data size.
Prints human-readable lines, then one final line of JSON with every number.
Usage: python bench/partitions.py [--topics 10000] [--partitions 10] [--lagging 1000] [--updates 50]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from kadmin.domain import znodes
from kadmin.sandbox.bulk_writer import BulkWriter
from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.zkserver import Ensemble, four_letter_word

KADMIN = [sys.executable, "-m", "kadmin"]
CHROOT = "/kafka"
BROKERS = range(1, 7)
CONFIG = b'{"version":1,"config":{"min.insync.replicas":"2"}}'
STATUS = re.compile(r"broker 1 not yet in the ISR of (\d+) partitions")


def replicas_of(g: int) -> list[int]:  # g: global partition index, round-robin over brokers 1..6
    return [(g + k) % len(BROKERS) + 1 for k in range(3)]


def state_path(t: int, p: int) -> str:
    return f"/brokers/topics/t{t:05d}/partitions/{p}/state"


def state(replicas: list[int], isr: list[int]) -> bytes:
    leader = replicas[0] if replicas[0] in isr else isr[0]
    return znodes.encode_partition_state(leader, 0, 1, isr)


def lagging_set(topics: int, parts: int, n: int) -> list[tuple[int, int]]:
    """n partitions listing broker 1 as a replica, spread evenly over all such partitions."""
    hosted = [(t, p) for t in range(topics) for p in range(parts) if 1 in replicas_of(t * parts + p)]
    if n > len(hosted):
        raise SystemExit(f"--lagging {n}: broker 1 hosts only {len(hosted)} partitions")
    return [hosted[i * len(hosted) // n] for i in range(n)] if n else []


def seed_items(topics: int, parts: int, lagging: set[tuple[int, int]]) -> Iterator[tuple[str, bytes | None]]:
    for t in range(topics):
        assignment = {p: replicas_of(t * parts + p) for p in range(parts)}
        yield f"/brokers/topics/t{t:05d}", znodes.encode_topic(assignment, topic_id=f"{t:022d}")
        yield f"/brokers/topics/t{t:05d}/partitions", None
        for p, reps in assignment.items():
            isr = [b for b in reps if b != 1] if (t, p) in lagging else reps
            yield f"/brokers/topics/t{t:05d}/partitions/{p}", None
            yield state_path(t, p), state(reps, isr)
        yield f"/config/topics/t{t:05d}", CONFIG


def p99(xs: list[float]) -> float:
    return sorted(xs)[math.ceil(0.99 * len(xs)) - 1]  # nearest rank


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed3(args: list[str], connect: str, ok: tuple[int, ...]) -> tuple[float, int, dict[str, Any]]:
    """Median wall time of 3 runs; the last run's exit code and parsed JSON."""
    walls, rc, doc = [], 0, {}
    for _ in range(3):
        t0 = time.monotonic()
        p = subprocess.run([*KADMIN, *args, "-z", connect], capture_output=True, text=True, timeout=300)
        walls.append(time.monotonic() - t0)
        rc = p.returncode
        if rc not in ok:
            raise RuntimeError(f"kadmin {' '.join(args)} exited {rc}: {p.stderr.strip()[-500:]}")
        doc = json.loads(p.stdout)
    return statistics.median(walls), rc, doc


def bench_wait(connect: str, hosts: str, lagging: list[tuple[int, int]], parts: int, k: int) -> dict[str, Any]:
    cmd = [*KADMIN, "brokers", "wait", "1", "--in-sync", "--timeout", "300", "-z", connect]
    lines: queue.Queue[tuple[float, int | None, str]] = queue.Queue()
    other: list[str] = []  # stderr lines that are not status lines
    t_start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)

    def reader() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            m = STATUS.search(line)
            lines.put((time.monotonic(), int(m.group(1)) if m else None, line.rstrip()))

    def until(count: int, timeout: float = 60.0) -> float:
        deadline = time.monotonic() + timeout
        while True:
            try:
                at, n, text = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"no status line with count {count} within {timeout:.0f} s") from None
            if n is None:
                other.append(text)
            elif n == count:
                return at
            elif n < count:
                raise RuntimeError(f"expected count {count}, got: {text}")

    rthread = threading.Thread(target=reader, daemon=True)
    rthread.start()
    kz = KazooClient(hosts=hosts, timeout=30)
    out: dict[str, Any] = {}
    try:
        kz.start(timeout=30)
        first = until(len(lagging), timeout=300) - t_start
        out["first_status_s"] = round(first, 3)
        print(f"wait --in-sync: first status after {first:.2f} s (start-up + scan + watches)", flush=True)
        cpu0 = cpu_s(proc.pid)
        lat, lat_call = [], []  # from set() returning (the measure) / from set() being called
        for i, (t, p) in enumerate(lagging[:k]):
            reps = replicas_of(t * parts + p)
            tc = time.monotonic()
            kz.set(CHROOT + state_path(t, p), state(reps, reps))
            t0 = time.monotonic()
            at = until(len(lagging) - i - 1)
            lat.append(at - t0)
            lat_call.append(at - tc)
        cpu = cpu_s(proc.pid) - cpu0
        med, med_call = statistics.median(lat), statistics.median(lat_call)
        out.update(updates=len(lat), latency_median_ms=round(med * 1000, 2), latency_p99_ms=round(p99(lat) * 1000, 2),
                   latency_max_ms=round(max(lat) * 1000, 2), latency_from_call_median_ms=round(med_call * 1000, 2),
                   cpu_ms_per_update=round(cpu * 1000 / len(lat), 2), cpu_before_updates_s=round(cpu0, 2),
                   first_status_over_median_update=round(first / med, 1))
        print(f"  {len(lat)} updates: latency median {med * 1000:.1f} ms, p99 {p99(lat) * 1000:.1f} ms, max "
              f"{max(lat) * 1000:.1f} ms (median {med_call * 1000:.1f} ms from set() called); wait CPU "
              f"{cpu * 1000 / len(lat):.1f} ms/update (CPU {cpu0:.2f} s before the first update)", flush=True)
        print(f"  first status / median update latency = {first / med:,.0f}x", flush=True)
        rest = lagging[k:]
        t0 = time.monotonic()
        asyncs = []
        for t, p in rest:
            reps = replicas_of(t * parts + p)
            asyncs.append(kz.set_async(CHROOT + state_path(t, p), state(reps, reps)))
        for a in asyncs:
            a.get(timeout=60)
        t1 = time.monotonic()
        rc = proc.wait(timeout=120)
        t2 = time.monotonic()
        rthread.join(10)  # stderr reaches EOF at exit
        while not lines.empty():
            text = lines.get_nowait()[2]
            if STATUS.search(text) is None:
                other.append(text)
        out.update(bulk_fixed=len(rest), bulk_set_s=round(t1 - t0, 3), exit_after_bulk_s=round(t2 - t1, 3),
                   exit_code=rc, other_stderr=other)
        print(f"  fixed the other {len(rest)} in {t1 - t0:.2f} s; wait exited {rc} "
              f"{t2 - t1:.2f} s later{'' if rc == 0 else '  <-- expected 0'}", flush=True)
        for text in other:
            print(f"  wait stderr: {text}", flush=True)
    finally:
        kz.stop()
        kz.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--lagging", type=int, default=1000)
    ap.add_argument("--updates", type=int, default=50)
    args = ap.parse_args()
    if not 0 < args.updates < args.lagging:
        raise SystemExit("need 0 < --updates < --lagging (the last fix makes the wait exit, not print)")
    logging.basicConfig(level=logging.CRITICAL)  # kazoo's connection chatter
    n = args.topics * args.partitions
    res: dict[str, Any] = {"topics": args.topics, "partitions": n, "lagging": args.lagging,
                           "python": sys.version.split()[0], "cpus": os.cpu_count()}
    tmp = tempfile.mkdtemp(prefix="kadmin-bench-partitions-")
    ens = Ensemble(Path(tmp), size=1)
    fleet: ThreadedFleet | None = None
    try:
        ens.start(timeout=60)
        host, port = ens.hosts[0]
        connect = f"{ens.connect_string}{CHROOT}"
        print(f"ZooKeeper standalone on {host}:{port}, cluster at {connect}", flush=True)
        fleet = ThreadedFleet(ens.hosts, chroot=CHROOT)
        fleet.setup_cluster()
        for b in BROKERS:
            fleet.register(BrokerSpec(b))
        lagging = lagging_set(args.topics, args.partitions, args.lagging)
        t0 = time.perf_counter()
        with BulkWriter(ens.hosts, chroot=CHROOT, timeout=30) as w:
            created = w.create_many(seed_items(args.topics, args.partitions, set(lagging)))
        dt = time.perf_counter() - t0
        print(f"seeded {n:,} partitions ({created:,} znodes) in {dt:.1f} s = {created / dt:,.0f} creates/s; "
              f"{len(BROKERS)} brokers, broker 1 out of {len(lagging)} ISRs", flush=True)
        res["seed"] = {"znodes": created, "wall_s": round(dt, 2)}
        mntr = four_letter_word(host, port, "mntr", timeout=10)
        count = next((int(line.split()[1]) for line in mntr.splitlines() if line.startswith("zk_znode_count")), None)
        print(f"ZooKeeper zk_znode_count: {count}", flush=True)
        res["zk_znode_count"] = count

        wall, _, doc = timed3(["partitions", "list", "-o", "json"], connect, (0,))
        rows = len(doc["data"])
        print(f"partitions list -o json: median {wall:.2f} s, {rows:,} rows"
              f"{'' if rows == n else f'  <-- expected {n:,}'}", flush=True)
        res["list"] = {"median_s": round(wall, 3), "rows": rows}
        wall, rc, doc = timed3(["partitions", "check", "-o", "json", "--timeout", "900"], connect, (0, 1, 2))
        print(f"partitions check -o json: median {wall:.2f} s, exit {rc} ({doc['data']['status']}, "
              f"{len(doc['data']['findings'])} findings){'' if rc == 1 else '  <-- expected 1'}", flush=True)
        res["check"] = {"median_s": round(wall, 3), "exit_code": rc, "findings": len(doc["data"]["findings"])}
        wall, rc, doc = timed3(["brokers", "can-stop", "2", "-o", "json"], connect, (0, 1))
        d = doc["data"]
        print(f"brokers can-stop 2 -o json: median {wall:.2f} s, exit {rc} (hosts {d['hosted_partitions']}, "
              f"{len(d['blocking'])} blocking)", flush=True)
        res["can_stop"] = {"median_s": round(wall, 3), "exit_code": rc, "hosted": d["hosted_partitions"],
                           "blocking": len(d["blocking"])}

        res["wait_in_sync"] = bench_wait(connect, ens.connect_string, lagging, args.partitions, args.updates)
    finally:
        if fleet is not None:
            fleet.shutdown()
        ens.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
