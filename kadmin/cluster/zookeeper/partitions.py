"""The partition scan: assignments, states and min.insync.replicas as Kafka resolves it, in pipelined reads."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from kadmin.cluster.base import PartitionScan, PartitionStream
from kadmin.cluster.zookeeper.reads import IDS, TOPICS, ZkReads
from kadmin.domain import znodes
from kadmin.domain.models import MinIsrConfig, PartitionState
from kadmin.errors import KadminError
from kadmin.results import Problem, Progress

if TYPE_CHECKING:
    from kadmin.cluster.min_isr import BrokerMinIsr

# kadmin.cluster.min_isr (DescribeConfigs) and kadmin.domain.partitions are imported where they are used:
# commands that read no partition (`brokers max-epoch`, `brokers wait`) start without them (issue 13 §2).

CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
DEFAULT_ENTITY = "<default>"  # ZooKeeper's name of the cluster-wide default entity (ZooKeeperInternals.DEFAULT_STRING)
DELETE_TOPICS = "/admin/delete_topics"


class ZkPartitions(ZkReads):
    def coverage(self, brokers: Sequence[int] | None = None) -> None:
        """None: a ZooKeeper scan is complete by construction (/brokers/topics lists every topic; a znode that
        cannot be read is an error of its own, never a topic silently left out)."""
        return None

    def live_brokers(self, fresh: bool = True) -> frozenset[int]:
        """The registered brokers (/brokers/ids)."""
        return frozenset(self._ids(self._children(IDS))[0])

    def scan_partitions(
        self, topics: Sequence[str] | None = None, progress: Progress | None = None,
        min_isr_default: int | None = None,
    ) -> PartitionScan:
        """iter_partitions, every partition held in one list."""
        s = self.iter_partitions(topics, progress, min_isr_default)
        return PartitionScan(list(s.partitions), s.live, s.problems, s.unreadable)

    def iter_partitions(
        self, topics: Sequence[str] | None = None, progress: Progress | None = None,
        min_isr_default: int | None = None,
    ) -> PartitionStream:
        """Every partition's assignment, state and min.insync.replicas, read with pipelined reads.

        The topic znodes and configs are read here; the state znodes as `partitions` is consumed, each
        decoded as it arrives and then dropped (a million partitions in bounded memory).

        min.insync.replicas as Kafka resolves it: the topic's own value, else the dynamic config of the
        partition's leader (/config/brokers/<id>), else the dynamic cluster default
        (/config/brokers/<default>), else the static value (`min_isr_default`, not in ZooKeeper).
        Topics queued in /admin/delete_topics are marked `deleting`.

        What cannot be read is never dropped: an unparsable topic znode makes the topic `unreadable`;
        an unparsable /config/topics/<t> or min.insync.replicas gives each of t's partitions a
        `problem` (its min ISR is unknown, so verdicts must not assume the default), and so does an
        unparsable broker-level value a partition without its own value could use (the cluster
        default, or the per-broker value of any of its replicas: any of them may lead it).
        """
        if min_isr_default is None:
            min_isr_default = 1  # ZooKeeper does not keep the static level: Kafka's own default stands in
        ids, problems = self._ids(self._children(IDS))
        live = frozenset(ids)
        # kadmin's leadership lease topic (kadmin/domain/lease.py) holds no data: left out unless named
        from kadmin.domain.lease import LEASE_TOPIC  # here: max-epoch and wait build no lease types

        names = sorted(set(self._children(TOPICS)) - {LEASE_TOPIC}) if topics is None else list(topics)
        broker_min_isr, bad_default, bad_brokers = self._broker_min_isr(problems)
        from kadmin.domain.partitions import DEFAULT

        static_source = DEFAULT  # ZooKeeper does not keep the static level: --min-isr-default states it
        deleting = self._queued_for_deletion()
        assignments, unreadable = self._assignments(names, topics is not None, progress, problems)
        min_isr, config_problem = self._topics_min_isr(assignments, problems)
        from_brokers = self._min_isr_from_brokers(sorted(assignments), live, min_isr_default, problems) \
            if self.kafka is not None and assignments else None
        if from_brokers is not None:  # what the brokers use (their static value included) wins over ZooKeeper
            min_isr.update(from_brokers.topics)
            # a broker that reported no dynamic value (it did not answer) keeps ZooKeeper's, where Kafka keeps it
            reported = {b for b, _ in from_brokers.config.brokers}
            broker_min_isr = tuple(sorted([*from_brokers.config.brokers,
                                           *((b, v) for b, v in broker_min_isr if b not in reported)]))
            bad_default = (from_brokers.config.cluster_default, None)
            bad_brokers = {}
            min_isr_default = from_brokers.config.static
            from kadmin.cluster.min_isr import STATIC_SOURCE

            static_source = STATIC_SOURCE
        stream = self._states(assignments, min_isr, config_problem, broker_min_isr, bad_default, bad_brokers,
                              min_isr_default, static_source, deleting, problems, progress)
        return PartitionStream(stream, live, problems, unreadable)

    def _assignments(self, names: list[str], named: bool, progress: Progress | None,
                     problems: list[Problem]) -> tuple[dict[str, znodes.TopicAssignment], dict[str, str]]:
        """Each topic's assignment znode (pipelined), and the topics whose znode is unreadable (why)."""
        assignments: dict[str, znodes.TopicAssignment] = {}
        unreadable: dict[str, str] = {}
        shared: dict[tuple[int, ...], tuple[int, ...]] = {}
        if progress:
            progress("topics", len(names), 0)
        for path, node in self.get_many(f"{TOPICS}/{t}" for t in names):
            name = path.rsplit("/", 1)[1]
            if progress:
                progress("topics", len(names), 1)
            if node is None:
                if named:
                    problems.append(Problem("not_found", f"topic {name} does not exist"))
                continue
            try:
                a = znodes.decode_topic(node.data)
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}", topic=name))
                unreadable[name] = f"unreadable topic znode {path}: {e}"
                continue
            # a million partitions share a few replica lists: one tuple each, not one per partition
            a["partitions"] = {p: shared.setdefault(r, r) for p, r in a["partitions"].items()}
            assignments[name] = a
        return assignments, unreadable

    def _topics_min_isr(self, assignments: dict[str, znodes.TopicAssignment], problems: list[Problem],
                        ) -> tuple[dict[str, int | None], dict[str, str]]:
        """Each topic's own min.insync.replicas in ZooKeeper (None: not set), and the topics whose config
        znode is unreadable (why: their min ISR is unknown)."""
        min_isr: dict[str, int | None] = {}
        config_problem: dict[str, str] = {}
        for path, node in self.get_many(f"{CONFIG_TOPICS}/{t}" for t in assignments):
            name = path.rsplit("/", 1)[1]
            min_isr[name] = None
            if node is None:
                continue
            try:
                value = znodes.decode_config(node.data).get("min.insync.replicas")
                if value is not None:
                    min_isr[name] = znodes.parse_min_isr(value)
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}", topic=name))
                config_problem[name] = f"min.insync.replicas unknown: {path}: {e}"
        return min_isr, config_problem

    def _states(
        self, assignments: dict[str, znodes.TopicAssignment], min_isr: dict[str, int | None],
        config_problem: dict[str, str], broker_min_isr: tuple[tuple[int, int], ...],
        bad_default: tuple[int | None, str | None], bad_brokers: dict[int, str], min_isr_default: int,
        static_source: str, deleting: frozenset[str], problems: list[Problem], progress: Progress | None,
    ) -> Iterator[PartitionState]:
        """The state znodes, read pipelined and yielded one PartitionState at a time, in topic order."""
        total = sum(len(a["partitions"]) for a in assignments.values())
        if progress:
            progress("partitions", total, 0)
        configs: dict[int | None, MinIsrConfig] = {}  # one per topic-level value: they differ in nothing else
        from kadmin.domain.partitions import STATIC, current_min_isr

        def min_isr_of(cfg: MinIsrConfig, leader: int | None, replicas: Sequence[int]) -> tuple[int, str]:
            value, source = current_min_isr(cfg, leader, replicas)
            return value, static_source if source == STATIC else source


        def wanted() -> Iterator[tuple[str, int]]:
            return ((t, p) for t, a in assignments.items() for p in sorted(a["partitions"]))

        paths = (f"{TOPICS}/{t}/partitions/{p}/state" for t, p in wanted())
        for (t, p), (path, node) in zip(wanted(), self.get_many(paths), strict=True):
            a = assignments[t]
            replicas = a["partitions"][p]
            topic_min_isr = min_isr[t]
            cfg = configs.get(topic_min_isr)
            if cfg is None:
                cfg = configs[topic_min_isr] = MinIsrConfig(topic=topic_min_isr, brokers=broker_min_isr,
                                                            cluster_default=bad_default[0], static=min_isr_default)
            problem = config_problem.get(t)
            if problem is None and cfg.topic is None:  # a broker-level value it may use is unreadable
                why = [bad_default[1]] if bad_default[1] else []
                why += [bad_brokers[r] for r in replicas if r in bad_brokers]
                problem = f"min.insync.replicas unknown: {why[0]}" if why else None
            base = dict(
                topic=t, partition=p, replicas=replicas, adding_replicas=a["adding"].get(p, ()),
                removing_replicas=a["removing"].get(p, ()), topic_id=a["topic_id"], min_isr_config=cfg,
                deleting=t in deleting,
            )
            if progress:
                progress("partitions", total, 1)
            if node is None:
                problems.append(Problem("missing_state", f"{path}: no state znode (the partition has no leader)",
                                        topic=t, partition=p))
                mi, mi_source = min_isr_of(cfg, None, replicas)
                yield PartitionState(**base, min_isr=mi, min_isr_source=mi_source,  # type: ignore[arg-type]
                                     problem="no state znode")
                continue
            try:
                st = znodes.decode_partition_state(node.data)
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}", topic=t, partition=p))
                mi, mi_source = min_isr_of(cfg, None, replicas)
                yield PartitionState(**base, min_isr=mi, min_isr_source=mi_source,  # type: ignore[arg-type]
                                     problem=f"invalid state: {e}")
                continue
            mi, mi_source = min_isr_of(cfg, st["leader"], replicas)
            yield PartitionState(
                **base,  # type: ignore[arg-type]
                isr=st["isr"], leader=st["leader"], leader_epoch=st["leader_epoch"],
                partition_epoch=node.stat.version, controller_epoch=st["controller_epoch"],
                leader_recovery_state=st["leader_recovery_state"], problem=problem,
                min_isr=mi, min_isr_source=mi_source, min_isr_unread=problem is not None,
            )

    def _min_isr_from_brokers(self, topics: list[str], live: frozenset[int], default: int,
                              problems: list[Problem]) -> BrokerMinIsr | None:
        """min.insync.replicas as the brokers report it (DescribeConfigs over --bootstrap-server), or None
        when no broker answered: then ZooKeeper and `default` (--min-isr-default) stand, and a FALLBACK
        problem says so. ZooKeeper keeps every level but the static one, so what a broker cannot answer
        is a warning (FALLBACK), never a read error."""
        from kadmin.cluster.min_isr import FALLBACK, read_min_isr

        said: list[Problem] = []
        got: BrokerMinIsr | None = None
        try:
            desc = self.kafka.describe_brokers()
            got = read_min_isr(self.kafka, topics, sorted(live), desc.addresses(), default, said)
        except KadminError as e:
            said.append(Problem("describe_configs", e.message))
        if got is not None and got.answered == 0:
            got = None
            said.insert(0, Problem("describe_configs", "no live broker answered DescribeConfigs"))
        for said_one in said:
            problems.append(Problem(FALLBACK, f"--bootstrap-server: {said_one.message}"
                                    + ("" if got is not None else f"; min.insync.replicas from ZooKeeper and "
                                       f"--min-isr-default ({default})")))
        return got

    def _broker_min_isr(
        self, problems: list[Problem]
    ) -> tuple[tuple[tuple[int, int], ...], tuple[int | None, str | None], dict[int, str]]:
        """The dynamic broker-level min.insync.replicas: ((id, value), ...) per broker, (the cluster
        default or None, why it is unreadable or None), and {id: why} for unreadable per-broker values.
        Children of /config/brokers that are neither <default> nor a broker id are not Kafka's: skipped."""
        try:
            children = self._children(CONFIG_BROKERS)
        except NoNodeError:
            return (), (None, None), {}
        entities: dict[str, int | None] = {}
        for c in children:
            if c == DEFAULT_ENTITY:
                entities[c] = None
            else:
                try:
                    entities[c] = znodes.broker_id_from_name(c)
                except znodes.ZnodeFormatError:
                    continue
        per_broker: list[tuple[int, int]] = []
        default: int | None = None
        bad_default: str | None = None
        bad: dict[int, str] = {}
        for path, node in self.get_many(f"{CONFIG_BROKERS}/{c}" for c in sorted(entities)):
            broker = entities[path.rsplit("/", 1)[1]]
            if node is None:
                continue
            try:
                raw = znodes.decode_config(node.data).get("min.insync.replicas")
                value = znodes.parse_min_isr(raw) if raw is not None else None
            except znodes.ZnodeFormatError as e:
                problems.append(Problem("invalid_znode", f"{path}: {e}"))
                if broker is None:
                    bad_default = f"{path}: {e}"
                else:
                    bad[broker] = f"{path}: {e}"
                continue
            if value is None:
                continue
            if broker is None:
                default = value
            else:
                per_broker.append((broker, value))
        return tuple(sorted(per_broker)), (default, bad_default), bad

    def _queued_for_deletion(self) -> frozenset[str]:
        """The topics queued in /admin/delete_topics (none when the znode does not exist)."""
        try:
            return frozenset(self._children(DELETE_TOPICS))
        except NoNodeError:
            return frozenset()
