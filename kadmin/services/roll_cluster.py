"""What a roll needs of a cluster, as one typed port (`RollCluster`), and its implementation over the backend's
capabilities (`BackendRollCluster`).

The engine (kadmin/services/roll_engine.py) sees only this port. Its answers are the gates' (can-stop, the
quorum check, the partitions check, the in-sync wait: kadmin's own services), the mutations' (drain, undrain,
ControlledShutdown), and what a node shows now (`observe`), judged by kadmin/domain/roll.py. Which kind of
cluster it is shows only in `Traits`, which BackendRollCluster reads off the backend's capabilities (does a
registration carry an epoch or a fenced state, can the controller be asked for a ControlledShutdown, are the
quorum's voters nodes of the cluster): a third kind of cluster would touch the backend, not the roll.

Every method may raise KadminError (the cluster did not answer, a read was incomplete): a gate asks again, a
mutation fails its step. `reopen` drops the connections (the broker asked may be the one restarting).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kadmin.cluster.base import Backend, QuorumSetting
from kadmin.domain import partitions as prules
from kadmin.domain import roll as dom
from kadmin.domain.models import PartitionState, Registered
from kadmin.domain.quorum import CheckLimits, QuorumState, leader_clock
from kadmin.errors import InvalidData


class Unreadable(InvalidData):
    """A read a roll's answer depends on was incomplete (a registration could not be parsed): no answer (exit 5
    for `roll plan`; a gate of a running roll asks again)."""


@dataclass(frozen=True)
class StopGate:
    """can-stop for a roll: `why` None when the node may stop; `allowed`: the partitions `--allow-unavailable`
    lets become unavailable (`topic-partition: why`), named in the journal and the output."""

    why: str | None
    allowed: tuple[str, ...] = ()
    blockers: tuple[dom.Blocker, ...] = ()  # the partitions holding it (the first page of them)
    cause: str | None = None  # a cause the roll cannot fix (dom.Held)


class RollCluster(Protocol):
    def traits(self) -> dom.Traits: ...

    def cluster_id(self) -> str | None: ...

    # The nodes now, plus `known` ones (a roll's own, from its journal) that are not registered now
    def topology(self, known: Iterable[dom.RollNode] = ()) -> dom.Topology: ...

    # Each node as the cluster shows it now, from one read of the registrations (and of the quorum)
    def observe(self, nodes: Sequence[dom.RollNode]) -> dict[int, dom.NodeSeen]: ...

    def fetch_timeout(self) -> QuorumSetting: ...

    # The active controller now (a ZooKeeper-mode batch stops it after its batch-mates)
    def active_controller(self) -> int | None: ...

    # Why the cluster is not healthy enough to begin a roll (empty: it is)
    def unhealthy(self, fetch_timeout_ms: int) -> list[str]: ...

    def quorum_check(self, node: int, fetch_timeout_ms: int) -> str | dom.Held | None: ...

    def can_stop(self, node: int, allow: prules.TopicFilter | None) -> StopGate: ...

    # May these brokers stop at once, by the batch rule (None: yes, else why not)?
    def together(self, ids: Sequence[int], rule: dom.BatchRule, allow: prules.TopicFilter | None) -> str | None: ...

    # The batch rule as a predicate, from one read (the plan's batches, or a batch as it forms)
    def safe_together(self, rule: dom.BatchRule, allow: prules.TopicFilter | None
                      ) -> Callable[[Sequence[int]], bool]: ...

    # Is anything outside `batch` down, fenced, lagging or under-replicated (None: nothing)?
    def others_healthy(self, batch: Sequence[int], roll_nodes: Sequence[dom.RollNode],
                       fetch_timeout_ms: int) -> str | dom.Held | None: ...

    def broker_epoch(self, node: int) -> int | None: ...

    # Mutations: None when done, else why not (a refusal); KadminError when the cluster did not answer
    def drain(self, files: Mapping[int, Path], timeout: float) -> str | None: ...

    def undrain(self, files: Mapping[int, Path], timeout: float) -> str | None: ...

    def controlled_shutdown(self, node: int, epoch: int, timeout: float) -> str | None: ...

    def in_sync(self, node: int, timeout: float, on_status: Callable[[str], None] | None = None) -> str | None: ...

    def healthy(self) -> str | None: ...

    def reopen(self) -> None: ...

    def close(self) -> None: ...


def endpoint_host_port(endpoints: Sequence[str]) -> tuple[str | None, int | None]:
    """`CONTROLLER://host:port` (or `[v6]:port`) -> (host, port); (None, None) when there is none."""
    for e in endpoints:
        hp = e.split("://", 1)[-1]
        host, _, port = hp.rpartition(":")
        if host and port.isdigit():
            return host.strip("[]"), int(port)
    return None, None


def quorum_age_ms(q: QuorumState, node: int, now_ms: int) -> tuple[int | None, int | None]:
    """(ms since the leader last heard a fetch from `node`, ms since it was last caught up), by the leader's
    clock; None where DescribeQuorum has no timestamp. The leader itself: (0, 0)."""
    if q.leader_id == node:
        return 0, 0
    now = leader_clock(q, now_ms).now_ms
    v = next((r for r in q.voters if r.id == node), None)
    if v is None:
        return None, None
    fetch = None if v.last_fetch_timestamp is None else now - v.last_fetch_timestamp
    caught = None if v.last_caught_up_timestamp is None else now - v.last_caught_up_timestamp
    return fetch, caught


def quorum_directory(q: QuorumState, node: int) -> tuple[str | None, bool]:
    """(the directory id the quorum knows `node` by, whether it fetches as an observer rather than as its voter):
    an observer entry of the node's id under another directory id than its voter entry's (or with none) that
    fetched later than the voter entry did. The leader keeps an observer entry minutes after its last fetch, and
    a voter replaced by remove-controller/add-controller lingers among the observers: those are older."""
    v = next((r for r in q.voters if r.id == node), None)
    others = [o for o in q.observers if o.id == node and (v is None or (
        o.directory_id != v.directory_id and (o.last_fetch_timestamp or 0) > (v.last_fetch_timestamp or 0)))]
    if others:
        o = max(others, key=lambda r: r.last_fetch_timestamp or 0)
        return o.directory_id, True
    return (v.directory_id if v is not None else None), False


def _token(files: Mapping[int, Path]) -> int:
    """The leadership lease's token of a roll: its journal's directory (where its drain files are), so a run
    resumed after a kill takes back the lease the killed one held (kadmin/domain/lease.py)."""
    from kadmin.domain.lease import token_of

    return token_of(str(next(iter(files.values())).parent.resolve()))


class BackendRollCluster:
    """RollCluster over a backend, opened afresh after `reopen` (`open_backend` makes a new one each call)."""

    def __init__(self, open_backend: Callable[[], Backend]) -> None:
        self.open_backend = open_backend
        self._backend: Backend | None = None
        self._traits: dom.Traits | None = None

    @property
    def b(self) -> Backend:
        if self._backend is None:
            self._backend = self.open_backend()
        return self._backend

    def reopen(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    close = reopen

    @property
    def q(self) -> Backend:
        """The backend the metadata quorum is asked through (the same one, but for a migration's phase)."""
        return self.b

    @property
    def lead(self) -> Backend:
        """The backend leaderships are moved through (the drain; the same one, but for a migration's phase)."""
        return self.b

    # ---------------------------------------------------------------- what the cluster is
    def traits(self) -> dom.Traits:
        if self._traits is None:
            b = self.b
            self._traits = dom.Traits(receipt="epoch" if b.registrations.epochs else "unfenced",
                                      controlled_shutdown=b.has("controller_links") and b.has("epochs"),
                                      quorum_nodes=self.q.quorum.voters_are_nodes)
        return self._traits

    def cluster_id(self) -> str | None:
        return self.b.identity.cluster_id()

    def topology(self, known: Iterable[dom.RollNode] = ()) -> dom.Topology:
        """The registered brokers, plus (when the quorum's voters are nodes) the voters, a voter that is a broker
        too being `combined`; the leader: the quorum's, else the broker elected controller."""
        b = self.b
        regs = self._registrations()
        found: dict[int, dom.RollNode] = {}
        voters = {}
        if self.traits().quorum_nodes:
            q, _ = self.q.quorum.describe_quorum()
            leader = q.leader_id if q.leader_id >= 0 else None
            voters = {v.id: v for v in q.voters}
        else:
            ctl, _ = b.partitions.controller()
            leader = ctl.broker_id if ctl is not None else None
        for i in set(regs) | set(voters):
            reg, v = regs.get(i), voters.get(i)
            if reg is not None:
                found[i] = dom.RollNode(i, "combined" if v is not None else "broker", reg.host, reg.port, reg.rack)
            elif v is not None:
                host, port = endpoint_host_port(v.endpoints)
                found[i] = dom.RollNode(i, "controller", host, port)
        for n in known:
            found.setdefault(n.id, n)
        mode: dom.Mode = "zookeeper" if b.mode == "zookeeper" else "kraft"  # a label for the journal only
        return dom.Topology(mode, tuple(sorted(found.values(), key=lambda n: n.id)), leader)

    def _registrations(self) -> dict[int, Registered]:
        tick = self.b.registrations.registrations()
        if tick.problems:
            raise Unreadable("a registration could not be read: " + "; ".join(p.message for p in tick.problems))
        return tick.brokers

    def observe(self, nodes: Sequence[dom.RollNode]) -> dict[int, dom.NodeSeen]:
        regs = self._registrations()
        q: QuorumState | None = None
        now_ms = 0
        if self.traits().quorum_nodes and any(n.is_controller for n in nodes):
            q, now_ms = self.q.quorum.describe_quorum()
        out = {}
        for n in nodes:
            r = regs.get(n.id)
            fetch = caught = None
            leader = directory = None
            voter = leads = observer = False
            if q is not None:
                fetch, caught = quorum_age_ms(q, n.id, now_ms)
                leader = q.leader_id if q.leader_id >= 0 else None
                voter = any(v.id == n.id for v in q.voters)
                leads = q.leader_id == n.id
                if n.is_controller:
                    directory, observer = quorum_directory(q, n.id)
            out[n.id] = dom.NodeSeen(n.id, (r is not None) if n.is_broker else None, r.epoch if r else None,
                                     r.fenced if r else None, voter, leads, fetch, caught, leader,
                                     directory_id=directory, observer=observer)
        return out

    def fetch_timeout(self) -> QuorumSetting:
        return self.q.quorum.quorum_fetch_timeout()

    def active_controller(self) -> int | None:
        ctl, _ = self.b.partitions.controller()
        return ctl.broker_id if ctl is not None else None

    def broker_epoch(self, node: int) -> int | None:
        r = self._registrations().get(node)
        return None if r is None else r.epoch

    # ---------------------------------------------------------------- gates
    def unhealthy(self, fetch_timeout_ms: int) -> list[str]:
        """An offline, under-min-ISR or under-replicated partition, a reassignment in flight, an unhealthy quorum
        (where the voters are nodes, any lagging or down voter), or what could not be read."""
        from kadmin.services import partitions as psvc
        from kadmin.services import quorum as qsvc

        b = self.b
        tick = b.registrations.registrations()
        why: list[str] = [f"a registration could not be read: {p.message}" for p in tick.problems]
        check = psvc.check(b.partitions)
        if int(check.exit_code) != 0:
            why.append(f"partitions check: {check.message or check.status}")
        moving = [p.key for p in b.leadership.partitions() if p.reassigning]
        if moving:
            why.append(f"a reassignment is in flight for {psvc.describe_keys(moving)}")
        q, now_ms = self.q.quorum.describe_quorum()
        qc = qsvc.check(q, CheckLimits(fetch_timeout_ms=fetch_timeout_ms), now_ms)
        lagging = any(f.level == "WARNING" and "observer" not in f.message for f in qc.data.findings)
        if int(qc.exit_code) >= 2 or (int(qc.exit_code) == 1 and self.traits().quorum_nodes and lagging):
            why.append(f"quorum check: {qc.message or qc.status}")
        return why

    def quorum_check(self, node: int, fetch_timeout_ms: int) -> dom.Held | None:
        from kadmin.services import quorum as qsvc

        q, now_ms = self.q.quorum.describe_quorum()
        res = qsvc.check(q, CheckLimits(fetch_timeout_ms=fetch_timeout_ms, restart=node), now_ms)
        if int(res.exit_code) < 2:
            return None
        blockers = []
        for v in q.voters:  # the other voters not heard from: the majority without `node` rests on them
            fetch, _ = quorum_age_ms(q, v.id, now_ms)
            if v.id != node and v.id != q.leader_id and (fetch is None or fetch > fetch_timeout_ms):
                blockers.append(dom.Blocker(f"not heard from {'ever' if fetch is None else f'for {fetch} ms'} "
                                            f"(limit {fetch_timeout_ms} ms)", voter=v.id))
        if q.leader_id < 0:
            blockers.append(dom.Blocker("the quorum has no leader"))
        return dom.Held(res.message or res.status, tuple(blockers[:PAGE]))

    def can_stop(self, node: int, allow: prules.TopicFilter | None) -> StopGate:
        from kadmin.services import partitions as psvc

        res, let, scan = psvc.stop_gate(self.b.partitions, node, allow=allow)
        allowed = tuple(f"{b.topic}-{b.partition}: {b.reason}" for b in let)
        if int(res.exit_code) == 0:
            return StopGate(None, allowed)
        held = res.data.blocking if res.data is not None else ()
        keys = {(b.topic, b.partition) for b in held}
        parts = [p for p in scan.partitions if (p.topic, p.partition) in keys]
        return StopGate(res.message or res.status, allowed,
                        tuple(dom.Blocker(b.reason, b.topic, b.partition) for b in held[:PAGE]),
                        _cause(parts, scan.live, {node}))

    def safe_together(self, rule: dom.BatchRule, allow: prules.TopicFilter | None
                      ) -> Callable[[Sequence[int]], bool]:
        scan = self.b.partitions.scan_partitions()

        def safe(ids: Sequence[int]) -> bool:
            return not _batch_blockers(scan.partitions, scan.live, scan.unreadable, ids, rule, allow)

        return safe

    def together(self, ids: Sequence[int], rule: dom.BatchRule, allow: prules.TopicFilter | None) -> str | None:
        scan = self.b.partitions.scan_partitions()
        blocked = _batch_blockers(scan.partitions, scan.live, scan.unreadable, ids, rule, allow)
        if not blocked:
            return None
        first = blocked[0]
        where = first.topic if first.partition is None else f"{first.topic}-{first.partition}"
        return f"{len(blocked)} partition(s) keep brokers {','.join(map(str, ids))} from stopping together, e.g. " \
               f"{where}: {first.reason}"

    def others_healthy(self, batch: Sequence[int], roll_nodes: Sequence[dom.RollNode],
                       fetch_timeout_ms: int) -> dom.Held | None:
        """Yelp's rule before every stop: every other broker registered and unfenced, every other voter heard from,
        and no partition missing a replica outside `batch` (the batch's own drained or shut-down replicas may be
        out of the ISR already), every partition seen (KRaft: against the brokers' log dirs)."""
        from kadmin.services import partitions as psvc

        b, mine = self.b, set(batch)
        regs = self._registrations()
        why: list[str] = []
        for n in roll_nodes:
            if n.is_broker and n.id not in mine and n.id not in regs:
                why.append(f"broker {n.id} is not registered")
        why += [f"broker {i} is fenced" for i, r in sorted(regs.items()) if i not in mine and r.fenced]
        cov, scan = psvc.covered(b.partitions, None, None, lambda: b.partitions.scan_partitions())
        why += [f"topic {t} could not be read: {w}" for t, w in sorted(scan.unreadable.items())]
        why += [p.message for p in psvc.split_problems(scan.problems)[0]]
        short = []
        for p in scan.partitions:
            if p.deleting:
                continue
            if p.leader is None or p.leader < 0:
                short.append((p.topic, p.partition, "no leader"))
            elif set(p.replicas) - set(p.isr) - mine:
                out = sorted(set(p.replicas) - set(p.isr) - mine)
                short.append((p.topic, p.partition, f"replica {','.join(map(str, out))} out of the ISR"))
        blockers = [dom.Blocker(f"broker {n.id} is not registered", broker=n.id) for n in roll_nodes
                    if n.is_broker and n.id not in mine and n.id not in regs]
        blockers += [dom.Blocker(w, t, pt) for t, pt, w in short[:PAGE]]
        if short:
            t, pt, w = short[0]
            why.append(f"{len(short)} partition(s) under-replicated or offline outside this batch, e.g. {t}-{pt}: {w}")
        if cov is not None:
            hidden, unread = prules.unseen_partitions(cov, {(p.topic, p.partition) for p in scan.partitions})
            if hidden:
                (t, pt), on = hidden[0]
                why.append(prules.hidden_reason(t, on))
            why += [f"broker {i}'s log dirs could not be listed: {w}" for i, w in sorted(unread.items())]
        if self.traits().quorum_nodes:
            q, now_ms = self.q.quorum.describe_quorum()
            if q.leader_id < 0:
                why.append("the quorum has no leader")
            for v in q.voters:
                if v.id in mine or v.id == q.leader_id:
                    continue
                fetch, _ = quorum_age_ms(q, v.id, now_ms)
                if fetch is None or fetch > fetch_timeout_ms:
                    why.append(f"voter {v.id} was last heard from {fetch} ms ago (limit {fetch_timeout_ms} ms)")
                    blockers.append(dom.Blocker(f"last heard from {fetch} ms ago", voter=v.id))
        if not why:
            return None
        keys = {(t, pt) for t, pt, _ in short}
        return dom.Held("; ".join(why), tuple(blockers),
                        _cause([p for p in scan.partitions if (p.topic, p.partition) in keys], scan.live, mine))

    def in_sync(self, node: int, timeout: float, on_status: Callable[[str], None] | None = None) -> str | None:
        from kadmin.services import partitions as psvc

        res = psvc.wait_in_sync(self.b.partitions, node, timeout, on_status)
        return None if int(res.exit_code) == 0 else (res.message or res.status)

    def healthy(self) -> str | None:
        from kadmin.services import partitions as psvc

        res = psvc.check(self.b.partitions)
        return None if int(res.exit_code) == 0 else (res.message or res.status)

    # ---------------------------------------------------------------- mutations
    def drain(self, files: Mapping[int, Path], timeout: float) -> str | None:
        from kadmin.services import drain as dsvc

        b = self.lead
        res = dsvc.drain_together(b.leadership, b.identity, files, timeout=timeout, token=_token(files))
        return None if int(res.exit_code) == 0 else (res.message or res.status)

    def undrain(self, files: Mapping[int, Path], timeout: float) -> str | None:
        from kadmin.services import drain as dsvc

        b = self.lead
        res = dsvc.undrain_together(b.leadership, b.identity, files, timeout=timeout, token=_token(files))
        return None if int(res.exit_code) == 0 else (res.message or res.status)

    def controlled_shutdown(self, node: int, epoch: int, timeout: float) -> str | None:
        from kadmin.services import shutdown as ssvc

        b = self.b
        res = ssvc.shutdown(b.epochs, b.controller_links, node, epoch=epoch, wait=True, timeout=timeout,
                            dry_run=False, force=False)
        return None if int(res.exit_code) == 0 else (res.message or res.status)


PAGE = 20  # blockers named in a gate's answer (a `gate_waiting` event): the first page; `why` counts them all


def _cause(held: Sequence[PartitionState], live: frozenset[int], mine: set[int]) -> str | None:
    """What holds these partitions that the roll's own nodes cannot free: a replica on a broker that is down (not
    registered, not one of `mine`), a reassignment in flight."""
    down = sorted({r for p in held for r in p.replicas if r not in live and r not in mine})
    moving = [f"{p.topic}-{p.partition}" for p in held if p.adding_replicas]
    said = []
    if down:
        said.append(f"broker{'s' if len(down) > 1 else ''} {', '.join(map(str, down))} "
                    f"{'are' if len(down) > 1 else 'is'} down (not registered) and not being restarted here: the "
                    "roll cannot bring it back; start it, or the gate waits until --step-timeout")
    if moving:
        said.append(f"a reassignment is in flight for {', '.join(moving[:5])}"
                    + (f" (+{len(moving) - 5} more)" if len(moving) > 5 else "") + ": it must finish first")
    return "; ".join(said) or None


def _batch_blockers(partitions: Sequence[PartitionState], live: frozenset[int], unreadable: Mapping[str, str],
                    ids: Sequence[int], rule: dom.BatchRule, allow: prules.TopicFilter | None) -> list[prules.Blocker]:
    """What keeps `ids` from stopping at once: can-stop's rules for the batch (but what `allow` lets become
    unavailable), any topic that could not be read, and under the default rule any partition they share."""
    blocked, _ = prules.allowed(prules.stop_together_blockers(partitions, set(ids), live), allow)
    blocked += [prules.Blocker(t, None, why) for t, why in sorted(unreadable.items())]
    if rule == "distinct":
        blocked += prules.shared_partitions(partitions, set(ids))
    return blocked
