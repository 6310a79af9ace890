"""Leadership drain: the cluster side (reorder replicas, elect preferred leaders, read leaders).

Two implementations of the LeadershipMoves capability (kadmin/cluster/base.py):
- `AdminDrain`: the Kafka protocol through kadmin's one Kafka client, KraftClient (Metadata,
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kadmin.cluster.kafka import error_name
from kadmin.domain.drain import Key, PartitionView, Unknown
from kadmin.domain.lease import LEASE_TOPIC, LEASE_ZNODE, Holder, LeaseTry, holder_from_znode, mine_or_stale
from kadmin.domain.znodes import loads_strict
from kadmin.errors import AuthFailed, ClusterUnreachable, KadminError, Rejected, Unsupported

if TYPE_CHECKING:
    from kadmin.cluster.base import PartitionScan, Znode
    from kadmin.cluster.kraft import KraftClient

REASSIGN_ZNODE = "/admin/reassign_partitions"
ELECTION_ZNODE = "/admin/preferred_replica_election"
ELECTION_NOT_NEEDED = 84
REQUEST_TIMED_OUT = 7  # ElectLeaders: the election was asked for and not seen done within timeout_ms
PREFERRED = 0  # ElectLeaders' election type
NOT_CONTROLLER = 41
TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100
AUTHORIZATION_FAILED = {29: "Create on the topic " + LEASE_TOPIC, 31: "Create on the cluster"}
TOPIC = 2  # DescribeConfigs' resource type
LEASE_TRIES = 3  # take, find it stale, delete it, take again: a few times at most per try


def _utc(ms: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _held(other: Holder, where: str) -> LeaseTry:
    return LeaseTry("held", f"by {other.who or 'another kadmin'} until {_utc(other.expires_ms)} ({where})")


class AdminDrain:
    """The Kafka protocol, through brokers (--bootstrap-server), over the one Kafka client (KraftClient).

    Metadata goes to any broker; ListPartitionReassignments, AlterPartitionReassignments and ElectLeaders
    go where Kafka takes them (`send_to_controller`: a KRaft broker forwards them, a ZooKeeper-mode broker
    that is not the controller answers NOT_CONTROLLER and the controller Metadata names is asked)."""

    mode = "protocol"

    def __init__(self, client: KraftClient) -> None:
        self.client = client
        self.where = ",".join(client.addresses)
        self.unknown: tuple[Unknown, ...] = ()  # a topic Metadata cannot describe is an error (below), not unknown

    def _send(self, api: str, make: Callable[[], Any], controller: bool = True,
              not_controller: Callable[[Any], bool] | None = None) -> Any:
        """Send and check the answer's own error code; every failure's message starts with the request."""
        try:
            address, resp = self.client.send_to_controller(make, not_controller) if controller \
                else self.client.send_any(make)
        except Rejected as e:
            if e.code == "unsupported_version":  # an operation, not a read that may fall back: exit 8
                self._not_a_controller()
                raise Unsupported(f"{api}: {e.message}", code=e.code) from e
            raise
        except KadminError as e:
            raise type(e)(f"{api}: {e.message}", code=e.code) from e
        code = int(getattr(resp, "error_code", 0) or 0)
        if code:
            raise self.client.rejected(code, getattr(resp, "error_message", None), address, api)
        return resp

    def _not_a_controller(self) -> None:
        """Raise the exit-3 error naming the fix when --bootstrap-server names a KRaft controller (which serves
        none of the drain's requests); return when it does not, or that cannot be told."""
        with contextlib.suppress(ClusterUnreachable, Rejected, Unsupported):
            self.client.describe_cluster()  # a controller answers MISMATCHED_ENDPOINT_TYPE: ConfigError

    def partitions(self, in_flight: bool = True) -> list[PartitionView]:
        """Every partition's replicas, ISR, leader and offline replicas (Metadata v5+: fenced, unregistered or
        log dir offline), marked when a reassignment is in flight."""
        from kafka.protocol.metadata.metadata import MetadataRequest

        meta = self._send("Metadata", lambda: MetadataRequest(topics=MetadataRequest.ALL_TOPICS,
                                                              allow_auto_topic_creation=False), controller=False)
        ongoing = self.in_flight() if in_flight else set()
        out = []
        for t in meta.topics:
            if t.name == LEASE_TOPIC:
                continue  # kadmin's lease (kadmin/domain/lease.py): no partition to move
            if t.error_code:
                raise KadminError(f"Metadata for topic {t.name}: {error_name(int(t.error_code))}")
            for p in t.partitions:
                key = (str(t.name), int(p.partition_index))
                out.append(PartitionView(key[0], key[1], tuple(p.replica_nodes), tuple(p.isr_nodes),
                                         int(p.leader_id), key in ongoing,
                                         tuple(getattr(p, "offline_replicas", None) or ())))
        return out

    def in_flight(self) -> set[Key]:
        """The partitions with an ongoing reassignment (ListPartitionReassignments, to the controller)."""
        from kafka.protocol.admin.topics import ListPartitionReassignmentsRequest as Req

        resp = self._send("ListPartitionReassignments", lambda: Req(timeout_ms=self._timeout_ms(), topics=None))
        return {(str(t.name), int(p.partition_index)) for t in resp.topics for p in t.partitions}

    def _timeout_ms(self) -> int:
        """How long the broker may hold an answer: half of what kadmin waits for it (client.bound()), so that a
        slow election (a busy controller) is answered REQUEST_TIMED_OUT in time, not left unanswered."""
        return max(int(self.client.bound() * 500), 500)

    def reassign(self, plan: Mapping[Key, tuple[int, ...]]) -> dict[Key, str]:
        """AlterPartitionReassignments: {key: error name} for the partitions the controller refused."""
        from kafka.protocol.admin.topics import AlterPartitionReassignmentsRequest as Req

        if not plan:
            return {}
        by_topic: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for (t, p), replicas in sorted(plan.items()):
            by_topic.setdefault(t, []).append((p, replicas))

        def make() -> Any:
            topic, part = Req.ReassignableTopic, Req.ReassignableTopic.ReassignablePartition
            return Req(timeout_ms=self._timeout_ms(), topics=[
                topic(name=t, partitions=[part(partition_index=p, replicas=list(r)) for p, r in parts])
                for t, parts in by_topic.items()])

        resp = self._send("AlterPartitionReassignments", make)
        return {(str(t.name), int(p.partition_index)): error_name(int(p.error_code)) + (
                    f" ({p.error_message})" if p.error_message else "")
                for t in resp.responses for p in t.partitions if p.error_code}

    def reassigned(self, keys: Iterable[Key]) -> bool:
        return not (set(keys) & self.in_flight())

    def unseen(self, brokers: Sequence[int]) -> list[Unknown]:
        """The partitions `brokers` host on disk (DescribeLogDirs, whatever the topic ACLs) that Metadata did not
        show (a topic the principal may not Describe), and the brokers whose log dirs could not be listed: the
        drain's verdict must not say "leads none" past them (issue 34 §2)."""
        from kadmin.cluster.kraft_cluster import KraftCluster
        from kadmin.domain.partitions import hidden_reason

        seen = {p.key for p in self.partitions(in_flight=False)}
        cov = KraftCluster(self.client).coverage(brokers)
        hidden: dict[Key, list[int]] = {}
        for b, keys in sorted(cov.hosted.items()):
            for k in keys:
                if k not in seen and k[0] != LEASE_TOPIC:
                    hidden.setdefault(k, []).append(b)
        out = [Unknown(t, p, tuple(on), hidden_reason(t, on)) for (t, p), on in sorted(hidden.items())]
        out += [Unknown(f"(broker {b})", None, (b,), why) for b, why in sorted(cov.unread.items())]
        return out

    def election_free(self) -> bool:
        return True  # ElectLeaders may be asked at any time

    # ------------------------------------------------------------ the lease: the topic LEASE_TOPIC
    lease_where = f"topic {LEASE_TOPIC}"
    _lease: Any = None  # the topic id of the lease this drain took
    _lease_rf: int | None = None  # the lease topic's replication factor: min(3, brokers), read once per drain

    def try_lease(self, holder: Holder, now_ms: int) -> LeaseTry:
        """CreateTopics of the lease topic (its expiry in retention.ms, its token in retention.bytes); when it
        exists, its holder from DescribeConfigs, and a stale one (or this holder's own) deleted by topic id."""
        for _ in range(LEASE_TRIES):
            code, text, topic_id = self._create_lease(holder)
            if code == 0:
                self._lease = topic_id
                return LeaseTry("taken")
            if code in AUTHORIZATION_FAILED:
                return LeaseTry("denied", f"CreateTopics {LEASE_TOPIC}: {text} (it needs {AUTHORIZATION_FAILED[code]})")
            if code != TOPIC_ALREADY_EXISTS:
                return LeaseTry("denied", f"CreateTopics {LEASE_TOPIC}: {text}")
            seen = self._lease_holder()
            if isinstance(seen, str):
                return LeaseTry("held", f"by another kadmin; {seen}")
            if seen is None:
                continue  # gone meanwhile
            topic_id, other = seen
            if not mine_or_stale(other, holder, now_ms):
                return _held(other, self.lease_where)
            try:
                self._delete_topic(topic_id)
            except Rejected as e:  # a stale lease this principal may not delete: its holder is gone, go on without
                return LeaseTry("denied", f"a stale {self.lease_where} could not be deleted ({e.message}; it needs "
                                "Delete on the topic)")
        return LeaseTry("held", f"the {self.lease_where} changed hands while kadmin tried to take it")

    def release_lease(self) -> str | None:
        if self._lease is None:
            return None
        topic_id, self._lease = self._lease, None
        try:
            self._delete_topic(topic_id)
        except KadminError as e:
            return f"the lease ({self.lease_where}) was not given back ({e.message}): it is free once it expires"
        return None

    def _create_lease(self, holder: Holder) -> tuple[int, str, Any]:
        from kafka.protocol.admin.topics import CreateTopicsRequest as Req

        if self._lease_rf is None:  # not again at each try while another kadmin holds the lease
            brokers = len(self._send("Metadata", lambda: self._metadata([]), controller=False).brokers)
            self._lease_rf = max(1, min(3, brokers))
        rf = self._lease_rf

        def make() -> Any:
            t = Req.CreatableTopic
            return Req(timeout_ms=self._timeout_ms(), validate_only=False, topics=[t(
                name=LEASE_TOPIC, num_partitions=1, replication_factor=rf, assignments=[],
                configs=[t.CreatableTopicConfig(name="retention.ms", value=str(holder.expires_ms)),
                         t.CreatableTopicConfig(name="retention.bytes", value=str(holder.token))])])

        try:
            _, resp = self.client.send_to_controller(make, _topics_not_controller)
        except Rejected as e:
            return -1, e.message, None
        r = resp.topics[0]
        text = error_name(int(r.error_code)) + (f" ({r.error_message})" if getattr(r, "error_message", None) else "")
        return int(r.error_code), text, getattr(r, "topic_id", None)

    @staticmethod
    def _metadata(names: list[str]) -> Any:
        from kafka.protocol.metadata.metadata import MetadataRequest

        return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                               allow_auto_topic_creation=False)

    def _lease_holder(self) -> tuple[Any, Holder] | str | None:
        """(topic id, holder) of the lease topic; None when it is gone; a text when it cannot be read."""
        from kadmin.cluster.min_isr import describe_configs_request

        meta = self._send("Metadata", lambda: self._metadata([LEASE_TOPIC]), controller=False)
        t = meta.topics[0]
        if t.error_code == UNKNOWN_TOPIC_OR_PARTITION:
            return None
        if t.error_code:
            return f"Metadata of {LEASE_TOPIC}: {error_name(int(t.error_code))} (it needs Describe on the topic)"
        _, resp = self.client.send_any(lambda: describe_configs_request([(TOPIC, LEASE_TOPIC)],
                                                                        ("retention.ms", "retention.bytes")))
        res = resp.results[0]
        if res.error_code:
            return f"DescribeConfigs of {LEASE_TOPIC}: {error_name(int(res.error_code))} (it needs DescribeConfigs)"
        values = {c.name: c.value for c in res.configs}
        try:
            return t.topic_id, Holder(int(values["retention.bytes"]), int(values["retention.ms"]))
        except (KeyError, TypeError, ValueError):
            return f"{LEASE_TOPIC} holds no kadmin lease: delete the topic if no kadmin is moving leadership"

    def _delete_topic(self, topic_id: Any) -> None:
        """DeleteTopics of the lease topic by its id: one taken again meanwhile (a new id) is left alone."""
        from kafka.protocol.admin.topics import DeleteTopicsRequest as Req

        resp = self._send("DeleteTopics", lambda: Req(timeout_ms=self._timeout_ms(), topic_names=[LEASE_TOPIC],
                                                      topics=[Req.DeleteTopicState(name=None, topic_id=topic_id)]),
                          not_controller=_topics_not_controller)
        for r in resp.responses:
            if r.error_code not in (0, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID):  # gone, or a new id: not ours
                raise Rejected(f"DeleteTopics {LEASE_TOPIC}: {error_name(int(r.error_code))}")

    def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
        """ElectLeaders (PREFERRED): {key: error name} except NONE and ELECTION_NOT_NEEDED."""
        from kafka.protocol.admin.topics import ElectLeadersRequest as Req

        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(keys):
            by_topic.setdefault(t, []).append(p)
        if not by_topic:
            return {}
        resp = self._send("ElectLeaders", lambda: Req(election_type=PREFERRED, timeout_ms=self._timeout_ms(),
                                                      topic_partitions=[Req.TopicPartitions(topic=t, partitions=ps)
                                                                        for t, ps in by_topic.items()]),
                          not_controller=_election_not_controller)
        out = {}
        for r in resp.replica_election_results:
            for p in r.partition_result:
                # REQUEST_TIMED_OUT: asked for, not yet seen done; the drain reads the leaders again
                if p.error_code not in (0, ELECTION_NOT_NEEDED, REQUEST_TIMED_OUT):
                    out[(str(r.topic), int(p.partition_id))] = error_name(int(p.error_code)) + (
                        f" ({p.error_message})" if p.error_message else "")
        return out

    def close(self) -> None:
        self.client.close()


