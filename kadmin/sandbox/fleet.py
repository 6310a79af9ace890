"""Emulated Kafka brokers: each registers from its own ZooKeeper session, in Kafka's exact format.

What a 3.9 ZK-mode broker does, and what this emulates:
- startup creates Kafka's persistent paths (ZkData.PersistentZkPaths) and `/cluster/id`;
- registration is one multi of create(EPHEMERAL, null data) + setData(version 0), so the znode's
  czxid is the broker epoch (KIP-380) and its dataVersion is 1;
- the controller election is a multi of create(/controller, EPHEMERAL) + setData(/controller_epoch);
- a bounce closes the session (the ephemeral znodes go) and registers again from a new session.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from kadmin.domain import znodes
from kadmin.sandbox.zkwire import OPEN_ACL_UNSAFE, Create, NodeExistsError, NoNodeError, SetData, ZkSession

T = TypeVar("T")

PERSISTENT_PATHS = (
    "/consumers",
    "/brokers/ids",
    "/brokers/topics",
    "/config/changes",
    "/admin/delete_topics",
    "/brokers/seqid",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)


class BrokerStartupError(RuntimeError):
    """What a real broker exits with at startup (here: its registration znode is held by another session)."""


@dataclass
class BrokerSpec:
    id: int
    host: str | None = "127.0.0.1"
    port: int = 9092
    version: int = 5
    rack: str | None = None
    data: bytes | None = None  # raw znode content overriding the encoder (for invalid/legacy tests)

    def encode(self, now_ms: int) -> bytes:
        if self.data is not None:
            return self.data
        endpoints = [f"PLAINTEXT://{self.host or ''}:{self.port}"] if self.version >= 2 else []
        host = self.host
        return znodes.encode_registration(
            host=host,
            port=self.port,
            endpoints=endpoints,
            timestamp_ms=now_ms,
            version=self.version,
            rack=self.rack,
        )


class Fleet:
    """N emulated brokers on one event loop. All methods are coroutines on that loop."""

    def __init__(
        self,
        hosts: Sequence[tuple[str, int]],
        chroot: str = "",
        session_timeout_ms: int = 6000,
        auth: Sequence[tuple[str, str]] = (),
        acl: Any = None,
        clock: Callable[[], float] = time.time,
        serve_kafka: bool = False,
    ) -> None:
        self.hosts = list(hosts)
        self.chroot = chroot
        self.session_timeout_ms = session_timeout_ms
        self.auth = list(auth)
        self.acl = acl or OPEN_ACL_UNSAFE
        self.clock = clock
        self.specs: dict[int, BrokerSpec] = {}
        self.sessions: dict[int, ZkSession] = {}
        self.epochs: dict[int, int] = {}
        self.controller_id: int | None = None
        self._admin: ZkSession | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.elect_controller_on_change = True
        # With serve_kafka each broker also listens for the Kafka protocol (kadmin.sandbox.broker.server),
        # so the controller can be asked for a ControlledShutdown; the port is in its registration.
        self.serve_kafka = serve_kafka
        self.kafka_servers: dict[int, Any] = {}
        self._served_once: set[int] = set()
        self.catch_up_seconds: float | None = 1.0

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def _session(self, on_expired: Callable[[], Any] | None = None) -> ZkSession:
        return await ZkSession.open(
            self.hosts,
            chroot=self.chroot,
            timeout_ms=self.session_timeout_ms,
            auth=self.auth,
            on_expired=on_expired,
        )

    async def admin(self) -> ZkSession:
        if self._admin is None:
            self._admin = await self._session()
        return self._admin

    async def setup_cluster(self, cluster_id: str = "kadmin-sandbox-cluster") -> None:
        """What a broker's startup creates: the persistent paths and /cluster/id."""
        if self.chroot.strip("/"):
            root = await ZkSession.open(self.hosts, timeout_ms=self.session_timeout_ms, auth=self.auth)
            try:
                await root.ensure_path(self.chroot, acl=self.acl)
            finally:
                await root.close()
        s = await self.admin()
        for p in PERSISTENT_PATHS:
            await s.ensure_path(p, acl=self.acl)
        await s.ensure_path("/cluster", acl=self.acl)
        with contextlib.suppress(Exception):
            await s.create("/cluster/id", znodes.encode_cluster_id(cluster_id), acl=self.acl)

    async def register(self, spec: BrokerSpec | int, catch_up: bool = True, **kw: Any) -> int:
        """Start broker `spec` from a new session; returns its epoch (the znode's czxid).

        With serve_kafka and `catch_up`, the broker rejoins its ISRs a moment later (a restart).
        """
        if isinstance(spec, int):
            spec = BrokerSpec(spec, port=9091 + spec if "port" not in kw else kw.pop("port"), **kw)
        self.specs[spec.id] = spec
        bid = spec.id
        if self.serve_kafka and bid not in self.kafka_servers:
            spec.port = await self._start_kafka_server(spec)

        async def expired() -> None:
            # A real broker whose session expired re-registers from a new one: a new epoch.
            if self.sessions.get(bid) is session:
                del self.sessions[bid]
                await self.register(spec)

        session = await self._session(on_expired=expired)
        path = f"/brokers/ids/{bid}"
        try:
            results = await session.multi(
                [Create(path, None, self.acl, 1), SetData(path, spec.encode(self._now_ms()), 0)]
            )
        except NodeExistsError:
            # Kafka 3.9's checked ephemeral create: a znode owned by another session (a crashed
            # predecessor whose session has not expired yet) is fatal; the broker exits at startup.
            owner = None
            with contextlib.suppress(NoNodeError):
                owner = (await session.get(path))[1].ephemeral_owner
            await session.close()
            await self._stop_kafka_server(bid)
            raise BrokerStartupError(
                f"Error while creating ephemeral at {path}, node already exists and owner "
                f"'{hex(owner) if owner is not None else 'unknown'}' does not match current session "
                f"'{hex(session.session_id)}'") from None
        stat = results[1]
        self.sessions[bid] = session
        self.epochs[bid] = stat.czxid
        if self.serve_kafka and catch_up and self.catch_up_seconds is not None:
            task = asyncio.get_running_loop().create_task(self._catch_up(bid, stat.czxid))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if self.elect_controller_on_change and self.controller_id is None:
            await self.elect_controller()
        return stat.czxid

    async def _start_kafka_server(self, spec: BrokerSpec) -> int:
        from kadmin.sandbox.broker.server import EmulatedBroker

        first = spec.id not in self._served_once
        srv = EmulatedBroker(spec.id, self.hosts, chroot=self.chroot, port=0 if first else spec.port,
                             zk_session=await self.admin())
        port = await srv.start()
        self.kafka_servers[spec.id] = srv
        self._served_once.add(spec.id)
        return port

    async def _stop_kafka_server(self, bid: int) -> None:
        srv = self.kafka_servers.pop(bid, None)
        if srv is not None:
            await srv.stop()

    async def _catch_up(self, bid: int, epoch: int) -> None:
        """A restarted broker's replicas catch up: after a while it rejoins the ISR of every partition
        it replicates (its leader's AlterPartition in real Kafka), and leads partitions that had none."""
        await asyncio.sleep(self.catch_up_seconds or 0)
        if self.epochs.get(bid) != epoch:
            return  # bounced or stopped meanwhile
        s = await self.admin()
        for topic in await s.children("/brokers/topics"):
            try:
                data, _ = await s.get(f"/brokers/topics/{topic}")
                assignment = znodes.decode_topic(data)["partitions"]
            except Exception:  # noqa: BLE001 - a topic a real controller could not read either: skip it
                continue
            for p, replicas in assignment.items():
                if bid not in replicas:
                    continue
                path = f"/brokers/topics/{topic}/partitions/{p}/state"
                try:
                    raw, stat = await s.get(path)
                    st = znodes.decode_partition_state(raw)
                except Exception:  # noqa: BLE001 - missing or unreadable: the controller's problem
                    continue
                leader, isr, leader_epoch = st["leader"], list(st["isr"]), st["leader_epoch"]
                if leader < 0:
                    leader, isr, leader_epoch = bid, [bid], leader_epoch + 1
                elif bid not in isr and leader in self.sessions:
                    isr.append(bid)
                else:
                    continue
                with contextlib.suppress(Exception):  # BadVersion: someone else wrote it; leave it
                    await s.set(path, znodes.encode_partition_state(leader, leader_epoch, st["controller_epoch"],
                                                                    isr, st["leader_recovery_state"]), stat.version)

    async def update(self, bid: int) -> int:
        """Kafka's updateBrokerInfo: setData(version=-1) on the live znode; the epoch stays."""
        spec = self.specs[bid]
        stat = await self.sessions[bid].set(f"/brokers/ids/{bid}", spec.encode(self._now_ms()), -1)
        return stat.mzxid

    async def stop(self, bid: int) -> None:
        """Close broker `bid`'s session: its registration (and /controller, if it held it) goes."""
        session = self.sessions.pop(bid, None)
        if session is not None:
            await session.close()
        self.epochs.pop(bid, None)
        await self._stop_kafka_server(bid)
        if self.controller_id == bid:
            self.controller_id = None
            if self.elect_controller_on_change:
                await self.elect_controller()

    async def crash(self, bid: int) -> None:
        """Drop broker `bid` without closing its session: ZooKeeper expires it after the timeout."""
        session = self.sessions.pop(bid, None)
        if session is not None:
            await session.abandon()
        self.epochs.pop(bid, None)
        await self._stop_kafka_server(bid)
        if self.controller_id == bid:
            self.controller_id = None
            if self.elect_controller_on_change:
                self._tasks.add(asyncio.get_running_loop().create_task(self._elect_when_expired()))

    async def wait_unregistered(self, bid: int) -> None:
        """Until /brokers/ids/<bid> is gone: a crashed predecessor's session has expired. A real broker
        started before that exits (see register), so `sandbox start` after a hard kill waits for it."""
        s = await self.admin()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 3 * self.session_timeout_ms / 1000.0
        while loop.time() < deadline:
            try:
                await s.get(f"/brokers/ids/{bid}")
            except NoNodeError:
                return
            await asyncio.sleep(0.1)

    async def _elect_when_expired(self) -> None:
        """The crashed controller's /controller goes when its session expires; then the others race."""
        s = await self.admin()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 3 * self.session_timeout_ms / 1000.0
        while loop.time() < deadline:
            try:
                await s.get("/controller")
            except NoNodeError:
                await self.elect_controller()
                return
            await asyncio.sleep(0.1)

    async def bounce(self, bid: int, down_seconds: float = 0.0) -> tuple[int | None, int]:
        """Stop and start broker `bid` again: returns (old epoch, new epoch)."""
        old = self.epochs.get(bid)
        await self.stop(bid)
        if down_seconds:
            await asyncio.sleep(down_seconds)
        new = await self.register(self.specs.get(bid) or BrokerSpec(bid, port=9091 + bid))
        return old, new

    async def elect_controller(self, winner: int | None = None) -> int | None:
        """The lowest live broker (or `winner`) wins the election, as one of the racing brokers would.

        Fails (returns None) while another broker holds /controller, as a real election does.
        """
        if not self.sessions:
            return None
        bid = min(self.sessions) if winner is None else winner
        session = self.sessions[bid]
        try:
            data, stat = await session.get("/controller_epoch")
            epoch, version = int((data or b"0").decode()), stat.version
        except Exception:  # noqa: BLE001 - NoNode: the first election creates it with 0
            await session.create("/controller_epoch", b"0", acl=self.acl)
            epoch, version = 0, 0
        try:
            await session.multi(
                [
                    Create("/controller", znodes.encode_controller(bid, self._now_ms()), self.acl, 1),
                    SetData("/controller_epoch", str(epoch + 1).encode(), version),
                ]
            )
        except Exception:  # noqa: BLE001 - lost the race (NodeExists/BadVersion)
            return None
        self.controller_id = bid
        return bid

    async def create_topic(
        self,
        name: str,
        assignment: Mapping[int, list[int]],
        topic_id: str | None = None,
        controller_epoch: int = 1,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """A topic as the controller writes it: the assignment, the partitions and their states."""
        s = await self.admin()
        live = set(self.sessions)
        await s.create(f"/brokers/topics/{name}", znodes.encode_topic(assignment, topic_id), acl=self.acl)
        await s.create(f"/brokers/topics/{name}/partitions", None, acl=self.acl)
        for p, replicas in assignment.items():
            isr = [r for r in replicas if r in live] or replicas[:1]
            leader = isr[0] if isr and isr[0] in live else -1
            await s.create(f"/brokers/topics/{name}/partitions/{p}", None, acl=self.acl)
            await s.create(
                f"/brokers/topics/{name}/partitions/{p}/state",
                znodes.encode_partition_state(leader, 0, controller_epoch, isr),
                acl=self.acl,
            )
        if configs is not None:
            import json

            doc = json.dumps({"version": 1, "config": dict(configs)}, separators=(",", ":")).encode()
            await s.create(f"/config/topics/{name}", doc, acl=self.acl)

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        for bid in list(self.kafka_servers):
            await self._stop_kafka_server(bid)
        for bid in list(self.sessions):
            session = self.sessions.pop(bid)
            await session.close()
        if self._admin is not None:
            await self._admin.close()
            self._admin = None


class ThreadedFleet:
    """A Fleet on its own event-loop thread, with blocking methods (for tests and benchmarks)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kadmin-fleet", daemon=True)
        self._thread.start()
        self.fleet = Fleet(*args, **kwargs)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.fleet, name)
        if not asyncio.iscoroutinefunction(attr):
            return attr

        def call(*a: Any, **kw: Any) -> Any:
            return self.run(attr(*a, **kw))

        return call

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self.run(self.fleet.close(), timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
