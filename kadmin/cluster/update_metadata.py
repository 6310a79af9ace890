"""The encoded size of a ZooKeeper-mode controller's full UpdateMetadata request (API key 6), from the request's
schema (kadmin/cluster/messages/UpdateMetadataRequest.json, encoded by kafka-python at version 7): what `roll plan`
says the controller's failover at the end of a roll costs (kadmin/domain/roll_estimate.py `failover_cost`).

An entry's size depends on the number of ids it holds and on its strings' lengths, not on their values: one
entry of each shape is encoded (a few dozen, whatever the cluster's size), never the whole request.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from kadmin.domain.models import PartitionState, Registered
from kadmin.domain.roll_estimate import UpdateMetadataSizes

VERSION = 7  # the last version before KIP-866's (its partition and broker entries are those of version 7)
PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def _request(topics: list[Any] | None = None, brokers: list[Any] | None = None) -> int:
    from kadmin.cluster.messages import UpdateMetadataRequest

    r = UpdateMetadataRequest(controller_id=0, controller_epoch=0, broker_epoch=0, topic_states=topics or [],
                              live_brokers=brokers or [])
    return len(r.encode(version=VERSION))


def _partition(replicas: int, isr: int) -> Any:
    from kadmin.cluster.messages import UpdateMetadataRequest

    return UpdateMetadataRequest.UpdateMetadataPartitionState(
        partition_index=0, controller_epoch=0, leader=0, leader_epoch=0, isr=[0] * isr, zk_version=0,
        replicas=[0] * replicas, offline_replicas=[])


def _topic(name_bytes: int, partitions: list[Any]) -> Any:
    import uuid

    from kadmin.cluster.messages import UpdateMetadataRequest

    return UpdateMetadataRequest.UpdateMetadataTopicState(topic_name="x" * name_bytes, topic_id=uuid.UUID(int=1),
                                                          partition_states=partitions)


def _endpoints(r: Registered) -> list[tuple[str, str, int, int]]:
    """(listener, host, port, security protocol) of each endpoint of a ZooKeeper registration."""
    reg = r.broker.registration if r.broker is not None else None
    if reg is None or not reg.endpoints:
        return [("PLAINTEXT", r.host or "", r.port or 0, 0)]
    out = []
    for e in reg.endpoints:
        listener, _, hp = e.partition("://")
        host = hp.rpartition(":")[0].strip("[]")
        proto = reg.listener_security_protocol_map.get(listener, listener)
        out.append((listener, host, 0, PROTOCOLS.get(proto, 0)))
    return out


def _broker(r: Registered) -> Any:
    from kadmin.cluster.messages import UpdateMetadataRequest

    e_cls = UpdateMetadataRequest.UpdateMetadataBroker.UpdateMetadataEndpoint
    eps = [e_cls(port=port, host=host, listener=listener, security_protocol=proto)
           for listener, host, port, proto in _endpoints(r)]
    return UpdateMetadataRequest.UpdateMetadataBroker(id=r.id, endpoints=eps, rack=r.rack)


def sizes(partitions: Sequence[PartitionState], brokers: Sequence[Registered]) -> UpdateMetadataSizes:
    """The fixed part's size, the mean size of a partition's entry (its topic's entry shared among the topic's
    partitions: names and ids are sent once per topic) and the mean size of a live broker's entry."""
    fixed = _request()
    shapes = Counter((len(p.replicas), len(p.isr)) for p in partitions)
    names = Counter(len(t.encode()) for t in {p.topic for p in partitions})
    empty_topic = _request([_topic(1, [])])
    part = {s: _request([_topic(1, [_partition(*s)])]) - empty_topic for s in shapes}
    topic = {n: _request([_topic(n, [])]) - fixed for n in names}
    total = sum(c * part[s] for s, c in shapes.items()) + sum(c * topic[n] for n, c in names.items())
    per_partition = total / len(partitions) if partitions else 0.0
    per_broker = sum(_request(brokers=[_broker(r)]) - fixed for r in brokers) / len(brokers) if brokers else 0.0
    return UpdateMetadataSizes(fixed, per_partition, per_broker)
