"""DescribeTopicPartitions read in ranges at once (one run of pages per bootstrap broker) against the kio test server
(tests/support/kraft_server.py): the same partitions and problems as one run of pages from one broker, and, when a
broker fails mid-way, the same answer (its pages go to the others) or no answer at all, never a partial one.

The real 4.3.1 cluster at 20,000 partitions: bench/kraft_scale.py and tests/kafka/test_real_kraft_scale.py.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kadmin.cluster.kraft import KraftClient
from kadmin.cluster.kraft_cluster import KraftCluster
from kadmin.domain.lease import LEASE_TOPIC
from kadmin.errors import ClusterUnreachable
from tests.support.kraft_server import (
    BROKER_APIS,
    CLUSTER_AUTHORIZATION_FAILED,
    DESCRIBE_CONFIGS,
    DESCRIBE_TOPIC_PARTITIONS,
    LIST_CONFIG_RESOURCES,
    LIST_PARTITION_REASSIGNMENTS,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    KraftServer,
    Partition,
    Scenario,
    Topic,
)

pytestmark = pytest.mark.integration
WITH_PAGES = {**BROKER_APIS, DESCRIBE_TOPIC_PARTITIONS: (0, 0), LIST_CONFIG_RESOURCES: (1, 1),
              LIST_PARTITION_REASSIGNMENTS: (0, 0)}


def scenario(page: int = 7) -> Scenario:
    """3 brokers, 40 topics of 1 to 12 partitions (some under-replicated, one without a leader) and the lease topic
    a drain makes; pages of at most `page` partitions, so each range is several pages and pages end mid-topic."""
    sc = Scenario.cluster(brokers=3)
    sc.broker_apis = dict(WITH_PAGES)
    sc.page_partitions = page
    sc.topics = [Topic(f"topic-{i:02d}", [
        Partition(leader=-1 if (i, p) == (5, 0) else 1 + (i + p) % 3, replicas=[1 + (i + p) % 3, 1 + (i + p + 1) % 3],
                  isr=[1 + (i + p) % 3] if p % 4 == 3 else [1 + (i + p) % 3, 1 + (i + p + 1) % 3],
                  error_code=5 if (i, p) == (5, 0) else 0)
        for p in range(1 + i % 12)], uuid.UUID(int=i + 1), {"min.insync.replicas": "2"} if i % 3 == 0 else {})
        for i in range(40)]
    sc.topics.insert(0, Topic(LEASE_TOPIC, [Partition(1, [1], [1])], uuid.UUID(int=99)))
    return sc


def read(bootstrap: str, topics: list[str] | None = None) -> tuple[list[tuple[Any, ...]], list[str]]:
    """describe_partitions through a client of `bootstrap`: the partitions as plain tuples, the problems' messages."""
    cluster = KraftCluster(KraftClient(bootstrap, {}, 5.0, controllers=False))
    try:
        rows, problems = cluster.describe_partitions(topics)
    finally:
        cluster.close()
    return ([(t.name, int(p.partition_index), int(p.leader_id), tuple(p.replica_nodes), tuple(p.isr_nodes),
              int(p.error_code)) for t, p in rows], [e.message for e in problems])


def pages_at(srv: KraftServer) -> dict[int, int]:
    """DescribeTopicPartitions requests per broker."""
    got: dict[int, int] = {}
    for r in srv.requests_for(DESCRIBE_TOPIC_PARTITIONS):
        got[r.endpoint.node_id] = got.get(r.endpoint.node_id, 0) + 1
    return got


def expected(sc: Scenario) -> list[tuple[Any, ...]]:
    return [(t.name, i, p.leader, tuple(p.replicas), tuple(p.isr), p.error_code)
            for t in sorted(sc.topics, key=lambda t: t.name) if t.name != LEASE_TOPIC
            for i, p in enumerate(t.partitions)]


def test_ranges_from_several_brokers_read_what_one_run_of_pages_reads():
    sc = scenario()
    with KraftServer(sc) as srv:
        one = read(srv.address(1))
        assert pages_at(srv) == {1: len(srv.requests_for(DESCRIBE_TOPIC_PARTITIONS))}
        assert not srv.requests_for(LIST_CONFIG_RESOURCES)  # one bootstrap broker: nothing to split
        srv.clear_requests()
        many = read(srv.bootstrap())
        assert many == one and one[0] == expected(sc)
        assert srv.requests_for(LIST_CONFIG_RESOURCES) and set(pages_at(srv)) == {1, 2, 3}
        srv.clear_requests()
        named = read(srv.bootstrap(), ["topic-03", "topic-11", "missing"])  # named topics: one run, as before
        assert named[0] == [r for r in one[0] if r[0] in ("topic-03", "topic-11")]
        assert named[1] == ["topic missing does not exist"]
        assert not srv.requests_for(LIST_CONFIG_RESOURCES)


@pytest.mark.parametrize("change", [
    lambda sc: setattr(sc, "list_config_resources_error", CLUSTER_AUTHORIZATION_FAILED),  # no DescribeConfigs
    lambda sc: sc.broker_apis.pop(LIST_CONFIG_RESOURCES),  # Kafka 3.8-4.0: DescribeTopicPartitions, no listing
], ids=["listing-refused", "no-listing"])
def test_without_the_topic_names_one_run_of_pages_reads_them(change):
    sc = scenario()
    change(sc)
    with KraftServer(sc) as srv:
        assert read(srv.bootstrap())[0] == expected(sc)
        assert len(pages_at(srv)) == 1


