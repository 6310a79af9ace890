"""Bulk ZooKeeper reads: one socket, pipelined requests, `struct` on the hot path.

Why not kazoo: `get_async` costs ~300 µs of Python CPU per read (a connection thread, a callback
thread, a Future and a namedtuple per request), so a scan of Kafka's partition state znodes
(100k-220k of them) runs at 2.5-4.8k reads/s while the server can serve ~28-30k/s. Here one thread
keeps up to `window` requests in flight on one non-blocking socket, builds each request with one
precompiled `struct` call and decodes each reply in place, so the server is the limit again.

How it works:
- ZooKeeper answers the requests of one session in the order it received them (per-session FIFO).
  The requests in flight are a deque in send order and every reply must match its head: no xid map.
- Results stream: after each socket read the window is topped up with requests from the (lazy)
  input first, then the replies just decoded are yielded. Only the window is ever buffered.
- Failover: when the connection drops (or nothing answers for `timeout` seconds) the next member
  of `hosts` is tried in turn, in a NEW session (plain reads need no session state), and every
  request still unanswered is sent again in the original order. Replies already yielded are gone
  from the deque, so no path is yielded twice and the order is kept. After `timeout` seconds
  without any member answering, ClusterUnreachable.
- kazoo's serialization classes are reused for the rare packets (connect, auth, children).

Watches, sessions that survive a reconnect and ephemeral znodes are not this module's business:
that is `zookeeper/` (kazoo) and the sandbox's `kadmin/sandbox/zkwire.py` (asyncio sessions).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from itertools import islice
from types import TracebackType
from typing import NoReturn, TypeAlias, TypeVar

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import Auth, Connect, GetChildren

from kadmin.domain.addresses import host_port
from kadmin.domain.models import Stat
from kadmin.errors import AuthFailed, ClusterUnreachable, KadminError, NotFound, in_words

__all__ = ["BulkReader", "BulkSession", "client_ssl_context", "parse_hosts"]

# Jute wire format, big-endian. A request frame is `int len | int xid | int type | body`; a reply
# frame is `int len | int xid | long zxid | int err | body` (body only when err == 0).
_INT = struct.Struct(">i")
_LEN_XID = struct.Struct(">ii")
_TYPE_STRLEN = struct.Struct(">ii")  # request type, then the length of the path string
_REPLY_HEADER = struct.Struct(">iqi")  # xid, zxid, err
_STAT = struct.Struct(">qqqqiiiqiiq")  # ZooKeeper's Stat, in kadmin's Stat field order
_REPLY_BODY = 4 + _REPLY_HEADER.size  # offset of a reply's body from the start of its frame

OP_GET_DATA = 4
OP_GET_CHILDREN = 8
OP_CLOSE = -11
OP_AUTH = 100
XID_AUTH = -4

OK = 0
NONODE = -101
NOAUTH = -102

_NO_WATCH = b"\x00"

# The session timeout asked for. Nothing pings (there is no background thread): a scan keeps the
# session busy, and a session that expired while the caller was idle is replaced on the next call.
SESSION_TIMEOUT_MS = 30_000
RECV_SIZE = 1 << 18
SEND_CHUNK = 1 << 16

# (xid, key, request body without `len | xid`): one request in flight, in send order.
_InFlight: TypeAlias = tuple[int, str, bytes]
# (key, err, frame buffer, offset of the reply body, end of the frame): one reply, in request order.
_Reply: TypeAlias = tuple[str, int, bytes, int, int]
_S = TypeVar("_S", bound="BulkSession")


def parse_hosts(hosts: str, default_port: int = 2181) -> list[tuple[str, int]]:
    """`"h1:2181,h2:2182"` (no chroot) → [("h1", 2181), ("h2", 2182)]; a missing port is 2181."""
    out = []
    for hp in hosts.split(","):
        host, sep, port = hp.strip().rpartition(":")
        out.append((host.strip("[]"), int(port)) if sep else (hp.strip(), default_port))
    return out


def client_ssl_context(
    ca: str | None = None, cert: str | None = None, key: str | None = None, check_hostname: bool = True
) -> ssl.SSLContext:
    """A TLS client context for `--zk-tls`: the server's certificate is verified against `ca` and,
    unless `check_hostname` is off (--zk-tls-no-hostname-check), must name the host connected to, as
    Kafka's zookeeper.ssl.endpoint.identification.algorithm=HTTPS wants (an IP SAN for an address).
    Unlike kazoo, a given `ca` replaces the system CAs instead of adding to them. `cert`/`key`: a
    client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    if ca:
        ctx.load_verify_locations(ca)
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


