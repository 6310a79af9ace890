"""The emulated broker's controller: Kafka 3.9's ZooKeeper-mode ControlledShutdown, on the real znodes.

The controller's in-memory context is re-read from ZooKeeper at request time: live brokers and
their epochs (czxids), `/controller`, `/controller_epoch`, assignments and partition states; the
only memory kept is the set of shutting-down brokers, pruned the way Kafka's broker-change
handling prunes it (a broker that deregistered or re-registered with a new epoch leaves it), and
reset when this node stops being the controller or the controller epoch changes.
LeaderAndIsr/StopReplica/UpdateMetadata requests to the other brokers are not sent.
"""

from __future__ import annotations

import asyncio
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
from kadmin.sandbox.zkwire import CheckVersion, NoNodeError, SetData, ZkSession

log = logging.getLogger(__name__)

MAX_PARTITION_RETRIES = 50  # Kafka retries BADVERSION conflicts without limit; a sandbox should not hang
# kazoo error codes the state writes expect: RolledBack (0, the ops of a failed multi before the
# one that failed), NoNode (-101), BadVersion (-103). zkwire raises the first op's error, so a
# RolledBackError means "the setData failed" and BadVersionError may be either op: re-read to tell.
_WRITE_CONFLICT_CODES = frozenset({0, -101, -103})


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
