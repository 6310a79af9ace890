"""The pure parts of min ISR from DescribeConfigs in ZooKeeper mode, and of ELR in `partitions list`."""

from __future__ import annotations

from kadmin.cluster.base import PartitionScan
from kadmin.cluster.kraft_cluster import replica_list
from kadmin.cluster.min_isr import FALLBACK
from kadmin.domain.models import PartitionState
from kadmin.results import Problem
from kadmin.services.partitions import partition_row, split_warnings


def test_a_describe_configs_fallback_is_a_warning_other_problems_stay_errors() -> None:
    s = PartitionScan(partitions=[], live=frozenset({1}), problems=[
        Problem(FALLBACK, "--bootstrap-server: no live broker answered DescribeConfigs"),
        Problem("invalid_znode", "/config/topics/t: bad JSON", topic="t"),
    ])
    rest, said = split_warnings(s)
    assert said == ["--bootstrap-server: no live broker answered DescribeConfigs"]
    assert [p.code for p in rest.problems] == ["invalid_znode"]
    same, none = split_warnings(rest)
    assert same is rest and none == []


def test_elr_keys_are_lists_or_null_where_the_backend_has_none() -> None:
    zk = partition_row(PartitionState(topic="t", partition=0, replicas=(1, 2, 3))).to_json()
    assert zk["elr"] is None and zk["last_known_elr"] is None
    kraft = partition_row(PartitionState(topic="t", partition=0, replicas=(1, 2, 3), elr=(2,),
                                         last_known_elr=())).to_json()
    assert kraft["elr"] == [2] and kraft["last_known_elr"] == []


def test_a_nullable_replica_array_stays_null() -> None:
    assert replica_list(None) is None
    assert replica_list([]) == ()
    assert replica_list([3, 1]) == (3, 1)
