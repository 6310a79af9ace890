"""Issue 38 §3: `kadmin history ingest`, each stage's own time against its floor, on ZooKeeper txn logs and on KRaft
metadata logs, with the whole ingest's ratio to TxnLogToolkit / DumpLogSegments in the same run.

What it does, for each input (ZooKeeper, then KRaft; everything on 127.0.0.1, work removed unless --keep DIR):
  1. The input, as the existing benches build it: ZooKeeper txn logs a real ZooKeeper wrote (bench/history.py's
     generate + replicate, to --zk-gb GiB; --zk-logs DIR reuses the log.* files of DIR), and the metadata log of a
     real Kafka 4.3.1 KRaft cluster (bench/history_kraft.py's generate; --base-log DIR reuses one) replicated to
     --kraft-gb GiB as distinct logs (offsets moved on copy by copy; --kraft-input copies: plain copies).
  2. The machine's rates, in the same run, next to the ingest: the sequential read rate of the input files (every
     file read once, 1 MiB reads; they were just written, so mostly from the page cache, as the ingest reads
     them), the memory-copy rate (a 256 MiB buffer copied, best of 3), the write rate (a file the size of the
     ingest's Parquet output written with 1 MiB writes and fsync'd, next to the output) and a JVM's start
     (`java -version`).
  3. `python -m kadmin history ingest DIR --cluster bench --out OUT --master local[2] -o json` as a subprocess
     (bench/history.py's run_ingest), with Spark's event log on (PYSPARK_SUBMIT_ARGS: spark.eventLog.*, nothing
     else changed). From the event log: every stage's submission and completion time, its shuffle bytes and task
     CPU, and the step of the ingest it belongs to: the job description kadmin sets per step
     (kadmin.pipeline.spark.step), and, inside the one action that runs the windows, ids and dedupe lazily, the
     plan nodes whose SQL metrics the stage updated: a stage running a node under a Window (the states' scan,
     the shuffle and sort feeding the windows, the windows) or under the topic names' broadcast is "classify",
     the rest (the dedupe's shuffle and aggregate, caching the events) "ids + dedupe".
  4. The baseline tool over the same files, right after: TxnLogToolkit (bench/history.py) or DumpLogSegments
     (bench/history_kraft.py). ratio = its wall / the ingest's wall.
Each step's own time is the union of its stages' intervals (the Parquet write: its SQL execution, which includes
moving the task files into the staging directory); start-up is the process's start to Spark's driver block
manager; commit is the write's end to the application's end (the table's commit plus the frames' unpersist);
what is left is the driver between stages (Python, planning) and the shutdown.
Floors: bytes the step must touch / a rate measured above, the rate named beside each.
MB = 10^6 bytes. Prints human-readable lines, then one final line of JSON.
Usage: python bench/history_stages.py [--zk-gb 1.0] [--kraft-gb 0.25] [--zk-logs DIR] [--base-log DIR]
       [--only zk,kraft] [--keep DIR] [--kraft-input distinct|copies]
       python bench/history_stages.py --prepare --keep DIR [--only zk|kraft]: build the inputs only (two of these
       can run side by side); then measure with --zk-logs DIR/zk --base-log DIR/kraft-base/__cluster_metadata-0
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import history as zkbench  # noqa: E402  (bench/history.py: ZooKeeper input, run_ingest, read_all, TxnLogToolkit)
import history_kraft as kbench  # noqa: E402  (bench/history_kraft.py: KRaft input, DumpLogSegments)
from roll import covered as union  # noqa: E402  (bench/roll.py: the wall time intervals cover together)

from kadmin.pipeline import ingest as steps  # noqa: E402  (the job descriptions of the ingest's steps)

GIB = 1 << 30
MIB = 1 << 20
say = zkbench.say

START, SPLIT, PARSE, CLASSIFY, IDS, WRITE, COMMIT, DRIVER, SHUTDOWN = (
    "start-up (Python, JVM, Spark session)", "split offsets (ZooKeeper logs)", "read + parse into Arrow",
    "classify (windows)", "ids + dedupe", "Parquet write", "commit", "driver between stages (Python, planning)",
    "shutdown (session stop, exit)")
ORDER = [START, SPLIT, PARSE, CLASSIFY, IDS, WRITE, COMMIT, DRIVER, SHUTDOWN]
BY_DESCRIPTION = {steps.SPLIT: SPLIT, steps.PARSE: PARSE, steps.AGAINST_TABLE: IDS, steps.WRITE: WRITE}


# ---------------------------------------------------------------------------- the machine's rates
def read_rate(files: list[Path]) -> float:
    size = sum(f.stat().st_size for f in files)
    return size / zkbench.read_all(files)


def copy_rate(size: int = 256 * MIB) -> float:
    src, dst = bytearray(os.urandom(MIB)) * (size // MIB), bytearray(size)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        memoryview(dst)[:] = src
        best = min(best, time.perf_counter() - t0)
    return size / best


def write_rate(where: Path, size: int) -> float:
    """Bytes per second writing a file of `size` bytes (1 MiB writes) and fsync'ing it, in `where`."""
    size = max(size, 8 * MIB)  # below that the fsync's latency is all one measures
    chunk = os.urandom(MIB)
    f = where / "write-rate.tmp"
    t0 = time.perf_counter()
    with open(f, "wb", buffering=0) as fh:
        left = size
        while left > 0:
            left -= fh.write(chunk[:min(left, MIB)])
        os.fsync(fh.fileno())
    took = time.perf_counter() - t0
    f.unlink()
    return size / took