class _LinkDown(Exception):
    """The connection to the current member is unusable (closed, reset, or silent for too long)."""


# ZooKeeper's own names for its error codes (org.apache.zookeeper.KeeperException.Code), the names in its logs
# and docs, not kazoo's class names
ZK_ERROR_NAMES = {
    0: "OK", -1: "SYSTEMERROR", -2: "RUNTIMEINCONSISTENCY", -3: "DATAINCONSISTENCY", -4: "CONNECTIONLOSS",
    -5: "MARSHALLINGERROR", -6: "UNIMPLEMENTED", -7: "OPERATIONTIMEOUT", -8: "BADARGUMENTS", -12: "UNKNOWNSESSION",
    -13: "NEWCONFIGNOQUORUM", -14: "RECONFIGINPROGRESS", -100: "APIERROR", -101: "NONODE", -102: "NOAUTH",
    -103: "BADVERSION", -108: "NOCHILDRENFOREPHEMERALS", -110: "NODEEXISTS", -111: "NOTEMPTY",
    -112: "SESSIONEXPIRED", -113: "INVALIDCALLBACK", -114: "INVALIDACL", -115: "AUTHFAILED", -118: "SESSIONMOVED",
    -119: "NOTREADONLY", -120: "EPHEMERALONLOCALSESSION", -121: "NOWATCHER", -122: "REQUESTTIMEOUT",
    -123: "RECONFIGDISABLED", -124: "SESSIONCLOSEDREQUIRESASLAUTH", -125: "QUOTAEXCEEDED", -127: "THROTTLEDOP",
}


def _error_name(err: int) -> str:
    return ZK_ERROR_NAMES.get(err, "an unknown error")


def zk_words(e: BaseException) -> str:
    """A kazoo exception in words: ZooKeeper's name for its code (`NONODE`) and any text it carries; any other
    exception in its own words (kadmin.errors.in_words), never a class name."""
    code = getattr(e, "code", None)
    if isinstance(code, int) and code in ZK_ERROR_NAMES and isinstance(e, EXCEPTIONS.get(code, ())):
        text = in_words(e) if e.args else ""
        return f"ZooKeeper error {ZK_ERROR_NAMES[code]} ({code})" + (f": {text}" if text else "")
    return in_words(e)


def _one_line(e: BaseException) -> str:
    return zk_words(e)


class _Link:
    """One connected, handshaken socket (plain or TLS), non-blocking from here on.

    `send` queues bytes and writes what the kernel takes now; `recv` waits for the next bytes while
    writing the rest of the queue, so a large window can never deadlock both sides on full buffers.
    """

    def __init__(self, sock: socket.socket, address: tuple[str, int], session_id: int) -> None:
        self.sock = sock
        self.address = address
        self.session_id = session_id
        self.tls: ssl.SSLSocket | None = sock if isinstance(sock, ssl.SSLSocket) else None
        self.out = bytearray()
        self.rest = b""  # the start of a reply frame that has not fully arrived yet
        sock.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.events = selectors.EVENT_READ
        self.selector.register(sock, self.events)

    def send(self, data: bytes) -> None:
        self.out += data
        self._flush()

    def _flush(self) -> None:
        while self.out:
            # A bounded chunk: a TLS write that must be retried is retried with the same bytes.
            try:
                n = self.sock.send(self.out[:SEND_CHUNK])
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                return
            del self.out[:n]

    def recv(self, timeout: float) -> bytes:
        """The next bytes from the server (at least one); _LinkDown on EOF or `timeout` of silence."""
        deadline = time.monotonic() + timeout
        while True:
            if self.tls is not None and self.tls.pending():
                return self._read()  # decrypted bytes the selector cannot see
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.out else 0)
            if events != self.events:
                self.selector.modify(self.sock, events)
                self.events = events
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _LinkDown(f"no reply from {host_port(*self.address)} within {timeout:g}s")
            ready = self.selector.select(remaining)
            if not ready:
                continue
            mask = ready[0][1]
            if mask & selectors.EVENT_WRITE:
                self._flush()
            if mask & selectors.EVENT_READ:
                try:
                    return self._read()
                except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    continue  # e.g. only part of a TLS record has arrived

    def _read(self) -> bytes:
        data = self.sock.recv(RECV_SIZE)
        if not data:
            raise _LinkDown(f"{host_port(*self.address)} closed the connection")
        if self.tls is not None:
            # One TLS recv returns at most one record (16 KiB): take what is already decrypted.
            parts = [data]
            while self.tls.pending():
                parts.append(self.tls.recv(RECV_SIZE))
            data = b"".join(parts)
        return data

    def close(self) -> None:
        self.selector.close()
        with contextlib.suppress(OSError):
            self.sock.close()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise _LinkDown("the server closed the connection during the handshake")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _recv_frame(sock: socket.socket) -> bytes:
    (length,) = _INT.unpack(_recv_exactly(sock, 4))
    if length < 0 or length > 16 << 20:
        raise _LinkDown(f"bad frame length {length} during the handshake (not a ZooKeeper port?)")
    return _recv_exactly(sock, length)


