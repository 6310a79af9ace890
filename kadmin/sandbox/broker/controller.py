"""The emulated broker's controller: Kafka 3.9's ZooKeeper-mode ControlledShutdown, reassignments through
/admin/reassign_partitions and preferred-leader elections through /admin/preferred_replica_election, on the
real znodes.

The controller's in-memory context is re-read from ZooKeeper at request time: live brokers and
their epochs (czxids), `/controller`, `/controller_epoch`, assignments and partition states; the
only memory kept is the set of shutting-down brokers, pruned the way Kafka's broker-change
handling prunes it (a broker that deregistered or re-registered with a new epoch leaves it), and
reset when this node stops being the controller or the controller epoch changes.
LeaderAndIsr/StopReplica/UpdateMetadata requests to the other brokers are not sent.

The admin znodes are watched as the 3.9 controller watches them (an exists watch on each, and on /controller,
so that a node that becomes the controller takes up what is pending, as onControllerFailover does); only the
active controller acts. A reassignment that changes the replica set starts as Kafka's does (the topic znode's
adding/removing replicas, a new leader epoch) but never completes: no replica fetches here, so the new replicas
never join the ISR. A reordering (the same replicas: what `kadmin brokers drain` asks for) completes at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kadmin.domain import znodes
from kadmin.sandbox.broker.codec import (
    BROKER_NOT_AVAILABLE,
    NONE,
    STALE_BROKER_EPOCH,
    STALE_CONTROLLER_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    UNKNOWN_SERVER_ERROR,
)
from kadmin.sandbox.zkwire import CheckVersion, Delete, NoNodeError, SetData, ZkSession

log = logging.getLogger(__name__)

MAX_PARTITION_RETRIES = 50  # Kafka retries BADVERSION conflicts without limit; a sandbox should not hang
# kazoo error codes the state writes expect: RolledBack (0, the ops of a failed multi before the
# one that failed), NoNode (-101), BadVersion (-103). zkwire raises the first op's error, so a
# RolledBackError means "the setData failed" and BadVersionError may be either op: re-read to tell.
_WRITE_CONFLICT_CODES = frozenset({0, -101, -103})
REASSIGN_ZNODE = "/admin/reassign_partitions"
ELECTION_ZNODE = "/admin/preferred_replica_election"
WATCHED = ("/controller", REASSIGN_ZNODE, ELECTION_ZNODE)


# --------------------------------------------------------------------------------- ZK views
@dataclass(frozen=True)
class PartitionState:
    """/brokers/topics/<t>/partitions/<p>/state (TopicPartitionStateZNode) plus its zkVersion."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int = 0
    zk_version: int = 0  # the partition epoch; the expected version of the next write

    @classmethod
    def decode(cls, data: bytes | None, zk_version: int) -> PartitionState:
        try:
            doc = json.loads((data or b"").decode("utf-8"))
            isr = doc["isr"]
            if not isinstance(isr, list) or not all(isinstance(r, int) for r in isr):
                raise ValueError(f"isr is {isr!r}")
            return cls(
                leader=int(doc["leader"]),
                leader_epoch=int(doc["leader_epoch"]),
                controller_epoch=int(doc["controller_epoch"]),
                isr=tuple(isr),
                leader_recovery_state=int(doc.get("leader_recovery_state", 0)),
                zk_version=zk_version,
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
            raise znodes.ZnodeFormatError(f"partition state: {e}") from e

    def encode(self) -> bytes:
        """Kafka's exact format (compact JSON; leader_recovery_state only when not RECOVERED)."""
        return znodes.encode_partition_state(
            self.leader, self.leader_epoch, self.controller_epoch, list(self.isr), self.leader_recovery_state
        )

    def new_leader_and_isr(self, leader: int, isr: Iterable[int], controller_epoch: int) -> PartitionState:
        """LeaderAndIsr.newLeaderAndIsr: leader_epoch + 1, recovery state kept; the controller
        epoch is the writing controller's."""
        return PartitionState(
            leader, self.leader_epoch + 1, controller_epoch, tuple(isr), self.leader_recovery_state, self.zk_version
        )


@dataclass(frozen=True)
class Partition:
    topic: str
    index: int
    replicas: tuple[int, ...]  # the assignment, in order (the election walks it in this order)
    state: PartitionState | None  # None: no state znode (no leadership info)

    @property
    def state_path(self) -> str:
        return f"/brokers/topics/{self.topic}/partitions/{self.index}/state"


@dataclass(frozen=True)
class LiveBroker:
    id: int
    epoch: int  # czxid of /brokers/ids/<id> (KIP-380)
    registration: znodes.Registration | None  # None when the znode cannot be decoded


@dataclass
class ControllerContext:
    """What this node, as the controller, knows at the time of one request."""

    epoch: int  # the /controller_epoch value: written into partition states
    epoch_zk_version: int  # fences every state write (Kafka's CheckOp on /controller_epoch)
    live: dict[int, LiveBroker] = field(default_factory=dict)


class KafkaError(Exception):
    """A request failed with a Kafka error code (Errors.forException of the controller's exception)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------------------- controller
class Controller:
    """Node `node_id`'s controller logic and ZooKeeper reads, on the session `session()` returns.

    All methods are coroutines on the broker's event loop.
    """

    def __init__(self, node_id: int, session: Callable[[], ZkSession]) -> None:
        self.node_id = node_id
        self._session = session
        # The controller's event queue runs one event at a time: ControlledShutdowns are serialized.
        self._controller_lock = asyncio.Lock()
        # Kafka's controllerContext.shuttingDownBrokerIds, with each broker's epoch at the time,
        # valid for the controller epoch (value, zkVersion) it was built under.
        self._shutting_down: dict[int, int] = {}
        self._context_epoch: tuple[int, int] | None = None
        # the admin znodes' watches (start_watching): the paths with a watch left, and the loop that acts
        self._armed: set[str] = set()
        self._wake = asyncio.Event()
        self._duties: asyncio.Task[None] | None = None

    @property
    def zk(self) -> ZkSession:
        return self._session()

    # ------------------------------------------------------------------ ZooKeeper reads
    async def get(self, path: str) -> tuple[bytes | None, Any] | None:
        """getData, or None when the znode does not exist."""
        try:
            return await self.zk.get(path)
        except NoNodeError:
            return None

    async def children(self, path: str) -> list[str]:
        try:
            return await self.zk.children(path)
        except NoNodeError:
            return []

    async def live_brokers(self) -> dict[int, LiveBroker]:
        """getAllBrokerAndEpochsInCluster: every registration with its czxid (pipelined reads)."""
        ids = sorted(int(c) for c in await self.children("/brokers/ids") if c.lstrip("-").isdigit())
        results = await asyncio.gather(*(self.get(f"/brokers/ids/{i}") for i in ids))
        live: dict[int, LiveBroker] = {}
        for bid, res in zip(ids, results, strict=True):
            if res is None:
                continue  # deregistered between the listing and the read
            data, stat = res
            try:
                reg: znodes.Registration | None = znodes.decode_registration(data)
            except znodes.ZnodeFormatError as e:
                log.warning("broker %d: /brokers/ids/%d: %s", self.node_id, bid, e)
                reg = None
            live[bid] = LiveBroker(bid, stat.czxid, reg)
        return live

    async def controller_id(self) -> int:
        res = await self.get("/controller")
        if res is None:
            return -1
        try:
            return znodes.decode_controller(res[0]).broker_id
        except znodes.ZnodeFormatError:
            return -1

    async def cluster_id(self) -> str | None:
        res = await self.get("/cluster/id")
        if res is None:
            return None
        try:
            return znodes.decode_cluster_id(res[0])
        except znodes.ZnodeFormatError:
            return None

    async def read_state(self, topic: str, index: int) -> PartitionState | None:
        res = await self.get(f"/brokers/topics/{topic}/partitions/{index}/state")
        return None if res is None else PartitionState.decode(res[0], res[1].version)

    async def read_topic(self, topic: str) -> list[Partition] | None:
        """A topic's assignment and partition states; None when the topic znode does not exist."""
        res = await self.get(f"/brokers/topics/{topic}")
        if res is None:
            return None
        try:
            doc = json.loads((res[0] or b"{}").decode("utf-8"))
            assignment = {int(p): tuple(int(r) for r in rs) for p, rs in (doc.get("partitions") or {}).items()}
        except (UnicodeDecodeError, ValueError, TypeError, AttributeError) as e:
            raise znodes.ZnodeFormatError(f"/brokers/topics/{topic}: {e}") from e
        indexes = sorted(assignment)
        states = await asyncio.gather(*(self.read_state(topic, p) for p in indexes))
        return [Partition(topic, p, assignment[p], s) for p, s in zip(indexes, states, strict=True)]

    async def all_partitions(self) -> list[Partition]:
        """Every partition of every topic not queued for deletion (/admin/delete_topics/<t>)."""
        deleting = set(await self.children("/admin/delete_topics"))
        topics = sorted(t for t in await self.children("/brokers/topics") if t not in deleting)
        per_topic = await asyncio.gather(*(self.read_topic(t) for t in topics))
        return [p for parts in per_topic if parts for p in parts]

    # ------------------------------------------------------------------ ControlledShutdown
    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[int, list[tuple[str, int]]]:
        """(error code, partitions the broker still leads), as the controller answers ControlledShutdown."""
        async with self._controller_lock:
            try:
                remaining = await self._do_controlled_shutdown(broker_id, broker_epoch)
                error = NONE
            except KafkaError as e:
                log.info("broker %d: ControlledShutdown of %d: %s", self.node_id, broker_id, e)
                error, remaining = e.code, []
            except Exception:  # noqa: BLE001 - Errors.forException(anything else) is UNKNOWN_SERVER_ERROR
                log.exception("broker %d: ControlledShutdown of %d failed", self.node_id, broker_id)
                error, remaining = UNKNOWN_SERVER_ERROR, []
        return error, remaining

    async def _controller_context(self) -> ControllerContext:
        """isActive, the controller epoch and the live brokers, as of now. Raises STALE_CONTROLLER_EPOCH
        (ControllerMovedException) when this node is not the controller."""
        if await self.controller_id() != self.node_id:
            self._shutting_down.clear()  # onControllerResignation resets the context
            self._context_epoch = None
            raise KafkaError(STALE_CONTROLLER_EPOCH, "Controller moved to another broker. Aborting controlled shutdown")
        res = await self.get("/controller_epoch")
        if res is None:
            raise KafkaError(STALE_CONTROLLER_EPOCH, "no /controller_epoch")
        ctx = ControllerContext(epoch=int((res[0] or b"0").decode()), epoch_zk_version=res[1].version)
        if self._context_epoch != (ctx.epoch, ctx.epoch_zk_version):
            # Elected again since the last request (a new controller epoch): a fresh context.
            self._shutting_down.clear()
            self._context_epoch = (ctx.epoch, ctx.epoch_zk_version)
        ctx.live = await self.live_brokers()
        # processBrokerChange -> onBrokerFailure: dead and bounced (new epoch) brokers leave the set.
        self._shutting_down = {b: e for b, e in self._shutting_down.items() if b in ctx.live and ctx.live[b].epoch == e}
        return ctx

    async def _do_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[tuple[str, int]]:
        """KafkaController.doControlledShutdown (3.9); returns the partitions the broker still leads."""
        ctx = await self._controller_context()
        if broker_epoch != UNKNOWN_BROKER_EPOCH:
            if broker_id not in ctx.live:
                # controllerContext.liveBrokerIdAndEpochs(id) is a Scala Map.apply: NoSuchElementException,
                # which Errors.forException maps to UNKNOWN_SERVER_ERROR. This check precedes the liveness one.
                raise KafkaError(UNKNOWN_SERVER_ERROR, f"key not found: {broker_id}")
            cached = ctx.live[broker_id].epoch
            if broker_epoch < cached:  # strictly older: a newer epoch than the cached one is accepted
                raise KafkaError(
                    STALE_BROKER_EPOCH,
                    f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
                    f"{broker_id}. Current broker epoch is {cached}.",
                )
        if broker_id not in ctx.live:  # liveOrShuttingDownBrokerIds: the shutting-down ones are registered too
            raise KafkaError(BROKER_NOT_AVAILABLE, f"Broker id {broker_id} does not exist.")
        self._shutting_down[broker_id] = ctx.live[broker_id].epoch

        # partitionsOnBroker(id) with RF > 1, with leadership info, topic not queued for deletion.
        partitions = await self.all_partitions()
        act_on = [p for p in partitions if broker_id in p.replicas and len(p.replicas) > 1 and p.state is not None]
        led = [p for p in act_on if p.state is not None and p.state.leader == broker_id]
        followed = [p for p in act_on if p.state is not None and p.state.leader != broker_id]
        for p in led:  # OnlinePartition with ControlledShutdownPartitionLeaderElectionStrategy
            await self._retry_write(ctx, p, self._elect_for_controlled_shutdown)
        for p in followed:  # OfflineReplica: shrink the ISR (StopReplica itself is not emulated)
            await self._retry_write(ctx, p, functools.partial(self._remove_replica_from_isr, broker_id))

        # partitionLeadersOnBroker(id): still led by it, RF > 1, not queued for deletion (read back).
        after = await self.all_partitions()
        return [
            (p.topic, p.index)
            for p in after
            if p.state is not None and p.state.leader == broker_id and len(p.replicas) > 1
        ]

    def _elect_for_controlled_shutdown(
        self, ctx: ControllerContext, p: Partition, state: PartitionState
    ) -> PartitionState | None:
        """Election.leaderForControlledShutdown: the first replica of the assignment that is live
        (shutting-down brokers count as live), in the ISR, and not shutting down; the ISR loses
        every shutting-down broker. None (no leader found) leaves the partition unchanged."""
        shutting = set(self._shutting_down)
        leader = next(
            (r for r in p.replicas if r in ctx.live and r in state.isr and r not in shutting),
            None,
        )
        if leader is None:
            log.info("broker %d: no leader for %s-%d in ISR %s", self.node_id, p.topic, p.index, list(state.isr))
            return None
        return state.new_leader_and_isr(leader, [r for r in state.isr if r not in shutting], ctx.epoch)

    @staticmethod
    def _remove_replica_from_isr(
        replica: int, ctx: ControllerContext, p: Partition, state: PartitionState
    ) -> PartitionState | None:
        """ZkReplicaStateMachine.doRemoveReplicasFromIsr: only when the replica is in the ISR; a sole
        ISR member stays (the ISR is never emptied); a leader that goes leaves no leader (-1);
        leader_epoch + 1 (newLeaderAndIsr) either way."""
        if replica not in state.isr:
            return None
        leader = -1 if state.leader == replica else state.leader
        isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
        return state.new_leader_and_isr(leader, isr, ctx.epoch)

    # ------------------------------------------------------------------ the admin znodes
    def start_watching(self) -> None:
        """Watch /controller and the admin znodes from now on (EmulatedBroker.start)."""
        if self._duties is None:
            self._wake.set()
            self._duties = asyncio.get_running_loop().create_task(self._watch_loop())

    async def stop_watching(self) -> None:
        task, self._duties = self._duties, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _fired(self, path: str) -> None:
        self._armed.discard(path)
        self._wake.set()

    async def _watch_loop(self) -> None:
        """Wait for a watch to fire, leave the fired ones again, and act if this node is the controller."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                for path in WATCHED:
                    if path not in self._armed:
                        self._armed.add(path)
                        await self.zk.exists(path, watch=self._fired)
                async with self._controller_lock:
                    await self._act_on_admin_znodes()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - a lost connection: its watches fire again on the next one
                log.info("broker %d: watching the admin znodes: %s", self.node_id, e)

    async def _act_on_admin_znodes(self) -> None:
        """As the controller's ZkPartitionReassignment and ReplicaLeaderElection(ZkTriggered) events do."""
        try:
            ctx = await self._controller_context()
        except KafkaError:
            return  # not the active controller
        try:
            if await self.get(REASSIGN_ZNODE) is not None:
                await self._zk_reassignment(ctx)
            if await self.get(ELECTION_ZNODE) is not None:
                await self._zk_preferred_election(ctx)
        except KafkaError as e:
            log.info("broker %d: %s", self.node_id, e)  # the controller moved meanwhile

    async def _fenced(self, ctx: ControllerContext, op: Any) -> None:
        """One write behind the controller epoch's zkVersion (KafkaZkClient's CheckOp); STALE_CONTROLLER_EPOCH
        when that moved."""
        try:
            await self.zk.multi([CheckVersion("/controller_epoch", ctx.epoch_zk_version), op])
        except Exception as e:
            res = await self.get("/controller_epoch")
            if res is None or res[1].version != ctx.epoch_zk_version:
                raise KafkaError(STALE_CONTROLLER_EPOCH, "Controller epoch zkVersion check fails") from e
            raise

    @staticmethod
    def _admin_partitions(data: bytes | None, with_replicas: bool) -> list[tuple[str, int, tuple[int, ...]]] | None:
        """The znode's {"version":1,"partitions":[{"topic","partition"(,"replicas")}]}; None when unreadable."""
        try:
            doc = json.loads((data or b"").decode("utf-8"))
            return [(str(e["topic"]), int(e["partition"]),
                     tuple(int(r) for r in e["replicas"]) if with_replicas else ())
                    for e in doc["partitions"]]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            return None

    async def _zk_preferred_election(self, ctx: ControllerContext) -> None:
        """processReplicaLeaderElection(PREFERRED, ZkTriggered): for each listed partition that exists, is not
        being deleted and is not led by its preferred replica (the assignment's first), elect that replica if it
        is live (not shutting down) and in the ISR (Election.leaderForPreferredReplica: the ISR is kept, the
        leader epoch goes up by one); then delete the znode, whatever the outcome (Kafka gives no answer there)."""
        res = await self.get(ELECTION_ZNODE)
        if res is None:
            return
        listed = self._admin_partitions(res[0], with_replicas=False)
        if listed is None:
            log.warning("broker %d: %s is not valid JSON of partitions: nothing elected", self.node_id, ELECTION_ZNODE)
            listed = []
        known = {(p.topic, p.index): p for p in await self.all_partitions()}  # topics being deleted left out
        for topic, index, _ in dict.fromkeys(listed):
            p = known.get((topic, index))
            if p is None or p.state is None or not p.replicas:
                log.info("broker %d: skipping the preferred election of %s-%d: no such partition", self.node_id,
                         topic, index)
                continue
            if p.state.leader == p.replicas[0]:
                continue  # ELECTION_NOT_NEEDED
            await self._retry_write(ctx, p, self._elect_preferred)
        await self._fenced(ctx, Delete(ELECTION_ZNODE, -1))

    def _elect_preferred(self, ctx: ControllerContext, p: Partition, state: PartitionState) -> PartitionState | None:
        preferred = p.replicas[0]
        if state.leader == preferred:
            return None
        if preferred not in ctx.live or preferred in self._shutting_down or preferred not in state.isr:
            log.info("broker %d: %s-%d: preferred replica %d is not live and in the ISR %s: leader stays %d",
                     self.node_id, p.topic, p.index, preferred, list(state.isr), state.leader)
            return None
        return state.new_leader_and_isr(preferred, state.isr, ctx.epoch)

    def _elect_for_reassignment(
        self, target: tuple[int, ...], ctx: ControllerContext, p: Partition, state: PartitionState
    ) -> PartitionState | None:
        """Election.leaderForReassign: the first target replica that is live and in the ISR; the ISR is kept."""
        leader = next((r for r in target if r in ctx.live and r not in self._shutting_down and r in state.isr), None)
        if leader is None:
            log.info("broker %d: %s-%d: no target replica of %s is live and in the ISR %s", self.node_id, p.topic,
                     p.index, list(target), list(state.isr))
            return None
        return state.new_leader_and_isr(leader, state.isr, ctx.epoch)

    @staticmethod
    def _new_epoch(ctx: ControllerContext, p: Partition, state: PartitionState) -> PartitionState | None:
        """updateLeaderEpoch: the leader epoch goes up even though leader and ISR stay (a new replica list)."""
        return state.new_leader_and_isr(state.leader, state.isr, ctx.epoch)

    async def _zk_reassignment(self, ctx: ControllerContext) -> None:
        """processZkPartitionReassignment: each listed partition reassigned to its target replicas
        (onPartitionReassignment); the completed and the failed ones (no such partition, topic being deleted)
        taken out of the znode, which goes once empty. An incomplete one (new replicas not in the ISR) stays."""
        res = await self.get(REASSIGN_ZNODE)
        if res is None:
            return
        listed = self._admin_partitions(res[0], with_replicas=True)
        if listed is None:  # KafkaZkClient.getPartitionReassignment logs it and reads no reassignment
            log.warning("broker %d: %s is not valid JSON of reassignments", self.node_id, REASSIGN_ZNODE)
            return
        known = {(p.topic, p.index): p for p in await self.all_partitions()}
        done: set[tuple[str, int]] = set()
        for topic, index, target in listed:
            p = known.get((topic, index))
            if p is None or not p.replicas or not target:
                log.info("broker %d: reassignment of %s-%d: UNKNOWN_TOPIC_OR_PARTITION", self.node_id, topic, index)
                done.add((topic, index))
            elif await self._reassign(ctx, p, target):
                done.add((topic, index))
        left = [(t, i, r) for t, i, r in listed if (t, i) not in done]
        if not left:
            await self._fenced(ctx, Delete(REASSIGN_ZNODE, -1))
        elif len(left) < len(listed):
            doc = {"version": 1, "partitions": [{"topic": t, "partition": i, "replicas": list(r)} for t, i, r in left]}
            await self._fenced(ctx, SetData(REASSIGN_ZNODE, json.dumps(doc, separators=(",", ":")).encode(), -1))

    async def _reassign(self, ctx: ControllerContext, p: Partition, target: tuple[int, ...]) -> bool:
        """onPartitionReassignment; True when it completed."""
        res = await self.get(f"/brokers/topics/{p.topic}")
        if res is None:
            return True
        topic = znodes.decode_topic(res[0])
        adding = topic["adding"].get(p.index, ())
        origin = tuple(r for r in p.replicas if r not in adding)  # ReplicaAssignment.originReplicas
        full = tuple(dict.fromkeys(target + origin))  # reassignTo(target)
        new_adding = tuple(r for r in full if r not in origin)
        new_removing = tuple(r for r in full if r not in target)
        current = (p.replicas, adding, topic["removing"].get(p.index, ()))
        if current != (full, new_adding, new_removing):  # updateCurrentReassignment: U1
            await self._write_assignment(ctx, p.topic, topic, p.index, full, new_adding, new_removing)
        state = await self.read_state(p.topic, p.index)
        if state is None:
            return False
        if (new_adding or new_removing) and not set(target) <= set(state.isr):
            await self._retry_write(ctx, p, self._new_epoch)  # A1: a new leader epoch for the new replica list
            return False
        # B1-B7: the target is the assignment; the leader moved if it must; removed replicas out of the ISR
        moved = dataclasses.replace(p, replicas=target)
        if state.leader not in target or state.leader not in ctx.live or state.leader in self._shutting_down:
            await self._retry_write(ctx, moved, functools.partial(self._elect_for_reassignment, target))
        else:
            await self._retry_write(ctx, moved, self._new_epoch)
        for r in new_removing:
            await self._retry_write(ctx, moved, functools.partial(self._remove_replica_from_isr, r))
        await self._write_assignment(ctx, p.topic, topic, p.index, target, (), ())
        return True

    async def _write_assignment(self, ctx: ControllerContext, name: str, topic: znodes.TopicAssignment, index: int,
                                replicas: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...]) -> None:
        """setTopicAssignmentRaw: the whole topic znode (TopicZNode v3) with this partition's new assignment."""
        partitions = dict(topic["partitions"])
        adds, removes = dict(topic["adding"]), dict(topic["removing"])
        partitions[index] = replicas
        for m, v in ((adds, adding), (removes, removing)):
            m.pop(index, None)
            if v:
                m[index] = v
        topic["partitions"], topic["adding"], topic["removing"] = partitions, adds, removes  # for the next write
        doc: dict[str, Any] = {"version": 3}
        if topic["topic_id"] is not None:
            doc["topic_id"] = topic["topic_id"]
        doc["partitions"] = {str(i): list(r) for i, r in sorted(partitions.items())}
        doc["adding_replicas"] = {str(i): list(r) for i, r in sorted(adds.items())}
        doc["removing_replicas"] = {str(i): list(r) for i, r in sorted(removes.items())}
        await self._fenced(ctx, SetData(f"/brokers/topics/{name}", json.dumps(doc, separators=(",", ":")).encode(),
                                        -1))

    async def _retry_write(
        self,
        ctx: ControllerContext,
        p: Partition,
        change: Callable[[ControllerContext, Partition, PartitionState], PartitionState | None],
    ) -> None:
        """Read the state, compute the change, write it with the partition epoch as the expected
        version (fenced by the controller epoch's zkVersion); on BADVERSION read again and retry,
        as the controller's election and ISR-removal loops do."""
        for _ in range(MAX_PARTITION_RETRIES):
            state = await self.read_state(p.topic, p.index)
            if state is None:
                return  # no leadership info (the partition went away)
            if state.controller_epoch > ctx.epoch:
                # Written by a newer controller: Kafka aborts this partition's change (StateChangeFailed).
                log.info("broker %d: %s-%d has controller epoch %d > %d", self.node_id, p.topic, p.index,
                         state.controller_epoch, ctx.epoch)
                return
            new = change(ctx, p, state)
            if new is None:
                return
            if await self._write_state(ctx, p.state_path, new):
                return
        log.warning("broker %d: %s-%d: gave up after %d conflicting writes", self.node_id, p.topic, p.index,
                    MAX_PARTITION_RETRIES)

    async def _write_state(self, ctx: ControllerContext, path: str, state: PartitionState) -> bool:
        """True when written; False on a partition-epoch conflict (retry); raises STALE_CONTROLLER_EPOCH
        when the controller epoch moved (KafkaZkClient's CheckOp failed: ControllerMovedException)."""
        try:
            fence = CheckVersion("/controller_epoch", ctx.epoch_zk_version)
            await self.zk.multi([fence, SetData(path, state.encode(), state.zk_version)])
            return True
        except Exception as e:
            if getattr(e, "code", None) not in _WRITE_CONFLICT_CODES:
                raise
        res = await self.get("/controller_epoch")
        if res is None or res[1].version != ctx.epoch_zk_version:
            raise KafkaError(STALE_CONTROLLER_EPOCH, "Controller epoch zkVersion check fails")
        return False