def _topics_not_controller(resp: Any) -> bool:
    """A ZooKeeper-mode broker that is not the controller answers CreateTopics and DeleteTopics NOT_CONTROLLER per
    topic (a KRaft broker forwards them)."""
    results = [t.error_code for t in getattr(resp, "topics", None) or getattr(resp, "responses", None) or ()]
    return bool(results) and all(c == NOT_CONTROLLER for c in results)


def _election_not_controller(resp: Any) -> bool:
    """A ZooKeeper-mode broker that is not the controller answers ElectLeaders NOT_CONTROLLER per partition."""
    results = [p.error_code for r in resp.replica_election_results for p in r.partition_result]
    return getattr(resp, "error_code", 0) == NOT_CONTROLLER or (bool(results) and all(
        c == NOT_CONTROLLER for c in results))


class ZkAdminZnodes(Protocol):
    """What ZkDrain needs of a ZkCluster: the partition scan and Kafka's admin znodes, each read and write
    retried and its errors translated to kadmin's (kadmin/cluster/zookeeper/reads.py)."""

    @property
    def description(self) -> str: ...

    def scan_partitions(self) -> PartitionScan: ...

    def read_znode(self, path: str) -> bytes | None: ...

    def znode_exists(self, path: str) -> bool: ...

    def create_znode(self, path: str, data: bytes, ephemeral: bool = False) -> bool: ...

    def get(self, path: str) -> Znode | None: ...

    def delete_znode(self, path: str, version: int) -> bool: ...