class BulkSession:
    """Connection, failover and the pipelining engine: BulkReader here; the sandbox's BulkWriter
    (kadmin/sandbox/bulk_writer.py, fixtures for tests and benchmarks) builds on it too."""

    def __init__(
        self,
        hosts: Sequence[tuple[str, int]],
        chroot: str = "",
        auth: Sequence[tuple[str, str]] = (),
        ssl_context: ssl.SSLContext | None = None,
        timeout: float = 10.0,
        window: int = 1000,
        *,
        sleep: Callable[[float], None] = time.sleep,
        bound: Callable[[], float] | None = None,
        last_chance: float | None = None,
    ) -> None:
        """`timeout` bounds each wait; `bound` (a session's deadlines: --connect-timeout, never past the command's
        deadline) replaces it, asked at each wait. With `last_chance`, a member that fell silent for a whole wait
        costs that one wait: the reconnect that follows gets `last_chance` seconds to reach another member, not a
        second whole wait, and `went_silent` says which member, for what and how long meanwhile."""
        if not hosts:
            raise ValueError("no ZooKeeper hosts")
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window}")
        self.hosts = list(hosts)
        self.chroot = chroot.rstrip("/")
        if self.chroot and not self.chroot.startswith("/"):
            raise ValueError(f"chroot must start with '/': {chroot!r}")
        self.auth = list(auth)
        self.ssl_context = ssl_context
        self._timeout = timeout
        self._bound = bound
        self._last_chance = last_chance
        self._closing: float | None = None  # set when closing: how long to wait for the CloseSession reply
        # (member, path, seconds) while replacing a member that did not answer the request for path in time
        self.went_silent: tuple[str, str, float] | None = None
        self.window = window
        self._sleep = sleep
        self._link: _Link | None = None
        self._host_index = 0  # the member connected to now, or the next one to try
        self._xid = 0  # the last xid used on the current connection (xids restart at 1 on each)
        self._outage_since: float | None = None  # when the current run of failed connections began
        self._busy = False
        self._closed = False
        self.failovers = 0  # connections lost and replaced (mid-operation)
        self._connect(time.monotonic() + timeout, None)

    # ------------------------------------------------------------------ connection
    @property
    def timeout(self) -> float:
        """How long one wait may last now."""
        if self._closing is not None:  # closing: never the command's deadline (it may have passed: OutOfTime)
            return min(self._timeout, self._closing)
        return self._bound() if self._bound is not None else self._timeout

    @property
    def where(self) -> str:
        hosts = ",".join(host_port(h, p) for h, p in self.hosts)
        return f"ZooKeeper {hosts}" + (f" (chroot {self.chroot})" if self.chroot else "")

    @property
    def connected_to(self) -> tuple[str, int] | None:
        """The ensemble member this session's socket is connected to now."""
        return self._link.address if self._link is not None else None

    @property
    def session_id(self) -> int | None:
        return self._link.session_id if self._link is not None else None

    def _connect(self, deadline: float, cause: BaseException | None) -> None:
        """Connect to the member at _host_index, else the next ones in turn, until `deadline`."""
        last = _one_line(cause) if cause is not None else "no attempt made"
        n = len(self.hosts)
        # Each attempt gets a share of the timeout, so one silent member cannot use all of it.
        per_attempt = max(self.timeout / n, 1.0)
        backoff = 0.05
        # A member whose certificate kadmin refuses refuses it again: it is not retried, and when every member has
        # refused, that is the answer at once (not a handshake cut short by the deadline, said as a timeout).
        refused: dict[int, str] = {}
        while True:
            for _ in range(n):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                index = self._host_index % n
                host, port = self.hosts[index]
                if index in refused:
                    self._host_index += 1
                    continue
                try:
                    self._link = self._open(host, port, min(remaining, per_attempt))
                except AuthFailed:
                    raise
                except ssl.SSLCertVerificationError as e:
                    last = refused[index] = f"{host_port(host, port)}: {_one_line(e)}"
                    self._host_index += 1
                    if len(refused) == n:
                        raise ClusterUnreachable(f"cannot reach {self.where}: TLS certificate refused ({last})") from e
                    continue
                except (OSError, _LinkDown, struct.error) as e:
                    last = f"{host_port(host, port)}: {_one_line(e)}"
                    self._host_index += 1
                    continue
                self._xid = 0
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ClusterUnreachable(
                    f"cannot reach {self.where}: no member answered within {self.timeout:g}s (last error: {last})"
                )
            self._sleep(min(backoff, remaining))  # a whole round failed: the ensemble may be electing
            backoff = min(backoff * 2, 0.5)

    def _open(self, host: str, port: int, timeout: float) -> _Link:
        """TCP (+TLS) connect, ConnectRequest/Response and digest auth, all blocking with `timeout`."""
        sock = socket.create_connection((host, port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=host)
            request = bytes(Connect(0, 0, SESSION_TIMEOUT_MS, 0, b"\x00" * 16, False).serialize())
            sock.sendall(_INT.pack(len(request)) + request)
            response, _ = Connect.deserialize(_recv_frame(sock), 0)
            if response.time_out <= 0:
                raise _LinkDown(f"{host_port(host, port)} refused to open a session")
            for scheme, credential in self.auth:
                body = bytes(Auth(0, scheme, credential).serialize())
                sock.sendall(_LEN_XID.pack(len(body) + 8, XID_AUTH) + _INT.pack(OP_AUTH) + body)
                xid, _, err = _REPLY_HEADER.unpack_from(_recv_frame(sock), 0)
                if xid != XID_AUTH:
                    raise _LinkDown(f"unexpected reply xid {xid} to an auth packet")
                if err != OK:
                    raise AuthFailed(
                        f"authentication ({scheme}) with {self.where} failed: {_error_name(err)} ({err})"
                    )
            return _Link(sock, (host, port), response.session_id)
        except BaseException:
            sock.close()
            raise

    def _drop_link(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None

    def _failover(self, pending: deque[_InFlight], cause: BaseException) -> deque[_InFlight]:
        """Replace a lost connection (with another member first) and re-send `pending` in order."""
        silent = self._last_chance is not None and self._outage_since is None and self._link is not None \
            and "no reply from" in str(cause)
        if silent:  # silent for a whole wait already: that was the outage
            assert self._link is not None and self._last_chance is not None
            waited = self.timeout
            self.went_silent = (host_port(*self._link.address), pending[0][1] if pending else "/", waited)
            self._outage_since = time.monotonic() - waited + min(self._last_chance, waited)
        fresh = self._replace(pending, cause)
        self.went_silent = None  # another member answers
        return fresh

    def _replace(self, pending: deque[_InFlight], cause: BaseException) -> deque[_InFlight]:
        while True:
            self._drop_link()
            self.failovers += 1
            if self._outage_since is None:
                self._outage_since = time.monotonic()
            self._host_index += 1  # rotate: try another member before the one that just failed
            try:
                self._connect(self._outage_since + self.timeout, cause)
            except ClusterUnreachable as e:
                if pending:
                    e.message = f"lost the connection with the request for {pending[0][1]} unanswered: {e.message}"
                    e.args = (e.message,)
                raise
            assert self._link is not None
            xid = 0
            fresh: deque[_InFlight] = deque()
            frames: list[bytes] = []
            for _, key, body in pending:
                xid += 1
                fresh.append((xid, key, body))
                frames.append(_LEN_XID.pack(len(body) + 4, xid))
                frames.append(body)
            self._xid = xid
            try:
                self._link.send(b"".join(frames))
            except OSError as e:
                pending, cause = fresh, e
                continue
            return fresh

    def _pipeline(self, requests: Iterable[tuple[str, bytes]]) -> Generator[_Reply, None, None]:
        """Send (key, body) requests with at most `window` in flight; yield their replies in order.

        Reads the input lazily (never more than the window ahead) and yields each batch of replies
        after topping up the window, so the server keeps working while the caller handles them.
        """
        if self._closed:
            raise RuntimeError("this ZooKeeper bulk session is closed")
        if self._busy:
            raise RuntimeError("one bulk operation at a time: finish or close the previous generator first")
        self._busy = True
        try:
            if self._link is None:  # lost after the previous operation ended
                self._failover(deque(), _LinkDown("not connected"))
            source = iter(requests)
            pending: deque[_InFlight] = deque()
            ready: list[_Reply] = []
            exhausted = False
            window = self.window
            timeout = self.timeout
            while True:
                # 1. Top up the window from the input.
                want = window - len(pending)
                if not exhausted and want > 0:
                    exhausted, pending = self._top_up(source, pending, want)
                # 2. Hand over the replies decoded last time.
                if ready:
                    yield from ready
                    ready = []
                    if self._closed:
                        raise RuntimeError("this ZooKeeper bulk session was closed during the operation")
                if not pending:
                    return
                # 3. Wait for more replies and split them into frames.
                link = self._link
                assert link is not None
                try:
                    chunk = link.recv(timeout)
                except (OSError, _LinkDown) as e:
                    pending = self._failover(pending, e)
                    continue
                self._split(link, chunk, pending, ready)
                if ready:
                    self._outage_since = None  # a member answered
        finally:
            self._busy = False

    def _top_up(self, source: Iterator[tuple[str, bytes]], pending: deque[_InFlight],
                want: int) -> tuple[bool, deque[_InFlight]]:
        """Send up to `want` more requests from `source` in one write: (source exhausted, the in-flight
        queue, which a failover replaces)."""
        pack_len_xid = _LEN_XID.pack
        xid = self._xid
        frames: list[bytes] = []
        for key, body in islice(source, want):
            xid += 1
            pending.append((xid, key, body))
            frames.append(pack_len_xid(len(body) + 4, xid))
            frames.append(body)
        self._xid = xid
        if frames:
            try:
                assert self._link is not None
                self._link.send(b"".join(frames))
            except OSError as e:
                pending = self._failover(pending, e)
        return len(frames) < 2 * want, pending

    def _split(self, link: _Link, chunk: bytes, pending: deque[_InFlight], ready: list[_Reply]) -> None:
        """Split what arrived into reply frames, each matched in order to the oldest request in flight (moved
        to `ready`); a partial frame waits in `link.rest`."""
        unpack_int = _INT.unpack_from
        unpack_header = _REPLY_HEADER.unpack_from
        buf = link.rest + chunk if link.rest else chunk
        pos, size = 0, len(buf)
        while size - pos >= 4:
            end = pos + 4 + unpack_int(buf, pos)[0]
            if end > size:
                break
            xid, _, err = unpack_header(buf, pos + 4)
            if pending and xid == pending[0][0]:
                ready.append((pending.popleft()[1], err, buf, pos + _REPLY_BODY, end))
            elif xid >= 0 and (not pending or xid > pending[0][0]):
                self._drop_link()  # out of step with the server: never reuse this connection
                raise KadminError(
                    f"ZooKeeper protocol error from {host_port(*link.address)}: "
                    f"reply xid {xid}, expected {pending[0][0] if pending else 'none'}"
                )
            # else: a notification (xid < 0) or the reply to a request of an abandoned
            # generator (an older xid on this connection): skip it.
            pos = end
        link.rest = buf[pos:]

    def _full_path(self, path: str) -> bytes:
        if not path.startswith("/"):
            raise ValueError(f"a znode path must start with '/': {path!r}")
        if self.chroot:
            return (self.chroot + path if path != "/" else self.chroot).encode()
        return path.encode()

    def _raise_for(self, verb: str, path: str, err: int) -> NoReturn:
        if err == NOAUTH:
            raise AuthFailed(f"not authorized to {verb} {path} on {self.where}: check --zk-auth")
        raise KadminError(f"{verb} {path} on {self.where} failed: ZooKeeper error {_error_name(err)} ({err})")

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Send closeSession (best effort, bounded wait for its reply) and close the socket."""
        if self._closed:
            return
        self._closed = True
        link, self._link = self._link, None
        if link is None:
            return
        try:
            xid = self._xid + 1
            link.send(_LEN_XID.pack(8, xid) + _INT.pack(OP_CLOSE))
            try:
                wait = min(self.timeout, 2.0)
            except KadminError:  # the command's time is up: the close is sent, its reply not waited for
                wait = 0.0
            deadline = time.monotonic() + wait
            buf = link.rest
            while (remaining := deadline - time.monotonic()) > 0:
                buf += link.recv(remaining)
                pos = 0
                while len(buf) - pos >= 4:
                    end = pos + 4 + _INT.unpack_from(buf, pos)[0]
                    if end > len(buf):
                        break
                    if _REPLY_HEADER.unpack_from(buf, pos + 4)[0] == xid:
                        return
                    pos = end
                buf = buf[pos:]
        except (OSError, _LinkDown):
            pass  # the session expires by itself; it holds no ephemeral znodes
        finally:
            link.close()

    def close_now(self, wait: float) -> None:
        """Close, waiting at most `wait` seconds for the server to confirm the end of the session."""
        self._closing = wait
        self.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class BulkReader(BulkSession):
    """Fast pipelined getData over many znodes (and getChildren), on one thread and one socket.

    `hosts` are (host, port) pairs tried in turn; paths are relative to `chroot` (as with kazoo);
    `auth` holds (scheme, credentials) pairs such as ("digest", "user:password"); `ssl_context`
    turns on TLS; `timeout` bounds connecting and every wait for a member to answer.
    Connects at construction (ClusterUnreachable or AuthFailed); close it, or use `with`.
    One operation at a time: a get_many generator must end (or be closed) before the next call.
    """

    def get_many(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes | None, Stat | None]]:
        """getData for every path, at most `window` in flight, yielded in request order as they arrive.

        A path that does not exist yields (path, None, None); an existing znode with null data
        yields (path, None, stat), as kazoo's get does. `paths` is consumed lazily.
        Raises AuthFailed (NOAUTH), KadminError (other server errors), ClusterUnreachable.
        """
        unpack_int = _INT.unpack_from
        unpack_stat = _STAT.unpack_from
        # closing(): an abandoned get_many ends its pipeline (and frees the session) at once.
        with contextlib.closing(self._pipeline(self._get_requests(paths))) as replies:
            for path, err, buf, off, _ in replies:
                if err == OK:
                    (length,) = unpack_int(buf, off)
                    off += 4
                    if length < 0:
                        data = None
                    else:
                        data = buf[off : off + length]
                        off += length
                    yield path, data, Stat(*unpack_stat(buf, off))
                elif err == NONODE:
                    yield path, None, None
                else:
                    self._raise_for("read", path, err)

    def _get_requests(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        pack = _TYPE_STRLEN.pack
        for path in paths:
            full = self._full_path(path)
            yield path, pack(OP_GET_DATA, len(full)) + full + _NO_WATCH

    def children(self, path: str) -> list[str]:
        """getChildren: the names of `path`'s children (unsorted). NotFound when `path` does not exist."""
        full = self._full_path(path)
        body = _TYPE_STRLEN.pack(OP_GET_CHILDREN, len(full)) + full + _NO_WATCH
        with contextlib.closing(self._pipeline([(path, body)])) as replies:
            _, err, buf, off, _ = next(replies)
        if err == OK:
            return list(GetChildren.deserialize(buf, off))
        if err == NONODE:
            raise NotFound(f"znode {path} does not exist on {self.where}")
        self._raise_for("list the children of", path, err)
