"""The `Cluster` protocol over the Kafka protocol (KRaft mode, `--bootstrap-server`), with kafka-python 3.x.

Partitions come from DescribeTopicPartitions (API 75, KIP-966; paginated with its cursor, so a large
cluster is read in pages of PAGE_PARTITIONS), reassignments in flight from ListPartitionReassignments,
the live (unfenced) brokers, the active controller and the cluster id from DescribeCluster, and
min.insync.replicas with its source from DescribeConfigs: the topics (their own value) and each live
broker (its dynamic value, the dynamic cluster default, its static server.properties value). Every
answer is turned into the domain's PartitionState rows, so the rules in kadmin/domain/partitions.py
judge both modes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any, cast

from kadmin.cluster.base import PartitionScan, PartitionStream, RegistrationTick
from kadmin.cluster.kafka import error_name
from kadmin.cluster.kraft import ClusterDescription, KraftClient, all_at_once, uuid_text
from kadmin.cluster.min_isr import (
    RESOURCE_TOPIC,
    BrokerAnswers,
    ask_brokers,
    describe_configs,
    read_min_isr,
    topic_configs,
)
from kadmin.cluster.min_isr import min_isr_levels as min_isr_levels  # re-exported
from kadmin.cluster.min_isr import source_name as source_name  # re-exported
from kadmin.domain import partitions as rules
from kadmin.domain.addresses import host_port
from kadmin.domain.lease import LEASE_TOPIC
from kadmin.domain.models import Controller, Coverage, MinIsrConfig, PartitionState, Registered, partition_row
from kadmin.errors import AuthFailed, ClusterUnreachable, KadminError, Rejected
from kadmin.results import Problem, Progress

PAGE_PARTITIONS = 2000  # DescribeTopicPartitions' ResponsePartitionLimit (Kafka's default)
MAX_RANGES = 4  # all-topics reads: at most this many runs of pages at once, each from its own bootstrap broker
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC (ListConfigResources)
UNKNOWN_TOPIC_OR_PARTITION = 3
LOG_DIRS_FIRST_WITH_ERROR = 3  # DescribeLogDirs v3+ (Kafka 3.0) says CLUSTER_AUTHORIZATION_FAILED; older: empty
DESCRIBE_CLUSTER_WITH_FENCED = 2  # DescribeCluster v2+ (Kafka 4.0) lists fenced brokers; before, only live ones
NEEDS_CLUSTER_DESCRIBE = ("the principal needs Describe on the Cluster resource to list the partitions a broker "
                          "hosts whatever the topic ACLs")
# wait --in-sync on KRaft polls DescribeTopicPartitions: first after POLL_FIRST s, doubling up to POLL_MAX s
POLL_FIRST, POLL_MAX = 0.5, 5.0


NOT_MOVING: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())  # no reassignment in flight: adding, removing


def replica_list(value: Any) -> tuple[int, ...] | None:
    """A nullable []int32 of DescribeTopicPartitions (ELR, last known ELR): None when absent (Metadata)."""
    return None if value is None else tuple(value)


def min_isr_under(cfg: MinIsrConfig, leader: int | None, replicas: tuple[int, ...]) -> tuple[int, str, str | None]:
    """The min.insync.replicas a partition has under `leader` (None: no leader), its source, and why it is
    unknown (None: known), by the domain's rules."""
    value, source = rules.current_min_isr(cfg, leader, replicas)
    problem = rules.min_isr_unknown(cfg, leader)
    return value, source, None if problem is None else f"min.insync.replicas unknown: {problem}"


_paused = [0, False]  # pauses in progress (every thread), and whether the collector was enabled at the first
_pause_lock = threading.Lock()


@contextlib.contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while large answers are decoded and turned into rows (nested, or on
    several threads at once: the last one out resumes it, as it was before the first). A 20,000-partition scan
    allocates ~200,000 objects that form no reference cycle (kafka-python's decoded structs, the rows and their
    tuples) and keeps most of them: each allocation burst made the collector walk the growing heap again, 0.2-0.4 s
    of the scan (578 collections, 4 of them full). Reference counting still frees everything; only cycles wait for
    the collector's return."""
    with _pause_lock:
        if _paused[0] == 0:
            _paused[1] = gc.isenabled()
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _pause_lock:
            _paused[0] -= 1
            if _paused[0] == 0 and _paused[1]:
                promote_survivors()
                gc.enable()


