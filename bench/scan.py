"""Benchmark bulk znode reads: kadmin's BulkReader against kazoo, a minimal raw client and aiozk.

What it does:
  1. Starts a standalone ZooKeeper on 127.0.0.1 in a temporary directory (kadmin's sandbox
     launcher), or uses --zookeeper HOST:PORT (127.0.0.1 only).
  2. Seeds --topics x --partitions Kafka partition states with kadmin's BulkWriter, as Kafka lays
     them out: /brokers/topics/t<i> (assignment JSON), .../partitions, .../partitions/<p> and
     .../partitions/<p>/state (123 B of state JSON), and prints the create rate. With --zookeeper,
     seeding is skipped when the last state znode already exists.
  3. Reads every state znode (getData), --rounds times per client, and reports each client's best
     round in reads/s, with the Python CPU time of that round:
       kadmin   BulkReader.get_many, window --window
       kazoo    get_async with at most --window in flight (a semaphore released in rawlink callbacks)
       raw      the ~60-line client below: send --window getData with one sendall, parse the
                --window replies with struct, repeat (independent of kadmin's code)
       aiozk    asyncio.gather over windows of --window `ZKClient.get` calls
     Every client's results are checked (count, and data of the first and last path).
  4. Prints the ratios kadmin/raw, kadmin/kazoo and aiozk/raw, then one final line of JSON.
Usage: python bench/scan.py [--topics 10000] [--partitions 10] [--window 1000] [--rounds 2]
                            [--zookeeper 127.0.0.1:PORT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kadmin.cluster.bulk import BulkReader
from kadmin.domain import znodes
from kadmin.sandbox.bulk_writer import BulkWriter
from kadmin.sandbox.zkserver import Ensemble

STATE = (
    b'{"controller_epoch":7,"leader":%d,"leader_recovery_state":0,"version":1,'
    b'"leader_epoch":12,"isr":[%d,%d,%d],"partition_epoch":3}'
)


# ---------------------------------------------------------------------------- data
def state_data(t: int, p: int) -> bytes:
    b = (t + p) % 3 + 1
    return STATE % (b, b, b % 3 + 1, (b + 1) % 3 + 1)


def state_paths(topics: int, partitions: int) -> list[str]:
    return [f"/brokers/topics/t{t}/partitions/{p}/state" for t in range(topics) for p in range(partitions)]


def seed_items(topics: int, partitions: int) -> Iterator[tuple[str, bytes | None]]:
    """Parents before children, as the pipelined creates require."""
    yield "/brokers", None
    yield "/brokers/topics", None
    for t in range(topics):
        assignment = {p: [(t + p) % 3 + 1, (t + p + 1) % 3 + 1, (t + p + 2) % 3 + 1] for p in range(partitions)}
        yield f"/brokers/topics/t{t}", znodes.encode_topic(assignment, topic_id=f"{t:022d}")
        yield f"/brokers/topics/t{t}/partitions", None
        for p in range(partitions):
            yield f"/brokers/topics/t{t}/partitions/{p}", None
            yield f"/brokers/topics/t{t}/partitions/{p}/state", state_data(t, p)


def check(name: str, results: list[tuple[str, bytes | None]], paths: list[str]) -> None:
    if len(results) != len(paths):
        raise SystemExit(f"{name}: {len(results)} results for {len(paths)} paths")
    for i in (0, -1):
        path, data = results[i]
        t, p = (int(x.lstrip("t")) for x in path.split("/")[3:6:2])
        if path != paths[i] or data != state_data(t, p):
            raise SystemExit(f"{name}: wrong result for {paths[i]}: {path} {data!r}")


# ---------------------------------------------------------------------------- clients
def read_kadmin(host: str, port: int, paths: list[str], window: int) -> list[tuple[str, bytes | None]]:
    with BulkReader([(host, port)], window=window) as r:
        return [(p, d) for p, d, _ in r.get_many(paths)]


def read_kazoo(host: str, port: int, paths: list[str], window: int) -> list[tuple[str, bytes | None]]:
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=f"{host}:{port}", timeout=30)
    zk.start(timeout=30)
    try:
        slots = threading.Semaphore(window)
        out: list[Any] = [None] * len(paths)

        def done(i: int) -> Callable[[Any], None]:
            def cb(_: Any) -> None:
                slots.release()

            return cb

        asyncs = []
        for i, p in enumerate(paths):
            slots.acquire()
            a = zk.get_async(p)
            a.rawlink(done(i))
            asyncs.append(a)
        for i, a in enumerate(asyncs):
            out[i] = (paths[i], a.get(timeout=30)[0])
        return out
    finally:
        zk.stop()
        zk.close()


_I = struct.Struct(">i")
_HDR = struct.Struct(">iqi")


def read_raw(host: str, port: int, paths: list[str], window: int) -> list[tuple[str, bytes | None]]:
    """A minimal pipelined client: connect, then batches of `window` getData, replies parsed with struct."""
    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""

    def frames(n: int) -> Iterator[tuple[bytes, int]]:  # n complete reply frames: (buffer, offset)
        nonlocal buf
        pos = 0
        while n:
            while len(buf) - pos < 4 or len(buf) - pos - 4 < _I.unpack_from(buf, pos)[0]:
                chunk = sock.recv(1 << 18)
                if not chunk:
                    raise ConnectionError("closed")
                buf = buf[pos:] + chunk
                pos = 0
            yield buf, pos
            pos += 4 + _I.unpack_from(buf, pos)[0]
            n -= 1
        buf = buf[pos:]

    # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd (16 zero bytes), readOnly
    connect = struct.pack(">iqiqi16sB", 0, 0, 30000, 0, 16, b"\0" * 16, 0)
    sock.sendall(_I.pack(len(connect)) + connect)
    for _ in frames(1):
        pass
    out: list[tuple[str, bytes | None]] = []
    xid = 0
    try:
        for start in range(0, len(paths), window):
            batch = paths[start : start + window]
            reqs = []
            for p in batch:
                xid += 1
                b = p.encode()
                reqs.append(struct.pack(">iiii", len(b) + 13, xid, 4, len(b)) + b + b"\0")
            sock.sendall(b"".join(reqs))
            for p, (fb, pos) in zip(batch, frames(len(batch)), strict=True):
                rxid, _, err = _HDR.unpack_from(fb, pos + 4)
                if rxid <= 0 or err:
                    raise RuntimeError(f"raw client: xid {rxid} err {err} for {p}")
                n = _I.unpack_from(fb, pos + 20)[0]
                out.append((p, fb[pos + 24 : pos + 24 + n] if n >= 0 else None))
        sock.sendall(struct.pack(">iii", 8, xid + 1, -11))  # closeSession
    finally:
        sock.close()
    return out


def read_aiozk(host: str, port: int, paths: list[str], window: int) -> list[tuple[str, bytes | None]]:
    import aiozk

    async def main() -> list[tuple[str, bytes | None]]:
        zk = aiozk.ZKClient(f"{host}:{port}", session_timeout=30)
        await asyncio.wait_for(zk.start(), 30)
        try:
            out: list[tuple[str, bytes | None]] = []
            for start in range(0, len(paths), window):
                batch = paths[start : start + window]
                datas = await asyncio.gather(*(zk.get_data(p) for p in batch))
                out.extend(zip(batch, datas, strict=True))
            return out
        finally:
            await zk.close()

    return asyncio.run(main())


# ---------------------------------------------------------------------------- harness
def cpu_of(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def measure(
    name: str, fn: Callable[..., list[tuple[str, bytes | None]]], host: str, port: int, paths: list[str],
    window: int, rounds: int, server_pid: int | None,
) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for r in range(rounds):
        s0, c0, t0 = cpu_of(server_pid), time.process_time(), time.perf_counter()
        results = fn(host, port, paths, window)
        wall, cpu, s1 = time.perf_counter() - t0, time.process_time() - c0, cpu_of(server_pid)
        check(name, results, paths)
        del results
        rate = len(paths) / wall
        server_cpu = round(s1 - s0, 2) if s0 is not None and s1 is not None else None
        print(f"  {name:7s} round {r + 1}: {len(paths):,} reads in {wall:.2f} s = {rate:,.0f} reads/s "
              f"(python CPU {cpu:.2f} s, server CPU {server_cpu} s)", flush=True)
        if not best or rate > best["reads_per_s"]:
            best = {"reads_per_s": round(rate), "wall_s": round(wall, 3), "python_cpu_s": round(cpu, 2),
                    "server_cpu_s": server_cpu}
    return best


def parse_hostport(s: str) -> tuple[str, int]:
    host, _, port = s.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        raise SystemExit("--zookeeper: this benchmark only talks to 127.0.0.1")
    return "127.0.0.1", int(port)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--window", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--zookeeper", metavar="HOST:PORT", help="use this server (127.0.0.1) instead of starting one")
    ap.add_argument("--clients", default="kadmin,kazoo,raw,aiozk", help="comma-separated subset to run")
    args = ap.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # kazoo and aiozk log connection chatter otherwise

    res: dict[str, Any] = {"topics": args.topics, "partitions": args.partitions, "window": args.window,
                           "rounds": args.rounds, "python": sys.version.split()[0], "cpus": os.cpu_count()}
    tmp: str | None = None
    ens: Ensemble | None = None
    server_pid: int | None = None
    try:
        if args.zookeeper:
            host, port = parse_hostport(args.zookeeper)
            res["server"] = "existing"
        else:
            tmp = tempfile.mkdtemp(prefix="kadmin-bench-scan-")
            t0 = time.perf_counter()
            ens = Ensemble(Path(tmp), size=1, tick_ms=500)
            ens.start(timeout=60)
            host, port = ens.hosts[0]
            server_pid = ens.servers[0].pid
            res["server"] = "standalone (kadmin.sandbox.zkserver)"
            print(f"ZooKeeper standalone on {host}:{port} up in {time.perf_counter() - t0:.1f} s")

        paths = state_paths(args.topics, args.partitions)
        with BulkReader([(host, port)]) as r:
            present = next(r.get_many([paths[-1]]))[2] is not None
        if present:
            print(f"data present ({paths[-1]} exists): not seeding")
            res["seed"] = None
        else:
            n = 2 + args.topics * (2 + 2 * args.partitions)
            t0 = time.perf_counter()
            with BulkWriter([(host, port)], window=args.window, timeout=30) as w:
                created = w.create_many(seed_items(args.topics, args.partitions))
                skipped = w.skipped
            dt = time.perf_counter() - t0
            print(f"seeded {created:,} znodes ({skipped:,} existed) of {n:,} in {dt:.1f} s = {n / dt:,.0f} creates/s")
            res["seed"] = {"znodes": n, "created": created, "skipped": skipped, "wall_s": round(dt, 2),
                           "creates_per_s": round(n / dt)}

        print(f"reading {len(paths):,} state znodes, window {args.window}, {args.rounds} round(s) per client")
        clients = {"kadmin": read_kadmin, "kazoo": read_kazoo, "raw": read_raw, "aiozk": read_aiozk}
        for name in args.clients.split(","):
            try:
                res[name] = measure(name, clients[name], host, port, paths, args.window, args.rounds, server_pid)
            except Exception as e:  # noqa: BLE001 - a third-party client that cannot run here is reported
                if name == "kadmin":
                    raise
                print(f"  {name}: cannot run here: {type(e).__name__}: {e}")
                res[name] = {"error": f"{type(e).__name__}: {e}"}

        def rate(name: str) -> float | None:
            v = res.get(name, {})
            return v.get("reads_per_s") if isinstance(v, dict) else None

        ratios = {}
        for a, b in (("kadmin", "raw"), ("kadmin", "kazoo"), ("aiozk", "raw")):
            ra, rb = rate(a), rate(b)
            ratios[f"{a}/{b}"] = round(ra / rb, 2) if ra and rb else None
            print(f"{a}/{b}: {ratios[f'{a}/{b}']}")
        res["ratios"] = ratios
    finally:
        if ens is not None:
            ens.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
