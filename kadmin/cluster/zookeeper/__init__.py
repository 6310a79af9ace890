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

from collections.abc import Callable, Iterator

from kadmin.cluster.base import RegistrationTick
from kadmin.cluster.zookeeper.ids import ZkIds
from kadmin.cluster.zookeeper.partitions import ZkPartitions
from kadmin.cluster.zookeeper.session import ZkConnection
from kadmin.cluster.zookeeper.watches import ZkWatches
from kadmin.domain.models import Broker, Registered

__all__ = ["ZkCluster", "ZkConnection"]


class ZkCluster(ZkPartitions, ZkIds, ZkWatches):
    """A Kafka cluster in ZooKeeper mode: ZkCluster(ZkConnection(...), sleep=..., clock=...).start().

    It serves every ZooKeeper-mode capability of kadmin/cluster/base.py but controlled shutdown's controller
    connections and the ensemble's four-letter words: Partitions, Registrations, BrokerEpochs, BrokerIds,
    ClusterIdentity."""

    mode = "zookeeper"
    source = "zookeeper /cluster/id"  # ClusterIdentity
    epochs = True  # Registrations: the broker epoch is the registration znode's czxid (KIP-380)
    fencing = False  # ZooKeeper mode has no fenced state: a broker is registered or not

    def registrations(self) -> RegistrationTick:
        listing = self.list_brokers()
        return RegistrationTick({b.id: registered(b) for b in listing.brokers}, "none", problems=listing.problems)

    def watch_registrations(self, timeout: float | None,
                            on_note: Callable[[str], None] | None = None) -> Iterator[RegistrationTick]:
        """Driven by ZooKeeper watches on /brokers/ids; after a lost connection or an expired session every
        registration is read again (`resynced`)."""
        for tick in self.watch_brokers(timeout):
            yield RegistrationTick({i: Registered(i, epoch=g.epoch, mzxid=g.mzxid)
                                    for i, g in tick.generations.items()}, "none", resynced=tick.resynced)


def registered(b: Broker) -> Registered:
    """A registration znode as the mode-neutral registration."""
    r = b.registration
    return Registered(b.id, host=r.host if r else None, port=r.port if r else None, rack=r.rack if r else None,
                      epoch=b.epoch, mzxid=b.stat.mzxid, broker=b)