def promote_survivors() -> None:
    """Every object the collector tracks moved into its oldest generation, without a pass over them (freeze, then
    unfreeze: two list splices; the young generation's count starts again from 0). Resumed without it, the
    collector's first pass would walk everything made while it was paused and still alive (a can-stop's 20,000
    rows and their dicts: 30-60 ms), only to find no cycle: they are kept. Nothing is exempt from collection: the
    next full pass walks them as it would have once they had aged, and frees any cycle among them."""
    gc.freeze()
    gc.unfreeze()


def paused(items: Sequence[PartitionState]) -> Iterator[PartitionState]:
    """`items` one at a time, the cyclic collector paused from this call (not from the first item: the stream is
    made before it is read) to the last item (or until the stream is dropped). The stream holds the only reference
    to `items` and lets go of it before the collector resumes: rows no one kept are freed by then, and the
    collector's first pass does not walk them (nor count them: they no longer are young objects to it)."""
    held = [items]

    def each() -> Iterator[PartitionState | None]:
        with cycle_collector_paused():
            yield None  # taken below: the pause holds from here
            rows = held.pop()
            yield from rows
            del rows

    stream = each()
    next(stream)
    return cast(Iterator[PartitionState], stream)


class KraftCluster:
    """A KRaft cluster's partitions, read through its brokers (`--bootstrap-server`): the Partitions capability."""

    mode = "kraft"

    def __init__(self, client: KraftClient) -> None:
        self.client = client
        self.description = f"KRaft via --bootstrap-server {','.join(client.addresses)}"
        self._cluster: ClusterDescription | None = None

    # ------------------------------------------------------------------ what every command may need
    def describe(self, fresh: bool = False) -> ClusterDescription:
        if self._cluster is None or fresh:
            self._cluster = self.client.describe_brokers()
        return self._cluster

    def cluster_id(self) -> str | None:
        return self.describe().cluster_id

    def active_controller(self) -> tuple[int, int] | None:
        """The active controller and its epoch: the metadata quorum's leader (DescribeQuorum, which brokers
        forward). Not DescribeCluster's controller id: KRaft brokers put a random live broker there."""
        q, _ = self.client.describe_quorum()
        return None if q.leader_id < 0 else (q.leader_id, q.leader_epoch)

    def controller(self) -> tuple[Controller | None, list[Problem]]:
        active = self.active_controller()
        return (None if active is None else Controller(active[0], 0, None, active[1])), []

    def live_brokers(self, fresh: bool = False) -> frozenset[int]:
        """Registered and unfenced brokers: those TopicCommand counts as live (DescribeCluster's nodes)."""
        return frozenset(b.id for b in self.describe(fresh).brokers if not b.fenced)

    # ------------------------------------------------------------------ coverage
    def coverage(self, brokers: Sequence[int] | None = None) -> Coverage:
        """The partitions each broker hosts on disk (DescribeLogDirs at its advertised address, every topic
        whatever the topic ACLs: it needs Describe on the Cluster resource), for `brokers` (None: every
        registered one, fenced included where DescribeCluster v2 lists them). Services read it before the
        partitions are described, or at once with them and then again in that order when it lists a partition the
        scan did not show, so a topic created meanwhile is not taken for a hidden one (services.partitions.covered).
        A broker whose log dirs cannot be listed (refused, unreachable, a log dir offline, not registered) is in
        `unread`, with why and what would let kadmin list them."""
        with cycle_collector_paused():
            return self._coverage(brokers)

    def _coverage(self, brokers: Sequence[int] | None) -> Coverage:
        """The log dirs of coverage(), read."""
        from kafka.protocol.admin.cluster import DescribeLogDirsRequest as Req

        desc = self.describe(fresh=True)
        where = desc.addresses()
        hosted: dict[int, frozenset[tuple[str, int]]] = {}
        unread: dict[int, str] = {}
        refused: set[int] = set()
        wanted = sorted(where if brokers is None else set(brokers))
        if brokers is None and desc.version < DESCRIBE_CLUSTER_WITH_FENCED:
            unread.update(self._stopped_in_the_quorum(set(where)))
        # every broker asked at once: brokers that do not answer cost one --connect-timeout together
        answers = self.client.send_each({host_port(*where[b]): Req(topics=None) for b in wanted if b in where})
        for bid in wanted:
            if bid not in where:
                unread[bid] = (f"broker {bid} is not registered (DescribeCluster): no address to list its log dirs "
                               "at, so partitions only it hosts cannot be seen")
                continue
            address = host_port(*where[bid])
            try:
                hosted[bid] = self._log_dirs(answers[address])
            except KadminError as e:
                if e.code == "cluster_authorization_failed" or isinstance(e, AuthFailed):
                    refused.add(bid)
                unread[bid] = (f"its log dirs could not be listed (DescribeLogDirs at {address}: {e.message}); "
                               + (NEEDS_CLUSTER_DESCRIBE if bid in refused else
                                  "kadmin must reach every broker's advertised address"))
        return Coverage(hosted, unread, frozenset(where), frozenset(refused))

    def _stopped_in_the_quorum(self, listed: set[int]) -> dict[int, str]:
        """Kafka 3.x (DescribeCluster before v2) lists no fenced or stopped broker, so one that hosts only topics the
        principal may not Describe would be seen nowhere. The metadata quorum's observers are the brokers that
        fetched the metadata log lately (the active controller forgets one after 5 minutes without a fetch, and
        all of them when it changes): each one DescribeCluster does not list is a broker whose log dirs cannot be
        listed. DescribeQuorum needs Describe on the Cluster, as DescribeLogDirs does: refused, the log dirs are
        refused too (every broker unseen), so nothing is lost by going on. ZooKeeper-mode brokers (through
        --bootstrap-server) have no quorum: none; any other failure is raised."""
        try:
            q, _ = self.client.describe_quorum()
        except AuthFailed:
            return {}
        except KadminError as e:
            if e.code == "zookeeper_mode":  # ZooKeeper-mode brokers through --bootstrap-server: no quorum to ask
                return {}
            raise type(e)(f"{e.message} (DescribeQuorum: DescribeCluster v1 lists no stopped broker, and the quorum "
                          "is how kadmin sees one)", code=e.code) from e
        return {o.id: (f"broker {o.id} is not live: the metadata quorum lists it (it fetched the log lately) but "
                       "DescribeCluster does not (before v2 it lists no fenced or stopped broker), so its log dirs "
                       "cannot be listed and partitions only it hosts cannot be seen")
                for o in q.observers if o.id >= 0 and o.id not in listed}

    @staticmethod
    def _log_dirs(resp: Any) -> frozenset[tuple[str, int]]:
        """Every partition in a broker's DescribeLogDirs answer (future replicas included); the KadminError the
        request failed with, raised."""
        if isinstance(resp, KadminError):
            raise resp
        version = int(resp.version)
        code = int(getattr(resp, "error_code", 0) or 0)
        if code:
            raise Rejected(error_name(code), code=error_name(code).lower())
        if not resp.results:  # before v3 a refusal is an empty answer, and a broker always has a log dir
            raise Rejected("no log dir listed" + (" (before DescribeLogDirs v3 a refusal looks so)"
                                                  if version < LOG_DIRS_FIRST_WITH_ERROR else ""),
                           code="cluster_authorization_failed")
        keys: set[tuple[str, int]] = set()
        for d in resp.results:
            if d.error_code:
                name = error_name(d.error_code)
                raise Rejected(f"log dir {d.log_dir}: {name}", code=name.lower())
            keys.update((t.name, int(p.partition_index)) for t in d.topics if t.name != LEASE_TOPIC
                        for p in t.partitions)
        return frozenset(keys)

    # ------------------------------------------------------------------ partitions
    def describe_partitions(self, topics: Sequence[str] | None,
                            progress: Progress | None = None) -> tuple[list[Any], list[Problem]]:
        """Every partition of `topics` (None: all topics), page by page; (topic, partition) answers."""
        with cycle_collector_paused():
            rows, problems, _ = self._describe_partitions(topics, progress, False)
            return rows, problems

    def _describe_partitions(self, topics: Sequence[str] | None, progress: Progress | None,
                             configs: bool) -> tuple[list[Any], list[Problem], list[Any]]:
        """describe_partitions(), read: named topics in one run of pages; all topics in ranges of names read at
        once, each range from its own bootstrap broker (range_starts), the answers put together in name order:
        what one run of pages would return. A page that cannot be read (no bootstrap broker answered it) fails
        the whole read, as in one run. With `configs`, also the DescribeConfigs results of the topics listed
        (their min.insync.replicas, in name order): each range's asked of its own broker as soon as its pages are
        read, while the other ranges' pages may still be on the wire."""
        names = list(topics or [])
        starts = [] if names else self.range_starts()
        if not starts:
            return self._range(names, None, None, progress, None, configs)
        ranges = list(zip([None, *starts], [*starts, None], self.client.addresses, strict=False))
        said = threading.Lock()  # the progress callback is not made for threads

        def told(phase: str, total: int | None, advance: int) -> None:
            with said:
                assert progress is not None
                progress(phase, total, advance)

        rows: list[Any] = []
        problems: list[Problem] = []
        results: list[Any] = []
        for got in all_at_once([functools.partial(self._range, [], start, end, told if progress else None, address,
                                                  configs)
                                for start, end, address in ranges]):
            rows += got[0]
            problems += got[1]
            results += got[2]
        return rows, problems, results

    def _range(self, names: list[str], start: str | None, end: str | None, progress: Progress | None,
               prefer: str | None, configs: bool) -> tuple[list[Any], list[Problem], list[Any]]:
        """One run of pages (_pages) and, with `configs`, the DescribeConfigs results of the topics it listed: of
        `prefer` first (a range's own broker), else in parts at once (topic_configs)."""
        rows, problems = self._pages(names, start, end, progress, prefer)
        listed = sorted({t.name for t, _ in rows}) if configs else []
        if not listed:
            return rows, problems, []
        if prefer is None:
            return rows, problems, topic_configs(self.client, listed)
        return rows, problems, describe_configs(self.client, None, [(RESOURCE_TOPIC, n) for n in listed], prefer)

    def range_starts(self) -> list[str]:
        """Where the second and later ranges of an all-topics read start: topic names that cut the topics
        (ListConfigResources, Kafka 4.1+, lists every topic's name) into as many runs of equal length as
        there are bootstrap addresses (at most MAX_RANGES). Only the cut depends on the list: the ranges cover
        every name, so a topic created or deleted since, or one the principal may not describe, is read (or
        left out) as in one run. No ranges ([]) with one bootstrap address, or when the brokers do not list
        the names (before Kafka 4.1; without DescribeConfigs on the Cluster)."""
        from kafka.protocol.admin.configs import ListConfigResourcesRequest as Req

        runs = min(len(self.client.addresses), MAX_RANGES)
        if runs < 2:
            return []
        try:
            _, resp = self.client.send_any(lambda: Req(min_version=1, resource_types=[TOPIC_RESOURCE]))
        except (Rejected, AuthFailed):
            return []
        if resp.error_code:
            return []
        listed = sorted({r.resource_name for r in resp.config_resources if r.resource_type == TOPIC_RESOURCE})
        return sorted({listed[len(listed) * i // runs] for i in range(1, runs)}) if len(listed) >= runs else []

    def _pages(self, names: list[str], start: str | None, end: str | None, progress: Progress | None,
               prefer: str | None) -> tuple[list[Any], list[Problem]]:
        """One run of DescribeTopicPartitions pages, cursor by cursor: of the `names` (none: all topics), or of
        every topic from `start` (the first page's cursor; all-topics reads list the names from the cursor's on,
        whether it exists or not) to before `end`. Each page to `prefer` first (a bootstrap address)."""
        from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest as Req

        rows: list[Any] = []
        problems: list[Problem] = []
        cursor: Any = None if start is None else (start, 0)
        while True:
            def make(cur: Any = cursor) -> Any:
                kw: dict[str, Any] = {"topics": [Req.TopicRequest(name=n) for n in names],
                                      "response_partition_limit": PAGE_PARTITIONS}
                if cur is not None:
                    kw["cursor"] = Req.Cursor(topic_name=cur[0], partition_index=cur[1])
                return Req(**kw)

            try:
                address, resp = self.client.send_any(make, prefer)
            except Rejected as e:
                if e.code != "unsupported_version" or cursor is not None:
                    raise
                address, resp = self._metadata(names)  # brokers before Kafka 3.8: one Metadata answer
            listed = 0
            for t in resp.topics:
                if end is not None and t.name >= end:
                    break  # the next range's (pages list the topics in name order)
                listed += len(t.partitions)
                if t.name == LEASE_TOPIC and not names:
                    continue  # kadmin's leadership lease (kadmin/domain/lease.py): no data, made and deleted by drains
                if t.error_code == UNKNOWN_TOPIC_OR_PARTITION:
                    problems.append(Problem("not_found", f"topic {t.name} does not exist"))
                    continue
                if t.error_code:
                    problems.append(Problem(error_name(t.error_code).lower(),
                                            f"DescribeTopicPartitions at {address}: topic {t.name}: "
                                            f"{error_name(t.error_code)}", topic=t.name))
                    continue
                for p in t.partitions:
                    rows.append((t, p))
            if progress:
                progress("partitions", None, listed)
            nxt = getattr(resp, "next_cursor", None)
            if nxt is None or (end is not None and nxt.topic_name >= end):
                return rows, problems
            cursor = (nxt.topic_name, int(nxt.partition_index))

    def _metadata(self, names: list[str]) -> tuple[str, Any]:
        """Metadata (all topics, or `names`) for brokers without DescribeTopicPartitions: the same
        partition fields, no eligible leader replicas, no paging."""
        from kafka.protocol.metadata.metadata import MetadataRequest as Req

        def make() -> Any:
            topics = [Req.MetadataRequestTopic(name=n) for n in names] if names else Req.ALL_TOPICS
            return Req(topics=topics, allow_auto_topic_creation=False)

        return self.client.send_any(make)

    def reassignments(self) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
        """Reassignments in flight: (topic, partition) -> (adding, removing)."""
        from kafka.protocol.admin.topics import ListPartitionReassignmentsRequest as Req

        address, resp = self.client.send_to_controller(
            lambda: Req(timeout_ms=int(self.client.timeout * 1000), topics=None))
        if resp.error_code:
            raise self.client.rejected(resp.error_code, resp.error_message, address, "ListPartitionReassignments")
        return {(t.name, int(p.partition_index)): (tuple(p.adding_replicas), tuple(p.removing_replicas))
                for t in resp.topics for p in t.partitions}

    def _reassignments_or_error(self) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] | KadminError:
        """reassignments(), or the error it failed with: the scan reads it beside the pages, and it matters (and its
        error with it) only when the pages listed a partition."""
        try:
            return self.reassignments()
        except KadminError as e:
            return e

    def min_isr_configs(self, topics: Sequence[str], live: Sequence[int], default: int | None,
                        problems: list[Problem], topic_results: list[Any] | None = None,
                        broker_answers: BrokerAnswers | None = None) -> tuple[dict[str, int | None], MinIsrConfig]:
        """Each topic's own min.insync.replicas (None: not set) and the broker levels, from DescribeConfigs
        (kadmin/cluster/min_isr.py, shared with ZooKeeper mode); what was already read is not asked again
        (read_min_isr)."""
        got = read_min_isr(self.client, topics, live, self.describe().addresses(), default, problems,
                           topic_results, broker_answers)
        return got.topics, got.config

    def _live_and_levels(self) -> tuple[frozenset[int], BrokerAnswers]:
        """The live brokers (a fresh DescribeCluster) and their own min.insync.replicas levels, asked right after
        at their addresses: a scan needs the levels only when it lists a partition, and asks them beside the pages."""
        live = self.live_brokers(fresh=True)
        return live, ask_brokers(self.client, sorted(live), self.describe().addresses())

    def iter_partitions(self, topics: Sequence[str] | None = None, progress: Progress | None = None,
                        min_isr_default: int | None = None) -> PartitionStream:
        """The scan handed over one partition at a time (the Cluster protocol's streaming read): a KRaft
        scan is DescribeTopicPartitions pages, read whole before they are judged. The cyclic collector stays
        paused until the stream is consumed (or dropped), the pause held from the scan's into the stream's: judging
        allocates little, and the stream lets go of the rows before the pause ends, so they are neither walked nor
        promoted (promote_survivors) by then."""
        with cycle_collector_paused():
            s = self.scan_partitions(topics, progress=progress, min_isr_default=min_isr_default)
            return PartitionStream(paused(s.partitions), s.live, s.problems, s.unreadable)

    def scan_partitions(self, topics: Sequence[str] | None = None, progress: Progress | None = None,
                        min_isr_default: int | None = None) -> PartitionScan:
        """Every partition of `topics` (None: all the principal may Describe), with its min.insync.replicas.

        min ISR as the leader resolves it, from DescribeConfigs: a partition whose leader's own levels could
        not be read (its DescribeConfigs failed: authorization, address, timeout) has a `problem` unless the
        operator stated --min-isr-default (source "default"); the brokers' static value is source "static"."""
        with cycle_collector_paused():
            return self._scan_partitions(topics, progress, min_isr_default)

    def _scan_partitions(self, topics: Sequence[str] | None, progress: Progress | None,
                         min_isr_default: int | None) -> PartitionScan:
        """scan_partitions(), read. The live brokers (then their min ISR levels), the pages (then their topics' min
        ISR) and the reassignments in flight are read at once (each waits on its own answers; none needs
        another's)."""
        reads: list[Callable[[], Any]] = [self._live_and_levels,
                                          functools.partial(self._describe_partitions, topics, progress, True),
                                          self._reassignments_or_error]
        (live, levels), (answers, problems, topic_results), in_flight = all_at_once(reads)
        if any(p.leader_id >= 0 and p.leader_id not in live for _, p in answers):
            # One metadata image never shows a fenced leader (fencing moves leadership in the same batch), so a
            # leader missing from the live set was unfenced after that was read (a broker back from a restart, then
            # given its leadership back), or fenced after the pages were: read it again. A broker live in either
            # read was live when the pages were read, if it leads in them; a leader live in neither is still a
            # finding (fenced now: its leadership is about to move).
            live = live | self.live_brokers(fresh=True)
        moving: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] = {}
        if answers:  # no partition: no reassignment to know of, and no error about it
            if isinstance(in_flight, AuthFailed):  # no Describe on the Cluster: the replicas being added are unknown
                problems.append(Problem("reassignments_unknown", f"{in_flight.message.split(' (')[0]}: reassignments "
                                        "in flight are unknown (ListPartitionReassignments needs Describe on the "
                                        "Cluster resource); replicas being added count as replicas"))
            elif isinstance(in_flight, KadminError):
                raise in_flight
            else:
                moving = in_flight
        names = sorted({t.name for t, _ in answers})
        topic_min: dict[str, int | None] = {}
        cfg = MinIsrConfig(static=min_isr_default or 1, default=min_isr_default)
        if answers:  # no partition: no min ISR to resolve
            topic_min, cfg = self.min_isr_configs(names, sorted(live), min_isr_default, problems, topic_results,
                                                  levels)
            # a replica that is not live was not asked: its own levels are unknown too (it leads nothing now)
            named: set[int] = set().union(*(p.replica_nodes for _, p in answers))
            down = sorted(named - live - {b for b, _ in cfg.unknown})
            cfg = dataclasses.replace(cfg, unknown=tuple(sorted([*cfg.unknown, *(
                (b, f"broker {b} is not live (fenced or down): its own min.insync.replicas were not asked")
                for b in down)])))
        out = self._rows(answers, topic_min, cfg, problems, moving)
        # a topic asked for by name that the brokers would not describe (TOPIC_AUTHORIZATION_FAILED, ...): its
        # partitions are unknown, so every verdict that could depend on them blocks (as an unreadable znode does)
        described = {t.name for t, _ in answers}
        unreadable = {e.topic: e.message for e in problems
                      if e.topic and e.code not in ("not_found", "reassignments_unknown") and e.partition is None
                      and e.topic not in described and e.message.startswith("DescribeTopicPartitions")}
        return PartitionScan(partitions=out, live=live, problems=problems, unreadable=unreadable)

    @staticmethod
    def _rows(answers: Sequence[Any], topic_min: dict[str, int | None], cfg: MinIsrConfig, problems: Sequence[Problem],
              moving: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]) -> list[PartitionState]:
        """The (topic, partition) answers as PartitionState rows, in (topic, partition) order: each with the min ISR
        its leader applies (`topic_min` and the broker levels of `cfg`), and a topic whose DescribeConfigs failed (a
        `problems` entry of that topic) has its problem. Per topic, not per partition (20,000 partitions are ~1,000
        topics, their partitions one after another): its id's text, its min ISR config and that problem; per topic
        and leader, the min ISR that leader applies, its source and why it is unknown (a partition without a
        leader: per partition)."""
        out: list[PartitionState] = []
        row = partition_row
        last: Any = None
        name, tid, pcfg, bad_configs = "", None, cfg, None
        under: dict[int, tuple[int, str, str | None]] = {}
        for t, p in answers:
            if t is not last:  # a topic's first partition (or the first of its page)
                last = t
                if t.name != name:
                    name, tid = t.name, uuid_text(t.topic_id)
                    pcfg = MinIsrConfig(topic=topic_min.get(name), brokers=cfg.brokers,
                                        cluster_default=cfg.cluster_default, static=cfg.static, unknown=cfg.unknown,
                                        default=cfg.default)
                    bad = [e for e in problems if e.topic == name] if name not in topic_min else []
                    bad_configs = bad[0].message if bad else None
                    under = {}
            index = p.partition_index
            replicas = tuple(p.replica_nodes)  # kafka-python decodes []int32 to a list of int
            leader = p.leader_id
            if leader >= 0:
                got = under.get(leader)
                if got is None:
                    got = under[leader] = min_isr_under(pcfg, leader, replicas)
            else:
                got = min_isr_under(pcfg, None, replicas)
            value, source, problem = got
            min_isr_unread = problem is not None
            if p.error_code and p.error_code != 5:  # 5 LEADER_NOT_AVAILABLE: no leader, not a read error
                problem = f"DescribeTopicPartitions: {error_name(p.error_code)}"
                min_isr_unread = False
            if bad_configs is not None:
                problem = bad_configs
                min_isr_unread = False
            adding, removing = moving.get((name, index), NOT_MOVING) if moving else NOT_MOVING
            out.append(row(
                topic=name, partition=index, replicas=replicas, isr=tuple(p.isr_nodes), leader=leader,
                leader_epoch=p.leader_epoch, adding_replicas=adding, removing_replicas=removing, min_isr=value,
                topic_id=tid, problem=problem, min_isr_source=source, min_isr_config=pcfg,
                elr=replica_list(getattr(p, "eligible_leader_replicas", None)),
                last_known_elr=replica_list(getattr(p, "last_known_elr", None)), min_isr_unread=min_isr_unread))
        out.sort(key=attrgetter("topic", "partition"))  # in order already (pages list them so): one pass to see
        return out

    def watch_states(
        self, keys: Sequence[tuple[str, int]], timeout: float | None,
        settled: Callable[[tuple[int, ...]], bool] | None = None,
        sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
    ) -> Iterator[list[tuple[tuple[str, int], tuple[int, ...] | None]]]:
        """Poll the keys' ISRs (DescribeTopicPartitions of their topics): yield the followed keys' ISRs now,
        then on a schedule of POLL_FIRST s doubling to POLL_MAX s, until `timeout`. KRaft has no watches; a
        missing partition yields ISR None.

        A key whose ISR is `settled` is yielded this once and then no longer followed, and a topic with no
        key left is no longer asked for: the polls shrink as a broker catches up (a poll of 13,000
        partitions takes seconds on a busy machine; of the last few, milliseconds). Nothing left to follow
        ends the polls.

        The schedule: whatever an answer missed happened after its poll began, so the next answer is due
        one interval after that. The next poll starts early by the time it is expected to take (the last
        poll's time, scaled to the partitions still asked for: an upper bound while keys only settle), so
        a change is seen within one interval of happening. A poll too long for that (expected to take
        more than half the interval) is not chased back to back: polls then start one interval apart."""
        deadline = None if timeout is None else clock() + timeout
        wanted = set(keys)
        interval = POLL_FIRST
        while True:
            began = clock()
            answers, _ = self.describe_partitions(sorted({t for t, _ in wanted}))
            took = clock() - began
            seen = {(t.name, int(p.partition_index)): tuple(int(r) for r in p.isr_nodes) for t, p in answers}
            now = [(k, seen.get(k)) for k in sorted(wanted)]
            if settled is not None:
                wanted -= {k for k, isr in now if isr is not None and settled(isr)}
            asked = {t for t, _ in wanted}
            expect = took * sum(1 for t, _ in answers if t.name in asked) / max(1, len(answers))
            yield now
            if not wanted:
                return
            at = clock()
            left = None if deadline is None else deadline - at
            if left is not None and left <= 0:
                return
            due = began + interval - (expect if 2 * expect <= interval else 0.0)  # the next poll's start
            pause = max(0.0, due - at)
            sleep(pause if left is None else min(pause, left))
            interval = min(interval * 2, POLL_MAX)

    def close(self) -> None:
        self.client.close()


