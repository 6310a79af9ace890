"""KIP-966 eligible leader replicas on a real KRaft cluster (1 controller + 3 brokers): 4.3.1 and 3.9.1.

A new 4.3.1 cluster has ELR on (feature eligible.leader.replicas.version finalized at 1, as Kafka's own
FeatureCommand says); a 3.9.1 cluster has it off (no such feature finalized), and there every list is empty in
every state, for kadmin as for TopicCommand. `partitions list -o json` carries DescribeTopicPartitions' eligible
leader replicas and last known ELR as `elr` / `last_known_elr`, and they equal the `Elr:` / `LastKnownElr:`
columns of Kafka's TopicCommand --describe: healthy (empty), with one broker stopped (ISR at min ISR 2, still no
ELR) and with a second one stopped (the ISR fell below min ISR: the replica removed last is eligible).

Nothing waits on time: each state is waited for on TopicCommand's own answer, and a comparison is
repeated (until a deadline) only while kadmin and TopicCommand differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.kafka import (
    KAFKA_3_9,
    KAFKA_4,
    broker_view,
    kafka_home,
    settle,
    tool,
    topic_lines,
    wait_seen,
)
from tests.support.sandbox import KraftBrokers, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
TOPIC = "elr-rf3-min2"
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
Key = tuple[str, int]
Elr = tuple[list[int] | None, list[int] | None]


class Kraft(KraftBrokers):
    version = KAFKA_4

    def topic_command(self) -> dict[Key, dict[str, str]]:
        """TopicCommand's partition lines of TOPIC; none while the broker asked has not yet got the topic's
        metadata (just created: "does not exist as expected"), which every caller waits through."""
        return topic_lines(self.home, self.live_bootstrap(), [TOPIC])

    def kadmin_rows(self) -> dict[Key, dict[str, Any]]:
        r = self.sb.run("partitions", "list", "--topic", TOPIC, "--bootstrap-server", self.live_bootstrap(),
                        "-o", "json")
        assert r.returncode == 0, r.stderr
        return {(x["topic"], x["partition"]): x for x in json.loads(r.stdout)["data"]}

    def stop(self, bid: int) -> None:
        r = self.sb.run("sandbox", "kill", str(bid))
        assert r.returncode == 0, r.stderr
        self.down.add(bid)

        def acted(got: dict[Key, dict[str, str]]) -> bool:  # the controller fenced it: it leads nothing, in no ISR
            return len(got) == len(ASSIGNMENT) and all(
                f["Leader"] != str(bid) and str(bid) not in f["Isr"].split(",") for f in got.values())
        wait_seen(acted, self.topic_command, self.cheap, 300, f"broker {bid} out of every ISR of {TOPIC}")

    def cheap(self) -> dict[Key, dict[str, str]] | None:
        return broker_view(self.live_bootstrap(), [TOPIC])


def tool_list(value: str) -> list[int] | None:
    """TopicCommand's Elr / LastKnownElr column: "N/A" when the broker sent none, else ids (maybe none)."""
    return None if value == "N/A" else [int(x) for x in value.split(",") if x]


def topic_command_elr(k: Kraft) -> dict[Key, Elr]:
    return {key: (tool_list(f["Elr"]), tool_list(f["LastKnownElr"])) for key, f in k.topic_command().items()}


def kadmin_elr(k: Kraft) -> dict[Key, Elr]:
    return {key: (r["elr"], r["last_known_elr"]) for key, r in k.kadmin_rows().items()}


def agree(k: Kraft, timeout: float = 300.0) -> dict[Key, Elr]:
    def attempt() -> tuple[dict[Key, Elr] | None, str]:
        mine, theirs = kadmin_elr(k), topic_command_elr(k)
        ok = mine == theirs and len(theirs) == len(ASSIGNMENT)
        return (theirs if ok else None), f"kadmin {mine} != TopicCommand {theirs}"

    return settle(attempt, timeout, interval=1.0)


@pytest.fixture(scope="module", params=[KAFKA_4, KAFKA_3_9])
def kraft(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kraft]:
    version = str(request.param)
    home = kafka_home(version)
    with sandbox(tmp_path_factory.mktemp(f"kraft-elr-{version}") / "sb", "--kafka-home", str(home), "--mode",
                 "kraft", "--brokers", "3", "--controllers", "1") as sb:
        assert sb.status()["kafka_version"] == version
        k = Kraft(sb, home)
        k.version = version
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=k.bootstrap, request_timeout_ms=60000)
        try:
            admin.create_topics([NewTopic(TOPIC, replica_assignments=ASSIGNMENT,
                                          topic_configs={"min.insync.replicas": "2"})], timeout_ms=60000)
        finally:
            admin.close()
        wait_seen(lambda got: len(got) == len(ASSIGNMENT) and all(len(f["Isr"].split(",")) == 3 for f in got.values()),
                  k.topic_command, k.cheap, 300, f"{TOPIC} in sync")
        yield k


def test_elr_is_on_by_default_on_4_3_and_off_on_3_9(kraft: Kraft) -> None:
    out = tool(kraft.home, FEATURE_COMMAND, "--bootstrap-server", kraft.bootstrap, "describe").stdout
    m = re.search(r"Feature: eligible\.leader\.replicas\.version\s.*FinalizedVersionLevel: (\d+)", out)
    if kraft.version == KAFKA_3_9:
        assert m is None or int(m.group(1)) == 0, out
    else:
        assert m, out
        assert int(m.group(1)) >= 1, out


def test_kadmins_elr_equals_topic_commands_as_brokers_stop(kraft: Kraft) -> None:
    healthy = agree(kraft)
    assert all(v == ([], []) for v in healthy.values()), healthy
    rows = kraft.kadmin_rows()  # min ISR from DescribeConfigs (kadmin/cluster/min_isr.py, shared with ZooKeeper mode)
    assert {(r["min_isr"], r["min_isr_source"]) for r in rows.values()} == {(2, "topic")}, rows

    kraft.stop(3)
    one_down = agree(kraft)
    assert all(elr == [] for elr, _ in one_down.values()), one_down  # ISR 2 = min ISR 2: nobody is eligible

    kraft.stop(2)
    two_down = agree(kraft)
    if kraft.version == KAFKA_3_9:  # ELR off: nobody is eligible, nothing is remembered
        assert all(v in (([], []), (None, None)) for v in two_down.values()), two_down
    else:  # ISR {1} fell below min ISR 2: broker 2, removed from the ISR when it did, is an eligible leader
        assert any(elr for elr, _ in two_down.values()), two_down
    assert all(set(elr or []) <= {2, 3} for elr, _ in two_down.values()), two_down

    rows = kraft.kadmin_rows()
    assert all(r["isr"] == [1] for r in rows.values()), rows
