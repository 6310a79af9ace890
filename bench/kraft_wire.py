"""The wire's limit for kadmin's KRaft health reads (issue 38 §2): the reads alone, as a whole process.

What `kadmin partitions check -b` and `kadmin brokers can-stop ID -b` must read, read the way kadmin reads it and
nothing else: kafka-python 3.x's connection manager, one connection per address, its package registered without
its eager `__init__` (kadmin/cluster/kafka_package.py); the topics' names (ListConfigResources), then the
DescribeTopicPartitions pages in as many name ranges as there are bootstrap addresses, each range paged from its
own address, at once, and beside them each --log-dirs address's DescribeLogDirs. No DescribeCluster, min ISR,
reassignments, judging or output; the cyclic garbage collector off. Prints the partitions and log-dir replicas
read.

Usage: python bench/kraft_wire.py BOOTSTRAP [--log-dirs ADDR[,ADDR...]]
(bench/kraft_scale.py runs it beside kadmin and TopicCommand)
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import threading
from typing import Any

gc.disable()
spec = importlib.util.find_spec("kafka")
assert spec is not None and spec.loader is not None
sys.modules["kafka"] = importlib.util.module_from_spec(spec)  # kafka.* submodules without kafka/__init__.py

from kafka.net.manager import KafkaConnectionManager  # noqa: E402
from kafka.net.selector import NetworkSelector  # noqa: E402
from kafka.protocol.admin.cluster import DescribeLogDirsRequest  # noqa: E402
from kafka.protocol.admin.configs import ListConfigResourcesRequest  # noqa: E402
from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest as Pages  # noqa: E402

TIMEOUT_MS = 60000
PAGE = 2000
TOPIC = 2  # ConfigResource.Type.TOPIC

_conns: dict[str, tuple[Any, int, Any]] = {}
_lock = threading.Lock()


def send(address: str, request: Any) -> Any:
    """`request` to `address` on its one connection (made on first use), its answer."""
    with _lock:
        if address not in _conns:
            net = NetworkSelector(client_id="kadmin")
            manager = KafkaConnectionManager(net, bootstrap_servers=address, client_id="kadmin",
                                             request_timeout_ms=TIMEOUT_MS)
            _conns[address] = (manager, manager.cluster.bootstrap_brokers()[0].node_id, net)
            net.start()
        manager, node, _ = _conns[address]

    async def go(req: Any) -> Any:
        conn = manager.get_connection(node, timeout_ms=TIMEOUT_MS, refresh_metadata_on_err=False)
        await conn
        return await conn.send_request(req, request_timeout_ms=TIMEOUT_MS)

    return manager.run(go, request)


def pages(address: str, start: str | None, end: str | None) -> int:
    """Every page of the topics from `start` to before `end`; the partitions in them."""
    got = 0
    cursor = None if start is None else Pages.Cursor(topic_name=start, partition_index=0)
    while True:
        resp = send(address, Pages(topics=[], response_partition_limit=PAGE, cursor=cursor))
        got += sum(len(t.partitions) for t in resp.topics if end is None or t.name < end)
        nxt = resp.next_cursor
        if nxt is None or (end is not None and nxt.topic_name >= end):
            return got
        cursor = Pages.Cursor(topic_name=nxt.topic_name, partition_index=nxt.partition_index)


def log_dirs(address: str) -> int:
    resp = send(address, DescribeLogDirsRequest(topics=None))
    return sum(len(t.partitions) for d in resp.results for t in d.topics)


def main(argv: list[str]) -> int:
    addresses = argv[1].split(",")
    dirs = argv[argv.index("--log-dirs") + 1].split(",") if "--log-dirs" in argv else []
    names = sorted(r.resource_name for r in send(addresses[0], ListConfigResourcesRequest(
        min_version=1, resource_types=[TOPIC])).config_resources)
    runs = min(len(addresses), 4)
    starts = sorted({names[len(names) * i // runs] for i in range(1, runs)}) if len(names) >= runs else []
    ranges = list(zip([None, *starts], [*starts, None], addresses, strict=False))
    counts: dict[str, int] = {}

    def run(key: str, fn: Any, *args: Any) -> None:
        counts[key] = fn(*args)

    threads = [threading.Thread(target=run, args=(f"dirs {a}", log_dirs, a)) for a in dirs]
    threads += [threading.Thread(target=run, args=(f"pages {i}", pages, a, s, e))
                for i, (s, e, a) in enumerate(ranges)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for manager, _, net in _conns.values():  # as kadmin ends (KraftClient.close)
        manager.close()
        net.stop()
        net.close()
    print(sum(v for k, v in counts.items() if k.startswith("pages")),
          sum(v for k, v in counts.items() if k.startswith("dirs")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