def _doc(partitions: list[dict[str, Any]]) -> bytes:
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":")).encode()


class ZkDrain:
    """ZooKeeper mode through Kafka's admin znodes (a ZkCluster's retried, translated znode methods)."""

    mode = "zookeeper"

    def __init__(self, cluster: ZkAdminZnodes) -> None:
        self.cluster = cluster
        self.where = cluster.description
        self.unknown: tuple[Unknown, ...] = ()

    def partitions(self, in_flight: bool = True) -> list[PartitionView]:
        """Replicas from the topic znodes, ISR and leader from the state znodes (what the controller wrote);
        offline: the replicas without a /brokers/ids registration. In flight: adding/removing replicas in
        the topic znode (API reassignments, Kafka 2.4+) or the partition listed in /admin/reassign_partitions."""
        scan = self.cluster.scan_partitions()
        legacy = self._znode_partitions() if in_flight else set()
        # what this reading could not tell (an unreadable topic znode, a missing or unreadable state znode)
        self.unknown = tuple([Unknown(t, None, None, why) for t, why in sorted(scan.unreadable.items())] + [
            Unknown(p.topic, p.partition, tuple(p.replicas), p.problem or "no state znode")
            for p in scan.partitions if p.leader is None])
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
            return {(str(x["topic"]), int(x["partition"])) for x in loads_strict(data or b"{}").get("partitions", [])}
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

    def unseen(self, brokers: Sequence[int]) -> list[Unknown]:
        return []  # /brokers/topics lists every topic to whoever may read it: what it hosts is in the scan

    # ------------------------------------------------------------ the lease: the ephemeral znode LEASE_ZNODE
    lease_where = f"znode {LEASE_ZNODE}"
    _lease: bytes | None = None  # what the lease znode this drain made holds

    def try_lease(self, holder: Holder, now_ms: int) -> LeaseTry:
        """Create the ephemeral lease znode; when it exists, its holder, and a stale one (or this holder's own)
        deleted if still as read (its version)."""
        data = holder.znode()
        for _ in range(LEASE_TRIES):
            try:
                if self.cluster.create_znode(LEASE_ZNODE, data, ephemeral=True):
                    self._lease = data
                    return LeaseTry("taken")
                node = self.cluster.get(LEASE_ZNODE)
                if node is None:
                    continue  # gone meanwhile
                other = holder_from_znode(node.data)
                if other is None:
                    return LeaseTry("held", f"{self.lease_where} holds no kadmin lease: delete it if no kadmin is "
                                    "moving leadership")
                if not mine_or_stale(other, holder, now_ms):
                    return _held(other, self.lease_where)
                self.cluster.delete_znode(LEASE_ZNODE, node.stat.version)
            except AuthFailed as e:
                return LeaseTry("denied", e.message)
        return LeaseTry("held", f"the {self.lease_where} changed hands while kadmin tried to take it")

    def release_lease(self) -> str | None:
        if self._lease is None:
            return None
        mine, self._lease = self._lease, None
        try:
            node = self.cluster.get(LEASE_ZNODE)
            if node is not None and node.data == mine:
                self.cluster.delete_znode(LEASE_ZNODE, node.stat.version)
        except KadminError as e:
            return f"the lease ({self.lease_where}) was not given back ({e.message}): it goes with the session"
        return None

    def close(self) -> None:
        pass  # the ZkCluster is the invocation's, closed with it
