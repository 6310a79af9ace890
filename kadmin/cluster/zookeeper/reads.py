"""Reads: one znode, many pipelined, children; /cluster/id, /controller and the broker registrations.

Also the plain znode access of Kafka's admin znodes (`read_znode`, `znode_exists`, `create_znode`): what
ZooKeeper-mode drain (kadmin/cluster/drain.py) uses, retried and translated like every other read here."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from kadmin.cluster.base import BrokerListing, Znode
from kadmin.cluster.zookeeper.session import WINDOW, ZkSession
from kadmin.domain import znodes
from kadmin.domain.models import Broker, Controller, Stat
from kadmin.errors import AuthFailed, ClusterUnreachable, InvalidData, KadminError, WrongChroot
from kadmin.results import Problem

SMALL_READS = 64  # at most this many unwatched reads go through kazoo's session; more, through the bulk reader

IDS = "/brokers/ids"
TOPICS = "/brokers/topics"

Watch = Callable[[Any], None]  # a kazoo watch: called once with the WatchedEvent

CREATE_TRIES = 3  # a create whose outcome is unknown is read back, then made again, at most this often in all
# a create's outcome is unknown: the request may or may not have been applied
_UNKNOWN_OUTCOME = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, KazooTimeoutError)


def _stat(s: Any) -> Stat:
    return Stat(*s)


def _broker(bid: int, data: bytes | None, stat: Stat, controller_id: int | None) -> Broker:
    try:
        reg = znodes.decode_registration(data)
        err = None
    except znodes.ZnodeFormatError as e:
        reg, err = None, str(e)
    return Broker(
        id=bid, stat=stat, raw=data or b"", registration=reg, error=err, is_controller=(bid == controller_id)
    )


class ZkReads(ZkSession):
    """Every read and write here is bounded (ZkSession._call: --connect-timeout, never past the command's deadline)
    and sent again when the connection is lost meanwhile; kazoo's blocking calls are never used for a request."""

    def _children(self, path: str, watch: Watch | None = None) -> list[str]:
        try:
            return list(self._call(path, lambda: self.zk.get_children_async(path, watch=watch), "listing"))
        except NoNodeError:
            if path == IDS:
                raise self._wrong_chroot() from None
            raise
        except KadminError:
            raise
        except Exception as e:  # noqa: BLE001 - translated at the layer's edge
            raise self._translate(path, e) from e

    def _wrong_chroot(self) -> WrongChroot:
        where = f"chroot {self.conn.chroot!r}" if self.conn.chroot else "the root (no chroot)"
        hint = ""
        try:
            if not self.conn.chroot:
                roots = [c for c in self._call("/", lambda: self.zk.get_children_async("/"), "listing")
                         if c != "zookeeper"]
                if roots:
                    hint = f"; top-level znodes here: {', '.join('/' + r for r in sorted(roots)[:5])}"
        except Exception:  # noqa: BLE001 - a hint only
            pass
        return WrongChroot(
            f"{IDS} does not exist under {where} on {self.conn.hosts}: the chroot is probably wrong{hint}"
        )

    def get(self, path: str, watch: Watch | None = None, until: float | None = None) -> Znode | None:
        """`path`'s znode, None when it does not exist; bounded (`until`, else ZkSession.bound()), errors translated."""
        try:
            data, stat = self._call(path, lambda: self.zk.get_async(path, watch=watch), until=until)
        except NoNodeError:
            return None
        except KadminError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._translate(path, e) from e
        return Znode(path, data, _stat(stat))

    # ------------------------------------------------------------------ plain znodes (Kafka's admin znodes)
    def read_znode(self, path: str, until: float | None = None) -> bytes | None:
        """`path`'s data (b"" when it has none), None when it does not exist; bounded, retried, errors translated."""
        node = self.get(path, until=until)
        return None if node is None else (node.data or b"")

    def znode_exists(self, path: str) -> bool:
        """Whether `path` exists (ZooKeeper checks no ACL for this); bounded, retried, errors translated."""
        try:
            return self._call(path, lambda: self.zk.exists_async(path), "checking") is not None
        except KadminError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._translate(path, e) from e

    def create_znode(self, path: str, data: bytes, ephemeral: bool = False) -> bool:
        """Create the persistent znode `path` holding `data` (its parents as needed, open ACL as kazoo's
        default; `ephemeral`: it goes with this session, its parents stay): True when this call created it,
        False when it existed already (someone else's).

        Not blindly retried: a create whose reply was lost (connection loss, time-out, session expiry) may
        have been applied, and a second create would then fail with NodeExists, which must not be read as
        another writer's znode. So the znode is read back (a retried read): holding `data`, it is ours;
        holding anything else, another writer's; absent, the create did not happen and is made again. One
        ambiguity is left, and harmless for Kafka's admin znodes: applied, then consumed and deleted by
        the controller before the read back, the create is made again; the same request twice, which asks
        the controller for what it has just done. Errors are translated as the reads' are. The whole of it (the
        creates and the reads back) is bounded as one request is (ZkSession.bound()): no answer in time is
        ClusterUnreachable saying the outcome is unknown."""
        began = self._clock()
        until = began + self.bound()
        lost: Exception | None = None
        for _ in range(CREATE_TRIES):
            try:
                self._blocking(path, "creating", lambda: self.zk.create(path, data, makepath=True,
                                                                        ephemeral=ephemeral), until)
                return True
            except NodeExistsError:
                if lost is None:
                    return False  # nothing of ours was under way: another writer's
                # an earlier attempt of ours may have been applied after all: read it back
            except _UNKNOWN_OUTCOME as e:
                lost = e
            except KadminError:
                raise
            except Exception as e:  # noqa: BLE001
                raise self._translate_create(path, e) from e
            try:  # retried: waits for the connection to come back, within the bound
                now = self.read_znode(path, until)
            except ClusterUnreachable:  # what the operator needs to know is the create's outcome, not the read's
                raise self._no_answer(path, "creating", until - began, unknown=True) from lost
            if now is not None:
                return now == data
        assert lost is not None
        raise self._translate_create(path, lost) from lost

    def delete_znode(self, path: str, version: int) -> bool:
        """Delete `path` if it is still at `version` (compare-and-delete): True when it is gone (deleted now, or
        by someone else: a delete sent again after a lost reply finds nothing), False when it changed meanwhile.
        Bounded and sent again after a lost connection, as a read is; errors translated."""
        try:
            self._call(path, lambda: self.zk.delete_async(path, version=version), "deleting")
            return True
        except NoNodeError:
            return True
        except BadVersionError:
            return False
        except KadminError:
            raise
        except NoAuthError as e:
            raise AuthFailed(f"not authorized to delete {path} on {self.conn.where}: check --zk-auth") from e
        except Exception as e:  # noqa: BLE001
            raise self._translate(path, e) from e

    def _translate_create(self, path: str, e: Exception) -> KadminError:
        """`_translate` for a create: the same errors and exit codes, the message naming what was refused."""
        if isinstance(e, NoAuthError):
            return AuthFailed(f"not authorized to create {path} on {self.conn.where}: check --zk-auth")
        if isinstance(e, _UNKNOWN_OUTCOME):
            return ClusterUnreachable(f"lost the connection to {self.conn.where} while creating {path}")
        err = self._translate(path, e)
        return type(err)(err.message.replace(f"reading {path}", f"creating {path}", 1), code=err.code)

    def get_many(self, paths: Iterable[str], watch: Watch | None = None) -> Iterator[tuple[str, Znode | None]]:
        """Pipelined getData with a bounded in-flight window; reads lost to a reconnect are re-issued.

        Without a watch, more than SMALL_READS reads go through the bulk reader (tens of thousands of reads/s,
        on a session of its own); a watch belongs to the kazoo session, so watched reads go through kazoo, and
        so do a few: a second session would cost more than it saves (ZooKeeper writes its creation and its
        close to the transaction log, and a gate on a small cluster reads a handful of znodes).
        """
        if watch is None:
            paths = iter(paths)
            first = list(itertools.islice(paths, SMALL_READS + 1))
            if len(first) <= SMALL_READS:
                yield from self._get_batch(first, None)
                return
            try:
                for p, data, stat in self._bulk().get_many(itertools.chain(first, paths)):
                    yield p, (Znode(p, data, stat) if stat is not None else None)
            except ClusterUnreachable as e:
                self._silent = True  # closing does not wait for ZooKeeper's reply either
                silent = self._bulk_reader.went_silent if self._bulk_reader is not None else None
                if silent is not None:  # a member that stopped answering: said as every other read says it
                    who, path, waited = silent
                    raise self._no_answer(path, "reading", waited, who=who) from e
                raise
            return
        batch: list[str] = []
        for p in paths:
            batch.append(p)
            if len(batch) >= WINDOW:
                yield from self._get_batch(batch, watch)
                batch = []
        if batch:
            yield from self._get_batch(batch, watch)

    def _get_batch(self, paths: list[str], watch: Watch | None) -> Iterator[tuple[str, Znode | None]]:
        """Pipelined kazoo reads: each answer waited for within the bound (ZooKeeper answers a session's requests
        in order, so this is the longest silence allowed); one lost to a dropped connection is read again."""
        asyncs = [(p, self.zk.get_async(p, watch=watch)) for p in paths]
        for p, a in asyncs:
            bound = self.bound()
            end = self._clock() + bound
            try:
                data, stat = a.get(timeout=bound)
            except NoNodeError:
                yield p, None
                continue
            except KazooTimeoutError:
                raise self._no_answer(p, "reading", bound) from None
            except ConnectionLoss:
                # re-issued through the retrying path, within what is left of this wait: a server that froze
                # drops kazoo's connection (its pings go unanswered) a few seconds into the wait, and a fresh bound
                # then would wait for it up to twice the bound
                try:
                    node = self.get(p, watch=watch, until=end)
                except ClusterUnreachable:
                    if self._clock() < end:
                        raise
                    raise self._no_answer(p, "reading", bound) from None
                yield p, node
                continue
            except Exception as e:  # noqa: BLE001
                raise self._translate(p, e) from e
            yield p, Znode(p, data, _stat(stat))

    def cluster_id(self) -> str | None:
        """/cluster/id's id, or None when the znode is absent (a cluster that never had a 0.10.1+ broker)."""
        node = self.get("/cluster/id")
        if node is None:
            self._children(IDS)  # absent because the chroot is wrong? say so
            return None
        try:
            return znodes.decode_cluster_id(node.data)
        except znodes.ZnodeFormatError as e:  # malformed data: exit 5, as documented (issue 34 §6)
            raise InvalidData(f"/cluster/id: {e}") from e

    def controller(self) -> tuple[Controller | None, list[Problem]]:
        node = self.get("/controller")
        if node is None:
            return None, []
        try:
            return znodes.decode_controller(node.data), []
        except znodes.ZnodeFormatError as e:
            return None, [Problem("invalid_znode", f"/controller: {e}")]

    # ------------------------------------------------------------------ brokers
    def _ids(self, children: Iterable[str]) -> tuple[list[int], list[Problem]]:
        """The broker ids among /brokers/ids' children: canonical decimal only, as Kafka names them.

        `02`, `1_0` or non-ASCII digits are not ids (int() would read them as 2, 10, ...: listed twice
        next to a real `2`, or read from a znode that does not exist): each is reported as invalid.
        """
        ids, problems = [], []
        for c in children:
            try:
                ids.append(znodes.broker_id_from_name(c))
            except znodes.ZnodeFormatError:
                name = c if c.isprintable() and len(c) <= 60 else znodes.show_value(c)
                problems.append(Problem("invalid_znode", f"{IDS}/{name}: not a broker id "
                                        "(expected a decimal integer from 0 to 2147483647, without leading zeros)"))
        return sorted(ids), problems

    def list_brokers(self) -> BrokerListing:
        ids, problems = self._ids(self._children(IDS))
        controller, cproblems = self.controller()
        problems += cproblems
        cid = controller.broker_id if controller else None
        brokers = []
        for path, node in self.get_many(f"{IDS}/{i}" for i in ids):
            if node is None:  # deregistered between the two reads, as Kafka's controller skips it
                continue
            b = _broker(int(path.rsplit("/", 1)[1]), node.data, node.stat, cid)
            if b.error:
                problems.append(Problem("invalid_znode", f"{path}: {b.error}"))
            brokers.append(b)
        return BrokerListing(brokers, controller, problems)

    def get_broker(self, broker_id: int) -> tuple[Broker | None, list[Problem]]:
        self._children(IDS)  # distinguishes "not registered" from "wrong chroot"
        node = self.get(f"{IDS}/{broker_id}")
        if node is None:
            return None, []
        controller, problems = self.controller()
        b = _broker(broker_id, node.data, node.stat, controller.broker_id if controller else None)
        if b.error:
            problems.append(Problem("invalid_znode", f"{IDS}/{broker_id}: {b.error}"))
        return b, problems
