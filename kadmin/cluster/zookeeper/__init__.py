"""ZooKeeper-mode clusters through kazoo: Kafka's znodes, pipelined reads, watches.

`ZkCluster` is the Cluster (kadmin/cluster/base.py) for ZooKeeper mode, one module a concern:

    session.py     ZkConnection; the kazoo session: start, close, TLS refusals, state reports, errors
    reads.py       one znode, many pipelined, children; cluster id, controller, broker registrations
    partitions.py  the partition scan and min.insync.replicas as Kafka resolves it
    ids.py         broker-id state (/brokers/hosts, /brokers/seqid) and the mapping writes
    watches.py     the one watch loop, and the broker and partition-state watches on it

Each concern is a class on top of ZkReads (itself on ZkSession); ZkCluster is all of them. Clocks and
sleeps are injected (`clock`, `sleep`): nothing here reads the time or sleeps on its own.
"""

from __future__ import annotations

from kadmin.cluster.zookeeper.ids import ZkIds
from kadmin.cluster.zookeeper.partitions import ZkPartitions
from kadmin.cluster.zookeeper.session import ZkConnection
from kadmin.cluster.zookeeper.watches import ZkWatches

__all__ = ["ZkCluster", "ZkConnection"]


class ZkCluster(ZkPartitions, ZkIds, ZkWatches):
    """A Kafka cluster in ZooKeeper mode: ZkCluster(ZkConnection(...), sleep=..., clock=...).start()."""

    mode = "zookeeper"
