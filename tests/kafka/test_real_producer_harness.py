"""The referee of rolling restarts (tests/support/producer.py) proven on three real Apache Kafka 3.9.1 brokers.

One module cluster (ZooKeeper mode, its own chroot of the session's ZooKeeper) and one topic, RF 3 with
min.insync.replicas=2. Kafka's own VerifiableProducer writes to it with acks=all while:

- one broker is restarted gracefully (SIGTERM: controlled shutdown), two producers (3.9.1's and 4.3.1's
  tools) writing side by side: no send error, every acknowledged write is read back (Kafka's
  ConsoleConsumer) with its value, acks go on after the broker is back in every ISR, and `kadmin
  partitions check`, polled all along, never says CRITICAL. The verdict is also shown to fail on a
  read-back with one acknowledged record taken out, or one value changed;
- two brokers are stopped (the ISR falls below min ISR: acks=all cannot succeed): with a 5 s
  delivery.timeout.ms the producer reports send errors, the verdict fails on them, the polled check
  says CRITICAL; the brokers come back and the cluster is left healthy.

Every wait is on an observable fact: the producer's JSON lines, znodes, TopicCommand's answer.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from kadmin.sandbox.zkserver import Ensemble
from tests.support.kafka import (
    KAFKA_4,
    TOPIC_COMMAND,
    RealCluster,
    describe,
    kafka_home,
    tool,
    wait_for,
    zk_mode_cluster,
)
from tests.support.producer import Poller, Producer, assert_no_write_lost, read_back

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
TOPIC = "acks-all"
PARTITIONS = 3
WAIT = 240.0  # generous: two busy cores, other suites running alongside
OK, WARNING, CRITICAL = 0, 1, 2  # `kadmin partitions check` exit codes
# Client properties handed through the harness's config files (a secured cluster's security.* go there)
CLIENT_PROPS = {"security.protocol": "PLAINTEXT", "client.dns.lookup": "use_all_dns_ips"}


@pytest.fixture(scope="module")
def kafka(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with zk_mode_cluster(zk_server, tmp_path_factory.mktemp("kafka39-producer"), IDS, chroot_prefix="kprod",
                         extra={"auto.leader.rebalance.enable": "false"}) as cluster:
        tool(cluster.home, TOPIC_COMMAND, "--bootstrap-server", cluster.bootstrap, "--create", "--topic", TOPIC,
             "--partitions", str(PARTITIONS), "--replication-factor", "3", "--config", "min.insync.replicas=2")
        yield cluster


def healthy(kafka: RealCluster) -> None:
    """Every broker registered and accepting, and (TopicCommand) every partition led with all 3 in its ISR."""
    kafka.ready(timeout=WAIT)

    def full() -> bool:
        parts = describe(kafka, TOPIC)["partitions"]  # none while the broker asked has not yet got the new topic
        return len(parts) == PARTITIONS and all(
            leader in IDS and sorted(isr) == sorted(replicas) == list(IDS) for leader, replicas, isr in parts.values())

    wait_for(full, WAIT, f"every partition of {TOPIC} led with a full ISR", interval=0.5)


def partitions_check(kafka: RealCluster) -> Callable[[], int]:
    """`kadmin partitions check --topic TOPIC` as an operator runs it, in a subprocess: its exit code."""
    def check() -> int:
        return subprocess.run([sys.executable, "-m", "kadmin", "partitions", "check", "--zookeeper", kafka.zk,
                               "--topic", TOPIC, "-o", "json"], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL).returncode
    return check


def non_controllers(kafka: RealCluster) -> list[int]:
    controller = kafka.controller()
    assert controller in IDS
    return [b for b in IDS if b != controller]


def test_graceful_restart_loses_no_acknowledged_write(kafka: RealCluster) -> None:
    """Two producers on the topic, Kafka 3.9.1's and 4.3.1's tools (their flags differ: --producer.config,
    --command-config), told apart by their value prefixes; read back with both versions' tools."""
    healthy(kafka)
    home4 = kafka_home(KAFKA_4)
    broker = kafka.brokers[non_controllers(kafka)[0]]
    with Poller(partitions_check(kafka), interval=1.0) as poller, \
            Producer(kafka.home, kafka.bootstrap, TOPIC) as producer, \
            Producer(home4, kafka.bootstrap, TOPIC, extra_props=CLIENT_PROPS) as producer4:
        producer.wait_started(WAIT)
        producer4.wait_started(WAIT)
        before = producer.wait_acked_more_than(100, WAIT)  # writes flowing before the roll
        roll = time.monotonic()
        old_epoch, new_epoch = broker.restart(kafka.kz, graceful=True, timeout=WAIT)
        healthy(kafka)  # back in every ISR
        back, back4 = producer.acked_count(), producer4.acked_count()
        producer.wait_acked_more_than(back + 100, WAIT)  # and writes still acknowledged after it
        producer4.wait_acked_more_than(back4 + 100, WAIT)
        poller.wait_results(1, WAIT, after=roll)
        producer.stop()
        producer4.stop()

    assert new_epoch > old_epoch
    for prod in (producer, producer4):
        assert prod.shutdown_complete, prod.describe()
        assert prod.errors() == [], prod.describe()
        assert prod.other_output() == [], prod.describe()  # nothing but JSON on stdout (no deprecated flag used)
        assert prod.counters()["producer_send_success"] == prod.acked_count()  # no offset acknowledged twice
        tool_data = prod.tool_data()
        assert tool_data is not None and tool_data["acked"] == prod.acked_count(), tool_data
        assert {part for part, _ in prod.acked()} == set(range(PARTITIONS))
        assert all(v.startswith(f"{prod.value_prefix}.") for v in prod.acked().values())
    assert before <= back < producer.acked_count()
    assert not producer.acked().keys() & producer4.acked().keys()

    read = read_back(kafka.bootstrap, TOPIC, kafka.home)
    assert read_back(kafka.bootstrap, TOPIC, home4, extra_props=CLIENT_PROPS) == read
    assert_no_write_lost(producer, read)
    assert_no_write_lost(producer4, read)

    polls = [r for _, r in poller.results()]
    assert polls and all(r in (OK, WARNING) for r in polls), f"partitions check exit codes during the roll: {polls}"

    # The referee can say no: one acknowledged record missing, one value changed.
    (p, o), value = sorted(producer.acked().items())[producer.acked_count() // 2]
    missing = {k: v for k, v in read.items() if k != (p, o)}
    with pytest.raises(AssertionError, match=rf"1 of \d+ acknowledged write\(s\) missing .*p{p}@{o}="):
        assert_no_write_lost(producer, missing)
    with pytest.raises(AssertionError, match=rf"1 acknowledged offset\(s\) hold another value.*p{p}@{o}"):
        assert_no_write_lost(producer, {**read, (p, o): value + "-changed"})


def test_stall_below_min_isr_is_reported_then_cluster_healed(kafka: RealCluster) -> None:
    """Last test: two of three brokers stopped, acks=all cannot succeed; the producer must say so."""
    healthy(kafka)
    stopped = [kafka.brokers[b] for b in non_controllers(kafka)]
    with Poller(partitions_check(kafka), interval=1.0) as poller, \
            Producer(kafka.home, kafka.bootstrap, TOPIC, delivery_timeout_ms=5000,
                     request_timeout_ms=2000) as producer:
        producer.wait_started(WAIT)
        for b in stopped:
            b.stop(graceful=True, timeout=WAIT)
        down = time.monotonic()
        errors = producer.wait_errors(1, timeout=WAIT)
        took = time.monotonic() - down
        poller.wait_result(lambda r: r == CRITICAL, WAIT, after=down)
        for b in stopped:
            b.start()
        healthy(kafka)
        # once the ISR is back, acks=all succeeds again
        producer.wait_acked_more_than(producer.acked_count(), WAIT)
        producer.stop()

    kinds = {str(e.get("exception")) for e in errors}
    assert any("NotEnoughReplicas" in k or "Timeout" in k for k in kinds), errors[:5]
    assert took < 120, f"the first send error came {took:.0f}s after the ISR fell below min ISR"
    read = read_back(kafka.bootstrap, TOPIC, kafka.home)
    with pytest.raises(AssertionError, match=r"\d+ send error\(s\)"):
        assert_no_write_lost(producer, read)
    assert_no_write_lost(producer, read, allow_send_errors=True)  # what was acknowledged is all there
