"""`partitions check` and the paged scan on a real Kafka 4.3.1 KRaft cluster larger than one page of Kafka's own
DescribeTopicPartitions limit (2,000 partitions a response), without shrinking kadmin's page: the broker's cursor
(NextCursor) must be followed to see every partition (issue 13 §5; the timings are bench/kraft_scale.py's).

Every partition, its topic id, leader, replicas and ISR are compared with Kafka's TopicCommand --describe; the
comparison is repeated (until a deadline) only while the cluster's state moved during it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.kafka import KAFKA_4, TOPIC_COMMAND, kafka_home, settle, tool, wait_for
from tests.support.sandbox import KraftBrokers, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

# 2,403 partitions: more than Kafka's 2,000 a DescribeTopicPartitions response, so at least two pages.
TOPICS = {"scale-a": (1200, 1), "scale-b": (1200, 1), "scale-c": (3, 2)}  # name: (partitions, replication)
Key = tuple[str, int]


def topic_command(k: KraftBrokers) -> tuple[dict[Key, tuple[int, list[int], list[int]]], dict[str, str]]:
    """TopicCommand --describe over all topics: {(topic, partition): (leader, replicas, isr)}, {topic: TopicId}."""
    out = tool(k.home, TOPIC_COMMAND, "--bootstrap-server", k.bootstrap, "--describe", timeout=600).stdout
    parts: dict[Key, tuple[int, list[int], list[int]]] = {}
    ids: dict[str, str] = {}
    for line in out.splitlines():
        fields = dict(f.split(": ", 1) for f in line.strip().split("\t") if ": " in f)
        if "Partition" in fields:
            leader = -1 if fields["Leader"] == "none" else int(fields["Leader"])
            parts[(fields["Topic"], int(fields["Partition"]))] = (
                leader, [int(x) for x in fields["Replicas"].split(",") if x],
                [int(x) for x in fields["Isr"].split(",") if x])
        elif "TopicId" in fields:
            ids[fields["Topic"]] = fields["TopicId"]
    return parts, ids


@pytest.fixture(scope="module")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftBrokers]:
    home = kafka_home(KAFKA_4)
    with sandbox(tmp_path_factory.mktemp("kraft-scale") / "sb", "--kafka-home", str(home), "--mode", "kraft",
                 "--brokers", "3", "--controllers", "1") as sb:
        k = KraftBrokers(sb, home)
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=k.bootstrap, request_timeout_ms=300000)
        try:
            admin.create_topics([NewTopic(name, n, rf, topic_configs={"min.insync.replicas": str(rf)})
                                 for name, (n, rf) in TOPICS.items()], timeout_ms=300000)
        finally:
            admin.close()

        def created() -> bool:
            parts, _ = topic_command(k)
            mine = [v for key, v in parts.items() if key[0] in TOPICS]
            return len(mine) == sum(n for n, _ in TOPICS.values()) and all(v[0] >= 0 for v in mine)
        wait_for(created, 600, "every partition created with a leader", interval=1.0)
        yield k


def test_scan_follows_kafkas_cursor_past_one_page(kraft: KraftBrokers) -> None:
    """scan_partitions at kadmin's page size (Kafka's limit) needs more than one response and yields every
    partition once, with TopicCommand's topic id, leader, replicas and ISR."""
    from kadmin.cluster.connect import open_cluster
    from kadmin.cluster.kraft_cluster import KraftCluster
    from kadmin.config import ConnectionSettings, Sourced

    def attempt() -> tuple[int | None, str]:
        before = topic_command(kraft)
        pages: list[int] = []
        c = open_cluster(ConnectionSettings({"bootstrap-server": Sourced(kraft.bootstrap, "flag")}))
        try:
            assert isinstance(c, KraftCluster)
            s = c.scan_partitions(progress=lambda phase, total, n: pages.append(n))
        finally:
            c.close()
        after = topic_command(kraft)
        if after != before:
            return None, "the cluster's state moved during the comparison"
        parts, ids = after
        assert s.problems == []
        assert len(pages) >= 2 and sum(pages) == len(s.partitions), pages
        keys = [(p.topic, p.partition) for p in s.partitions]
        assert len(set(keys)) == len(keys)
        assert set(keys) == set(parts)
        mine = {(p.topic, p.partition): (p.leader, list(p.replicas), list(p.isr)) for p in s.partitions}
        assert mine == parts
        assert {p.topic: p.topic_id for p in s.partitions} == ids
        assert {p.min_isr for p in s.partitions if p.topic == "scale-c"} == {2}
        return len(keys), ""

    assert settle(attempt, 300) >= sum(n for n, _ in TOPICS.values())


def test_partitions_check_over_bootstrap_server_counts_every_partition(kraft: KraftBrokers) -> None:
    """`kadmin partitions check --bootstrap-server` on KRaft judges every partition TopicCommand lists (the
    service probes the cluster for a streaming reader; KRaft has none and scans instead)."""
    def attempt() -> tuple[dict[str, Any] | None, str]:
        before = topic_command(kraft)
        r = kraft.sb.run("partitions", "check", "--bootstrap-server", kraft.bootstrap, "-o", "json")
        after = topic_command(kraft)
        if after != before:
            return None, "the cluster's state moved during the comparison"
        assert r.returncode in (0, 1, 2), r.stderr
        doc = json.loads(r.stdout)
        parts = after[0]
        assert doc["data"]["partitions"] == len(parts)
        under = {key for key, (_, replicas, isr) in parts.items() if len(isr) < len(replicas)}
        assert {(f["topic"], f["partition"]) for f in doc["data"]["findings"]} == under
        assert (r.returncode == 0) == (not under)
        return dict(doc), ""

    settle(attempt, 300)