def test_a_broker_that_fails_mid_way_leaves_its_pages_to_the_others():
    sc = scenario()
    sc.closes_after[(2, DESCRIBE_TOPIC_PARTITIONS)] = 1  # broker 2 answers its first page, then closes on each
    with KraftServer(sc) as srv:
        assert read(srv.bootstrap())[0] == expected(sc)
        assert pages_at(srv)[2] >= 2  # it was asked again, and failed: the page went elsewhere


def test_when_no_broker_can_answer_a_page_the_read_fails_whole():
    """A gate never errs toward safe: a page no broker answers is no partial list of partitions but an error."""
    sc = scenario()
    for b in (1, 2, 3):
        sc.closes_after[(b, DESCRIBE_TOPIC_PARTITIONS)] = 2
    with KraftServer(sc) as srv, pytest.raises(ClusterUnreachable):
        read(srv.bootstrap())


def scan(bootstrap: str) -> Any:
    """scan_partitions through a client of `bootstrap`: every partition as kadmin's rows, and the problems."""
    cluster = KraftCluster(KraftClient(bootstrap, {}, 5.0, controllers=False))
    try:
        return cluster.scan_partitions()
    finally:
        cluster.close()


def configs_asked(srv: KraftServer, kind: int) -> dict[int, list[str]]:
    """The resources of `kind` each broker was asked to DescribeConfigs of."""
    got: dict[int, list[str]] = {}
    for r in srv.requests_for(DESCRIBE_CONFIGS):
        got.setdefault(r.endpoint.node_id, []).extend(x.resource_name for x in r.body.resources
                                                       if x.resource_type == kind)
    return {b: names for b, names in got.items() if names}


def test_a_scan_in_ranges_gives_the_rows_of_one_run_and_asks_each_topics_min_isr_once():
    """The scan reads each range's topics' min.insync.replicas as soon as its pages are read, from that range's
    broker, and every live broker's own levels beside the pages: the same rows and problems as a scan through one
    bootstrap broker, each topic and broker asked once."""
    sc = scenario()
    sc.configs = {b: {"min.insync.replicas": str(b % 2 + 1)} for b in (1, 2, 3)}  # static 2, 1, 2: the largest is 2
    with KraftServer(sc) as srv:
        one = scan(srv.address(1))
        srv.clear_requests()
        many = scan(srv.bootstrap())
        topics = configs_asked(srv, RESOURCE_TOPIC)
        brokers = configs_asked(srv, RESOURCE_BROKER)
    assert many.partitions == one.partitions and many.problems == one.problems == []
    assert many.live == one.live == {1, 2, 3}
    own = {t.name: int(t.configs["min.insync.replicas"]) for t in sc.topics if t.configs}
    assert len(many.partitions) == len(expected(sc)) and {
        (p.topic, p.min_isr, p.min_isr_source) for p in many.partitions} == {
        (t, own.get(t, 2), "topic" if t in own else "static") for t, *_ in expected(sc)}
    named = sorted({t for t, *_ in expected(sc)})
    assert set(topics) == {1, 2, 3} and sorted(n for ns in topics.values() for n in ns) == named  # each once
    assert all(ns == sorted(ns) and len(ns) > 1 for ns in topics.values())  # a range's topics, in one request
    assert brokers == {1: ["1"], 2: ["2"], 3: ["3"]}


def test_the_collector_stays_paused_from_the_scan_to_the_end_of_its_stream():
    """iter_partitions (what `partitions check` judges): no collector pass walks the 20,000 rows a scan just made
    between the scan and its stream; it resumes once the stream is read (or dropped). scan_partitions (can-stop's):
    none walks the rows it returns either, when it resumes."""
    import gc

    with KraftServer(scenario()) as srv:
        cluster = KraftCluster(KraftClient(srv.bootstrap(), {}, 5.0, controllers=False))
        try:
            assert gc.isenabled()
            passes: list[object] = []
            gc.callbacks.append(lambda phase, info: passes.append(info) if phase == "start" else None)
            try:
                stream = cluster.iter_partitions()
            finally:
                gc.callbacks.pop()
            assert not passes and not gc.isenabled()  # none walked the rows (a test process's threshold is 700)
            assert len(list(stream.partitions)) == len(expected(scenario())) and gc.isenabled()
            dropped = cluster.iter_partitions()
            assert not gc.isenabled()
            del dropped
            assert gc.isenabled()
            # scan_partitions (what can-stop judges) returns its rows kept: the collector resumes with them in its
            # oldest generation, where no pass put them (the first pass after the pause walked them all, and moved
            # them one generation up only)
            scan = cluster.scan_partitions()
            oldest = gc.get_objects(generation=2)
            assert any(o is scan.partitions[0] for o in oldest) and any(o is scan.partitions[-1] for o in oldest)
            del oldest
            assert len(scan.partitions) == len(expected(scenario())) and gc.isenabled()
        finally:
            cluster.close()
