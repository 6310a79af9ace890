"""Fixtures of the pipeline tests: one local[2] Spark session, the logs a real ZooKeeper wrote while
the sandbox's brokers registered, bounced, moved the controller and changed ISRs, and those logs cut
in two at a record boundary (to ingest one part after the other)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.zkserver import Ensemble


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] session for the pipeline tests; kadmin's commands use the active session and leave it running."""
    from kadmin.pipeline.spark import session

    s = session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def zk_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, list[int]], int]:
    """Drive a real ZooKeeper like a Kafka cluster; return its log directory and what a live read saw."""
    base = tmp_path_factory.mktemp("zkhist")
    ens = Ensemble(base, size=1, tick_ms=250)
    ens.start(timeout=60)
    live: dict[int, list[int]] = {}
    fleet = ThreadedFleet(ens.hosts, chroot="/kafka", session_timeout_ms=4000)
    kz = KazooClient(hosts=ens.connect_string + "/kafka")
    kz.start(timeout=10)
    try:
        fleet.setup_cluster()

        def czxid(b: int) -> int:
            return int(kz.get(f"/brokers/ids/{b}")[1].czxid)

        for b in (1, 2, 3):
            fleet.register(BrokerSpec(b))
            live.setdefault(b, []).append(czxid(b))
        fleet.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1]})
        time.sleep(0.05)  # distinct timestamps in the log, not a wait
        fleet.bounce(2, down_seconds=0.3)
        live[2].append(czxid(2))
        for _ in range(2):
            fleet.bounce(3, down_seconds=0.1)
            live[3].append(czxid(3))
        # an ISR shrink and expand of broker 3 on orders-0
        state = "/brokers/topics/orders/partitions/0/state"
        doc = json.loads(kz.get(state)[0])
        kz.set(state, json.dumps({**doc, "isr": [1, 2]}, separators=(",", ":")).encode())
        time.sleep(0.05)
        kz.set(state, json.dumps({**doc, "isr": [1, 2, 3]}, separators=(",", ":")).encode())
        fleet.stop(1)  # the controller: broker 2 takes over
        controller = json.loads(kz.get("/controller")[0])["brokerid"]
    finally:
        kz.stop()
        kz.close()
        fleet.shutdown()
        ens.stop()
    logs = base / "zk1" / "data" / "version-2"
    assert list(logs.glob("log.*"))
    return logs, live, controller


@dataclass(frozen=True)
class SplitLogs:
    a: Path  # a directory with the first part of the log
    b: Path  # a directory with the rest (a log file of its own, named by its first zxid)
    both: Path  # a directory with both files: the one-shot ingest
    cut_zxid: int


@pytest.fixture(scope="session")
def split_logs(zk_history: tuple[Path, Any, Any], tmp_path_factory: pytest.TempPathFactory) -> SplitLogs:
    """The ZooKeeper log cut in two just before the ISR shrink of orders-0, as ZooKeeper itself rolls
    logs: each part a valid log (the file header, then whole records). The shrink is then the first
    state of orders-0 in part B, while its previous state is in part A."""
    from kadmin.formats import zk_txnlog

    logs, _, _ = zk_history
    (log,) = sorted(logs.glob("log.*"))
    data = log.read_bytes()
    txns = list(zk_txnlog.iter_txns(data))
    shrink = next(t for t in txns if t.type == "setData" and t.path == "/kafka/brokers/topics/orders/partitions/0/state"
                  and json.loads(t.data or b"{}").get("isr") == [1, 2])
    base = tmp_path_factory.mktemp("split")
    a, b, both = base / "a", base / "b", base / "both"
    for d in (a, b, both):
        d.mkdir()
    header = data[: zk_txnlog.FILE_HEADER_SIZE]
    first = data[: shrink.offset]
    rest = header + data[shrink.offset:]
    for d in (a, both):
        (d / log.name).write_bytes(first)
    for d in (b, both):
        (d / f"log.{shrink.zxid:x}").write_bytes(rest)
    return SplitLogs(a, b, both, shrink.zxid)
