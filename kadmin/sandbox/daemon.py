"""The sandbox's broker process: holds every emulated broker's ZooKeeper session.

Run by `kadmin sandbox up` as `python -m kadmin.sandbox.daemon`. It answers one-line JSON commands
on a loopback TCP port written to `daemon.json` in the sandbox directory:
`{"op": "bounce", "id": 2}`, `{"op": "kill", "id": 2, "hard": false}`, `{"op": "start", "id": 2}`,
`{"op": "status"}`, `{"op": "shutdown"}`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from kadmin.errors import in_words
from kadmin.sandbox.fleet import BrokerSpec, Fleet

TOPICS = (("orders", 6, 3), ("payments", 3, 3), ("audit-log", 4, 2))


def topic_layout(broker_ids: list[int]) -> list[tuple[str, dict[int, list[int]]]]:
    """A few topics with replicas spread round-robin, replication factor capped by the broker count."""
    out = []
    n = len(broker_ids)
    for t, (name, parts, rf) in enumerate(TOPICS):
        rf = min(rf, n)
        out.append((name, {p: [broker_ids[(p + t + r) % n] for r in range(rf)] for p in range(parts)}))
    return out


async def register_all(fleet: Fleet, ids: list[int], batch: int = 100) -> None:
    for i in range(0, len(ids), batch):
        specs = [BrokerSpec(b, port=9091 + b) for b in ids[i : i + batch]]
        await asyncio.gather(*(fleet.register(spec, catch_up=False) for spec in specs))


async def serve(args: argparse.Namespace) -> None:
    directory = Path(args.dir)
    hosts = [(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) for h in args.hosts.split(",")]
    fleet = Fleet(hosts, chroot=args.chroot, session_timeout_ms=args.session_timeout_ms, serve_kafka=not args.no_kafka)
    fleet.elect_controller_on_change = False
    await fleet.setup_cluster(args.cluster_id)
    ids = list(range(1, args.brokers + 1))
    await register_all(fleet, ids)
    fleet.elect_controller_on_change = True
    await fleet.elect_controller()
    for name, assignment in topic_layout(ids):
        with contextlib.suppress(Exception):  # NodeExists on a restart over old data
            rf = len(assignment[0])
            await fleet.create_topic(name, assignment, configs={"min.insync.replicas": "2"} if rf >= 3 else {})

    stop = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            req = json.loads(line or b"{}")
            reply = await dispatch(fleet, req, stop)
        except Exception as e:  # noqa: BLE001 - reported to the client
            reply = {"ok": False, "error": in_words(e)}
        writer.write(json.dumps(reply).encode() + b"\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    tmp = directory / "daemon.json.tmp"
    tmp.write_text(json.dumps({"pid": os.getpid(), "port": port, "brokers": ids}))
    os.replace(tmp, directory / "daemon.json")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    await fleet.close()


async def dispatch(fleet: Fleet, req: dict[str, Any], stop: asyncio.Event) -> dict[str, Any]:
    op = req.get("op")
    if op == "shutdown":
        stop.set()
        return {"ok": True}
    if op == "status":
        return {
            "ok": True,
            "brokers": {str(b): e for b, e in sorted(fleet.epochs.items())},
            "stopped": sorted(set(fleet.specs) - set(fleet.sessions)),
            "controller": fleet.controller_id,
        }
    if op not in ("bounce", "kill", "start"):
        return {"ok": False, "error": f"unknown op {op!r}"}
    bid = req.get("id")
    if not isinstance(bid, int):
        return {"ok": False, "error": "an integer broker id is required"}
    if op in ("bounce", "kill") and bid not in fleet.specs:
        return {"ok": False, "error": f"broker {bid} is not a sandbox broker"}
    if op == "bounce":
        old, new = await fleet.bounce(bid, float(req.get("down", 0.0)))
        return {"ok": True, "id": bid, "old_epoch": old, "new_epoch": new, "controller": fleet.controller_id}
    if op == "kill":
        was = fleet.epochs.get(bid)
        if was is None:
            return {"ok": False, "error": f"broker {bid} is not running"}
        if req.get("hard"):
            await fleet.crash(bid)
        else:
            await fleet.stop(bid)
        return {"ok": True, "id": bid, "old_epoch": was, "controller": fleet.controller_id}
    if bid in fleet.sessions:
        return {"ok": False, "error": f"broker {bid} is already running"}
    await fleet.wait_unregistered(bid)  # after a hard kill, as the real engine does
    epoch = await fleet.register(fleet.specs.get(bid) or BrokerSpec(bid, port=9091 + bid))
    return {"ok": True, "id": bid, "new_epoch": epoch, "controller": fleet.controller_id}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="kadmin-sandbox-daemon")
    p.add_argument("--dir", required=True)
    p.add_argument("--hosts", required=True)
    p.add_argument("--chroot", default="")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--cluster-id", default="kadmin-sandbox-cluster")
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--no-kafka", action="store_true", help="do not serve the Kafka protocol per broker")
    args = p.parse_args(argv)
    try:
        asyncio.run(serve(args))
    except Exception as e:  # noqa: BLE001 - the log file is where `sandbox up` looks
        print(f"sandbox daemon failed: {in_words(e)}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