class KraftRegistrations:
    """Broker registrations over the Kafka protocol (the Registrations capability): DescribeCluster with fenced
    brokers (v2, KIP-1073), polled with backoff for a watch or a wait. No broker epoch (DescribeCluster
    has none); below v2 a fenced broker is not listed at all."""

    epochs = False
    fencing = True

    def __init__(self, client: KraftClient, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, first: float = 0.25, ceiling: float = 2.0) -> None:
        self.client = client
        self._clock = clock
        self._sleep = sleep
        self._first = first
        self._ceiling = ceiling

    def registrations(self) -> RegistrationTick:
        d = self.client.describe_brokers()
        return RegistrationTick({b.id: Registered(b.id, host=b.host, port=b.port, rack=b.rack, fenced=b.fenced)
                                 for b in d.brokers}, "listed" if d.version >= 2 else "unlisted", d.version)

    def watch_registrations(self, timeout: float | None,
                            on_note: Callable[[str], None] | None = None) -> Iterator[RegistrationTick]:
        """DescribeCluster answers, the first at once, then polled with backoff (`first` ×1.5 up to `ceiling`
        seconds) until `timeout` (None: forever). The first look must succeed; a later one that fails (a
        bootstrap broker went away) is said through `on_note` and retried."""
        from kadmin.domain.kraft_registrations import backoff

        start = self._clock()
        yield self.registrations()
        if on_note is not None:
            on_note(f"polling DescribeCluster every {self._first:g}s, backing off to every {self._ceiling:g}s")
        interval: float | None = None
        while True:
            interval = backoff(interval, self._first, self._ceiling)
            if timeout is not None:
                left = timeout - (self._clock() - start)
                if left <= 0:
                    return
                interval = min(interval, left)
            self._sleep(interval)
            try:
                yield self.registrations()
            except ClusterUnreachable as e:
                if on_note is not None:
                    on_note(f"DescribeCluster failed, retrying: {e.message}")

    def close(self) -> None:
        self.client.close()
