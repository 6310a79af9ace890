"""Benchmark `kadmin history ingest` (local[2]) on KRaft metadata logs, next to Kafka's DumpLogSegments.

Issue 13 §1, KRaft part. What it does (everything on 127.0.0.1, temporary directories removed unless --keep DIR):
  1. A base metadata log written by a real Kafka 4.3.1 KRaft cluster, started as the sandbox's real-Kafka
     engine does (kadmin/sandbox/realkafka.py through bench/kraft_scale.py's Cluster: 3 controllers in a
     static quorum + 3 brokers; the Kafka home from tests/support/kafka.py), then driven in rounds until
     controller 3001's __cluster_metadata-0 holds --mb MB (or --gen-budget seconds are spent; the size
     reached is printed):
       - CreateTopics in large batches (kafka-python's admin client; --topics-per-batch topics x
         --partitions partitions each, replication factor 3: TopicRecord, PartitionRecord, ConfigRecord);
       - after --live-batches batches, DeleteTopics of all of them (RemoveTopicRecord), and again;
       - in rounds 1 and 3 a broker bounce (graceful stop: controlled shutdown, leaders move, ISRs shrink,
         fencing; start: a new registration, unfencing, ISRs expand).
     Then every broker, and then every controller, is stopped with SIGTERM (the files are final).
  2. Replication up to --gb GiB: controller 3001's segment files (*.log; snapshots are left out) are copied
     again and again, each copy in a directory of its own named as Kafka names it
     (copy-NNNN/__cluster_metadata-0/<20-digit base offset>.log), so both tools accept every copy. A copy of
     a valid segment is a valid segment, but copies share offsets: their events get the same ids, so the
     event table stores one copy's worth of events (events_added); every copy is still read and parsed.
  2b. The same number of distinct logs (issue 24: the common case is logs that are not copies of one
     another): copy c is the base log moved on by c times its span of offsets (every batch's BaseOffset, which
     the CRC does not cover; the file named by its new base offset), as if the cluster had gone through the
     same history again: every record has offsets of its own, so its own event ids, and the windows classify
     every state (a state equal to the one before it adds no event: the table holds ~9 copies' worth of
     events, not 23). Same bytes otherwise, same records to decode.
  3. For each input (--inputs copies,distinct):
     `python -m kadmin history ingest DIR --cluster bench --out OUT --master local[2] -o json` as a
     subprocess: wall time, MB/s over the input bytes, and peak memory: VmHWM of the Python driver and of
     the Spark driver JVM (its child; in local mode the executors live in it), plus the peak of the summed
     RSS of the whole process tree (the Python workers too), sampled every 0.1 s (bench/history.py's
     run_ingest). With --baseline REPO the kadmin checked out in REPO (run from it, first on PYTHONPATH) is
     timed too, in the same round, the two builds' order alternating between rounds (--rounds).
  4. Then, in the same round, Kafka's DumpLogSegments (org.apache.kafka.tools.DumpLogSegments, what
     bin/kafka-dump-log.sh runs, with kafka-run-class.sh's default JVM flags)
     `--cluster-metadata-decoder --files A,B,C > /dev/null` over the same files: what an operator does with
     a directory of segments is one call listing them all; here the files go in --dump-groups calls of equal
     size, one after another (a JVM start, ~1 s, per group), so that after --dump-budget seconds the rest can
     be extrapolated from the bytes done (said so). One extra untimed run on one copy checks that it prints
     as many records as kadmin's reader finds.
     Each ratio is DumpLogSegments' wall time over kadmin's in the same round (goal >= 1.0).
Before steps 3 and 4 every file is read once plainly (timed, printed): the I/O baseline. kadmin's own
reader of the format (kadmin.formats.kraft_log + the record decoder, one core, no Spark) is timed on one
copy too, with kadmin.pipeline.kraft_fast's decoder (what the ingest uses) and with kafka-python's schema
codec for every record (what it used before): it shows how much of the ingest's time parsing takes.
--base-log DIR skips step 1 and replicates the segments of DIR (a __cluster_metadata-0 directory, e.g. one
copy kept by an earlier --keep run): the same input, measured again in a few minutes.
MB = 10^6 bytes, GiB = 2^30 bytes. Prints human-readable lines, then one final line of JSON.
Usage: python bench/history_kraft.py [--mb 12] [--gb 0.25] [--keep DIR] [--gen-budget 420] [--base-log DIR]
       [--inputs copies,distinct] [--baseline REPO] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import history as zkbench  # noqa: E402  (bench/history.py: the ingest runner, the I/O baseline)
import kraft_scale  # noqa: E402  (bench/kraft_scale.py: the real KRaft cluster)

GIB = 1 << 30
CONTROLLER = 3001
DUMP = "org.apache.kafka.tools.DumpLogSegments"
# bin/kafka-run-class.sh's defaults (KAFKA_HEAP_OPTS of kafka-dump-log.sh is unset: -Xmx256M)
DUMP_JVM = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
            "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]

say = zkbench.say


def now() -> float:
    return time.monotonic()


# ---------------------------------------------------------------------------- the workload
def metadata_dir(cluster: kraft_scale.Cluster) -> Path:
    return Path(str(cluster.controllers[0]["dir"])) / "data" / "__cluster_metadata-0"


def log_bytes(mdir: Path) -> int:
    return sum(f.stat().st_size for f in mdir.glob("*.log"))


def bounce(cluster: kraft_scale.Cluster, broker: int) -> float:
    t0 = now()
    cluster.stop(broker)  # SIGTERM: controlled shutdown
    cluster.start(cluster.brokers[broker])
    cluster.wait_unfenced({broker})
    return now() - t0


def generate(cluster: kraft_scale.Cluster, target: int, budget: float, topics_per_batch: int, partitions: int,
             live_batches: int) -> dict[str, Any]:
    from kafka.admin import NewTopic

    mdir = metadata_dir(cluster)
    t0 = now()
    a = kraft_scale.admin(cluster.bootstrap())
    info: dict[str, Any] = {"topics_created": 0, "partitions_created": 0, "topics_deleted": 0, "bounces": []}
    live: list[str] = []
    batch = rounds = 0
    try:
        while log_bytes(mdir) < target and now() - t0 < budget:
            names = [f"b{batch:04d}-t{i:04d}" for i in range(topics_per_batch)]
            a.create_topics([NewTopic(n, partitions, 3) for n in names], timeout_ms=300000)
            batch += 1
            live += names
            info["topics_created"] += len(names)
            info["partitions_created"] += len(names) * partitions
            if batch % live_batches == 0:
                rounds += 1
                if rounds in (1, 3):  # bounce while the topics live: leaders move, ISRs shrink and expand
                    b = kraft_scale.BROKERS[rounds % len(kraft_scale.BROKERS)]
                    a.close()
                    took = bounce(cluster, b)
                    a = kraft_scale.admin(cluster.bootstrap())
                    info["bounces"].append({"broker": b, "seconds": round(took, 1)})
                    say(f"  round {rounds}: broker {b} bounced (graceful stop, start, unfenced) in {took:.1f} s")
                a.delete_topics(live, timeout_ms=300000)
                info["topics_deleted"] += len(live)
                live = []
                say(f"  round {rounds}: {info['partitions_created']:,} partitions created so far, "
                    f"{info['topics_deleted']:,} topics deleted; metadata log {log_bytes(mdir) / 1e6:.1f} MB "
                    f"after {now() - t0:.0f} s")
    finally:
        a.close()
    info["rounds"] = rounds
    info["seconds"] = now() - t0
    return info


def stop_cluster(cluster: kraft_scale.Cluster) -> None:
    """SIGTERM every broker (together), then every controller: the metadata log ends at a whole batch."""
    for role in (list(cluster.brokers), [int(str(c["id"])) for c in cluster.controllers]):
        for nid in role:
            p = cluster.procs.get(nid)
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for nid in role:
            cluster.stop(nid, signal.SIGTERM, timeout=120)


# ---------------------------------------------------------------------------- the files
def count_records(seg: Path) -> dict[str, Any]:
    """kadmin's own reader over one segment (framing, CRC-32C, record decoding, no events), one core: the
    record count, and the seconds with kafka-python's schema codec for every record (`DECODER`, what
    `history ingest` used before) and with the partition records read by hand (`FAST_DECODER`, what it uses)."""
    from kadmin.cluster.metadata_records import DECODER
    from kadmin.formats import kraft_log as kl
    from kadmin.pipeline.ingest import crc32c_impl
    from kadmin.pipeline.kraft_fast import FAST_DECODER

    crc = crc32c_impl()[1]
    out: dict[str, Any] = {}
    for name, decoder in (("schema_codec_s", DECODER), ("fast_decoder_s", FAST_DECODER)):
        t0 = now()
        out["records"] = sum(1 for _ in kl.iter_segment(seg, decoder, crc=crc))
        out[name] = now() - t0
    return out


def replicate(mdir: Path, dest: Path, target: int) -> dict[str, Any]:
    segs = sorted(mdir.glob("*.log"))
    if not segs:
        raise SystemExit(f"the controller wrote no segment in {mdir}")
    one = sum(f.stat().st_size for f in segs)
    copies = max(1, -(-target // one))
    for c in range(copies):
        d = dest / f"copy-{c:04d}" / "__cluster_metadata-0"
        d.mkdir(parents=True)
        for f in segs:
            shutil.copyfile(f, d / f.name)
    return {"base_files": [f.name for f in segs], "base_bytes": one, "copies": copies, "files": copies * len(segs),
            "bytes": copies * one, "snapshots_left_out": sorted(f.name for f in mdir.glob("*.checkpoint"))}


def next_offset(segs: list[Path]) -> int:
    """One past the last offset of the segments' batches (their headers walked; the CRCs are the reader's)."""
    end = 0
    for f in segs:
        data = f.read_bytes()
        pos = 0
        while pos + 61 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            last_delta = struct.unpack_from(">i", data, pos + 23)[0]
            end = max(end, base + last_delta + 1)
            pos += 12 + length
    return end


def replicate_distinct(mdir: Path, dest: Path, copies: int) -> dict[str, Any]:
    """`copies` distinct logs from the base log: copy c is the base log moved on by c times its length in
    offsets (each batch's BaseOffset, which the CRC does not cover, plus c x span; the file named by its new
    base offset), as if the cluster had gone through the same history again after it. Every record is then
    a record of its own (its own offset, so its own event ids): the table stores every copy's events, and the
    windows classify every state, as they do for logs that are not copies of one another."""
    from kadmin.formats.kraft_log import segment_base_offset, segment_file_name

    segs = sorted(mdir.glob("*.log"))
    span = next_offset(segs)
    for c in range(copies):
        d = dest / f"log-{c:04d}" / "__cluster_metadata-0"
        d.mkdir(parents=True)
        for f in segs:
            data = bytearray(f.read_bytes())
            pos = 0
            while pos + 61 <= len(data):
                base, length = struct.unpack_from(">qi", data, pos)
                struct.pack_into(">q", data, pos, base + c * span)
                pos += 12 + length
            (d / segment_file_name((segment_base_offset(f.name) or 0) + c * span)).write_bytes(bytes(data))
    return {"span": span, "copies": copies}


# ---------------------------------------------------------------------------- DumpLogSegments
def dump_cmd(home: Path, files: list[Path]) -> list[str]:
    from kadmin.sandbox.zkserver import java_binary

    return [java_binary(), *DUMP_JVM, "-cp", f"{home}/libs/*", DUMP, "--cluster-metadata-decoder", "--files",
            ",".join(map(str, files))]


def run_dump(home: Path, files: list[Path], groups: int, budget: float) -> dict[str, Any]:
    size = max(1, -(-len(files) // max(1, groups)))
    chunks = [files[i:i + size] for i in range(0, len(files), size)]
    done: list[tuple[list[Path], float]] = []
    t0 = now()
    for chunk in chunks:
        s = now()
        r = subprocess.run(dump_cmd(home, chunk), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=max(budget, 60) * 4)
        if r.returncode != 0:
            raise SystemExit(f"DumpLogSegments exited {r.returncode}: {r.stderr.decode()[-800:]}")
        done.append((chunk, now() - s))
        if now() - t0 > budget and len(done) < len(chunks):
            break
    wall = sum(t for _, t in done)
    done_bytes = sum(f.stat().st_size for c, _ in done for f in c)
    all_bytes = sum(f.stat().st_size for f in files)
    return {"calls": len(chunks), "calls_timed": len(done), "files_per_call": size, "bytes_timed": done_bytes,
            "wall_timed": wall, "wall": wall * all_bytes / done_bytes, "extrapolated": len(done) < len(chunks),
            "per_call": [round(t, 2) for _, t in done]}


def dump_count(home: Path, f: Path) -> int:
    """Records DumpLogSegments prints for one file (its `| offset: N ...` lines)."""
    n = 0
    with subprocess.Popen(dump_cmd(home, [f]), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL) as p:
        assert p.stdout is not None
        for line in p.stdout:
            if line.startswith(b"| offset: "):
                n += 1
    return n


# ---------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=12.0,
                    help="grow controller 3001's metadata log to this many MB (default 12)")
    ap.add_argument("--gen-budget", type=float, default=420, help="stop growing it after this many seconds")
    ap.add_argument("--gb", type=float, default=0.25, help="input size in GiB (default 0.25)")
    ap.add_argument("--topics-per-batch", type=int, default=200, help="topics per CreateTopics request")
    ap.add_argument("--partitions", type=int, default=10, help="partitions per topic (replication factor 3)")
    ap.add_argument("--live-batches", type=int, default=2, help="CreateTopics batches before a DeleteTopics")
    ap.add_argument("--base-log", metavar="DIR", help="skip the cluster: replicate the segments of this "
                    "__cluster_metadata-0 directory (e.g. KEPT/logs/copy-0000/__cluster_metadata-0 of a --keep run)")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (cluster, copies, the Parquet table)")
    ap.add_argument("--timeout", type=float, default=1800, help="give up on the ingest after this many seconds")
    ap.add_argument("--dump-groups", type=int, default=4, help="DumpLogSegments calls the files are split into")
    ap.add_argument("--dump-budget", type=float, default=300,
                    help="time DumpLogSegments until this many seconds are spent, then extrapolate")
    ap.add_argument("--inputs", default="copies,distinct",
                    help="copies (of one log: shared offsets), distinct (offsets moved on), or both (default)")
    ap.add_argument("--baseline", metavar="REPO", help="also time the ingest of the kadmin checked out in REPO "
                    "(e.g. a `git worktree add --detach REPO main`), interleaved with this one's")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of every measurement (interleaved)")
    args = ap.parse_args()
    if shutil.which("java") is None:
        raise SystemExit("needs java")
    work = zkbench.work_dir(args.keep, "kadmin-bench-history-kraft-")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a SIGTERM still stops the cluster (finally)
    try:
        bench(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def bench(args: argparse.Namespace, work: Path) -> None:
    from tests.support.kafka import KAFKA_4, kafka_home

    home = kafka_home(KAFKA_4)
    say(f"bench/history_kraft.py: kadmin history ingest (local[2]) vs Kafka's DumpLogSegments "
        f"--cluster-metadata-decoder, >= {args.gb:g} GiB of KRaft metadata log (in {work}"
        f"{'' if args.keep else ', removed at the end'})")
    version, start_s = KAFKA_4, 0.0
    gen: dict[str, Any] = {"seconds": 0.0, "partitions_created": 0, "topics_created": 0, "topics_deleted": 0,
                           "rounds": 0, "bounces": []}
    if args.base_log:  # a metadata directory kept from an earlier run (--keep DIR: DIR/logs/copy-0000/...)
        mdir = Path(args.base_log).resolve()
        say(f"1. the base log of an earlier run: {mdir} (no cluster started)")
    else:
        kraft_scale.HEAPS.update({"broker": "-Xmx1g", "controller": "-Xmx512m"})
        t0 = now()
        (work / "cluster").mkdir()
        cluster = kraft_scale.Cluster(home, work / "cluster")
        version = cluster.version
        try:
            cluster.start_all()
            start_s = now() - t0
            say(f"1. Kafka {version} KRaft, 3 controllers + 3 brokers up in {start_s:.1f} s; growing controller "
                f"{CONTROLLER}'s metadata log to {args.mb:g} MB (at most {args.gen_budget:g} s): CreateTopics of "
                f"{args.topics_per_batch} x {args.partitions} partitions (RF 3), DeleteTopics every "
                f"{args.live_batches} batches, broker bounces in rounds 1 and 3")
            gen = generate(cluster, int(args.mb * 1e6), args.gen_budget, args.topics_per_batch, args.partitions,
                           args.live_batches)
        finally:
            stop_cluster(cluster)
            cluster.stop_all()
        mdir = metadata_dir(cluster)
    reader = count_records(sorted(mdir.glob("*.log"))[0])
    records, parse_s, slow_s = reader["records"], reader["fast_decoder_s"], reader["schema_codec_s"]
    logs = work / "logs"
    rep = replicate(mdir, logs, int(args.gb * GIB))
    say(f"  base log: {', '.join(rep['base_files'])}: {rep['base_bytes'] / 1e6:.1f} MB, {records:,} records, "
        f"written in {gen['seconds']:.0f} s ({gen['partitions_created']:,} partitions created, "
        f"{gen['topics_deleted']:,} topics deleted, {len(gen['bounces'])} bounces); snapshots left out: "
        f"{', '.join(rep['snapshots_left_out']) or 'none'}")
    say(f"  kadmin's reader alone (kraft_log + record decoder, one core, no Spark) on it: {parse_s:.1f} s, "
        f"{rep['base_bytes'] / 1e6 / parse_s:.1f} MB/s, {records / parse_s:,.0f} records/s (with kafka-python's "
        f"schema codec for every record, as before kadmin.pipeline.kraft_fast: {slow_s:.1f} s, "
        f"{rep['base_bytes'] / 1e6 / slow_s:.1f} MB/s)")
    say(f"2. {rep['copies']} copies of it, each in copy-NNNN/__cluster_metadata-0/ (copies share offsets: "
        f"the table holds one copy's worth of events, every copy is parsed): {rep['files']} files, "
        f"{rep['bytes'] / 1e6:,.1f} MB ({rep['bytes'] / GIB:.2f} GiB), {records * rep['copies']:,} records")

    inputs: dict[str, list[Path]] = {}
    if "copies" in args.inputs:
        inputs["copies"] = sorted(logs.glob("copy-*/__cluster_metadata-0/*.log"))
    if "distinct" in args.inputs:
        dist = replicate_distinct(mdir, work / "distinct", rep["copies"])
        inputs["distinct"] = sorted((work / "distinct").glob("log-*/__cluster_metadata-0/*.log"))
        say(f"  and {rep['copies']} distinct logs, each in log-NNNN/__cluster_metadata-0/: the base log moved on by "
            f"NNNN x {dist['span']:,} offsets (every batch's BaseOffset; the CRC does not cover it), as if the "
            f"cluster had gone through the same history again and again: every record its own event ids, the "
            f"windows classify every state")
    shutil.rmtree(work / "cluster", ignore_errors=True)
    builds = [("this", REPO)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
    for name, repo in builds:
        say(f"  kadmin '{name}': {which_kadmin(repo)}")
    runs: dict[str, Any] = {}
    rounds = args.rounds
    for r in range(rounds):
        for kind, files in inputs.items():
            runs.setdefault(kind, {"ingest": {}, "dump": []})
            io = zkbench.read_all(files)
            say(f"{kind} (round {r + 1} of {rounds}): {len(files)} files, {rep['bytes'] / 1e6:,.1f} MB; a plain read "
                f"took {io:.2f} s ({rep['bytes'] / 1e6 / io:,.0f} MB/s); uptime: {os.getloadavg()[0]:.1f} load")
            order = builds if r % 2 == 0 else builds[::-1]  # interleaved: neither build always runs first
            for name, repo in order:
                ing = ingest_with(repo, files[0].parents[2], work / f"events-{kind}-{name}-{r}", args.timeout,
                                  work / f"ingest-{kind}-{name}-{r}.stderr")
                d, pk = ing["data"], ing["peak"]
                say(f"  kadmin history ingest --master local[2] ({name}): {ing['wall']:.1f} s wall, "
                    f"{rep['bytes'] / 1e6 / ing['wall']:.1f} MB/s; events_parsed {d['events_parsed']:,}, "
                    f"events_added {d['events_added']:,}, damage {len(d['damage'])}; peak: Python driver "
                    f"{pk['python'] / 2**20:,.0f} MiB, Spark driver JVM {pk['jvm'] / 2**20:,.0f} MiB, tree "
                    f"{pk['tree'] / 2**20:,.0f} MiB")
                runs[kind]["ingest"].setdefault(name, []).append(ing)
            dl = run_dump(home, files, args.dump_groups, args.dump_budget)
            runs[kind]["dump"].append(dl)
            say(f"  DumpLogSegments --cluster-metadata-decoder ({dl['calls']} calls): {dl['wall']:.1f} s"
                f"{' (extrapolated)' if dl['extrapolated'] else ''}, {rep['bytes'] / 1e6 / dl['wall']:.1f} MB/s")
    first = next(iter(inputs.values()))[0]
    count = dump_count(home, first)
    say(f"check (untimed): DumpLogSegments printed {count:,} records of {first.parent.parent.name}, "
        f"kadmin's reader counts {records:,}" + ("" if len(rep["base_files"]) == 1 else " (all segments)"))
    say("(kadmin: 2 cores, decodes to events and writes Parquet; DumpLogSegments: decodes every record and "
        "prints it as JSON; each ratio is DumpLogSegments' wall time over kadmin's in the same round)")
    met = zkbench._met
    results: dict[str, Any] = {}
    for kind, run in runs.items():
        results[kind] = {}
        for name, ings in run["ingest"].items():
            ratios = [dl["wall"] / ing["wall"] for dl, ing in zip(run["dump"], ings, strict=True)]
            jvm_mib = max(i["peak"]["jvm"] for i in ings) / 2**20
            py_mib = max(i["peak"]["python"] for i in ings) / 2**20
            say(f"{kind}, kadmin '{name}': ratio {' / '.join(f'{x:.2f}' for x in ratios)} (goal >= 1.0) "
                f"{met(min(ratios) >= 1.0)}; Spark driver JVM peak {jvm_mib:,.0f} MiB (goal <= 1024) "
                f"{met(jvm_mib <= 1024)}; Python driver peak {py_mib:,.0f} MiB (goal <= 200) {met(py_mib <= 200)}")
            results[kind][name] = {
                "ratios": [round(x, 3) for x in ratios], "ingest_wall_s": [round(i["wall"], 2) for i in ings],
                "events_parsed": ings[0]["data"]["events_parsed"], "events_added": ings[0]["data"]["events_added"],
                "damage": len(ings[0]["data"]["damage"]), "peak_rss_python_driver_mib": round(py_mib),
                "peak_rss_driver_jvm_mib": round(jvm_mib),
                "peak_rss_tree_mib": round(max(i["peak"]["tree"] for i in ings) / 2**20),
                "met": {"speed": min(ratios) >= 1.0, "driver_jvm": jvm_mib <= 1024, "python_driver": py_mib <= 200}}
        results[kind]["dump_wall_s"] = [round(dl["wall"], 2) for dl in run["dump"]]

    result = {
        "bench": "history_kraft", "kafka": version, "base_log_reused": bool(args.base_log), "gb": args.gb,
        "input_bytes": rep["bytes"], "files": rep["files"], "records": records * rep["copies"],
        "copies": rep["copies"],
        "base": {"mb_goal": args.mb, "bytes": rep["base_bytes"], "records": records, "files": rep["base_files"],
                 "seconds": round(gen["seconds"], 1), "cluster_start_s": round(start_s, 1),
                 "partitions_created": gen["partitions_created"], "topics_created": gen["topics_created"],
                 "topics_deleted": gen["topics_deleted"], "rounds": gen["rounds"], "bounces": gen["bounces"],
                 "snapshots_left_out": rep["snapshots_left_out"]},
        "reader_one_core": {"seconds": round(parse_s, 2), "mb_per_s": round(rep["base_bytes"] / 1e6 / parse_s, 2),
                            "schema_codec_seconds": round(slow_s, 2),
                            "schema_codec_mb_per_s": round(rep["base_bytes"] / 1e6 / slow_s, 2)},
        "dump_jvm_flags": DUMP_JVM, "dump_records_counted_in_one_copy": count,
        "goals": {"speed_ratio_min": 1.0, "driver_jvm_mib_max": 1024, "python_driver_mib_max": 200},
        "inputs": results,
    }
    print(json.dumps(result), flush=True)


def which_kadmin(repo: Path) -> str:
    """Where `python -m kadmin` run from `repo` (as `ingest_with` runs it) imports kadmin from, at which commit."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    where = subprocess.run([sys.executable, "-c", "import kadmin; print(kadmin.__file__)"], cwd=repo, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    head = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%h %s"], capture_output=True,
                          text=True).stdout.strip()
    return f"{where} ({head[:70]})"


def ingest_with(repo: Path, logs: Path, out: Path, timeout: float, errlog: Path) -> dict[str, Any]:
    """bench/history.py's run_ingest with the kadmin of `repo`: run from it, with it first on PYTHONPATH (which
    Spark's Python workers inherit), so that a checkout of another commit can be measured beside this one."""
    here, saved = Path.cwd(), os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(repo)
    os.chdir(repo)
    try:
        return zkbench.run_ingest(logs, out, timeout, errlog)
    finally:
        os.chdir(here)
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


if __name__ == "__main__":
    main()
