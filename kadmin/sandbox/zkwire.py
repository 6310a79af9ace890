"""A small asyncio ZooKeeper session on kazoo's own protocol serialization classes.

Why not a KazooClient: kazoo gives every session a connection thread and two worker threads and
spends ~300 µs of Python CPU per operation. The sandbox keeps one session per emulated broker
(1,000 in the benchmark), and those sessions only ever register, ping and close. One event loop
and this class do that with a socket each. Requests are pipelined; replies are matched by xid.

A dropped connection is re-established on the next member of the ensemble with the same session
id and password, as a real Kafka broker's ZooKeeper client does; if the ensemble says the session
has expired, `on_expired` is called (a real broker then re-registers with a new epoch).

Watches: `exists(path, watch=callback)` leaves a one-shot watch, as ZooKeeper's exists does (it fires when
the znode is created, changed or deleted); the callback gets the path. A new connection of the session does
not carry the server's watches over (kazoo re-sends them with SetWatches), so after a reconnect every watch
fires: its owner looks again and leaves a new one, and no change made meanwhile goes unseen.

It lives in the sandbox, not in the client layer: only the sandbox's fleet and emulated brokers
(and through them the tests and benchmarks) use it; kadmin's own reads go through kadmin.cluster
(kazoo and the bulk reader). The import-linter contract lets this one sandbox module import kazoo.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kazoo.exceptions import EXCEPTIONS, ConnectionLoss, NodeExistsError, NoNodeError, SessionExpiredError
from kazoo.protocol.serialization import (
    Auth,
    CheckVersion,
    Close,
    Connect,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetData,
    Ping,
    ReplyHeader,
    SetData,
    Transaction,
    Watch,
)
from kazoo.security import OPEN_ACL_UNSAFE

from kadmin.domain.models import Stat

_INT = struct.Struct("!i")
_STAT = struct.Struct("!qqqqiiiqiiq")
PING_XID = -2
AUTH_XID = -4
WATCH_XID = -1
EPHEMERAL = 1

__all__ = [
    "EPHEMERAL",
    "NoNodeError",
    "NodeExistsError",
    "OPEN_ACL_UNSAFE",
    "CheckVersion",
    "Create",
    "Delete",
    "SetData",
    "ZkSession",
    "ZkWireError",
]


class ZkWireError(Exception):
    pass


def stat_from(buf: bytes, offset: int) -> Stat:
    return Stat(*_STAT.unpack_from(buf, offset))


class ZkSession:
    """One ZooKeeper session. Use `await ZkSession.open(...)`."""

    def __init__(
        self,
        hosts: Sequence[tuple[str, int]],
        chroot: str = "",
        timeout_ms: int = 6000,
        auth: Sequence[tuple[str, str]] = (),
        on_expired: Callable[[], Awaitable[None] | None] | None = None,
        connect_timeout: float = 5.0,
    ) -> None:
        if not hosts:
            raise ValueError("no ZooKeeper hosts")
        self.hosts = list(hosts)
        self.chroot = chroot.rstrip("/")
        self.requested_timeout_ms = timeout_ms
        self.timeout_ms = timeout_ms
        self.auth = list(auth)
        self.on_expired = on_expired
        self.connect_timeout = connect_timeout
        self.session_id = 0
        self.passwd = b"\x00" * 16
        self.last_zxid = 0
        self.host_index = 0
        self.connected_to: tuple[str, int] | None = None
        self._xid = 0
        self._pending: dict[int, tuple[Any, asyncio.Future[Any]]] = {}
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._closing = False
        self._ready = asyncio.Event()
        self._watches: dict[str, list[Callable[[str], None]]] = {}

    # ------------------------------------------------------------------ connection
    @classmethod
    async def open(cls, hosts: Sequence[tuple[str, int]], **kw: Any) -> ZkSession:
        s = cls(hosts, **kw)
        await s._connect_any()
        return s

    async def _connect_any(self) -> None:
        last: Exception | None = None
        for _ in range(len(self.hosts)):
            host, port = self.hosts[self.host_index % len(self.hosts)]
            try:
                await asyncio.wait_for(self._connect(host, port), self.connect_timeout)
                return
            except SessionExpiredError:
                raise
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ZkWireError) as e:
                last = e
                self.host_index += 1
        raise ConnectionLoss(f"no ZooKeeper member answered ({last})")

    async def _connect(self, host: str, port: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        req = Connect(0, self.last_zxid, self.requested_timeout_ms, self.session_id, self.passwd, False)
        body = bytes(req.serialize())
        writer.write(_INT.pack(len(body)) + body)
        await writer.drain()
        length = _INT.unpack(await reader.readexactly(4))[0]
        resp, _ = Connect.deserialize(await reader.readexactly(length), 0)
        if resp.time_out <= 0:
            writer.close()
            self.session_id = 0
            raise SessionExpiredError("session expired")
        self.session_id, self.passwd, self.timeout_ms = resp.session_id, resp.passwd, resp.time_out
        self._reader, self._writer = reader, writer
        self.connected_to = (host, port)
        for t in self._tasks:
            t.cancel()
        self._tasks = [
            asyncio.create_task(self._read_loop(reader)),
            asyncio.create_task(self._ping_loop(writer)),
        ]
        self._ready.set()
        for scheme, cred in self.auth:
            await self._call(Auth(0, scheme, cred), xid=AUTH_XID)

    async def _reconnect(self) -> None:
        self._ready.clear()
        self._fail_pending(ConnectionLoss("connection lost"))
        if self._closed:
            return
        self.host_index += 1
        try:
            await self._connect_any()
            self._fire_all_watches()  # the new connection holds none of them
        except SessionExpiredError:
            self._closed = True
            self._watches.clear()
            if self.on_expired is not None:
                r = self.on_expired()
                if asyncio.iscoroutine(r):
                    await r
        except ConnectionLoss:
            # Keep trying until the session timeout would have expired it anyway.
            await asyncio.sleep(0.1)
            if not self._closed:
                asyncio.get_running_loop().create_task(self._reconnect())

    def _fail_pending(self, exc: Exception) -> None:
        pending, self._pending = self._pending, {}
        for _, fut in pending.values():
            if not fut.done():
                fut.set_exception(exc)

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                length = _INT.unpack(await reader.readexactly(4))[0]
                buf = await reader.readexactly(length)
                header, offset = ReplyHeader.deserialize(buf, 0)
                if header.zxid > 0:
                    self.last_zxid = max(self.last_zxid, header.zxid)
                if header.xid == WATCH_XID:
                    event, _ = Watch.deserialize(buf, offset)
                    self._fire(self._unchroot(event.path))
                    continue
                if header.xid == PING_XID:
                    continue
                entry = self._pending.pop(header.xid, None)
                if entry is None:
                    continue
                request, fut = entry
                if isinstance(request, Close):
                    self._closed = True  # the server ends the connection next; do not reconnect
                if fut.done():
                    continue
                if header.err == NoNodeError.code and isinstance(request, Exists):
                    fut.set_result(None)  # no such znode (a watch left on it fires when it is created)
                    continue
                if header.err and not isinstance(request, Transaction):
                    fut.set_exception(EXCEPTIONS[header.err]())
                    continue
                try:
                    fut.set_result(self._decode(request, buf, offset))
                except Exception as e:  # noqa: BLE001 - delivered to the caller
                    fut.set_exception(e)
        except (asyncio.IncompleteReadError, OSError):
            if not self._closed:
                asyncio.get_running_loop().create_task(self._reconnect())
        except asyncio.CancelledError:
            pass

    async def _ping_loop(self, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await asyncio.sleep(self.timeout_ms / 3000.0)
                writer.write(_INT.pack(8) + _INT.pack(PING_XID) + _INT.pack(Ping.type))
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass

    def _decode(self, request: Any, buf: bytes, offset: int) -> Any:
        if isinstance(request, GetData):
            data, offset = _read_buffer(buf, offset)
            return data, stat_from(buf, offset)
        if isinstance(request, SetData):
            return stat_from(buf, offset)
        if isinstance(request, Create):
            return self._unchroot(Create.deserialize(buf, offset))
        if isinstance(request, GetChildren):
            return GetChildren.deserialize(buf, offset)
        if isinstance(request, Exists):
            return stat_from(buf, offset)
        if isinstance(request, Transaction):
            results = Transaction.deserialize(buf, offset)
            errors = [r for r in results if isinstance(r, Exception)]
            if errors:
                # Ops before the failing one report "rolled back" (0) and ops after it "runtime
                # inconsistency" (-2): raise the op's own error, which says what went wrong.
                raise next((e for e in errors if getattr(e, "code", 0) not in (0, -2)), errors[0])
            return [
                self._unchroot(r) if isinstance(r, str) else (Stat(*r) if isinstance(r, tuple) else r)
                for r in results
            ]
        return True

    # ------------------------------------------------------------------ requests
    def _path(self, path: str) -> str:
        return self.chroot + path if self.chroot else path

    def _unchroot(self, path: str) -> str:
        if self.chroot and path.startswith(self.chroot):
            return path[len(self.chroot) :] or "/"
        return path

    def _chrooted(self, op: Any) -> Any:
        return op._replace(path=self._path(op.path)) if hasattr(op, "path") else op

    async def _call(self, request: Any, xid: int | None = None) -> Any:
        if self._closed:
            raise ConnectionLoss("session closed")
        await self._ready.wait()
        assert self._writer is not None
        if xid is None:
            self._xid = (self._xid + 1) % 0x7FFFFFFF or 1
            xid = self._xid
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[xid] = (request, fut)
        body = bytes(request.serialize())
        self._writer.write(_INT.pack(len(body) + 8) + _INT.pack(xid) + _INT.pack(request.type) + body)
        return await fut

    async def create(
        self, path: str, data: bytes | None = None, *, ephemeral: bool = False, acl: Any = None
    ) -> str:
        flags = EPHEMERAL if ephemeral else 0
        return await self._call(Create(self._path(path), data, acl or OPEN_ACL_UNSAFE, flags))  # type: ignore[no-any-return]

    async def ensure_path(self, path: str, acl: Any = None) -> None:
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            with contextlib.suppress(EXCEPTIONS[-110]):  # NodeExists
                await self.create("/" + "/".join(parts[:i]), None, acl=acl)

    async def get(self, path: str) -> tuple[bytes | None, Stat]:
        return await self._call(GetData(self._path(path), False))  # type: ignore[no-any-return]

    async def exists(self, path: str, watch: Callable[[str], None] | None = None) -> Stat | None:
        """The znode's stat, or None when it does not exist; with `watch`, a one-shot watch on it (registered
        before the request is sent: an event that follows the answer at once is not missed)."""
        if watch is not None:
            self._watches.setdefault(path, []).append(watch)
        return await self._call(Exists(self._path(path), watch is not None))  # type: ignore[no-any-return]

    def _fire(self, path: str) -> None:
        for callback in self._watches.pop(path, []):
            callback(path)

    def _fire_all_watches(self) -> None:
        for path in list(self._watches):
            self._fire(path)

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        return await self._call(SetData(self._path(path), data, version))  # type: ignore[no-any-return]

    async def delete(self, path: str, version: int = -1) -> None:
        await self._call(Delete(self._path(path), version))

    async def children(self, path: str) -> list[str]:
        return await self._call(GetChildren(self._path(path), False))  # type: ignore[no-any-return]

    async def multi(self, ops: Sequence[Any]) -> list[Any]:
        """Run ops (kazoo Create/SetData/Delete/CheckVersion tuples) in one ZooKeeper multi."""
        return await self._call(Transaction([self._chrooted(op) for op in ops]))  # type: ignore[no-any-return]

    async def close(self) -> None:
        """End the session (the server deletes its ephemeral znodes at once)."""
        if self._closed:
            return
        self._closing = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_ms / 1000.0
        # Retry across reconnects (an ensemble member may be down or electing) until the session
        # would have expired anyway: a close that is lost leaves the ephemerals behind until then.
        while not self._closed and loop.time() < deadline:
            try:
                await asyncio.wait_for(self._call(Close()), max(0.1, deadline - loop.time()))
            except (TimeoutError, ConnectionLoss):
                await asyncio.sleep(0.05)
            except Exception:  # noqa: BLE001 - SessionExpired and the like: nothing left to close
                break
        await self.abandon()

    async def abandon(self) -> None:
        """Drop the connection without closing the session: ephemerals vanish when it expires."""
        self._closed = True
        self._watches.clear()
        for t in self._tasks:
            t.cancel()
        if self._writer is not None:
            self._writer.close()
        self._fail_pending(ConnectionLoss("session closed"))


def _read_buffer(buf: bytes, offset: int) -> tuple[bytes | None, int]:
    length = _INT.unpack_from(buf, offset)[0]
    offset += 4
    if length < 0:
        return None, offset
    return buf[offset : offset + length], offset + length
