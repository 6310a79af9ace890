"""The Kafka-protocol backend's pure parts: where min.insync.replicas comes from (DescribeConfigs' sources),
and the one place the backend is chosen from the connection settings."""

from __future__ import annotations

import pytest

from kadmin.cluster.connect import open_backend, open_cluster
from kadmin.cluster.kraft_cluster import KraftCluster, min_isr_levels, source_name
from kadmin.config import ConnectionSettings, Sourced
from kadmin.domain import partitions as rules
from kadmin.domain.models import MinIsrConfig
from kadmin.errors import ConfigError
from kadmin.exit_codes import ExitCode


def settings(**kv: str) -> ConnectionSettings:
    return ConnectionSettings({k.replace("_", "-"): Sourced(v, "flag") for k, v in kv.items()})


def test_describe_configs_sources_map_to_kadmins_min_isr_sources() -> None:
    # ConfigSource: 1 TOPIC_CONFIG, 2 DYNAMIC_BROKER_CONFIG, 3 DYNAMIC_DEFAULT_BROKER_CONFIG, 4 STATIC_BROKER_CONFIG,
    # 5 DEFAULT_CONFIG; 0 UNKNOWN and 6 DYNAMIC_BROKER_LOGGER_CONFIG are no min ISR source
    assert [source_name(s, 7) for s in range(7)] == [None, "topic", "broker:7", "cluster-default", "static", "static",
                                                     None]


def test_synonyms_keep_the_first_value_of_each_level_and_unparsable_ones_as_unknown() -> None:
    got = min_isr_levels([(1, "3"), (2, "x"), (3, "2"), (4, None), (5, "1"), (3, "9")])
    assert got == {1: 3, 2: None, 3: 2, 4: None, 5: 1}


def test_levels_resolve_as_the_leader_does() -> None:
    cfg = MinIsrConfig(topic=None, brokers=((2, 3),), cluster_default=2, static=1)
    assert rules.min_isr_for(cfg, 2) == (3, "broker:2")
    assert rules.min_isr_for(cfg, 1) == (2, "cluster-default")


def test_bootstrap_server_selects_the_kafka_protocol_backend_without_connecting() -> None:
    backend = open_backend(settings(bootstrap_server="127.0.0.1:1"), "ids missing")
    try:
        assert backend.mode == "kraft" and isinstance(backend.partitions, KraftCluster)
        with pytest.raises(ConfigError) as e:  # a capability KRaft lacks: exit 3, one line naming the command
            backend.broker_ids  # noqa: B018
        assert e.value.exit_code == ExitCode.CONFIG and "\n" not in e.value.message
        assert e.value.message.startswith("ids missing needs ZooKeeper mode (--zookeeper)")
        assert "set node.id" in e.value.message
        # no catch-all: a name the backend does not have is a programming error, not "needs ZooKeeper mode"
        with pytest.raises(AttributeError):
            backend.partitions.id_state  # type: ignore[attr-defined]  # noqa: B018
    finally:
        backend.close()


def test_bootstrap_controller_cannot_serve_partition_state() -> None:
    with pytest.raises(ConfigError) as e:
        open_cluster(settings(bootstrap_controller="127.0.0.1:1"))
    assert e.value.exit_code == ExitCode.CONFIG and "--bootstrap-server" in e.value.message


def test_the_cycle_collector_pause_nests_and_resumes_as_it_was() -> None:
    import gc

    from kadmin.cluster.kraft_cluster import cycle_collector_paused

    assert gc.isenabled()
    with cycle_collector_paused():
        assert not gc.isenabled()
        with cycle_collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner one leaves it to the outermost
    assert gc.isenabled()
    gc.disable()
    try:
        with cycle_collector_paused():
            pass
        assert not gc.isenabled()  # paused before: stays paused
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), cycle_collector_paused():
        raise RuntimeError("a failed read resumes it too")
    assert gc.isenabled()


def test_the_cycle_collector_pause_on_two_threads_resumes_when_both_are_done() -> None:
    import gc
    import threading

    from kadmin.cluster.kraft_cluster import cycle_collector_paused

    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with cycle_collector_paused():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    with cycle_collector_paused():
        t.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread still reads
    leave.set()
    t.join(10)
    assert gc.isenabled()


def test_what_the_pause_kept_is_not_walked_when_the_collector_resumes_and_no_cycle_escapes_it() -> None:
    """Objects made during a pause and kept (a can-stop's rows) go to the oldest generation as it ends, without a
    pass: the first pass after a pause walked them all before, and moved them one generation up only. A cycle
    among them is still freed by a full pass, and nothing stays frozen. (Generation membership, not a count of
    passes: another thread of the test process may allocate and start a young pass, which cannot move them.)"""
    import gc
    import weakref

    from kadmin.cluster.kraft_cluster import cycle_collector_paused

    class Node:
        pass

    gc.collect()
    with cycle_collector_paused():
        kept = [Node() for _ in range(5 * gc.get_threshold()[0])]  # enough for the collector to pass at once
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        freed = weakref.ref(a)
        del a, b  # garbage, but only the collector can tell
    oldest = gc.get_objects(generation=2)
    assert any(o is kept[0] for o in oldest) and any(o is kept[-1] for o in oldest)
    del oldest
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert freed() is not None
    gc.collect()
    assert freed() is None  # the cycle was not exempted from collection


def test_a_kraft_stream_keeps_the_collector_paused_from_its_making_until_consumed_or_dropped() -> None:
    import gc

    from kadmin.cluster.kraft_cluster import paused

    assert gc.isenabled()
    it = paused([1, 2])
    assert not gc.isenabled() and next(it) == 1 and not gc.isenabled()  # paused before the first row is read
    assert list(it) == [2] and gc.isenabled()
    it = paused([1, 2])
    next(it)
    del it  # dropped half way: closed, the collector resumes
    assert gc.isenabled()
    it = paused([1, 2])
    del it  # dropped unread: the same
    assert gc.isenabled()