def manifest_write(where: Path, size: int) -> float:
    """Seconds to replace a file of `size` bytes atomically as the table's commit does its manifest: write, fsync,
    rename, fsync the directory (kadmin.pipeline.table._write_json_atomically)."""
    from kadmin.pipeline.table import _write_json_atomically

    t0 = time.perf_counter()
    _write_json_atomically(where / "manifest-rate.tmp", "x" * size)
    took = time.perf_counter() - t0
    (where / "manifest-rate.tmp").unlink()
    return took


def jvm_start() -> float:
    from kadmin.sandbox.zkserver import java_binary

    t0 = time.perf_counter()
    subprocess.run([java_binary(), "-version"], capture_output=True, check=True)
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------- the event log
def _int(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def _plan_roles(info: dict[str, Any], roles: dict[int, str], under: str | None = None) -> None:
    """The step of each SQL metric (accumulator id) of a plan: CLASSIFY under a Window or the topic names'
    broadcast, else IDS (in the action that runs the windows, ids and dedupe)."""
    name = info.get("nodeName", "")
    if name == "Window" or name.startswith("BroadcastExchange"):
        under = CLASSIFY
    for m in info.get("metrics", []):
        roles[int(m["accumulatorId"])] = under or IDS
    for child in info.get("children", []):
        _plan_roles(child, roles, under)


def _lines(path: Path) -> Iterator[str]:
    """The events of an event log: one file, or (Spark 4's rolling logs) a directory of events_<n>_<app> files."""
    files = [path]
    if path.is_dir():
        files = sorted((f for f in path.iterdir() if f.name.startswith("events_")),
                       key=lambda f: int(f.name.split("_")[1]))
    for f in files:
        with open(f, encoding="utf-8") as fh:
            yield from fh


def read_event_log(path: Path) -> dict[str, Any]:
    """What the stages of one application did, from its Spark event log (one JSON event per line)."""
    stages: dict[int, dict[str, Any]] = {}
    executions: dict[int, dict[str, Any]] = {}
    roles: dict[int, str] = {}
    out: dict[str, Any] = {"stages": stages, "executions": executions}
    for line in _lines(path):
        e = json.loads(line)
        kind = e.get("Event", "")
        if kind == "SparkListenerApplicationStart":
            out["app_start"] = e["Timestamp"] / 1000
        elif kind == "SparkListenerBlockManagerAdded" and "session_ready" not in out:
            out["session_ready"] = e["Timestamp"] / 1000
        elif kind == "SparkListenerApplicationEnd":
            out["app_end"] = e["Timestamp"] / 1000
        elif kind == "SparkListenerStageSubmitted":
            props = e.get("Properties") or {}
            sid = e["Stage Info"]["Stage ID"]
            stages.setdefault(sid, {})["description"] = props.get("spark.job.description")
        elif kind == "SparkListenerStageCompleted":
            si = e["Stage Info"]
            acc = {a.get("ID"): a for a in si.get("Accumulables", [])}
            metric = {a.get("Name"): _int(a.get("Value")) for a in acc.values()}
            stages.setdefault(si["Stage ID"], {}).update({
                "id": si["Stage ID"], "tasks": si.get("Number of Tasks"),
                "start": si["Submission Time"] / 1000, "end": si["Completion Time"] / 1000,
                "scopes": sorted({json.loads(r["Scope"])["name"] for r in si.get("RDD Info", [])
                                  if r.get("Scope")}),
                "accumulators": [int(i) for i in acc if i is not None],
                "shuffle_write": metric.get("internal.metrics.shuffle.write.bytesWritten", 0),
                "shuffle_read": metric.get("internal.metrics.shuffle.read.localBytesRead", 0)
                + metric.get("internal.metrics.shuffle.read.remoteBytesRead", 0),
                "spill_disk": metric.get("internal.metrics.diskBytesSpilled", 0),
                "cpu": metric.get("internal.metrics.executorCpuTime", 0) / 1e9,
                "run": metric.get("internal.metrics.executorRunTime", 0) / 1e3,
                "gc": metric.get("internal.metrics.jvmGCTime", 0) / 1e3})
        elif kind.endswith("SparkListenerSQLExecutionStart"):
            executions[e["executionId"]] = {"start": e["time"] / 1000, "description": e.get("description")}
            _plan_roles(e.get("sparkPlanInfo") or {}, roles)
        elif kind.endswith("SparkListenerSQLAdaptiveExecutionUpdate"):
            _plan_roles(e.get("sparkPlanInfo") or {}, roles)
        elif kind.endswith("SparkListenerSQLExecutionEnd"):
            executions.setdefault(e["executionId"], {})["end"] = e["time"] / 1000
    for s in stages.values():
        s["step"] = step_of(s, roles)
    return out


def step_of(stage: dict[str, Any], roles: dict[int, str]) -> str:
    desc = stage.get("description")
    if desc in BY_DESCRIPTION:
        return BY_DESCRIPTION[desc]
    if desc == steps.CLASSIFY:
        found = {roles[a] for a in stage.get("accumulators", []) if a in roles}
        if found:
            return CLASSIFY if CLASSIFY in found else IDS
        return CLASSIFY if "Window" in stage.get("scopes", []) else IDS  # no SQL metric seen: the RDDs' scopes
    return f"other ({desc})"


def gaps(ready: float, spans: list[tuple[float, float, str]], last: float) -> list[dict[str, Any]]:
    """The driver's time outside every stage, as gaps between the steps' intervals (largest first)."""
    out, end, before = [], ready, "session ready"
    for a, b, step in sorted(spans):
        if a > end:
            out.append({"seconds": round(a - end, 2), "after": before, "before": step})
        if b > end:
            end, before = b, step
    return sorted(out, key=lambda g: -g["seconds"])


def step_times(log: dict[str, Any], started: float, wall: float) -> dict[str, dict[str, Any]]:
    """Each step's own wall time and Spark's metrics of its stages."""
    stages = [s for s in log["stages"].values() if "start" in s]
    rows: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    for s in stages:
        r = rows.setdefault(s["step"], {"stages": 0, "shuffle": 0, "spill_disk": 0, "cpu": 0.0, "gc": 0.0})
        r["stages"] += 1
        r["shuffle"] += s["shuffle_write"] + s["shuffle_read"]
        r["spill_disk"] += s["spill_disk"]
        r["cpu"] += s["cpu"]
        r["gc"] += s["gc"]
        spans.setdefault(s["step"], []).append((s["start"], s["end"]))
    writes = [(x["start"], x["end"]) for x in log["executions"].values()
              if x.get("description") == steps.WRITE and "end" in x]
    if writes:
        spans[WRITE] = spans.get(WRITE, []) + writes
    for step, iv in spans.items():
        rows[step]["seconds"] = union(iv)
    ready = log.get("session_ready", log.get("app_start", started))
    end = log.get("app_end", started + wall)
    rows[START] = {"seconds": ready - started}
    last = max([b for _, b in writes] or [max((s["end"] for s in stages), default=ready)])
    rows[COMMIT] = {"seconds": max(0.0, end - last)}
    rows[DRIVER] = {"seconds": (last - ready) - union([iv for v in spans.values() for iv in v])}
    rows[SHUTDOWN] = {"seconds": started + wall - end}
    rows["_gaps"] = {"list": gaps(ready, [(a, b, k) for k, v in spans.items() for a, b in v], last)}
    rows["_overlap"] = {"seconds": sum(rows[k]["seconds"] for k in spans) - union([iv for v in spans.values()
                                                                                     for iv in v])}
    return rows


# ---------------------------------------------------------------------------- one input
def measure(name: str, files: list[Path], root: Path, work: Path, args: argparse.Namespace,
            baseline: Any) -> dict[str, Any]:
    size = sum(f.stat().st_size for f in files)
    say(f"{name}: {len(files)} files, {size / 1e6:,.1f} MB; load average {os.getloadavg()[0]:.2f}")
    rates = {"read": read_rate(files), "copy": copy_rate(), "jvm_start_s": jvm_start()}
    say(f"  rates: sequential read of the input {rates['read'] / 1e6:,.0f} MB/s, memory copy "
        f"{rates['copy'] / 1e6:,.0f} MB/s, a JVM's start (java -version) {rates['jvm_start_s']:.2f} s")
    events = work / f"eventlog-{name}"
    events.mkdir()
    out = work / f"events-{name}"
    saved = os.environ.get("PYSPARK_SUBMIT_ARGS")
    os.environ["PYSPARK_SUBMIT_ARGS"] = (f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://"
                                         f"{events} --conf spark.eventLog.compress=false pyspark-shell")
    load = [os.getloadavg()[0]]
    try:
        started = time.time()
        ing = zkbench.run_ingest(root, out, args.timeout, work / f"ingest-{name}.stderr")
    finally:
        if saved is None:
            os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
        else:
            os.environ["PYSPARK_SUBMIT_ARGS"] = saved
    load.append(os.getloadavg()[0])
    d = ing["data"]
    say(f"  kadmin history ingest --master local[2]: {ing['wall']:.1f} s wall, {size / 1e6 / ing['wall']:.1f} MB/s; "
        f"{d['ranges']} ranges, events_parsed {d['events_parsed']:,}, events_added {d['events_added']:,}")
    output = sum(f.stat().st_size for f in out.rglob("*.parquet"))
    manifest = sum(f.stat().st_size for f in out.glob("_*.json"))
    rates["write"] = write_rate(out, output)
    rates["manifest_s"] = manifest_write(out, manifest)
    say(f"  output {output / 1e6:,.1f} MB of Parquet; write + fsync of a file that size: "
        f"{rates['write'] / 1e6:,.0f} MB/s")
    base = baseline(files)
    load.append(os.getloadavg()[0])
    ratio = base["wall"] / ing["wall"]
    say(f"  {base['tool']}: {base['wall']:.1f} s{' (extrapolated)' if base.get('extrapolated') else ''}, "
        f"{size / 1e6 / base['wall']:.1f} MB/s: ratio {ratio:.2f} (goal >= 1.0) {zkbench._met(ratio >= 1.0)}")

    log = read_event_log(next(events.iterdir()))
    rows = step_times(log, started, ing["wall"])
    floors = {
        START: (None, "a JVM's start", rates["jvm_start_s"]),
        SPLIT: (size, "read", None), PARSE: (size, "read", None),
        CLASSIFY: (rows.get(CLASSIFY, {}).get("shuffle", 0), "copy", None),
        IDS: (rows.get(IDS, {}).get("shuffle", 0), "copy", None),
        WRITE: (output, "write", None), COMMIT: (manifest, "manifest", rates["manifest_s"])}
    rate_words = {"read": f"read {rates['read'] / 1e6:,.0f} MB/s",
                  "copy": f"memory copy {rates['copy'] / 1e6:,.0f} MB/s",
                  "write": f"write + fsync {rates['write'] / 1e6:,.0f} MB/s", "a JVM's start": "a JVM's start",
                  "manifest": "one atomic manifest write"}
    table = []
    say(f"  {'stage':<42} {'own s':>7} {'bytes touched':>14} {'rate used':<26} {'floor s':>8} {'own/floor':>9} "
        f"{'task CPU s':>10} {'spill MB':>8}")
    for step in ORDER:
        if step not in rows:
            continue
        r = rows[step]
        nbytes, rate, fixed = floors.get(step, (None, None, None))
        floor = fixed if fixed is not None else (nbytes / rates[rate] if nbytes is not None and rate else None)
        ratio_f = r["seconds"] / floor if floor else None
        table.append({"stage": step, "own_s": round(r["seconds"], 3), "bytes": nbytes, "rate": rate,
                      "floor_s": None if floor is None else round(floor, 4),
                      "own_over_floor": None if ratio_f is None else round(ratio_f, 1),
                      "task_cpu_s": round(r["cpu"], 2) if "cpu" in r else None,
                      "task_gc_s": round(r["gc"], 2) if "gc" in r else None,
                      "stages": r.get("stages"), "spill_disk_bytes": r.get("spill_disk")})
        say(f"  {step:<42} {r['seconds']:>7.2f} "
            f"{'' if nbytes is None else f'{nbytes / 1e6:,.1f} MB':>14} {rate_words.get(rate or '', ''):<26} "
            f"{'' if floor is None else f'{floor:.3f}':>8} {'' if ratio_f is None else f'{ratio_f:,.0f}x':>9} "
            f"{'' if 'cpu' not in r else format(r['cpu'], '.1f'):>10} "
            f"{'' if 'spill_disk' not in r else format(r['spill_disk'] / 1e6, '.0f'):>8}")
    for step in sorted(k for k in rows if k.startswith("other")):
        say(f"  (also: {step}: {rows[step]['seconds']:.2f} s)")
    for g in rows["_gaps"]["list"][:4]:
        say(f"  driver gap {g['seconds']:.1f} s: after {g['after']}, before {g['before']}")
    say(f"  (stages of different steps overlapped for {rows['_overlap']['seconds']:.2f} s; the rows add up to the wall "
        f"{ing['wall']:.1f} s less that)")
    for s in sorted(log["stages"].values(), key=lambda s: s.get("id", 0)):
        if "start" in s:
            say(f"    stage {s['id']:>3} {s['step']:<22} {s['end'] - s['start']:6.2f} s, {s['tasks']:>3} tasks, "
                f"shuffle w/r {s['shuffle_write'] / 1e6:7.1f}/{s['shuffle_read'] / 1e6:7.1f} MB, "
                f"cpu {s['cpu']:5.1f} s; {', '.join(s['scopes'])[:80]}")
    return {"input": name, "files": len(files), "bytes": size, "output_bytes": output, "wall_s": round(ing["wall"], 2),
            "events_parsed": d["events_parsed"], "events_added": d["events_added"], "ranges": d["ranges"],
            "baseline": base["tool"], "baseline_wall_s": round(base["wall"], 2), "ratio": round(ratio, 3),
            "load": [round(x, 2) for x in load], "rates": {k: round(v, 3) for k, v in rates.items()},
            "stages": table, "driver_gaps": rows["_gaps"]["list"][:6],
            "overlap_s": round(rows["_overlap"]["seconds"], 3)}


# ---------------------------------------------------------------------------- inputs
def zk_input(args: argparse.Namespace, work: Path) -> list[Path]:
    if args.zk_logs:
        files = sorted(Path(args.zk_logs).glob("log.*"))
        say(f"ZooKeeper input: the log.* files of {args.zk_logs}")
    else:
        say("ZooKeeper input: a base log from a real standalone ZooKeeper driven like a Kafka cluster "
            "(bench/history.py)")
        version2, _ = zkbench.generate(work / "zk-gen", args.topics, 10, 6)
        rep = zkbench.replicate(version2, work / "zk", int(args.zk_gb * GIB))
        shutil.rmtree(work / "zk-gen")
        say(f"  {rep['copies']} copies of a {rep['base_bytes'] / 1e6:.1f} MB log, {rep['records']:,} records")
        files = sorted((work / "zk").glob("log.*"))
    if not files:
        raise SystemExit("no ZooKeeper log.* files")
    return files


def kraft_input(args: argparse.Namespace, work: Path) -> list[Path]:
    if args.base_log:
        mdir = Path(args.base_log).resolve()
        say(f"KRaft input: the base log {mdir}")
    else:
        from tests.support.kafka import KAFKA_4, kafka_home

        kbench.kraft_scale.HEAPS.update({"broker": "-Xmx1g", "controller": "-Xmx512m"})
        (work / "cluster").mkdir()
        cluster = kbench.kraft_scale.Cluster(kafka_home(KAFKA_4), work / "cluster")
        say(f"KRaft input: the metadata log of a real Kafka {cluster.version} cluster, grown to {args.mb:g} MB "
            f"(at most {args.gen_budget:g} s; bench/history_kraft.py)")
        try:
            cluster.start_all()
            kbench.generate(cluster, int(args.mb * 1e6), args.gen_budget, 200, 10, 2)
        finally:
            kbench.stop_cluster(cluster)
            cluster.stop_all()
        mdir = work / "kraft-base" / "__cluster_metadata-0"
        mdir.mkdir(parents=True)
        for f in kbench.metadata_dir(cluster).glob("*.log"):
            shutil.copyfile(f, mdir / f.name)
        shutil.rmtree(work / "cluster", ignore_errors=True)
        say(f"  kept as {mdir} (--base-log)")
    one = kbench.log_bytes(mdir)
    copies = max(1, -(-int(args.kraft_gb * GIB) // one))
    if args.kraft_input == "copies":
        kbench.replicate(mdir, work / "kraft", int(args.kraft_gb * GIB))
    else:
        kbench.replicate_distinct(mdir, work / "kraft", copies)
    say(f"  {copies} {args.kraft_input} logs of a {one / 1e6:.1f} MB base log")
    return sorted((work / "kraft").glob("*/__cluster_metadata-0/*.log"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="zk,kraft", help="zk, kraft or both (default)")
    ap.add_argument("--zk-gb", type=float, default=1.0, help="ZooKeeper input in GiB (bench/history.py's default 1.0)")
    ap.add_argument("--zk-logs", metavar="DIR", help="use the log.* files of DIR (e.g. KEPT/zk of a --keep run)")
    ap.add_argument("--topics", type=int, default=10_000, help="topics of the ZooKeeper workload (10 partitions each)")
    ap.add_argument("--kraft-gb", type=float, default=0.25, help="KRaft input in GiB (bench/history_kraft.py's 0.25)")
    ap.add_argument("--base-log", metavar="DIR", help="replicate this __cluster_metadata-0 directory, no cluster "
                    "(e.g. KEPT/kraft-base/__cluster_metadata-0 of a --keep run)")
    ap.add_argument("--mb", type=float, default=12.0, help="grow the cluster's metadata log to this many MB")
    ap.add_argument("--gen-budget", type=float, default=420, help="stop growing it after this many seconds")
    ap.add_argument("--kraft-input", choices=("distinct", "copies"), default="distinct")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (inputs, tables, event logs)")
    ap.add_argument("--prepare", action="store_true", help="build the inputs (in --keep DIR) and stop: a later run "
                    "measures them (--zk-logs DIR/zk, --base-log DIR/kraft-base/__cluster_metadata-0)")
    ap.add_argument("--timeout", type=float, default=1800, help="give up on an ingest after this many seconds")
    ap.add_argument("--budget", type=float, default=300, help="time the baseline tool this long, then extrapolate")
    args = ap.parse_args()
    work = zkbench.work_dir(args.keep, "kadmin-bench-history-stages-")
    try:
        say(f"bench/history_stages.py: kadmin history ingest, each stage against its floor (in {work}"
            f"{'' if args.keep else ', removed at the end'})")
        results = []
        if "zk" in args.only:
            files = zk_input(args, work)
            if args.prepare:
                files = []

            def toolkit(fs: list[Path]) -> dict[str, Any]:
                return {"tool": "TxnLogToolkit -d", **zkbench.run_toolkit(fs, args.budget)}

            if files:
                results.append(measure("zookeeper", files, files[0].parent, work, args, toolkit))
        if "kraft" in args.only:
            from tests.support.kafka import KAFKA_4, kafka_home

            files = [] if args.prepare and args.base_log else kraft_input(args, work)
            home = kafka_home(KAFKA_4)

            def dump(fs: list[Path]) -> dict[str, Any]:
                return {"tool": "DumpLogSegments --cluster-metadata-decoder",
                        **kbench.run_dump(home, fs, 4, args.budget)}

            if not args.prepare:
                results.append(measure("kraft", files, work / "kraft", work, args, dump))
        print(json.dumps({"bench": "history_stages", "results": results}), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
