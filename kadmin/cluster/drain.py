"""Leadership drain: the cluster side (reorder replicas, elect preferred leaders, read leaders).

Two implementations of the LeadershipMoves capability (kadmin/cluster/base.py):
- `AdminDrain`: the Kafka protocol through kafka-python 3.x's admin client (Metadata,
  ListPartitionReassignments 46, AlterPartitionReassignments 45, ElectLeaders 43). KRaft, and ZooKeeper
  mode when --bootstrap-server is given (Kafka 2.4+ serves these APIs in ZooKeeper mode too).
- `ZkDrain`: ZooKeeper mode with --zookeeper only: Kafka's admin znodes /admin/reassign_partitions and
  /admin/preferred_replica_election (JSON `{"version":1,"partitions":[{"topic","partition"}]}`), which
  the 3.9 controller still watches; read and created through the ZkCluster's retried, translated znode
  methods (`ZkAdminZnodes`), never a kazoo handle: a refused or lost znode is a kadmin error (exit 4).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kadmin.cluster.kafka import bootstrap_failures, bootstrap_reason, error_name, translate
from kadmin.domain.drain import Key, PartitionView
from kadmin.errors import KadminError, Unsupported

if TYPE_CHECKING:
    from kadmin.cluster.base import PartitionScan

REASSIGN_ZNODE = "/admin/reassign_partitions"
ELECTION_ZNODE = "/admin/preferred_replica_election"
ELECTION_NOT_NEEDED = 84


class AdminDrain:
    """The Kafka protocol, through brokers (--bootstrap-server)."""

    mode = "protocol"

    def __init__(self, bootstrap: str, config: Mapping[str, Any], timeout: float) -> None:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        self.where = bootstrap
        self.timeout_ms = int(timeout * 1000)
        with bootstrap_failures() as failures:
            try:
                self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kadmin",
                                              request_timeout_ms=self.timeout_ms,
                                              bootstrap_timeout_ms=self.timeout_ms, **config)
            except KafkaError as e:
                why = bootstrap_reason(failures, sasl=str(config.get("security_protocol", "")).startswith("SASL"))
                raise (why(bootstrap) if why else translate(e, bootstrap)) from e
            except OSError as e:
                raise translate(e, bootstrap) from e

    def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        from kafka.errors import KafkaError

        try:
            return fn(*args, **kw)
        except (KafkaError, OSError) as e:
            err = translate(e, self.where, what, lacks=Unsupported)
            raise type(err)(f"{what}: {err.message}") from e

    def partitions(self, in_flight: bool = True) -> list[PartitionView]:
        """Every partition's replicas, ISR, leader and offline replicas (Metadata v5+: fenced, unregistered or
        log dir offline), marked when a reassignment is in flight."""
        topics = self._call("Metadata", self.admin.describe_topics)
        ongoing = self.in_flight() if in_flight else set()
        out = []
        for t in topics:
            if t.get("error_code"):
                raise KadminError(f"Metadata for topic {t.get('name')}: {error_name(int(t['error_code']))}")
            for p in t["partitions"]:
                key = (t["name"], int(p["partition_index"]))
                out.append(PartitionView(key[0], key[1], tuple(p["replica_nodes"]), tuple(p["isr_nodes"]),
                                         int(p["leader_id"]), key in ongoing, tuple(p.get("offline_replicas") or ())))
        return out

    def in_flight(self) -> set[Key]:
        """The partitions with an ongoing reassignment (ListPartitionReassignments, to the controller)."""
        got = self._call("ListPartitionReassignments", self.admin.list_partition_reassignments)
        return {(tp.topic, tp.partition) for tp in got}

    def reassign(self, plan: Mapping[Key, tuple[int, ...]]) -> dict[Key, str]:
        """AlterPartitionReassignments: {key: error name} for the partitions the controller refused."""
        from kafka import TopicPartition

        if not plan:
            return {}
        got = self._call("AlterPartitionReassignments", self.admin.alter_partition_reassignments,
                         {TopicPartition(t, p): list(r) for (t, p), r in plan.items()})
        return {(tp.topic, tp.partition): err.__name__ for tp, err in got.items() if err is not None}

    def reassigned(self, keys: Iterable[Key]) -> bool:
        return not (set(keys) & self.in_flight())

    def election_free(self) -> bool:
        return True  # ElectLeaders may be asked at any time

    def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
        """ElectLeaders (PREFERRED): {key: error name} except NONE and ELECTION_NOT_NEEDED."""
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(keys):
            by_topic.setdefault(t, []).append(p)
        if not by_topic:
            return {}
        resp = self._call("ElectLeaders", self.admin.elect_leaders, 0, by_topic, raise_errors=False)
        if getattr(resp, "error_code", 0):
            raise KadminError(f"ElectLeaders: {error_name(int(resp.error_code))}")
        out = {}
        for r in resp.replica_election_results:
            for p in r.partition_result:
                if p.error_code not in (0, ELECTION_NOT_NEEDED):
                    out[(r.topic, int(p.partition_id))] = error_name(int(p.error_code)) + (
                        f" ({p.error_message})" if p.error_message else "")
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.close()


class ZkAdminZnodes(Protocol):
    """What ZkDrain needs of a ZkCluster: the partition scan and Kafka's admin znodes, each read and write
    retried and its errors translated to kadmin's (kadmin/cluster/zookeeper/reads.py)."""

    @property
    def description(self) -> str: ...

    def scan_partitions(self) -> PartitionScan: ...

    def read_znode(self, path: str) -> bytes | None: ...

    def znode_exists(self, path: str) -> bool: ...

    def create_znode(self, path: str, data: bytes) -> bool: ...


