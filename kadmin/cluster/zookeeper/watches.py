"""Watches: one loop on ZooKeeper watches (batched events, a deadline, a full re-read after a reconnect),
and the two watches on it: broker registrations and partition states (ISRs)."""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kazoo.protocol.states import KazooState

from kadmin.cluster.base import WatchTick
from kadmin.cluster.zookeeper.reads import IDS, TOPICS, Watch, ZkReads
from kadmin.domain import znodes
from kadmin.domain.models import Generation
from kadmin.errors import ClusterUnreachable

T = TypeVar("T")
RESYNC = "\0resync"  # queued when everything must be read again: no znode path starts with NUL
PAUSE = 0.1  # after a read lost to the connection, before reading everything again

States = list[tuple[tuple[str, int], tuple[int, ...] | None]]


class ZkWatches(ZkReads):
    def _watch(self, timeout: float | None, read_all: Callable[[Watch, str], T],
               read_changed: Callable[[Watch, set[str | None]], T | None]) -> Iterator[T]:
        """The one watch loop: yield `read_all(watch, "initial")`, then, for each batch of watch events
        (the znode paths, None for a path-less event), `read_changed(watch, paths)` unless it is None.

        Both reads pass `watch` to every read that should wake the loop on a change. After a reconnect
        or a new session (kazoo drops its watches then), or a read lost to the connection, everything is
        read again: `read_all(watch, "resync")`, after a pause on the injected sleep. Ends `timeout`
        seconds after it started on the injected clock; no wait for an event or pause outlasts that.
        """
        events: queue.Queue[str | None] = queue.Queue()

        def watch(event: Any) -> None:
            events.put(getattr(event, "path", None))

        listener = self._resync_listener(lambda: events.put(RESYNC))
        deadline = None if timeout is None else self._clock() + timeout
        watching = False
        try:
            drops = self._drops
            initial = read_all(watch, "initial")  # a failure here is the command's error, said once
            self._watching += 1  # from here a lost and regained connection is said on stderr (_report_state)
            self._say_missed_drop(drops)  # and one lost while the first read was answered
            watching = True
            yield initial
            while True:
                left = None if deadline is None else deadline - self._clock()
                if left is not None and left <= 0:
                    return
                try:  # at most a second at a time: the deadline is checked on the injected clock
                    first = events.get(timeout=1.0 if left is None else min(left, 1.0))
                except queue.Empty:
                    continue
                batch = {first}
                while True:
                    try:
                        batch.add(events.get_nowait())
                    except queue.Empty:
                        break
                try:
                    got = read_all(watch, "resync") if RESYNC in batch else read_changed(watch, batch)
                except ClusterUnreachable:
                    events.put(RESYNC)  # read everything again (at once when kazoo is back)
                    self._sleep(PAUSE if deadline is None else min(PAUSE, max(deadline - self._clock(), 0.0)))
                    continue
                if got is not None:
                    yield got
        finally:
            if watching:
                self._watching -= 1
            self.zk.remove_listener(listener)

    def _resync_listener(self, on_reconnect: Callable[[], None]) -> Callable[[str], None]:
        """Call `on_reconnect` whenever the client is connected again after a drop or a new session."""
        last = [KazooState.CONNECTED]

        def on_state(state: str) -> None:
            if state == KazooState.CONNECTED and last[0] != KazooState.CONNECTED:
                on_reconnect()
            last[0] = state

        self.zk.add_listener(on_state)
        return on_state

    def watch_states(self, keys: Sequence[tuple[str, int]], timeout: float | None,
                     settled: Callable[[tuple[int, ...]], bool] | None = None) -> Iterator[States]:
        """Watch some partition state znodes: yield every key's ISR now, then each change as it comes.

        Costs one read per change (a data watch per znode), never a rescan; after a reconnect or a
        new session every key still followed is read again. An unreadable or missing state yields ISR
        None. A key whose ISR is `settled` is yielded that once and then no longer followed: its znode
        is not read again (a watch already set on it may fire once more; that event is dropped).
        """
        by_path = {f"{TOPICS}/{t}/partitions/{p}/state": (t, p) for t, p in keys}
        followed = set(by_path)

        def read(watch: Watch, paths: Iterable[str]) -> States:
            out = []
            for path, node in self.get_many(sorted(followed.intersection(paths)), watch=watch):
                isr = None
                if node is not None:
                    try:
                        isr = znodes.decode_partition_state(node.data)["isr"]
                    except znodes.ZnodeFormatError:
                        isr = None
                out.append((by_path[path], isr))
                if isr is not None and settled is not None and settled(isr):
                    followed.discard(path)
            return out

        def read_changed(watch: Watch, paths: set[str | None]) -> States | None:
            return read(watch, followed & paths) if followed & paths else None  # else: nothing followed changed

        return self._watch(timeout, lambda watch, _why: read(watch, followed), read_changed)

    def watch_brokers(self, timeout: float | None) -> Iterator[WatchTick]:
        """Yield the broker generations now, then after every change, driven by ZooKeeper watches.

        After a reconnect (same session) or a new session, every registration is read again and
        the tick is marked `resynced`, so a broker that bounced while we were away is not missed.
        """
        gens: dict[int, Generation] = {}

        def read_all(watch: Watch, why: str) -> WatchTick:
            nonlocal gens
            ids, _ = self._ids(self._children(IDS, watch=watch))
            gens = {}
            for path, node in self.get_many((f"{IDS}/{i}" for i in ids), watch=watch):
                if node is not None:
                    gens[int(path.rsplit("/", 1)[1])] = Generation(node.stat.czxid, node.stat.mzxid)
            return WatchTick(dict(gens), resynced=why == "resync", reason=why)

        def read_changed(watch: Watch, paths: set[str | None]) -> WatchTick | None:
            nonlocal gens
            new = dict(gens)
            reread = {p for p in paths if p and p.startswith(IDS + "/")}
            if IDS in paths:  # the children changed: ids that went or came are read (a fast bounce is back)
                ids, _ = self._ids(self._children(IDS, watch=watch))
                reread |= {f"{IDS}/{i}" for i in set(new) ^ set(ids)}
            for p, node in self.get_many(sorted(reread), watch=watch):
                try:
                    bid = int(p.rsplit("/", 1)[1])
                except ValueError:
                    continue
                if node is None:
                    new.pop(bid, None)
                else:
                    new[bid] = Generation(node.stat.czxid, node.stat.mzxid)
            if new == gens:
                return None
            gens = new
            return WatchTick(dict(gens), reason="change")

        return self._watch(timeout, read_all, read_changed)
