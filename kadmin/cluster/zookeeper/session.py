"""The ZooKeeper connection: settings, kazoo session start and close, TLS refusals, state reports, errors."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, ConnectionLoss, KazooException, NoAuthError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.serialization import Close
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from kadmin import interrupts
from kadmin.cluster.bulk import BulkReader, client_ssl_context, parse_hosts, zk_words
from kadmin.cluster.deadlines import after_deadline, wait_bound
from kadmin.domain.addresses import host_port
from kadmin.errors import AuthFailed, ClusterUnreachable, KadminError

WINDOW = 1000  # reads in flight at once

_log = logging.getLogger("kazoo")
_log.addHandler(logging.NullHandler())
_log.propagate = False


class _Kazoo(KazooClient):
    """kazoo's client, giving back the Ctrl-C it swallows: a KeyboardInterrupt that lands while kazoo wakes its
    connection thread for a request meets a bare `except:` there, and the request fails with
    ConnectionClosedError instead, which kadmin would report (or retry) as a lost connection."""

    def _call(self, request: Any, async_object: Any) -> Any:
        before = interrupts.interrupted()
        sent = super()._call(request, async_object)
        if not before and interrupts.interrupted() and threading.current_thread() is threading.main_thread():
            raise KeyboardInterrupt
        return sent


@dataclass(frozen=True)
class ZkConnection:
    hosts: str  # "h1:p1,h2:p2" (no chroot)
    chroot: str  # "" or "/kafka"
    timeout: float = 10.0
    auth: Sequence[tuple[str, str]] = ()
    use_tls: bool = False
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_check_hostname: bool = True  # the server's certificate must name the host (IP SAN for an address)

    @property
    def connect_string(self) -> str:
        return self.hosts + self.chroot

    @property
    def where(self) -> str:
        return f"ZooKeeper {self.hosts}" + (f" (chroot {self.chroot})" if self.chroot else "")


REFUSED_AFTER = 0.3  # s: a session not up by then is checked for members that all refuse or do not resolve
TLS_LATE = 0.25  # s: waited past --connect-timeout for the handshakes that say why TLS failed (they end by it)
RETRY_PAUSE, RETRY_PAUSE_MAX = 0.05, 0.5  # s: before a request whose connection was lost is sent again
LAST_CHANCE = 0.5  # s: after the bulk reader's member fell silent for a whole wait, to reach another member


def seconds_text(value: float) -> str:
    """A duration as messages say it: `5`, `2.5`, `0.3` (seconds, to a tenth)."""
    return f"{round(value, 1):g}"


class ZkSession:
    """One kazoo session (and the bulk reader's, opened on first use) with the clock and sleep it runs on."""

    def __init__(self, conn: ZkConnection, sleep: Callable[[float], None] = time.sleep,
                 on_connection: Callable[[str], None] | None = None, kafka: Any = None,
                 clock: Callable[[], float] = time.monotonic, deadline: float | None = None) -> None:
        self.conn = conn
        # the command's own deadline (on `clock`), None without one: no wait for ZooKeeper outlasts it (bound())
        self.deadline = deadline
        self._silent = False  # a request went unanswered: closing does not wait for ZooKeeper's reply
        self._watching = 0  # watch loops running (kadmin/cluster/zookeeper/watches.py): they say lost connections
        # a KraftClient for --bootstrap-server, when also given: min.insync.replicas from DescribeConfigs
        self.kafka = kafka
        self.description = conn.where
        self._sleep = sleep
        self._clock = clock  # monotonic seconds: every deadline in this package is on it
        self._on_connection = on_connection
        self._down = False
        self._drops = 0  # connections lost (SUSPENDED or LOST) since the session started, said or not
        self._state_lock = threading.Lock()  # kazoo's event thread and a starting watch both say state changes
        kw: dict[str, Any] = {}
        if conn.use_tls:
            kw.update(use_ssl=True, ca=conn.tls_ca, certfile=conn.tls_cert, keyfile=conn.tls_key, verify_certs=True,
                      check_hostname=conn.tls_check_hostname)
        self.zk = _Kazoo(
            hosts=conn.connect_string,
            # The session timeout: at least 4 s (a short one expires on a blip), at most what servers
            # grant (maxSessionTimeout defaults to 40 s) and what fits the int32 milliseconds on the wire.
            timeout=min(max(conn.timeout, 4.0), 60.0),
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, sleep_func=sleep),
            command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0, sleep_func=sleep, ignore_expire=False),
            auth_data=list(conn.auth) or None,
            logger=_log,
            **kw,
        )
        self._started = False
        self._bulk_reader: BulkReader | None = None

    def _bulk(self) -> BulkReader:
        """The pipelined reader every scan without a watch goes through (kadmin/cluster/bulk.py)."""
        if self._bulk_reader is None:
            c = self.conn
            ctx = client_ssl_context(c.tls_ca, c.tls_cert, c.tls_key, c.tls_check_hostname) if c.use_tls else None
            # every wait is the session's bound at the time; a member that fell silent costs that one wait
            self._bulk_reader = BulkReader(parse_hosts(c.hosts), chroot=c.chroot, auth=c.auth, ssl_context=ctx,
                                           window=WINDOW, bound=self.bound, last_chance=LAST_CHANCE)
        return self._bulk_reader

    # ------------------------------------------------------------------ deadlines
    def bound(self) -> float:
        """How long one wait for ZooKeeper may last now: --connect-timeout, never past the command's deadline
        (once that has passed, LAST_LOOK: the command's last look)."""
        return wait_bound(self.conn.timeout, self.deadline, self._clock())

    def _call(self, path: str, send: Callable[[], IAsyncResult], verb: str = "reading",
              until: float | None = None) -> Any:
        """One kazoo request and its answer within `until` (on the session's clock; default: bound() from now).

        `send` sends it (e.g. `lambda: self.zk.get_async(path)`), and sends it again when the connection is lost
        before the answer: kazoo reconnects meanwhile (to another member, or to the same one once it is back).
        No answer by `until`: ClusterUnreachable naming the member, the time and the znode. Never kazoo's
        blocking calls: a request made while kazoo reconnects would wait for the reconnection, however long."""
        began = self._clock()
        end = began + self.bound() if until is None else until
        pause = RETRY_PAUSE
        while True:
            left = end - self._clock()
            if left <= 0:
                raise self._no_answer(path, verb, end - began)
            try:
                return send().get(timeout=left)
            except KazooTimeoutError:
                raise self._no_answer(path, verb, end - began) from None
            except ConnectionLoss:
                left = end - self._clock()
                if left <= 0:
                    raise self._no_answer(path, verb, end - began) from None
                self._sleep(min(pause, left))
                pause = min(pause * 2, RETRY_PAUSE_MAX)

    def _blocking(self, path: str, verb: str, call: Callable[[], Any], until: float | None = None) -> Any:
        """A blocking kazoo call (a create, a transaction's commit) waited for within `until` (default: bound()
        from now) on a helper thread: no answer by then is ClusterUnreachable (the outcome is unknown, and said so).
        Not retried here: whether a write was applied is the caller's to find out."""
        began = self._clock()
        end = began + self.bound() if until is None else until
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["value"] = call()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=run, name="kadmin-zk-call", daemon=True).start()
        if not done.wait(max(end - self._clock(), 0.0)):
            raise self._no_answer(path, verb, end - began, unknown=True)
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _no_answer(self, path: str, verb: str, waited: float, unknown: bool = False,
                   who: str | None = None) -> ClusterUnreachable:
        """The one line for a request ZooKeeper did not answer in time, naming the member and the znode."""
        self._silent = True
        who = who or self.connected_server() or self.conn.hosts
        outcome = "; whether it was applied is unknown" if unknown else ""
        return ClusterUnreachable(f"ZooKeeper {who} did not answer within {seconds_text(waited)} s "
                                  f"({verb} {path}{outcome}){after_deadline(self.deadline, self._clock())}")

    def start(self) -> Self:
        began = self._clock()
        tls_why: Callable[[], str | None] | None = None
        try:
            with warnings.catch_warnings():
                # kazoo warns when the chroot does not exist; kadmin says so itself, as an error
                warnings.filterwarnings("ignore", message="No chroot path exists")
                # kazoo's start() = start_async + wait + (on a time-out) a stop that blocks; see below
                started = self.zk.start_async()
                first = min(REFUSED_AFTER, self.conn.timeout)
                if not started.wait(timeout=first) and not self.zk.connected:
                    # kazoo retries a refused connection until the time-out: when every member refuses or
                    # does not resolve, say so now instead of after --connect-timeout
                    refused = self._refusals(self.conn.timeout - first)
                    if refused:
                        threading.Thread(target=self._quiet_stop, name="kadmin-zk-stop", daemon=True).start()
                        raise ClusterUnreachable(f"cannot connect to {self.conn.where}: {refused}")
                    if self.conn.use_tls:  # why TLS fails, found while kazoo tries: said at the time-out
                        tls_why = self._tls_refusal_meanwhile(began + self.conn.timeout)
                    started.wait(timeout=max(began + self.conn.timeout - self._clock(), 0.0))
                if not self.zk.connected:
                    raise KazooTimeoutError("Connection time-out")
                if self.zk.chroot:  # what kazoo's start() does too: an auth failure shows here
                    self._call(self.zk.chroot, lambda: self.zk.exists_async("/"), "checking the chroot",
                               until=began + self.conn.timeout)
        except KazooTimeoutError as e:
            # Stopping waits for kazoo's connection thread, which may sit in a connect attempt to a
            # hung server for the whole session timeout: stop it in the background (its threads are
            # daemons), so --timeout is the time this takes.
            threading.Thread(target=self._quiet_stop, name="kadmin-zk-stop", daemon=True).start()
            refused = tls_why() if tls_why else None
            if refused:
                raise ClusterUnreachable(f"cannot connect to {self.conn.where}: {refused}") from e
            raise ClusterUnreachable(
                f"cannot reach {self.conn.where} within {seconds_text(self.conn.timeout)}s"
                f"{after_deadline(self.deadline, self._clock())}"
            ) from e
        except AuthFailedError as e:
            self.zk.stop()
            raise AuthFailed(f"authentication with {self.conn.where} failed: check --zk-auth") from e
        except KazooException as e:
            self.zk.stop()
            raise ClusterUnreachable(f"cannot connect to {self.conn.where}: {zk_words(e)}") from e
        except ClusterUnreachable:  # connected, then no answer: stop in the background, as above
            threading.Thread(target=self._quiet_stop, name="kadmin-zk-stop", daemon=True).start()
            raise
        self._started = True
        self.zk.add_listener(self._report_state)
        return self

    def _refusals(self, budget: float) -> str | None:
        """Why no member can be reached, when each one refuses the connection or its name does not resolve
        (said at once); None when any member might still answer (it accepts a connection, or does not answer
        within the budget: then the time-out decides). A member without a port is named with the default."""
        import socket

        said = []
        for hp in self.conn.hosts.split(","):
            (host, port), = parse_hosts(hp)
            raw = hp.strip()
            has_port = bool(raw.rpartition(":")[0]) and (not raw.startswith("[") or "]:" in raw)
            shown = raw if has_port else f"{raw} (port {port}, the default)"
            try:
                with socket.create_connection((host, port), timeout=max(0.1, min(1.0, budget))):
                    return None  # something listens: kazoo's own attempt decides
            except ConnectionRefusedError:
                said.append(f"{shown} refused the connection")
            except socket.gaierror as e:
                said.append(f"{shown} does not resolve ({e.strerror or e})")
            except OSError:
                return None  # no answer yet (a slow or filtered host): the time-out decides
        return "; ".join(said) if said else None

    def _tls_refusal_meanwhile(self, until: float) -> Callable[[], str | None]:
        """_tls_refusal in the background, ending by `until` (on the session's clock): kazoo's own attempts
        run meanwhile. The function returned gives its answer, waiting at most TLS_LATE for it."""
        box: list[str | None] = []
        done = threading.Event()

        def run() -> None:
            try:
                box.append(self._tls_refusal(until - self._clock()))
            finally:
                done.set()

        threading.Thread(target=run, name="kadmin-zk-tls-why", daemon=True).start()
        return lambda: box[0] if done.wait(TLS_LATE) and box else None

    def _tls_refusal(self, budget: float) -> str | None:
        """Why TLS fails, when kazoo would give up without saying: kazoo retries a certificate it refuses
        (host name mismatch, unknown CA) until the time-out. One handshake per member says why, all of them
        within `budget` (a server that refuses a certificate says so at once; one that does not answer the
        ClientHello at all is not waited on past it)."""
        import socket
        import ssl
        import time

        c = self.conn
        try:
            ctx = client_ssl_context(c.tls_ca, c.tls_cert, c.tls_key, c.tls_check_hostname)
        except (OSError, ValueError) as e:
            return f"TLS settings: {e}"
        end = time.monotonic() + budget
        for host, port in parse_hosts(c.hosts)[:3]:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                with socket.create_connection((host, port), timeout=left) as raw, \
                        ctx.wrap_socket(raw, server_hostname=host):
                    pass
            except ssl.SSLCertVerificationError as e:
                why = " ".join(str(e.verify_message or e.reason or e).split())
                hint = (" (the certificate must name the host connected to; --zk-tls-no-hostname-check skips that "
                        "check)") if "mismatch" in why.lower() or "match" in why.lower() else ""
                return f"TLS: {host_port(host, port)} presented a certificate kadmin refuses: {why}{hint}"
            except ssl.SSLError as e:
                return f"TLS: {host_port(host, port)}: {e.reason or e}"
            except OSError:
                continue
        return None

    def _quiet_stop(self) -> None:
        with contextlib.suppress(Exception):
            self.zk.stop()
            self.zk.close()

    def _report_state(self, state: str) -> None:
        """Tell `on_connection` (stderr) when the connection goes and comes back while a watch loop runs: a watch
        must not go quiet. A one-shot read says nothing: its connection is back within the read's bound (said by
        nobody), or the read fails and the command's one error line says what did not answer."""
        with self._state_lock:
            if state != KazooState.CONNECTED:
                self._drops += 1
            self._say_state(state)

    def _say_state(self, state: str) -> None:
        """Say a change of the connection's state to a running watch (the caller holds `_state_lock`)."""
        say = self._on_connection
        if say is None or not self._started or (not self._watching and not self._down):
            return
        if state == KazooState.SUSPENDED and not self._down:
            self._down = True
            say(f"lost the connection to {self.conn.where}; reconnecting")
        elif state == KazooState.LOST:
            self._down = True
            say(f"the session with {self.conn.where} expired; reconnecting with a new session")
        elif state == KazooState.CONNECTED and self._down:
            self._down = False
            where = self.connected_server()
            say(f"reconnected to {where or self.conn.where}")

    def _say_missed_drop(self, drops_before: int) -> None:
        """A watch loop has just started (its first read answered): a connection lost since `drops_before` (read
        before that first read) was not said, as nothing watched yet; say it now, and that it is back if it is. A
        watch never goes quiet about a drop, even one in its first moments."""
        with self._state_lock:
            if self._drops == drops_before or self._down:
                return
            self._say_state(KazooState.SUSPENDED)
            if self.zk.state == KazooState.CONNECTED:
                self._say_state(KazooState.CONNECTED)

    def connected_server(self) -> str | None:
        """The ensemble member this client is connected to now (host:port), if connected."""
        sock = getattr(getattr(self.zk, "_connection", None), "_socket", None)
        try:
            host, port = sock.getpeername()[:2]  # type: ignore[union-attr]
        except (AttributeError, OSError):
            return None
        return host_port(host, port)

    def close(self) -> None:
        """End the kazoo session (CloseSession sent, see _end_session), the bulk reader's and the Kafka client."""
        sent: Callable[[], None] | None = None
        if self._started:
            self._on_connection = None  # stopping is not losing the connection
            self._started = False
            sent = self._end_session()  # under way meanwhile
        if self.kafka is not None:
            with contextlib.suppress(Exception):  # closing must never mask the result
                self.kafka.close()
            self.kafka = None
        if self._bulk_reader is not None:
            # ZooKeeper did not answer: its confirmation of the session's end is not waited for either
            self._bulk_reader.close_now(0.0 if self._silent else 2.0)
            self._bulk_reader = None
        if sent is not None:
            sent()

    def _end_session(self) -> Callable[[], None]:
        """Start ending the kazoo session; the function returned waits until ZooKeeper's CloseSession is sent.

        kazoo's stop() writes CloseSession, then waits for the server's reply (a round trip, after the server
        has written and synced the transaction) and joins its threads. A command's process exits right after
        closing (issue 13 §3: a script waits for that exit), and nothing needs the reply: the server ends the
        session once it has read the request, whether or not the connection lasts until it replies. So kazoo's
        stop runs on a daemon thread, and the wait ends as soon as the request is written to the socket (kazoo's
        connection thread writes each request with ConnectionHandler._submit, watched here for the Close), or
        when the stop is over (no connection to send it on: the session then expires by itself; kadmin holds no
        ephemeral znodes). In a process that lives on, the thread finishes kazoo's clean-up by itself.
        """
        zk = self.zk
        over = threading.Event()
        handler: Any = getattr(zk, "_connection", None)
        submit = getattr(handler, "_submit", None)
        if callable(submit):
            def submit_and_tell(request: Any, timeout: float, xid: int | None = None) -> None:
                submit(request, timeout, xid)
                if getattr(request, "type", None) == Close.type:
                    over.set()

            handler._submit = submit_and_tell

        def stop() -> None:
            try:
                with contextlib.suppress(Exception):  # closing must never mask the result
                    zk.stop()
                    zk.close()
            finally:
                over.set()

        connected = zk.connected
        threading.Thread(target=stop, name="kadmin-zk-close", daemon=True).start()

        silent = self._silent

        def wait_sent() -> None:
            if connected:  # else there is nothing to send it on: the stop only ends kazoo's reconnecting
                over.wait(min(self.conn.timeout, 0.5 if silent else 2.0))

        return wait_sent

    def _translate(self, path: str, e: Exception) -> KadminError:
        """A kazoo error while reading or writing `path`, as kadmin's (library exceptions stop here)."""
        if isinstance(e, KadminError):  # said already (e.g. _call's: ZooKeeper did not answer)
            return e
        if isinstance(e, NoAuthError):
            return AuthFailed(f"not authorized to read {path} on {self.conn.where}: check --zk-auth")
        if isinstance(e, (ConnectionLoss, SessionExpiredError, KazooTimeoutError)):
            return ClusterUnreachable(f"lost the connection to {self.conn.where} while reading {path}")
        return KadminError(f"reading {path} failed: {zk_words(e)}")