def _doc(partitions: list[dict[str, Any]]) -> bytes:
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":")).encode()


class ZkDrain:
    """ZooKeeper mode through Kafka's admin znodes (a ZkCluster's retried, translated znode methods)."""

    mode = "zookeeper"

    def __init__(self, cluster: ZkAdminZnodes) -> None:
        self.cluster = cluster
        self.where = cluster.description

    def partitions(self, in_flight: bool = True) -> list[PartitionView]:
        """Replicas from the topic znodes, ISR and leader from the state znodes (what the controller wrote);
        offline: the replicas without a /brokers/ids registration. In flight: adding/removing replicas in
        the topic znode (API reassignments, Kafka 2.4+) or the partition listed in /admin/reassign_partitions."""
        scan = self.cluster.scan_partitions()
        legacy = self._znode_partitions() if in_flight else set()
        out = []
        for p in scan.partitions:
            moving = bool(p.adding_replicas or p.removing_replicas) or (p.topic, p.partition) in legacy
            out.append(PartitionView(p.topic, p.partition, tuple(p.replicas), tuple(p.isr),
                                     -1 if p.leader is None else int(p.leader), moving,
                                     tuple(r for r in p.replicas if r not in scan.live)))
        return out

    def in_flight(self) -> set[Key]:
        return {p.key for p in self.partitions() if p.reassigning}

    def _znode_partitions(self) -> set[Key]:
        data = self.cluster.read_znode(REASSIGN_ZNODE)
        if data is None:
            return set()
        try:
            return {(str(x["topic"]), int(x["partition"])) for x in json.loads(data or b"{}").get("partitions", [])}
        except (ValueError, TypeError, KeyError, AttributeError):
            return {("?", -1)}  # unreadable: something is in flight

    def reassign(self, plan: Mapping[Key, tuple[int, ...]]) -> dict[Key, str]:
        """Create /admin/reassign_partitions (Kafka's JSON); it exists already → a reassignment is in flight."""
        if not plan:
            return {}
        doc = _doc([{"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(plan.items())])
        if not self.cluster.create_znode(REASSIGN_ZNODE, doc):
            return {k: "REASSIGNMENT_IN_PROGRESS (/admin/reassign_partitions exists)" for k in plan}
        return {}

    def reassigned(self, keys: Iterable[Key]) -> bool:
        """The controller deletes /admin/reassign_partitions once it has applied (or completed) it."""
        return not self.cluster.znode_exists(REASSIGN_ZNODE)

    def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
        """Create /admin/preferred_replica_election; the controller deletes it when done. Kafka gives no
        per-partition answer here: what did not move is seen when the leaders are read again."""
        ks = sorted(keys)
        if not ks:
            return {}
        if not self.cluster.create_znode(ELECTION_ZNODE, _doc([{"topic": t, "partition": p} for t, p in ks])):
            return {k: "ELECTION_IN_PROGRESS (/admin/preferred_replica_election exists)" for k in ks}
        return {}

    def election_free(self) -> bool:
        """One /admin/preferred_replica_election at a time: free once the controller has deleted it."""
        return not self.cluster.znode_exists(ELECTION_ZNODE)

    def close(self) -> None:
        pass  # the ZkCluster is the invocation's, closed with it
