"""`kadmin brokers drain ID` / `undrain ID --from FILE`: leadership drain without stopping the broker.

Cruise Control's demote: a reassignment that only reorders each partition's replicas, ID last and,
where ID leads, the in-sync replicas first so that the new preferred leader is electable (the replica
set is unchanged: no data moves; kadmin/domain/drain.py), then preferred-leader elections. The original
order is saved first (kadmin/domain/drain.py's versioned file); `undrain` puts it back and elects the
preferred leaders again. The reordering's and the election's completion (ZooKeeper: the controller
deletes their admin znodes; KRaft: ListPartitionReassignments) are asked from 20 ms apart growing by half.
Afterwards the leaders are read again until the goal holds or the deadline passes, polling every 0.1 s
growing by half up to 1 s; elections are asked again (at most every 2 s) for partitions that have not
moved yet. `drain_together`/`undrain_together` do the same for a roll's batch of brokers as one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kadmin import interrupts
from kadmin.cluster.base import ClusterIdentity, LeadershipMoves
from kadmin.domain import drain as dom
from kadmin.domain.drain import Key, PartitionView
from kadmin.domain.lease import MARGIN, POLL, TOKEN_MAX, Holder
from kadmin.domain.text import plural
from kadmin.domain.znodes import loads_strict
from kadmin.errors import ClusterUnreachable, ConfigError, KadminError, OutOfTime, Unsafe, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.inputs import read_input
from kadmin.payloads import Drain, MoveRefused, NotPreferred, Reorder, TopicPartition, Undrain
from kadmin.results import Result

R = TypeVar("R", Drain, Undrain)

POLL_FIRST, POLL_GROWTH, POLL_MAX = 0.1, 1.5, 1.0
QUICK_FIRST = 0.02  # s: the first pause between cheap questions (_wait_until)
QUICK_MAX = 0.05  # s: their longest pause, unless a question takes longer (then as long as it took)
# s: how long the leaders are not read after an election was asked, while ZooKeeper mode's controller has not
# deleted /admin/preferred_replica_election yet (it does once the leaders are written; a cluster without an active
# controller never does, and the leaders may be right already)
ELECTED_WAIT = 1.0
REELECT_EVERY = 2.0

ONLY_ISR_NOTE = ("broker {id} is the only in-sync replica of {keys}: no other replica may take over, so it keeps "
                 "leading them (wait for the followers to catch up: `kadmin partitions list --under-replicated`, "
                 "then drain again)")
SOLE_REPLICA_NOTE = "broker {id} is the only replica of {keys}: there is nothing to move their leadership to"


def default_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(base) / "kadmin" / "drain"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def default_path(broker_id: int, now: datetime.datetime | None = None) -> Path:
    stamp = (now or _now()).strftime("%Y%m%dT%H%M%S.%fZ")
    return default_dir() / f"broker-{broker_id}-{stamp}.json"


def write_file(path: Path, doc: Mapping[str, Any]) -> None:
    """Write the drain file once, atomically: a temporary file beside it, fsynced, then linked to its name
    (which fails if the name exists: an existing file may hold the original order of an earlier drain) and
    the directory fsynced. A SIGKILL at any point leaves no file or a complete one (at worst a hidden
    `.NAME.tmp-PID` beside it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise UsageError(f"{path} exists: it may hold the order of an earlier drain; give another --save FILE")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # atomic, and never over an existing file
        except FileExistsError:
            raise UsageError(f"{path} exists: it may hold the order of an earlier drain; give another --save "
                             "FILE") from None
        _fsync_dir(path.parent)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_file(path: Path) -> None:
    """Remove a drain file written for a drain that then changed nothing (refused before anything was sent)."""
    with contextlib.suppress(OSError):
        path.unlink()
        _fsync_dir(path.parent)


def read_file(path: Path, broker_id: int, force: bool = False) -> dom.SavedDrain:
    """The drain file `--from PATH` for broker `broker_id` (another broker's only with --force): exit 2 naming
    what is wrong."""
    try:
        doc = loads_strict(read_input(path, "--from"))
    except OSError as e:
        raise UsageError(f"--from {path}: {e.strerror or e}") from e
    except ValueError as e:
        raise UsageError(f"--from {path}: not JSON: {e}") from e
    try:
        saved = dom.parse_saved_drain(doc)
    except dom.BadDrainFile as e:
        raise UsageError(f"--from {path}: {e}") from e
    if saved.broker_id != broker_id and not force:
        raise UsageError(f"--from {path}: the file is for broker {saved.broker_id}, not {broker_id} (--force restores "
                         "it anyway)")
    return saved


def _same_cluster(saved: dom.SavedDrain, identity: ClusterIdentity, source: Path, force: bool,
                  warnings: list[str]) -> None:
    """Refuse a drain file saved on another cluster (exit 3) unless --force; say when it cannot be told."""
    try:
        here = identity.cluster_id()
    except KadminError as e:
        here, why = None, e.message
    else:
        why = "the cluster has no id"
    if saved.cluster_id is None:
        warnings.append(f"{source} does not record its cluster's id: kadmin cannot tell it from another cluster's")
        return
    if here is None:
        if not force:
            raise ConfigError(f"--from {source} was saved on cluster {saved.cluster_id}, and this cluster's id could "
                              f"not be read ({why}): --force restores it anyway")
        warnings.append(f"--force: this cluster's id could not be read ({why}); {source} is of {saved.cluster_id}")
        return
    if here != saved.cluster_id:
        if not force:
            raise ConfigError(f"--from {source} was saved on cluster {saved.cluster_id}, not this one ({here}): "
                              "--force restores it anyway", code="other_cluster")
        warnings.append(f"--force: {source} was saved on cluster {saved.cluster_id}, not this one ({here})")


def _poll(backend: LeadershipMoves, left: Callable[[], float], done: Callable[[list[PartitionView]], bool],
          reelect: Callable[[list[PartitionView]], None] | None, sleep: Callable[[float], None],
          clock: Callable[[], float]) -> list[PartitionView]:
    """Read the partitions until `done` holds or time is up; the last reading."""
    interval = POLL_FIRST
    last_elect = clock()
    while True:
        parts = backend.partitions(in_flight=False)
        if done(parts) or left() <= 0 or interrupts.pending():
            return parts
        if reelect is not None and clock() - last_elect >= REELECT_EVERY:
            reelect(parts)
            last_elect = clock()
        sleep(min(interval, max(left(), 0.0)))
        interval = min(interval * POLL_GROWTH, POLL_MAX)


def _verdict_reading(backend: LeadershipMoves, last: list[PartitionView] | None,
                     done: Callable[[list[PartitionView]], bool], warnings: list[str]) -> list[PartitionView]:
    """The verdict's fresh reading, taken now, reassignments in flight included. Should it run out of time (the
    deadline passed and its last look did not fit, as on a loaded machine) while `last`, the last reading before it,
    was not `done`, that reading gives the verdict: not done (exit 1), said so; the cluster answered throughout, it
    was not unreachable. A success is never given without the fresh reading: out of time then (exit 4)."""
    try:
        return backend.partitions()
    except OutOfTime:
        if last is None or done(last):
            raise
        warnings.append("the reading after the deadline did not fit in its last look: the verdict is from the last "
                        "reading before it")
        return last


def _caught_up_reading(backend: LeadershipMoves, last: list[PartitionView] | None,
                       done: Callable[[list[PartitionView]], bool], warnings: list[str],
                       behind: Callable[[list[PartitionView]], bool], left: Callable[[], float],
                       sleep: Callable[[float], None]) -> list[PartitionView]:
    """The verdict's reading (_verdict_reading), taken again within the deadline while it shows an order kadmin
    submitted still as it was before (`behind`): in KRaft mode Metadata goes to any broker, and one whose metadata
    has not caught up with the controller's shows kadmin's own reordering as not done yet. Taken for someone else's
    reassignment, that stopped a roll. Someone else's order, or a partition moving, is the verdict at once."""
    final = _verdict_reading(backend, last, done, warnings)
    interval = POLL_FIRST
    while behind(final) and left() > 0 and not interrupts.pending():
        sleep(min(interval, max(left(), 0.0)))
        interval = min(interval * POLL_GROWTH, POLL_MAX)
        again = _verdict_reading(backend, final, done, warnings)
        if again is final:  # out of time: the verdict is from the last reading (said once)
            break
        final = again
    return final


def _not_seen_yet(now: list[PartitionView], submitted: Mapping[Key, tuple[int, ...]],
                  before: Mapping[Key, tuple[int, ...]]) -> bool:
    """Whether this reading shows a submitted partition in the order it had before, not moving: the controller
    has applied the reordering (reassigned()) but the broker that answered has not caught up yet."""
    by_key = {p.key: p for p in now}
    return any(k in by_key and k in before and by_key[k].replicas == before[k] != want and not by_key[k].reassigning
               for k, want in submitted.items())


def _wait_until(check: Callable[[], bool], left: Callable[[], float], sleep: Callable[[float], None]) -> bool:
    """Ask one cheap question (a znode's existence, a listing of reassignments) until it says yes, from 20 ms
    apart growing by half to 50 ms: the controller applies a reordering or an election within tens to hundreds
    of ms, and the yes is seen within 50 ms of it. A question that takes longer than that (a large cluster's
    listing) is followed by a pause as long as it took: the questions never take more than half the time."""
    interval = QUICK_FIRST
    while True:
        began = time.monotonic()
        if check():
            return True
        took = time.monotonic() - began
        if left() <= 0 or interrupts.pending():
            return False
        sleep(min(interval, max(left(), 0.0)))
        interval = min(interval * POLL_GROWTH, max(QUICK_MAX, took))


def _within(left: Callable[[], float], clock: Callable[[], float], seconds: float) -> Callable[[], float]:
    """`left` cut to at most `seconds` from now."""
    until = clock() + seconds
    return lambda: min(left(), until - clock())


def _wait_reassigned(backend: LeadershipMoves, keys: list[Key], left: Callable[[], float],
                     sleep: Callable[[float], None]) -> bool:
    return _wait_until(lambda: backend.reassigned(keys), left, sleep)


def _wait_election_free(backend: LeadershipMoves, left: Callable[[], float], sleep: Callable[[float], None]) -> bool:
    """ZooKeeper mode: one /admin/preferred_replica_election at a time (the controller deletes it when done)."""
    return _wait_until(backend.election_free, left, sleep)


def _elect(backend: LeadershipMoves, keys: list[Key], left: Callable[[], float],
           sleep: Callable[[float], None]) -> dict[Key, str]:
    if not keys:
        return {}
    free = _wait_election_free(backend, left, sleep)
    if interrupts.pending():  # a Ctrl-C while the election znode was read: nothing more is sent (issue 34 §4)
        return {}
    if not free:
        return {k: "ELECTION_IN_PROGRESS (another preferred-replica election did not finish)" for k in keys}
    return backend.elect_preferred(keys)


def _keys(keys: Iterable[Key]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(t, p) for t, p in sorted(keys))


def _refusals(errors: Mapping[Key, str]) -> tuple[MoveRefused, ...]:
    return tuple(MoveRefused(t, p, e) for (t, p), e in sorted(errors.items()))


def _reorders(plan: Mapping[Key, tuple[int, ...]], before: Mapping[Key, tuple[int, ...]]) -> tuple[Reorder, ...]:
    return tuple(Reorder(t, p, before[(t, p)], r) for (t, p), r in sorted(plan.items()))


def drain(backend: LeadershipMoves, identity: ClusterIdentity, broker_id: int, *, save: Path | None, dry_run: bool,
          force: bool, timeout: float, sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic, deadline: float | None = None) -> Result[Drain]:
    """`deadline` (on `clock`): the command's own, shared with the backend's connections (default: `timeout` from
    now)."""
    return _drain(backend, identity, {broker_id: save or default_path(broker_id)}, dry_run=dry_run, force=force,
                  timeout=timeout, sleep=sleep, clock=clock, deadline=deadline)


def drain_together(backend: LeadershipMoves, identity: ClusterIdentity, saves: Mapping[int, Path], *,
                   timeout: float, sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic, token: int | None = None) -> Result[Drain]:
    """Drain several brokers as one (a roll's batch, about to stop together): one reordering with all of them
    last, one election, and for each broker its own file (the original order of the partitions it hosts, as
    `brokers drain` saves it: `undrain` restores each alone, `undrain_together` all at once). The data
    describes the whole batch under the first broker's id and file; the message names every broker. `token`: the
    lease's (a roll's, the same when it is resumed: the lease a killed run left is its own)."""
    return _drain(backend, identity, saves, dry_run=False, force=False, timeout=timeout, sleep=sleep, clock=clock,
                  deadline=None, token=token)


def _who(ids: Sequence[int]) -> tuple[str, str, str]:
    """How messages name the broker(s): ("broker 3", "it", "s") or ("brokers 3, 5", "they", "") for the verb's -s."""
    if len(ids) == 1:
        return f"broker {ids[0]}", "it", "s"
    return f"brokers {', '.join(map(str, ids))}", "they", ""


def _files(saves: Mapping[int, Path]) -> str:
    return ", ".join(str(p) for p in saves.values())


def _undo(saves: Mapping[int, Path]) -> str:
    return "; ".join(f"kadmin brokers undrain {i} --from {p}" for i, p in saves.items())


@dataclass
class _Drain:
    """One drain's state as it goes through its steps (_drain): the brokers, the plan made from one reading, the
    payload said so far, and what it has warned and noted."""

    backend: LeadershipMoves
    saves: Mapping[int, Path]
    plan: dom.DrainPlan
    before: dict[Key, tuple[int, ...]]
    data: Drain
    left: Callable[[], float]
    sleep: Callable[[float], None]
    clock: Callable[[], float]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    last: list[PartitionView] | None = None  # the election's last reading (_poll), before the verdict's

    @property
    def ids(self) -> list[int]:
        return sorted(self.saves)

    def result(self, message: str, exit_code: ExitCode = ExitCode.OK) -> Result[Drain]:
        return Result(data=self.data, warnings=self.warnings + self.notes, exit_code=exit_code, message=message)


def _whoami() -> str:
    return f"host {socket.gethostname()}, pid {os.getpid()}"


def _leased(backend: LeadershipMoves, token: int | None, left: Callable[[], float], sleep: Callable[[float], None],
            move: Callable[[list[str]], Result[R]]) -> Result[R]:
    """`move(warnings)` holding the cluster's leadership lease (kadmin/domain/lease.py), given back when it ends
    however it ends. Another kadmin's is waited for until the deadline, then refused (exit 7, nothing sent); one
    kadmin may not take (a permission) is warned about and the move goes on without it."""
    holder = Holder(token or secrets.randbelow(TOKEN_MAX) + 1,
                    int((time.time() + max(left(), 0.0) + MARGIN) * 1000), _whoami())
    warnings: list[str] = []
    while True:
        t = backend.try_lease(holder, int(time.time() * 1000))
        if t.state == "taken":
            break
        if t.state == "denied":
            warnings.append(f"no lease ({t.text}): another kadmin moving leadership at the same moment could "
                            "reorder over this one unseen (docs/brokers.md, One drain at a time)")
            break
        if left() <= POLL or interrupts.pending():
            raise Unsafe(f"refused: another kadmin is moving leadership in this cluster (the lease is held {t.text})"
                         "; nothing was sent, try again once it has ended")
        sleep(min(POLL, left()))
    try:
        res = move(warnings)
    except ClusterUnreachable:
        # the cluster stopped answering: not asked again, past the deadline, to give the lease back (ZooKeeper's
        # goes with the session; the topic expires at the holder's deadline + MARGIN)
        raise
    except BaseException:
        backend.release_lease()
        raise
    given_back = backend.release_lease()
    if given_back:
        res.warnings.append(given_back)
    return res


def _drain(backend: LeadershipMoves, identity: ClusterIdentity, saves: Mapping[int, Path], *, dry_run: bool,
           force: bool, timeout: float, sleep: Callable[[float], None], clock: Callable[[], float],
           deadline: float | None, token: int | None = None) -> Result[Drain]:
    """A drain holding the cluster's leadership lease from its first reading to its verdict (a dry run takes none):
    _drain_steps."""
    end = clock() + timeout if deadline is None else deadline

    def left() -> float:
        return end - clock()

    def steps(warnings: list[str]) -> Result[Drain]:
        return _drain_steps(backend, identity, saves, dry_run, force, left, sleep, clock, warnings)

    return steps([]) if dry_run else _leased(backend, token, left, sleep, steps)


def _drain_steps(backend: LeadershipMoves, identity: ClusterIdentity, saves: Mapping[int, Path], dry_run: bool,
                 force: bool, left: Callable[[], float], sleep: Callable[[float], None], clock: Callable[[], float],
                 warnings: list[str]) -> Result[Drain]:
    """The steps of a drain: plan from one reading; refuse what is in flight (or stop at a dry run); save the
    original order; read again and refuse what changed meanwhile (nothing sent); submit the reordering and the
    election (a Ctrl-C from here is reported with the outcome); the verdict from a fresh reading."""
    d = _plan_drain(backend, saves, dry_run, force, left, sleep, clock)
    d.warnings.extend(warnings)
    stop = _refuse_or_rehearse(d, dry_run, force)
    if stop is not None:
        return stop
    _save_files(d, identity)
    moved_meanwhile = _changed_since(backend, d.plan.reorder, d.before)
    if moved_meanwhile:
        for i in d.ids:
            remove_file(saves[i])
        return d.result(f"refused: {dom.keys_text(moved_meanwhile)} changed or started a reassignment since kadmin "
                        "read them (another drain or reassignment is running); nothing was sent, try again",
                        ExitCode.UNSAFE)
    interrupts.arm()  # from here the cluster may change: a Ctrl-C is held back until the outcome is reported
    submitted, refused, stopped = _reorder_and_elect(d)
    if stopped is not None:
        return _interrupted(backend, d.data, saves, d.warnings + d.notes, stopped)
    return _drain_verdict(d, submitted, refused)


def _plan_drain(backend: LeadershipMoves, saves: Mapping[int, Path], dry_run: bool, force: bool,
                left: Callable[[], float], sleep: Callable[[float], None], clock: Callable[[], float]) -> _Drain:
    """The plan from one reading of the partitions, and the payload it says."""
    ids = sorted(saves)
    parts = backend.partitions()
    plan = dom.plan_drain(parts, ids, skip_in_flight=force)
    before = {p.key: p.replicas for p in parts}
    data = Drain(
        drain_version=dom.FILE_VERSION, broker_id=ids[0], mode=backend.mode, dry_run=dry_run,
        file=None if dry_run else str(saves[ids[0]]), hosted=len(plan.hosted), led_before=len(dom.led_by(parts, ids)),
        reorder=_reorders(plan.reorder, before), elect=_keys(plan.elect), in_flight=_keys(plan.in_flight),
        skipped=_keys(plan.skipped), only_isr=_keys(plan.only_isr), sole_replica=_keys(plan.sole_replica),
        refused=(), remaining=(),
    )
    d = _Drain(backend, saves, plan, before, data, left, sleep, clock)
    who = ", ".join(map(str, ids))
    if plan.only_isr:
        d.notes.append(ONLY_ISR_NOTE.format(id=who, keys=dom.keys_text(plan.only_isr)))
    if plan.sole_replica:
        d.notes.append(SOLE_REPLICA_NOTE.format(id=who, keys=dom.keys_text(plan.sole_replica)))
    return d


def _refuse_or_rehearse(d: _Drain, dry_run: bool, force: bool) -> Result[Drain] | None:
    """A reassignment in flight refuses the drain (unless --force leaves those partitions alone); --dry-run stops
    here, saying what it would do. None: go on."""
    who = _who(d.ids)[0]
    plan = d.plan
    if plan.in_flight and not force:
        return Result(data=d.data, warnings=d.notes, exit_code=ExitCode.UNSAFE,
                      message=f"refused: a reassignment is in flight for {dom.keys_text(plan.in_flight)}, which "
                      f"{who} hosts; wait for it to finish, or use --force to leave those partitions "
                      "alone and drain the rest")
    if plan.skipped:
        d.warnings.append(f"--force: left alone (a reassignment is in flight): {dom.keys_text(plan.skipped)}")
    if dry_run:
        return d.result(f"would reorder {len(plan.reorder)} of the {len(plan.hosted)} partitions {who} hosts "
                        f"(it goes last) and elect preferred leaders for {len(plan.elect)}; the original order "
                        f"would be saved to {d.saves[d.ids[0]]}")
    return None


def _save_files(d: _Drain, identity: ClusterIdentity) -> None:
    """Each broker's file, the original order of the partitions it hosts, written before anything is sent (all or
    none: a failure removes those written)."""
    cluster_id, id_warning = _cluster_id(identity)
    if id_warning:
        d.warnings.append(id_warning)
    written: list[Path] = []
    try:
        for i in d.ids:
            write_file(d.saves[i], dom.drain_file(i, d.plan, _now().isoformat(), {
                "mode": d.backend.mode, "where": d.backend.where, "id": cluster_id}))
            written.append(d.saves[i])
    except KadminError:
        for w in written:
            remove_file(w)
        raise


def _reorder_and_elect(d: _Drain) -> tuple[dict[Key, tuple[int, ...]], dict[Key, str], str | None]:
    """Submit the reordering, wait for it, elect the preferred leaders, and read the leaders again until the brokers
    lead nothing they can give up (electing again what has not moved): (what was submitted, what the cluster
    refused, when a Ctrl-C stopped it or None)."""
    backend, plan, ids, left, sleep, clock = d.backend, d.plan, d.ids, d.left, d.sleep, d.clock
    refused = backend.reassign(plan.reorder)
    submitted = {k: v for k, v in plan.reorder.items() if k not in refused}
    if not _wait_reassigned(backend, list(submitted), left, sleep) and not interrupts.pending():
        d.warnings.append("the reordering was not complete before the deadline")
    if interrupts.pending():
        return submitted, refused, "after the reordering was submitted and before the election"
    refused.update(_elect(backend, [k for k in plan.elect if k not in refused], left, sleep))
    if interrupts.pending():
        return submitted, refused, "after the reordering was submitted and before the election"
    _wait_election_free(backend, _within(left, clock, ELECTED_WAIT), sleep)  # then read the leaders
    stuck = plan.stuck

    def done(now: list[PartitionView]) -> bool:
        return _drained(now, ids, stuck) and not _not_seen_yet(now, submitted, d.before)

    def reelect(now: list[PartitionView]) -> None:
        again = [k for k in dom.led_by(now, ids) if k not in stuck and k not in refused]
        if again and _wait_election_free(backend, _within(left, clock, ELECTED_WAIT), sleep) \
                and not interrupts.pending():
            backend.elect_preferred(again)

    d.last = _poll(backend, left, done, reelect, sleep, clock)
    return submitted, refused, "after the election was asked" if interrupts.pending() else None


def _drained(now: list[PartitionView], ids: Sequence[int], stuck: set[Key] | frozenset[Key]) -> bool:
    """The brokers lead nothing they can give up (`stuck`: what has no other replica to lead it)."""
    return set(dom.led_by(now, ids)) <= stuck


def _drain_verdict(d: _Drain, submitted: Mapping[Key, tuple[int, ...]], refused: Mapping[Key, str]) -> Result[Drain]:
    """The verdict from a fresh reading taken now, reassignments in flight included: never "leads none" from an
    earlier reading, nor while another reassignment is rewriting these partitions, nor while a partition it may
    lead could not be read."""
    ids, saves = d.ids, d.saves
    (who, it, s) = _who(ids)
    def not_seen(now: list[PartitionView]) -> bool:
        return _not_seen_yet(now, submitted, d.before)

    def done(now: list[PartitionView]) -> bool:
        return _drained(now, ids, d.plan.stuck) and not not_seen(now)

    final = _caught_up_reading(d.backend, d.last, done, d.warnings, not_seen, d.left, d.sleep)
    remaining = dom.led_by(final, ids)
    foreign = _not_as_submitted(final, submitted)
    unknown = [u for u in d.backend.unknown if u.concerns(ids)] + d.backend.unseen(ids)
    d.data = dataclasses.replace(
        d.data, refused=_refusals({k: v for k, v in refused.items() if k in set(remaining) or k in d.plan.reorder}),
        remaining=_keys(remaining), led_after=len(remaining), changed_by_others=_keys(foreign))
    said = f"moved {plural(max(0, d.data.led_before - len(remaining)), 'leadership')} off {who}"
    kept = f"the original order is saved in {_files(saves)}"
    if foreign:
        return d.result(f"{said}, but another reassignment changed {dom.keys_text(foreign)} during the drain (not in "
                        f"the order kadmin submitted, or moving now): {who} lead{s} {len(remaining)} partition(s) "
                        f"now and may lead more; {kept}", ExitCode.CONDITION_NOT_MET)
    if remaining:
        return d.result(f"{said}; {it} still lead{s} {len(remaining)} partition(s): {dom.keys_text(remaining)}; "
                        f"{kept}", ExitCode.CONDITION_NOT_MET)
    if unknown:  # never "leads none" while a partition it may lead could not be read
        return d.result(f"{said}; {it} lead{s} none of the partitions kadmin could read, but "
                        f"{_unknown_text(unknown)}, so {it} may lead them; {kept}", ExitCode.PARTIAL)
    return d.result(f"{said}; {it} now lead{s} none; {kept} (undo: {_undo(saves)})")


def _unknown_text(unknown: list[dom.Unknown]) -> str:
    shown = "; ".join(f"{u.name}: {u.why}" for u in unknown[:5])
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    return f"could not read {shown}{more}"


def _cluster_id(identity: ClusterIdentity) -> tuple[str | None, str | None]:
    """The cluster's id for the drain file, and a warning when it could not be read (the file then says null,
    and `undrain --from` cannot tell it from another cluster's)."""
    try:
        return identity.cluster_id(), None
    except KadminError as e:
        return None, f"the cluster id could not be read ({e.message}): the drain file records none"


def _changed_since(backend: LeadershipMoves, plan: Mapping[Key, tuple[int, ...]],
                   before: Mapping[Key, tuple[int, ...]]) -> list[Key]:
    """The planned partitions whose replicas differ from the reading the plan was made from, or that are being
    reassigned now."""
    now = {p.key: p for p in backend.partitions()}
    return sorted(k for k in plan if k not in now or now[k].replicas != before[k] or now[k].reassigning)


def _not_as_submitted(final: list[PartitionView], submitted: Mapping[Key, tuple[int, ...]]) -> list[Key]:
    """Submitted partitions not in the submitted order now, or being reassigned: someone else's reassignment."""
    now = {p.key: p for p in final}
    return sorted(k for k, want in submitted.items()
                  if k in now and (now[k].replicas != want or now[k].reassigning))


def _interrupted(backend: LeadershipMoves, data: Drain, saves: Mapping[int, Path], warnings: list[str],
                 when: str) -> Result[Drain]:
    """Ctrl-C between steps: stop, and say from a fresh reading what state the cluster is in and how to undo."""
    ids = sorted(saves)
    now = backend.partitions(in_flight=False)
    remaining = dom.led_by(now, ids)
    data = dataclasses.replace(data, remaining=_keys(remaining), led_after=len(remaining))
    who, _, s = _who(ids)
    return Result(data=data, warnings=warnings, exit_code=ExitCode.INTERRUPTED,
                  message=f"interrupted {when}: the replicas of {plural(len(data.reorder), 'partition')} are "
                  f"reordered ({who} last) and {who} lead{s} {len(remaining)} now; "
                  f"restore the original order with: {_undo(saves)}")


def undrain(backend: LeadershipMoves, identity: ClusterIdentity, broker_id: int, source: Path, *, dry_run: bool,
            force: bool, timeout: float,
            sleep: Callable[[float], None] = time.sleep,
            clock: Callable[[], float] = time.monotonic, deadline: float | None = None) -> Result[Undrain]:
    """`deadline`: as drain's."""
    deadline = clock() + timeout if deadline is None else deadline
    loaded = read_file(source, broker_id, force)
    warnings: list[str] = []
    if loaded.broker_id != broker_id:
        warnings.append(f"--force: {source} is the drain file of broker {loaded.broker_id}, not {broker_id}")
    _same_cluster(loaded, identity, source, force, warnings)
    return _undrain(backend, {broker_id: source}, loaded.order, warnings, dry_run=dry_run, force=force, sleep=sleep,
                    clock=clock, deadline=deadline, set_order=loaded.set_order)


def undrain_together(backend: LeadershipMoves, identity: ClusterIdentity, sources: Mapping[int, Path], *,
                     timeout: float, sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic, token: int | None = None) -> Result[Undrain]:
    """Undrain several brokers as one (a roll's batch, back together): each broker's own drain file, their saved
    orders put back in one reordering (a partition in several files keeps the first file's order: the brokers
    were drained together, so the files agree), one election. The data is under the first broker's id and file."""
    deadline = clock() + timeout
    warnings: list[str] = []
    saved: dict[Key, tuple[int, ...]] = {}
    set_order: dict[Key, tuple[int, ...]] = {}
    for i in sorted(sources):
        loaded = read_file(sources[i], i)
        _same_cluster(loaded, identity, sources[i], False, warnings)
        for k, v in loaded.order.items():
            saved.setdefault(k, v)
        for k, v in loaded.set_order.items():
            set_order.setdefault(k, v)
    return _undrain(backend, sources, saved, warnings, dry_run=False, force=False, sleep=sleep, clock=clock,
                    deadline=deadline, set_order=set_order, token=token)


def _undrain(backend: LeadershipMoves, sources: Mapping[int, Path], saved: Mapping[Key, tuple[int, ...]],
             warnings: list[str], *, dry_run: bool, force: bool, sleep: Callable[[float], None],
             clock: Callable[[], float], deadline: float,
             set_order: Mapping[Key, tuple[int, ...]] | None = None, token: int | None = None) -> Result[Undrain]:
    """An undrain holding the cluster's leadership lease from its first reading to its verdict (a dry run takes
    none): _undrain_steps."""
    def left() -> float:
        return deadline - clock()

    def steps(more: list[str]) -> Result[Undrain]:
        return _undrain_steps(backend, sources, saved, warnings + more, dry_run=dry_run, force=force, sleep=sleep,
                              clock=clock, left=left, set_order=set_order)

    return steps([]) if dry_run else _leased(backend, token, left, sleep, steps)


def _undrain_steps(backend: LeadershipMoves, sources: Mapping[int, Path], saved: Mapping[Key, tuple[int, ...]],
                   warnings: list[str], *, dry_run: bool, force: bool, sleep: Callable[[float], None],
                   clock: Callable[[], float], left: Callable[[], float],
                   set_order: Mapping[Key, tuple[int, ...]] | None) -> Result[Undrain]:
    ids = sorted(sources)
    broker_id, source, (who, _, s) = ids[0], sources[ids[0]], _who(ids)
    parts = backend.partitions()
    plan = dom.plan_undrain(saved, parts, broker_id, skip_in_flight=force, set_order=set_order)
    before = {p.key: p.replicas for p in parts}
    preferred = plan.preferred(saved)
    data = Undrain(
        drain_version=dom.FILE_VERSION,
        broker_id=broker_id,
        mode=backend.mode,
        dry_run=dry_run,
        file=str(source),
        saved=len(saved),
        restore=_reorders(plan.restore, before),
        already=_keys(plan.already),
        changed=_keys(plan.changed),
        gone=_keys(plan.gone),
        in_flight=_keys(plan.in_flight),
        skipped=_keys(plan.skipped),
        elect=_keys(plan.elect),
        refused=(),
        not_preferred=(),
    )
    if plan.changed:
        warnings.append(f"the replica set changed since the drain, left as it is: {dom.keys_text(plan.changed)}")
    unreadable_topics = {u.topic for u in backend.unknown if u.partition is None}
    gone = [k for k in plan.gone if k[0] not in unreadable_topics]  # unreadable is not gone: said at the end
    if gone:
        warnings.append(f"no longer exist: {dom.keys_text(gone)}")
    if plan.in_flight and not force:
        return Result(data=data, warnings=warnings, exit_code=ExitCode.UNSAFE,
                      message=f"refused: a reassignment is in flight for {dom.keys_text(plan.in_flight)}; wait for "
                      "it to finish, or use --force to leave those partitions alone")
    stacked_on = _stacked_on(sources, plan, saved, set_order or {}, {p.key: p.replicas for p in parts})
    if stacked_on and not force:  # a later drain came after this one: undone first, or its broker stays drained
        keys, later = stacked_on
        first = f"undo {' and '.join(str(p) for p in later)} first" if later else \
            "undo the drain (or reassignment) that came after it first"
        return Result(data=data, warnings=warnings, exit_code=ExitCode.UNSAFE,
                      message=f"refused: {dom.keys_text(keys)} were reordered after this drain (a later drain "
                      f"stacked on it): restoring {source} now would leave that drain's broker drained; {first} "
                      "(--force restores this order anyway)")
    if plan.skipped:
        warnings.append(f"--force: left alone (a reassignment is in flight): {dom.keys_text(plan.skipped)}")
    if dry_run:
        return Result(data=data, warnings=warnings,
                      message=f"would restore the saved order of {len(plan.restore)} partition(s) and elect "
                      f"preferred leaders for {len(plan.elect)}")
    # As in drain: the plan was made from a reading; someone may have reordered these partitions since. Read them
    # again just before submitting: anything changed or in flight now is refused, nothing sent (issue 34 §4).
    moved_meanwhile = _changed_since(backend, plan.restore, before)
    if moved_meanwhile:
        return Result(data=data, warnings=warnings, exit_code=ExitCode.UNSAFE,
                      message=f"refused: {dom.keys_text(moved_meanwhile)} changed or started a reassignment since "
                      "kadmin read them (another drain or reassignment is running); nothing was sent, try again")
    interrupts.arm()  # as in drain: from here a Ctrl-C is reported with the outcome
    final, lagging, targets, refused, stopped = _restore(backend, plan, preferred, before, warnings, left, sleep,
                                                         clock)
    by_key = {p.key: p for p in final}
    # ... and the verdict holds the order too, read after the election: what it submitted, not someone else's
    foreign = _not_as_submitted(final, {k: v for k, v in plan.restore.items() if k not in refused})
    data = dataclasses.replace(
        data, refused=_refusals({k: v for k, v in refused.items() if k in set(lagging)}),
        not_preferred=tuple(NotPreferred(t, p, preferred=targets[(t, p)], leader=by_key[(t, p)].leader,
                                         preferred_in_sync=targets[(t, p)] in by_key[(t, p)].isr)
                            for t, p in lagging),
        led_after=len(dom.led_by(final, ids)))
    if stopped:
        return Result(data=data, warnings=warnings, exit_code=ExitCode.INTERRUPTED,
                      message=f"interrupted {stopped}: {len(lagging)} saved partition(s) are not led by their "
                      f"preferred replica now; finish with "
                      f"{'the same command' if len(ids) == 1 else 'these commands'}: {_undo(sources)}")
    unknown = [u for u in backend.unknown if (u.topic, u.partition) in saved
               or (u.partition is None and any(t == u.topic for t, _ in saved))]
    if foreign:
        return Result(data=data, warnings=warnings, exit_code=ExitCode.CONDITION_NOT_MET,
                      message=f"another reassignment changed {dom.keys_text(foreign)} during the undrain (not in the "
                      f"saved order, or moving now): the original order is not in place there; {source} still holds "
                      "it")
    if lagging:
        out_of_sync = [k for k in lagging if targets[k] not in by_key[k].isr]
        waits = " and ".join(f"`kadmin brokers wait {i} --in-sync`" for i in ids)
        why = (f" (not in sync, so not electable: {dom.keys_text(out_of_sync)}; {waits} "
               "first)") if out_of_sync else ""
        return Result(data=data, warnings=warnings, exit_code=ExitCode.CONDITION_NOT_MET,
                      message=f"{len(lagging)} partition(s) are not led by their preferred replica: "
                      f"{dom.keys_text(lagging)}{why}")
    if unknown:
        return Result(data=data, warnings=warnings, exit_code=ExitCode.PARTIAL,
                      message=f"restored the order of {len(plan.restore)} partition(s), but {_unknown_text(unknown)}: "
                      "whether they are led by their preferred replica is unknown")
    return Result(data=data, warnings=warnings,
                  message=f"restored the order of {len(plan.restore)} partition(s); every saved partition is led by "
                  f"its preferred replica ({who} lead{s} {data.led_after})")


def _restore(backend: LeadershipMoves, plan: dom.UndrainPlan, preferred: Mapping[Key, int],
             before: Mapping[Key, tuple[int, ...]], warnings: list[str], left: Callable[[], float],
             sleep: Callable[[float], None], clock: Callable[[], float],
             ) -> tuple[list[PartitionView], list[Key], dict[Key, int], dict[Key, str], str | None]:
    """Put the saved order back and elect the preferred leaders, then read the leaders again until each saved
    partition is led by its preferred replica or time is up: (a fresh last reading, partitions still not led by
    it, the leaders aimed at, the partitions the cluster refused, when a Ctrl-C stopped it or None)."""
    refused = backend.reassign(plan.restore)
    if not _wait_reassigned(backend, [k for k in plan.restore if k not in refused], left, sleep) \
            and not interrupts.pending():
        warnings.append("the reordering was not complete before the deadline")
    targets = {k: v for k, v in preferred.items() if k not in refused or k in plan.already}
    if interrupts.pending():
        now = backend.partitions(in_flight=False)
        return now, _behind(now, targets), targets, refused, "after the order was restored and before the election"
    refused.update(_elect(backend, [k for k in plan.elect if k not in refused], left, sleep))
    if interrupts.pending():
        now = backend.partitions(in_flight=False)
        return now, _behind(now, targets), targets, refused, "after the order was restored and before the election"
    _wait_election_free(backend, _within(left, clock, ELECTED_WAIT), sleep)  # as in drain
    targets = {k: v for k, v in preferred.items() if k not in refused or k in plan.already}

    def behind(now: list[PartitionView]) -> list[Key]:
        return _behind(now, targets)

    def reelect(now: list[PartitionView]) -> None:
        by_key = {p.key: p for p in now}
        again = [k for k in behind(now) if targets[k] in by_key[k].isr]
        if again and _wait_election_free(backend, _within(left, clock, ELECTED_WAIT), sleep) \
                and not interrupts.pending():
            backend.elect_preferred(again)

    submitted = {k: v for k, v in plan.restore.items() if k not in refused}

    def not_seen(now: list[PartitionView]) -> bool:
        return _not_seen_yet(now, submitted, before)

    def settled(now: list[PartitionView]) -> bool:
        return not behind(now) and not not_seen(now)

    last = _poll(backend, left, settled, reelect, sleep, clock)
    final = _caught_up_reading(backend, last, settled, warnings, not_seen, left, sleep)
    stopped = "after the election was asked" if interrupts.pending() else None
    return final, behind(final), targets, refused, stopped


def _stacked_on(sources: Mapping[int, Path], plan: dom.UndrainPlan, saved: Mapping[Key, tuple[int, ...]],
                set_order: Mapping[Key, tuple[int, ...]], now: Mapping[Key, tuple[int, ...]]
                ) -> tuple[list[Key], list[Path]] | None:
    """Whether another drain is stacked on this one: for the partitions reordered since this drain (plan.stacked),
    the drain files beside `sources` (and in the default drain directory) that set the order in place now. One
    whose original order is this drain's order came after it (stacked: undone first, or this undrain would leave
    its broker drained once it is undone). One whose original is this drain's original ran beside it (both read the
    same order): undoing either first restores the same original, so it blocks nothing. Where no file says which,
    the undrain cannot tell: stacked, unnamed. None: not stacked."""
    if not plan.stacked:
        return None
    dirs = {p.parent for p in sources.values()} | {default_dir()}
    own = {p.resolve() for p in sources.values()}
    made_now: dict[Key, list[tuple[Path, dom.SavedDrain]]] = {}
    for d in sorted(dirs):
        try:
            names = sorted(d.glob("*.json"))
        except OSError:
            continue
        for f in names:
            if f.resolve() in own:
                continue
            try:
                other = dom.parse_saved_drain(loads_strict(read_input(f, "")))
            except (OSError, ValueError, KadminError):
                continue
            for k in plan.stacked:
                if other.set_order.get(k) == now.get(k):
                    made_now.setdefault(k, []).append((f, other))
    keys: list[Key] = []
    later: list[Path] = []
    for k in plan.stacked:
        makers = made_now.get(k, [])
        if makers and all(o.order.get(k) == saved[k] for _, o in makers):
            continue  # drained beside this one, from the same original: no harm either way
        keys.append(k)
        later += [f for f, o in makers if o.order.get(k) == set_order.get(k) and f not in later]
    return (keys, later) if keys else None


def _behind(now: list[PartitionView], targets: Mapping[Key, int]) -> list[Key]:
    """Saved partitions not led by their preferred replica (in sync or not: the goal is the saved leader)."""
    by_key = {p.key: p for p in now}
    return sorted(k for k, want in targets.items() if k in by_key and by_key[k].leader != want)
