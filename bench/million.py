"""Benchmark `partitions check` and `ids missing` at a million partitions: peak RSS and wall time against raw reads.

Setup (all on 127.0.0.1, all cleaned up): a standalone ZooKeeper (kadmin.sandbox.zkserver) with a
--zk-heap JVM heap (the default 256 MiB cannot hold 2.3 million znodes) under the chroot /kafka;
brokers 1..6 registered (ThreadedFleet); --topics x --partitions partitions seeded with BulkWriter
in Kafka's 3.9 layout (topic znode, partitions, partitions/<p>, partitions/<p>/state) plus
/config/topics/<t> with min.insync.replicas=2. Replicas: 3 brokers round-robin over 1..6. Broker 1
is out of the ISR of --lagging partitions; --missing partitions name broker 7 (never registered) as
their third replica, out of the ISR: `ids missing` answers [7], `check` finds both kinds.

Measured, each as a real subprocess, median of --runs, peak RSS from wait4 (ru_maxrss):
  1. `kadmin partitions check -o json`   vs raw reads of the same znodes: getChildren(/brokers/topics),
     every topic znode, every /config/topics/<t>, every partition state znode.
  2. `kadmin ids missing -o json`         vs raw reads of getChildren(/brokers/topics) and every topic znode.
The raw reader is a subprocess of this script (`--raw`): a minimal pipelined client (a sliding
window of --window getData on one socket, replies split with struct, data dropped). Both sides
are whole processes (Python start-up included).
Prints each RATIO next to its GOAL, then one final line of JSON.
Usage: python bench/million.py [--topics 100000] [--partitions 10] [--lagging 1000] [--missing 1000]
                               [--runs 1] [--zk-heap 3g] [--window 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

KADMIN = [sys.executable, "-m", "kadmin"]
CHROOT = "/kafka"
BROKERS = range(1, 7)
MISSING_BROKER = 7
CONFIG = b'{"version":1,"config":{"min.insync.replicas":"2"}}'
RSS_GOAL_MIB = 500
RATIO_GOAL = 1.0  # issue 24 §3 (issue 13 §4 asked 1.3): the server is the limit


def topic_name(t: int) -> str:
    return f"t{t:06d}"


def replicas_of(g: int) -> list[int]:  # g: global partition index, round-robin over brokers 1..6
    return [(g + k) % len(BROKERS) + 1 for k in range(3)]


def spread(n: int, total: int, shift: int = 0) -> set[int]:
    """n global partition indexes spread evenly over 0..total-1 (each moved `shift` further)."""
    return {(i * total // n + shift) % total for i in range(n)} if n else set()


def seed_items(topics: int, parts: int, lagging: set[int], missing: set[int]) -> Iterator[tuple[str, bytes | None]]:
    from kadmin.domain import znodes

    for t in range(topics):
        name = topic_name(t)
        assignment = {}
        isrs = {}
        for p in range(parts):
            g = t * parts + p
            reps = replicas_of(g)
            if g in missing:
                reps[2] = MISSING_BROKER
            isr = [b for b in reps if b != MISSING_BROKER and not (g in lagging and b == 1)]
            assignment[p], isrs[p] = reps, isr
        yield f"/brokers/topics/{name}", znodes.encode_topic(assignment, topic_id=f"{t:022d}")
        yield f"/brokers/topics/{name}/partitions", None
        for p, reps in assignment.items():
            isr = isrs[p]
            leader = reps[0] if reps[0] in isr else isr[0]
            yield f"/brokers/topics/{name}/partitions/{p}", None
            yield f"/brokers/topics/{name}/partitions/{p}/state", znodes.encode_partition_state(leader, 0, 1, isr)
        yield f"/config/topics/{name}", CONFIG


# ---------------------------------------------------------------------------- the raw reader (a subprocess)
_I = struct.Struct(">i")
_HDR = struct.Struct(">iqi")


def raw_read(host: str, port: int, chroot: str, parts: int, states: bool, window: int) -> int:
    """getChildren(/brokers/topics), then getData of every topic znode (and with `states` every
    /config/topics/<t> and every state znode), a sliding window of `window` requests in flight."""
    sock = socket.create_connection((host, port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    pos = 0

    def frame() -> tuple[bytes, int]:  # the next complete reply frame: (buffer, offset)
        nonlocal buf, pos
        while len(buf) - pos < 4 or len(buf) - pos - 4 < _I.unpack_from(buf, pos)[0]:
            chunk = sock.recv(1 << 18)
            if not chunk:
                raise ConnectionError("closed")
            buf = buf[pos:] + chunk
            pos = 0
        at = pos
        pos += 4 + _I.unpack_from(buf, pos)[0]
        return buf, at

    connect = struct.pack(">iqiqi16sB", 0, 0, 30000, 0, 16, b"\0" * 16, 0)
    sock.sendall(_I.pack(len(connect)) + connect)
    frame()
    xid = 1
    b = f"{chroot}/brokers/topics".encode()
    sock.sendall(struct.pack(">iiii", len(b) + 13, xid, 8, len(b)) + b + b"\0")
    fb, at = frame()
    n = _I.unpack_from(fb, at + 20)[0]
    off, topics = at + 24, []
    for _ in range(n):
        ln = _I.unpack_from(fb, off)[0]
        topics.append(fb[off + 4 : off + 4 + ln].decode())
        off += 4 + ln
    topics.sort()

    def paths() -> Iterator[bytes]:
        for t in topics:
            yield f"{chroot}/brokers/topics/{t}".encode()
        if states:
            for t in topics:
                yield f"{chroot}/config/topics/{t}".encode()
            for t in topics:
                for p in range(parts):
                    yield f"{chroot}/brokers/topics/{t}/partitions/{p}/state".encode()

    source = paths()
    inflight: deque[int] = deque()
    read = 0
    exhausted = False
    while True:
        reqs = []
        while not exhausted and len(inflight) < window:
            path = next(source, None)
            if path is None:
                exhausted = True
                break
            xid += 1
            inflight.append(xid)
            reqs.append(struct.pack(">iiii", len(path) + 13, xid, 4, len(path)) + path + b"\0")
        if reqs:
            sock.sendall(b"".join(reqs))
        if not inflight:
            break
        for _ in range(len(inflight) // 2 or 1):  # read half the window, then top it up again
            fb, at = frame()
            rxid, _, err = _HDR.unpack_from(fb, at + 4)
            if rxid != inflight.popleft() or err not in (0, -101):
                raise RuntimeError(f"raw reader: xid {rxid} err {err}")
            read += 1
    sock.sendall(struct.pack(">iii", 8, xid + 1, -11))
    sock.close()
    return read


# ---------------------------------------------------------------------------- measuring
def run_measured(cmd: list[str], ok: tuple[int, ...]) -> tuple[float, float, float, int, str]:
    """(wall s, CPU s (user + system), peak RSS MiB, exit code, stdout) of one subprocess."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        if proc.returncode not in ok:
            raise RuntimeError(f"{' '.join(cmd[:6])} exited {proc.returncode}: {err.read().decode()[-800:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, text


def measure(cmd: list[str], ok: tuple[int, ...], runs: int) -> dict[str, Any]:
    walls, cpus, rss, rc, text = [], [], [], 0, ""
    for _ in range(runs):
        w, c, r, rc, text = run_measured(cmd, ok)
        walls.append(w)
        cpus.append(c)
        rss.append(r)
    return {"wall_s": round(statistics.median(walls), 2), "cpu_s": round(statistics.median(cpus), 2),
            "peak_rss_mib": round(max(rss), 1), "exit_code": rc, "stdout": text}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--lagging", type=int, default=1000)
    ap.add_argument("--missing", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--zk-heap", default="3g")
    ap.add_argument("--raw", nargs=4, metavar=("HOST:PORT", "CHROOT", "PARTITIONS", "STATES"),
                    help=argparse.SUPPRESS)  # the raw reader's subprocess mode
    args = ap.parse_args()
    if args.raw:
        host, port = args.raw[0].rsplit(":", 1)
        print(raw_read(host, int(port), args.raw[1], int(args.raw[2]), args.raw[3] == "1", args.window))
        return 0

    import logging

    from kadmin.sandbox.bulk_writer import BulkWriter
    from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
    from kadmin.sandbox.zkserver import Ensemble, four_letter_word

    logging.basicConfig(level=logging.CRITICAL)
    n = args.topics * args.partitions
    res: dict[str, Any] = {"topics": args.topics, "partitions": n, "lagging": args.lagging, "missing": args.missing,
                           "python": sys.version.split()[0], "cpus": os.cpu_count(), "zk_heap": args.zk_heap}
    tmp = tempfile.mkdtemp(prefix="kadmin-bench-million-")
    ens = Ensemble(Path(tmp), size=1, heap=args.zk_heap)
    for s in ens.servers:  # no snapshot every 100k creates while seeding millions
        s.extra_cfg["snapCount"] = "10000000"
    fleet: ThreadedFleet | None = None
    try:
        ens.start(timeout=120)
        host, port = ens.hosts[0]
        connect = f"{ens.connect_string}{CHROOT}"
        print(f"ZooKeeper standalone on {host}:{port} (-Xmx{args.zk_heap}), cluster at {connect}", flush=True)
        fleet = ThreadedFleet(ens.hosts, chroot=CHROOT)
        fleet.setup_cluster()
        for b in BROKERS:
            fleet.register(BrokerSpec(b))
        lagging = spread(args.lagging, n)
        missing = spread(args.missing, n, shift=1) - lagging
        t0 = time.perf_counter()
        with BulkWriter(ens.hosts, chroot=CHROOT, timeout=60) as w:
            created = w.create_many(seed_items(args.topics, args.partitions, lagging, missing))
        dt = time.perf_counter() - t0
        print(f"seeded {n:,} partitions ({created:,} znodes) in {dt:.1f} s = {created / dt:,.0f} creates/s",
              flush=True)
        res["seed"] = {"znodes": created, "wall_s": round(dt, 2)}
        mntr = four_letter_word(host, port, "mntr", timeout=10)
        res["zk_znode_count"] = next((int(line.split()[1]) for line in mntr.splitlines()
                                      if line.startswith("zk_znode_count")), None)

        raw = [sys.executable, __file__, "--window", str(args.window), "--raw", f"{host}:{port}", CHROOT,
               str(args.partitions)]
        for name, cmd, raw_cmd, ok in (
            ("partitions check", ["partitions", "check", "-o", "json", "--timeout", "900"], [*raw, "1"], (0, 1, 2)),
            ("ids missing", ["ids", "missing", "-o", "json", "--timeout", "900"], [*raw, "0"], (0,)),
        ):
            got = measure([*KADMIN, *cmd, "-z", connect], ok, args.runs)
            base = measure(raw_cmd, (0,), args.runs)
            doc = json.loads(got.pop("stdout"))
            reads = int(base.pop("stdout"))
            ratio = got["wall_s"] / base["wall_s"]
            if name == "ids missing":
                what = ", ".join(f"{m['broker_id']} ({m['partitions']} partitions)" for m in doc["data"])
            else:
                what = f"{doc['data']['status']}, {len(doc['data']['findings'])} findings, exit {got['exit_code']}"
            print(f"{name}: {got['wall_s']:.1f} s (CPU {got['cpu_s']:.1f} s) [{what}], peak RSS "
                  f"{got['peak_rss_mib']:.0f} MiB (goal <= {RSS_GOAL_MIB}); raw reads of the same {reads:,} znodes "
                  f"{base['wall_s']:.1f} s (CPU {base['cpu_s']:.1f} s, peak RSS {base['peak_rss_mib']:.0f} MiB): "
                  f"ratio {ratio:.2f} (goal <= {RATIO_GOAL}); load average {os.getloadavg()[0]:.1f} on "
                  f"{os.cpu_count()} CPUs", flush=True)
            res[name.replace(" ", "_")] = {**got, "raw": {**base, "reads": reads}, "ratio": round(ratio, 3),
                                           "rss_ok": got["peak_rss_mib"] <= RSS_GOAL_MIB,
                                           "ratio_ok": ratio <= RATIO_GOAL}
    finally:
        if fleet is not None:
            fleet.shutdown()
        ens.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
