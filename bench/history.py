"""Benchmark `kadmin history ingest` (local[2]) on >= 1 GiB of ZooKeeper txn logs, next to ZooKeeper's TxnLogToolkit.

What it does (everything on 127.0.0.1, temporary directories removed unless --keep DIR):
  1. A base log written by a real ZooKeeper: a standalone server (kadmin.sandbox.zkserver.ZkServer,
     zoo.cfg with preAllocSize=1024 and snapCount=2000000, so the log does not roll) driven like a
     Kafka cluster under the chroot /kafka:
       - ThreadedFleet.setup_cluster() and brokers 1..6, each registered from its own session (one
         multi create+setData, the broker epoch is its czxid); broker 1 becomes controller;
       - --topics x --partitions partitions created with kadmin's BulkWriter in Kafka's layout
         (topic znode v3, partitions, partitions/<p>, partitions/<p>/state; replication factor 3);
       - --rounds rolling-restart rounds: in round i broker b = i % 6 + 1 leaves the ISR of every
         partition it hosts (leadership moves to the next ISR member, leader epoch + 1) with one
         pipelined setData per partition, is bounced (a new session, a new epoch; bouncing broker 1
         moves the controller), then rejoins every ISR (another setData per partition).
     The setData writes go through a BulkWriter subclass using the same pipelining engine.
  2. Replication up to --gb GiB: each real log file, trimmed to its last record (ZooKeeper
     preallocates in 1 MiB blocks of zeros; the zero tail is cut off), is written again and again
     as log.<hex> files with distinct names. A copy of a valid log is a valid log, but copies share
     zxids: their events get the same ids, so the event table stores one copy's worth of events
     (events_added); every copy is still read and parsed.
  3. `python -m kadmin history ingest DIR --cluster bench --out OUT --master local[2] -o json` as a
     subprocess: wall time, MB/s over the input bytes, and peak memory: VmHWM of the Python driver
     and of the Spark driver JVM (its child; in local mode the executors live in it), plus the peak
     of the summed RSS of the whole process tree (the Python workers too), sampled every 0.1 s.
  4. ZooKeeper's own `java -cp /usr/share/java/zookeeper.jar
     org.apache.zookeeper.server.persistence.TxnLogToolkit -d FILE > /dev/null` over the same files,
     one after another (one JVM per file, as an operator would run it). When the files take longer
     than --toolkit-budget seconds, the rest is extrapolated from the bytes done (said so). One
     extra untimed toolkit run on one copy checks that it reads every record ("EOF reached after N txns").
Before steps 3 and 4 every file is read once plainly (timed, printed): the I/O baseline. The files
were just written, but a kernel with proactive reclaim (DAMON pageout, as on this project's VMs)
may have paged part of them out; the baseline shows whether reading them matters at all.
MB = 10^6 bytes, GiB = 2^30 bytes. Prints human-readable lines, then one final line of JSON.
Usage: python bench/history.py [--gb 1.0] [--keep DIR] [--topics 10000] [--partitions 10] [--rounds 6]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kadmin.domain import znodes
from kadmin.sandbox.bulk_writer import BulkWriter
from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import ZkServer, stop_pid

KADMIN = [sys.executable, "-m", "kadmin"]
CHROOT = "/kafka"
BROKERS = list(range(1, 7))
GIB = 1 << 30
TOOLKIT = ["java", "-cp", "/usr/share/java/zookeeper.jar", "org.apache.zookeeper.server.persistence.TxnLogToolkit"]
_REC = struct.Struct(">qi")  # adler32, len
_ANY_VERSION = struct.pack(">i", -1)


def say(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------- the workload
class StateWriter(BulkWriter):
    """BulkWriter plus pipelined setData (version -1), for rewriting partition states fast."""

    def set_many(self, items: Iterable[tuple[str, bytes]]) -> int:
        n = 0
        with contextlib.closing(self._pipeline(self._set_requests(items))) as replies:
            for path, err, _, _, _ in replies:
                if err != 0:
                    self._raise_for("setData", path, err)
                n += 1
        return n

    def _set_requests(self, items: Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, bytes]]:
        for path, data in items:
            full = self._full_path(path)
            yield path, struct.pack(">ii", 5, len(full)) + full + struct.pack(">i", len(data)) + data + _ANY_VERSION


def replicas(t: int, p: int) -> list[int]:
    return [BROKERS[(t + p + k) % len(BROKERS)] for k in range(3)]


def state_path(t: int, p: int) -> str:
    return f"/brokers/topics/t{t}/partitions/{p}/state"


def seed_items(topics: int, partitions: int) -> Iterator[tuple[str, bytes | None]]:
    for t in range(topics):
        assignment = {p: replicas(t, p) for p in range(partitions)}
        yield f"/brokers/topics/t{t}", znodes.encode_topic(assignment, topic_id=f"{t:022d}")
        yield f"/brokers/topics/t{t}/partitions", None
        for p in range(partitions):
            r = replicas(t, p)
            yield f"/brokers/topics/t{t}/partitions/{p}", None
            yield state_path(t, p), znodes.encode_partition_state(r[0], 0, 1, r)


def generate(base: Path, topics: int, partitions: int, rounds: int) -> tuple[Path, dict[str, Any]]:
    """Drive a real standalone ZooKeeper; return its version-2 directory and what was done."""
    server = ZkServer(base / "zk", free_port(), tick_ms=500, extra_cfg={"snapCount": "2000000"})
    server.write_config()
    server.start()
    info: dict[str, Any] = {"topics": topics, "partitions": partitions, "rounds": rounds}
    t0 = time.monotonic()
    try:
        deadline = time.monotonic() + 60
        while server.mode() is None:
            if time.monotonic() > deadline or not server.alive():
                raise SystemExit("ZooKeeper did not start: see " + str(server.data_dir / "zookeeper.log"))
            time.sleep(0.05)
        hosts = [("127.0.0.1", server.client_port)]
        fleet = ThreadedFleet(hosts, chroot=CHROOT, session_timeout_ms=6000)
        try:
            fleet.setup_cluster()
            for b in BROKERS:
                fleet.register(BrokerSpec(b, port=9091 + b))
            t1 = time.monotonic()
            with StateWriter(hosts, chroot=CHROOT, timeout=30) as w:
                created = w.create_many(seed_items(topics, partitions))
                info["creates"] = created
                info["create_rate"] = created / (time.monotonic() - t1)
                say(f"  seeded {created:,} znodes ({topics:,} topics x {partitions} partitions) "
                    f"at {info['create_rate']:,.0f} creates/s")
                # partition -> [leader, leader_epoch, isr]
                state = {(t, p): [replicas(t, p)[0], 0, replicas(t, p)] for t in range(topics)
                         for p in range(partitions)}
                sets = bounces = 0
                t2 = time.monotonic()
                for i in range(rounds):
                    b = BROKERS[i % len(BROKERS)]
                    hosted = [k for k in state if b in replicas(*k)]

                    def shrink(k: tuple[int, int], b: int = b) -> bytes:
                        s = state[k]
                        s[2] = [x for x in s[2] if x != b]
                        if s[0] == b:
                            s[0], s[1] = s[2][0], s[1] + 1
                        return znodes.encode_partition_state(s[0], s[1], 1, s[2])

                    def expand(k: tuple[int, int], b: int = b) -> bytes:
                        s = state[k]
                        s[2] = [*s[2], b]
                        return znodes.encode_partition_state(s[0], s[1], 1, s[2])

                    sets += w.set_many((state_path(*k), shrink(k)) for k in hosted)
                    fleet.bounce(b)
                    bounces += 1
                    sets += w.set_many((state_path(*k), expand(k)) for k in hosted)
                info["set_data"] = sets
                info["bounces"] = bounces
                info["set_rate"] = sets / (time.monotonic() - t2)
                say(f"  {rounds} rolling-restart rounds: {sets:,} partition-state setData at "
                    f"{info['set_rate']:,.0f}/s, {bounces} broker bounces")
        finally:
            fleet.shutdown()
    finally:
        server.stop()
    info["seconds"] = time.monotonic() - t0
    return server.data_dir / "data" / "version-2", info


# ---------------------------------------------------------------------------- the files
def used_length(data: bytes | memoryview) -> tuple[int, int]:
    """(offset just past the last record, number of records): walks the record lengths."""
    pos, n, size = 16, 0, len(data)
    while pos + 12 <= size:
        _, ln = _REC.unpack_from(data, pos)
        if ln <= 0 or pos + 12 + ln + 1 > size:
            break
        pos += 12 + ln + 1
        n += 1
    return pos, n


def replicate(version2: Path, dest: Path, target: int) -> dict[str, Any]:
    logs = sorted(version2.glob("log.*"))
    if not logs:
        raise SystemExit(f"ZooKeeper wrote no log.* in {version2}")
    bases = []
    for f in logs:
        raw = f.read_bytes()
        end, records = used_length(raw)
        bases.append((int(f.name[4:], 16), raw[:end], records, len(raw) - end))
    one = sum(len(b[1]) for b in bases)
    copies = max(1, math.ceil(target / one))
    dest.mkdir(parents=True)
    for c in range(copies):
        for zxid, data, _, _ in bases:
            (dest / f"log.{zxid + (c << 40):x}").write_bytes(data)
    return {"base_files": [f.name for f in logs], "base_bytes_on_disk": sum(f.stat().st_size for f in logs),
            "base_bytes": one, "base_records": sum(b[2] for b in bases),
            "zero_tail_trimmed": sum(b[3] for b in bases), "copies": copies,
            "files": copies * len(bases), "bytes": copies * one, "records": copies * sum(b[2] for b in bases)}


# ---------------------------------------------------------------------------- measuring
def _status(pid: int) -> dict[str, int]:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError):
        pass
    return out


def _tree(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def run_ingest(logs: Path, out: Path, timeout: float, errlog: Path) -> dict[str, Any]:
    cmd = [*KADMIN, "history", "ingest", str(logs), "--cluster", "bench", "--out", str(out), "--master", "local[2]",
           "-o", "json"]
    peak = {"python": 0, "jvm": 0, "tree": 0}
    jvm: int | None = None
    with open(errlog, "wb") as err, tempfile.TemporaryFile() as stdout:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=stdout, stderr=err, stdin=subprocess.DEVNULL)
        try:
            while p.poll() is None:
                if time.monotonic() - t0 > timeout:
                    raise SystemExit(f"ingest still running after {timeout:.0f}s: stopped (see {errlog})")
                peak["python"] = max(peak["python"], _status(p.pid).get("VmHWM", 0))
                tree = _tree(p.pid)
                if jvm is None:
                    jvm = next((c for c in tree if "org.apache.spark.deploy.SparkSubmit" in _cmdline(c)), None)
                if jvm is not None:
                    peak["jvm"] = max(peak["jvm"], _status(jvm).get("VmHWM", 0))
                peak["tree"] = max(peak["tree"], sum(_status(c).get("VmRSS", 0) for c in [p.pid, *tree]))
                time.sleep(0.1)
            wall = time.monotonic() - t0
        finally:
            if p.poll() is None:
                for c in [*_tree(p.pid), p.pid]:
                    stop_pid(c, signal.SIGKILL, wait=5)
                p.wait(10)
        stdout.seek(0)
        text = stdout.read().decode()
    try:
        doc = json.loads(text)
    except ValueError:
        raise SystemExit(f"ingest exited {p.returncode} without a JSON document; stderr in {errlog}") from None
    if p.returncode != 0:
        raise SystemExit(f"ingest exited {p.returncode}: {doc.get('errors')}; stderr in {errlog}")
    return {"wall": wall, "exit_code": p.returncode, "data": doc["data"], "peak": peak}


def read_all(files: list[Path]) -> float:
    """Seconds to read every file once (1 MiB reads): the I/O baseline, which also warms the page cache."""
    buf = bytearray(1 << 20)
    t0 = time.monotonic()
    for f in files:
        with open(f, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass
    return time.monotonic() - t0


def run_toolkit(files: list[Path], budget: float) -> dict[str, Any]:
    done: list[tuple[Path, float]] = []
    t0 = time.monotonic()
    for f in files:
        s = time.monotonic()
        r = subprocess.run([*TOOLKIT, "-d", str(f)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=max(budget, 60) * 2)
        if r.returncode != 0:
            raise SystemExit(f"TxnLogToolkit exited {r.returncode} on {f.name}: {r.stderr.decode()[-500:]}")
        done.append((f, time.monotonic() - s))
        if time.monotonic() - t0 > budget and len(done) < len(files):
            break
    wall = sum(t for _, t in done)
    done_bytes = sum(f.stat().st_size for f, _ in done)
    all_bytes = sum(f.stat().st_size for f in files)
    return {"files_timed": len(done), "files": len(files), "bytes_timed": done_bytes, "wall_timed": wall,
            "wall": wall * all_bytes / done_bytes, "extrapolated": len(done) < len(files),
            "per_file": [round(t, 3) for _, t in done]}


def toolkit_count(f: Path) -> int | None:
    """The toolkit's own count of the records in `f` (its last line: "EOF reached after N txns.")."""
    with tempfile.TemporaryFile() as out:
        subprocess.run([*TOOLKIT, "-d", str(f)], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       timeout=600, check=False)
        out.seek(max(0, out.tell() - 4096))
        m = re.search(rb"EOF reached after (\d+) txns", out.read())
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------- main
def work_dir(keep: str | None, prefix: str) -> Path:
    """--keep DIR (empty or new, kept), else a fresh temporary directory (removed by the caller)."""
    if not keep:
        return Path(tempfile.mkdtemp(prefix=prefix))
    work = Path(keep).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if any(work.iterdir()):
        raise SystemExit(f"--keep {work}: give an empty or new directory")
    return work


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0, help="input size in GiB (default 1.0)")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (logs, the Parquet table, logs of runs)")
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=6, help="rolling-restart rounds (2 setData per hosted partition)")
    ap.add_argument("--timeout", type=float, default=1800, help="give up on the ingest after this many seconds")
    ap.add_argument("--toolkit-budget", type=float, default=600,
                    help="time TxnLogToolkit on files until this many seconds are spent, then extrapolate")
    args = ap.parse_args()
    if shutil.which("java") is None or not os.path.exists(TOOLKIT[2]):
        raise SystemExit("needs java and Debian's zookeeper (/usr/share/java/zookeeper.jar)")

    work = work_dir(args.keep, "kadmin-bench-history-")
    try:
        bench(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _met(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def bench(args: argparse.Namespace, work: Path) -> None:
    target = int(args.gb * GIB)
    say(f"bench/history.py: kadmin history ingest (local[2]) vs ZooKeeper's TxnLogToolkit, >= {args.gb:g} GiB "
        f"(in {work}{'' if args.keep else ', removed at the end'})")
    say("1. a base log from a real standalone ZooKeeper driven like a Kafka cluster:")
    version2, gen = generate(work / "gen", args.topics, args.partitions, args.rounds)
    logs = work / "logs"
    rep = replicate(version2, logs, target)
    say(f"  base log: {', '.join(rep['base_files'])}: {rep['base_records']:,} records, "
        f"{rep['base_bytes'] / 1e6:.1f} MB used of {rep['base_bytes_on_disk'] / 1e6:.1f} MB on disk "
        f"({gen['seconds']:.1f} s to generate)")
    say(f"2. {rep['copies']} copies of it as distinct log.<hex> files (copies of a valid log are valid logs; the "
        f"{rep['zero_tail_trimmed'] / 1e6:.2f} MB preallocated zero tail was cut, each file ends at its last record): "
        f"{rep['files']} files, {rep['bytes'] / 1e6:,.1f} MB ({rep['bytes'] / GIB:.2f} GiB), "
        f"{rep['records']:,} records")
    shutil.rmtree(work / "gen")  # the ZooKeeper data directory is no longer needed

    files = sorted(logs.glob("log.*"))
    io = [read_all(files)]
    say(f"  I/O baseline: a plain read of all files took {io[0]:.2f} s ({rep['bytes'] / 1e6 / io[0]:,.0f} MB/s)")
    say("3. kadmin history ingest --master local[2] (a subprocess; wall time includes start-up and Spark session):")
    ing = run_ingest(logs, work / "events", args.timeout, work / "ingest.stderr")
    d = ing["data"]
    mbs = rep["bytes"] / 1e6 / ing["wall"]
    say(f"  {ing['wall']:.1f} s wall, {mbs:.1f} MB/s, {rep['records'] / ing['wall']:,.0f} records/s; "
        f"{d['ranges']} ranges, events_parsed {d['events_parsed']:,}, events_added {d['events_added']:,}, "
        f"damage {len(d['damage'])}")
    say("  (copies share zxids, so their events share ids: the table holds one copy's worth, every copy is parsed)")
    pk = ing["peak"]
    say(f"  peak memory: Python driver VmHWM {pk['python'] / 2**20:,.0f} MiB, Spark driver JVM VmHWM "
        f"{pk['jvm'] / 2**20:,.0f} MiB, whole process tree (summed RSS, sampled) {pk['tree'] / 2**20:,.0f} MiB")

    say("4. ZooKeeper's TxnLogToolkit -d FILE > /dev/null over the same files, one JVM per file, sequentially:")
    io.append(read_all(files))
    say(f"  I/O baseline: a plain read of all files took {io[1]:.2f} s ({rep['bytes'] / 1e6 / io[1]:,.0f} MB/s)")
    tk = run_toolkit(files, args.toolkit_budget)
    tk_mbs = rep["bytes"] / 1e6 / tk["wall"]
    if tk["extrapolated"]:
        say(f"  {tk['files_timed']} of {tk['files']} files took {tk['wall_timed']:.1f} s (budget "
            f"{args.toolkit_budget:g} s); extrapolated by bytes to all: {tk['wall']:.1f} s, {tk_mbs:.1f} MB/s")
    else:
        say(f"  {tk['files']} files: {tk['wall']:.1f} s wall, {tk_mbs:.1f} MB/s "
            f"(per file {min(tk['per_file']):.2f}-{max(tk['per_file']):.2f} s)")
    count = toolkit_count(files[0])
    per_copy = rep["records"] // rep["files"] if len(rep["base_files"]) == 1 else None
    say(f"  check (untimed): the toolkit read {count} txns from {files[0].name}"
        + (f", the record walk counts {per_copy}" if per_copy is not None else ""))
    ratio = tk["wall"] / ing["wall"]
    jvm_mib, py_mib = pk["jvm"] / 2**20, pk["python"] / 2**20
    say(f"kadmin {mbs:.1f} MB/s, TxnLogToolkit {tk_mbs:.1f} MB/s: ratio {ratio:.2f} (goal >= 1.0) {_met(ratio >= 1.0)}")
    say("  (kadmin: 2 cores, decodes to events and writes Parquet; the toolkit: one core, decodes and prints every "
        "txn as text)")
    say(f"Spark driver JVM peak RSS {jvm_mib:,.0f} MiB (goal <= 1024 MiB) {_met(jvm_mib <= 1024)}")
    say(f"Python driver peak RSS {py_mib:,.0f} MiB (goal <= 200 MiB) {_met(py_mib <= 200)}")

    result = {
        "bench": "history", "gb": args.gb, "input_bytes": rep["bytes"], "files": rep["files"],
        "records": rep["records"], "copies": rep["copies"], "base": {**gen, **{k: rep[k] for k in (
            "base_files", "base_bytes", "base_bytes_on_disk", "base_records", "zero_tail_trimmed")}},
        "ingest": {"master": "local[2]", "wall_s": round(ing["wall"], 2), "mb_per_s": round(mbs, 2),
                   "ranges": d["ranges"], "events_parsed": d["events_parsed"], "events_added": d["events_added"],
                   "damage": len(d["damage"]), "peak_rss_python_driver_bytes": pk["python"],
                   "peak_rss_driver_jvm_bytes": pk["jvm"], "peak_rss_tree_bytes_sampled": pk["tree"]},
        "toolkit": {"wall_s": round(tk["wall"], 2), "mb_per_s": round(tk_mbs, 2), "files_timed": tk["files_timed"],
                    "extrapolated": tk["extrapolated"], "txns_counted_in_one_file": count},
        "toolkit_over_kadmin_wall": round(tk["wall"] / ing["wall"], 3),
        "goals": {"speed_ratio_min": 1.0, "driver_jvm_mib_max": 1024, "python_driver_mib_max": 200,
                  "met": {"speed": ratio >= 1.0, "driver_jvm": jvm_mib <= 1024, "python_driver": py_mib <= 200}},
        "plain_read_s": [round(x, 3) for x in io],
    }
    for k in ("create_rate", "set_rate", "seconds"):
        result["base"][k] = round(result["base"][k], 1)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
