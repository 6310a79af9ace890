"""Issue 34 §2: on Kafka 3.x KRaft, DescribeCluster (v1) lists no fenced or stopped broker. A stopped broker that
hosts only a topic the principal may not Describe was seen nowhere, and `partitions check` said OK/WARNING while the
truth (the super user's answer) is CRITICAL: that topic is offline. kadmin now takes the metadata quorum's
observers (the brokers that fetched the metadata log lately) as registered brokers too: one DescribeCluster does not
list is a broker whose log dirs cannot be listed, so the check cannot pass: UNKNOWN naming it (docs/kraft.md).

Real Kafka 3.9.1 in KRaft mode with SASL/PLAIN and the StandardAuthorizer (tests/support/secure_kraft.py): `admin`
is the super user; `alice` may Describe and DescribeConfigs the topics prefixed `vis-` and Describe and
DescribeConfigs the Cluster. Topics: `vis-a` (RF 2, on brokers 1 and 2) and `hidden` (RF 1, on broker 3 only).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kafka.test_real_kraft_acl import Acl
from tests.support.kafka import KAFKA_3_9, TOPIC_COMMAND, kafka_home, tool, wait_for
from tests.support.secure_kraft import secure_kraft

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

TOPICS = {"vis-a": "1:2", "hidden": "3"}  # no partition alice sees names broker 3


@pytest.fixture(scope="module")
def acl39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acl]:
    home = kafka_home(KAFKA_3_9)
    with secure_kraft(home, KAFKA_3_9, tmp_path_factory.mktemp("kraft39-acl")) as k:
        for name, assignment in TOPICS.items():
            tool(home, TOPIC_COMMAND, "--bootstrap-server", k.bootstrap(), "--command-config",
                 str(k.client_config("admin")), "--create", "--topic", name, "--replica-assignment", assignment)
        k.acl("--add", "--allow-principal", "User:alice", "--operation", "Describe", "--operation", "DescribeConfigs",
              "--topic", "vis-", "--resource-pattern-type", "prefixed")
        k.acl("--add", "--allow-principal", "User:alice", "--operation", "Describe", "--operation", "DescribeConfigs",
              "--cluster")
        a = Acl(k)

        def alice_sees() -> set[str]:
            got = a.kadmin("alice", "partitions", "list")
            assert got.code in (0, 5), got.text
            return {r["topic"] for r in got.data}

        wait_for(lambda: all(alice_sees() == {"vis-a"} for _ in range(3)), 120, "alice's ACLs in force")
        yield a


def test_a_stopped_broker_hosting_only_hidden_topics_is_never_ok(acl39: Acl) -> None:
    acl39.k.stop(3)
    acl39.down.add(3)

    def fenced_for_the_cluster() -> bool:  # DescribeCluster v1 no longer lists it
        got = acl39.kadmin("admin", "brokers", "list")
        return got.code == 0 and 3 not in {b["id"] for b in got.data}

    wait_for(fenced_for_the_cluster, 180, "broker 3 gone from DescribeCluster")
    truth = acl39.kadmin("admin", "partitions", "check")
    assert truth.code == 2 and "hidden" in truth.stderr + str(truth.data), truth.text  # hidden-0 is offline
    got = acl39.kadmin("alice", "partitions", "check")
    assert got.code == 3, got.text  # UNKNOWN; before: OK (vis-a in sync; nothing alice sees names broker 3)
    assert [u["broker_id"] for u in got.data["unseen"]] == [3], got.text
    assert "metadata quorum lists it" in got.text, got.text
