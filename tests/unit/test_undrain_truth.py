"""`brokers undrain` cannot be fooled by someone reordering in between (issue 34 §4): it reads again just before it
submits and refuses what changed (nothing sent), and its verdict holds the saved order, read after the election.

The cluster is an in-memory LeadershipMoves (the seam the drain services see): a reassignment reorders at once, an
election puts the first in-sync replica first; `meddle` runs someone else's reordering at a chosen read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kadmin.domain.drain import Key, PartitionView, Unknown
from kadmin.domain.lease import Holder, LeaseTry, mine_or_stale
from kadmin.exit_codes import ExitCode
from kadmin.services import drain as dsvc


class Moves:
    mode = "protocol"
    where = "memory"

    lease_where = "memory"

    def __init__(self, parts: dict[Key, tuple[int, ...]], lease: dict[str, Holder] | None = None) -> None:
        self.lease = {} if lease is None else lease  # the cluster's lease: {"holder": Holder}, shared by "kadmins"
        self.mine: Holder | None = None
        self.replicas = dict(parts)
        self.leaders = {k: r[0] for k, r in parts.items()}
        self.unknown: tuple[Unknown, ...] = ()
        self.reads = 0
        self.meddle: dict[int, Callable[[], None]] = {}  # read number -> what someone else does just before it
        self.submitted: list[dict[Key, tuple[int, ...]]] = []

    def partitions(self, in_flight: bool = True) -> list[PartitionView]:
        self.reads += 1
        if self.reads in self.meddle:
            self.meddle[self.reads]()
        return [PartitionView(t, p, r, r, self.leaders[(t, p)]) for (t, p), r in sorted(self.replicas.items())]

    def reassign(self, plan: Mapping[Key, tuple[int, ...]]) -> dict[Key, str]:
        self.submitted.append(dict(plan))
        self.replicas.update(plan)
        return {}

    def reassigned(self, keys: Iterable[Key]) -> bool:
        return True

    def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
        for k in keys:
            self.leaders[k] = self.replicas[k][0]
        return {}

    def election_free(self) -> bool:
        return True

    def unseen(self, brokers: Iterable[int]) -> list[Unknown]:
        return []

    def try_lease(self, holder: Holder, now_ms: int) -> LeaseTry:
        other = self.lease.get("holder")
        if other is not None and not mine_or_stale(other, holder, now_ms):
            return LeaseTry("held", f"by {other.who}")
        self.lease["holder"] = self.mine = holder
        return LeaseTry("taken")

    def release_lease(self) -> str | None:
        if self.mine is not None and self.lease.get("holder") is self.mine:
            del self.lease["holder"]
        self.mine = None
        return None

    def close(self) -> None:
        pass


class Identity:
    source = "memory"

    def cluster_id(self) -> str | None:
        return "C"


def drained(tmp_path: Path) -> tuple[Moves, Path]:
    """Broker 1 drained from t-0 [1,2,3] and t-1 [1,3,2]: the file holds the original order."""
    m = Moves({("t", 0): (1, 2, 3), ("t", 1): (1, 3, 2)})
    f = tmp_path / "drain-1.json"
    r = dsvc.drain(m, Identity(), 1, save=f, dry_run=False, force=False, timeout=5, sleep=lambda s: None)
    assert int(r.exit_code) == 0, r.message
    assert m.replicas == {("t", 0): (2, 3, 1), ("t", 1): (3, 2, 1)}
    return m, f


def undrain(m: Moves, f: Path) -> object:
    m.reads = 0
    return dsvc.undrain(m, Identity(), 1, f, dry_run=False, force=False, timeout=5, sleep=lambda s: None)


def test_an_undrain_restores_the_saved_order(tmp_path: Path) -> None:
    m, f = drained(tmp_path)
    r = undrain(m, f)
    assert int(r.exit_code) == 0, r.message  # type: ignore[attr-defined]
    assert m.replicas == {("t", 0): (1, 2, 3), ("t", 1): (1, 3, 2)} and m.leaders == {("t", 0): 1, ("t", 1): 1}


def test_someone_reordering_between_the_read_and_the_submit_is_refused_nothing_sent(tmp_path: Path) -> None:
    """Before: undrain submitted from its first reading, over the other reordering, and said it restored the order."""
    m, f = drained(tmp_path)
    submitted = len(m.submitted)
    m.meddle[2] = lambda: m.replicas.update({("t", 0): (3, 2, 1)})  # someone reorders t-0 after undrain's first read
    r = undrain(m, f)
    assert int(r.exit_code) == ExitCode.UNSAFE, r.message  # type: ignore[attr-defined]
    assert "t-0 changed or started a reassignment since kadmin read them" in r.message  # type: ignore[attr-defined]
    assert len(m.submitted) == submitted and m.replicas[("t", 0)] == (3, 2, 1)  # nothing sent


def test_someone_reordering_after_the_election_makes_the_verdict_say_so(tmp_path: Path) -> None:
    """Someone reorders t-1 (keeping its leader) once undrain has elected: the verdict, read after, does not say
    'restored': exit 1, naming the partition, the file still holding the order."""
    (tmp_path / "probe").mkdir()
    probe, probe_file = drained(tmp_path / "probe")
    undrain(probe, probe_file)  # an undisturbed undrain: its last read is the verdict's
    m, f = drained(tmp_path)
    m.meddle[probe.reads] = lambda: m.replicas.update({("t", 1): (1, 2, 3)})  # its leader kept, its order not
    r = undrain(m, f)
    assert int(r.exit_code) == ExitCode.CONDITION_NOT_MET, r.message  # type: ignore[attr-defined]
    assert "another reassignment changed t-1 during the undrain" in r.message  # type: ignore[attr-defined]


def test_a_ctrl_c_while_the_election_znode_is_read_sends_no_election(tmp_path: Path) -> None:
    """ZooKeeper mode asks whether /admin/preferred_replica_election is free before it asks for an election. A
    Ctrl-C that arrives during that read (held back: the reordering was already sent) stopped nothing: the
    election was still sent. Now nothing more is sent after a Ctrl-C, drain or undrain; the outcome says so."""
    import os
    import signal

    from kadmin import interrupts

    class Reading(Moves):
        elections = 0

        def election_free(self) -> bool:
            os.kill(os.getpid(), signal.SIGINT)  # the operator's Ctrl-C lands while the znode is read
            return True

        def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
            self.elections += 1
            return super().elect_preferred(keys)

    m = Reading({("t", 0): (1, 2, 3)})
    with interrupts.deferring():
        r = dsvc.drain(m, Identity(), 1, save=tmp_path / "d.json", dry_run=False, force=False, timeout=5,
                       sleep=lambda s: None)
    assert int(r.exit_code) == ExitCode.INTERRUPTED and m.elections == 0, r.message
    assert "before the election" in r.message
    m.leaders[("t", 0)] = 2
    with interrupts.deferring():
        r = dsvc.undrain(m, Identity(), 1, tmp_path / "d.json", dry_run=False, force=False, timeout=5,
                         sleep=lambda s: None)
    assert int(r.exit_code) == ExitCode.INTERRUPTED and m.elections == 0, r.message


def test_stacked_drains_are_undone_last_first_the_wrong_order_refused_naming_the_file(tmp_path: Path) -> None:
    """Two drains stacked on t-0 (broker 1, then broker 2): undoing the first one first put back its order over the
    second's and left broker 2 leading... as before it was drained? No: broker 2 stayed drained for good once its own
    undrain found the order changed. The drain file records the order it set, so an undrain that is not the last
    one refuses (exit 7, nothing sent) and names the file that comes first; last first restores both."""
    m = Moves({("t", 0): (1, 2, 3), ("u", 0): (1, 3)})
    d1, d2 = tmp_path / "d1.json", tmp_path / "d2.json"
    for broker, f in ((1, d1), (2, d2)):
        r = dsvc.drain(m, Identity(), broker, save=f, dry_run=False, force=False, timeout=5, sleep=lambda s: None)
        assert int(r.exit_code) == 0, r.message
    assert m.replicas[("t", 0)] == (3, 1, 2)
    sent = len(m.submitted)
    r = undrain(m, d1)
    assert int(r.exit_code) == ExitCode.UNSAFE, r.message  # type: ignore[attr-defined]
    assert "t-0 were reordered after this drain" in r.message and f"undo {d2} first" in r.message  # type: ignore[attr-defined]
    assert len(m.submitted) == sent and m.replicas[("t", 0)] == (3, 1, 2)
    m.reads = 0
    r = dsvc.undrain(m, Identity(), 2, d2, dry_run=False, force=False, timeout=5, sleep=lambda s: None)
    assert int(r.exit_code) == 0, r.message
    assert int(undrain(m, d1).exit_code) == 0  # type: ignore[attr-defined]
    assert m.replicas == {("t", 0): (1, 2, 3), ("u", 0): (1, 3)} and m.leaders[("t", 0)] == 1


def test_drains_run_beside_each_other_from_one_original_undo_in_either_order(tmp_path: Path) -> None:
    """Two drains that both read the original order (they overlapped; the last to write set the order in place):
    each file's original is the true original, so undoing either first restores it, and neither is refused."""
    m = Moves({("t", 0): (1, 2, 3)})
    d1, d2 = tmp_path / "d1.json", tmp_path / "d2.json"
    r = dsvc.drain(m, Identity(), 1, save=d1, dry_run=False, force=False, timeout=5, sleep=lambda s: None)
    assert int(r.exit_code) == 0
    m.replicas[("t", 0)] = (1, 2, 3)  # d2 read the original before d1's order landed ...
    r = dsvc.drain(m, Identity(), 2, save=d2, dry_run=False, force=False, timeout=5, sleep=lambda s: None)
    assert int(r.exit_code) == 0 and m.replicas[("t", 0)] == (1, 3, 2)  # ... and wrote last
    assert int(undrain(m, d1).exit_code) == 0  # type: ignore[attr-defined]
    assert m.replicas[("t", 0)] == (1, 2, 3)



def _stuck_past_the_deadline(tmp_path: Path, elects: bool) -> tuple[object, Moves]:
    """An undrain on a fake clock whose every reading takes 0.3 s and whose reading started 0.2 s or more past its
    deadline (5 s) runs out of time, as a loaded machine's last look can. Its election leaves t-0 led by 2 (`elects`
    False: broker 1 is not taken back as leader), or takes effect only just before the deadline (`elects` True)."""
    from kadmin.errors import OutOfTime

    m, f = drained(tmp_path)
    now = [0.0]

    class Late(Moves):
        def partitions(self, in_flight: bool = True) -> list[PartitionView]:
            if now[0] >= 5.2:
                raise OutOfTime("out of time: the command's deadline passed 0.3 s ago and nothing more is asked")
            if elects and now[0] >= 4.95:
                super().elect_preferred(list(self.replicas))
            now[0] += 0.3
            return super().partitions(in_flight)

        def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
            return {}

    late = Late({})
    late.replicas, late.leaders = m.replicas, m.leaders

    def sleep(s: float) -> None:
        now[0] += s

    return dsvc.undrain(late, Identity(), 1, f, dry_run=False, force=False, timeout=5, sleep=sleep,
                        clock=lambda: now[0]), late


def test_a_final_reading_out_of_time_gives_the_verdict_of_the_last_reading(tmp_path: Path) -> None:
    """Seen under load 15: the cluster answered throughout, t-0 was still not led by its preferred replica at the
    deadline, and the reading after it did not fit in its last look. Before: exit 4, "out of time", as if the
    cluster could not be reached. Now: exit 1 from the last reading taken, naming t-0, and saying so."""
    r, _ = _stuck_past_the_deadline(tmp_path, elects=False)
    assert int(r.exit_code) == ExitCode.CONDITION_NOT_MET, r.message  # type: ignore[attr-defined]
    assert "not led by their preferred replica: t-0, t-1" in r.message  # type: ignore[attr-defined]
    assert any("the verdict is from the last reading" in w for w in r.warnings)  # type: ignore[attr-defined]


def test_a_success_is_never_given_without_the_final_reading(tmp_path: Path) -> None:
    """The same, but every partition was led by its preferred replica at the last look: that is not enough to say
    "restored" (the final reading also sees reassignments in flight): out of time, exit 4."""
    import pytest

    from kadmin.errors import OutOfTime

    with pytest.raises(OutOfTime):
        _stuck_past_the_deadline(tmp_path, elects=True)


def test_a_drain_whose_final_reading_is_out_of_time_says_what_it_still_leads(tmp_path: Path) -> None:
    """The drain's verdict reading has the same last look: broker 1 still led t-0 and t-1 at the deadline (the
    election did not move them), the reading after it ran out of time: exit 1 naming them, not exit 4."""
    from kadmin.errors import OutOfTime

    now = [0.0]

    class Late(Moves):
        def partitions(self, in_flight: bool = True) -> list[PartitionView]:
            if now[0] >= 5.2:
                raise OutOfTime("out of time: the command's deadline passed 0.3 s ago and nothing more is asked")
            now[0] += 0.3
            return super().partitions(in_flight)

        def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
            return {}

    def sleep(s: float) -> None:
        now[0] += s

    m = Late({("t", 0): (1, 2, 3), ("t", 1): (1, 3, 2)})
    r = dsvc.drain(m, Identity(), 1, save=tmp_path / "d.json", dry_run=False, force=False, timeout=5, sleep=sleep,
                   clock=lambda: now[0])
    assert int(r.exit_code) == ExitCode.CONDITION_NOT_MET, r.message
    assert "still leads 2 partition(s): t-0, t-1" in r.message, r.message
    assert any("the verdict is from the last reading" in w for w in r.warnings)


class Lagging(Moves):
    """The broker that answers Metadata has not caught up with the controller: the reordering the controller has
    applied (reassigned() says so) shows in its readings `lag` readings late, the order from before until then.
    Elections are the controller's and take effect at once."""

    def __init__(self, parts: dict[Key, tuple[int, ...]], lag: int) -> None:
        super().__init__(parts)
        self.lag, self.late = lag, 0
        self.shown = dict(parts)

    def reassign(self, plan: Mapping[Key, tuple[int, ...]]) -> dict[Key, str]:
        self.shown, self.late = dict(self.replicas), self.lag
        return super().reassign(plan)

    def partitions(self, in_flight: bool = True) -> list[PartitionView]:
        if self.late <= 0:
            return super().partitions(in_flight)
        self.late -= 1
        real, self.replicas = self.replicas, self.shown
        try:
            return super().partitions(in_flight)
        finally:
            self.replicas = real


def _lagging_run(tmp_path: Path, lag: int, timeout: float) -> tuple[object, object, Lagging]:
    """Broker 1 leads nothing (a restart moved its leaderships away): drained, then undrained, on a fake clock,
    through a broker whose metadata shows each reordering `lag` readings late."""
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    m = Lagging({("t", 0): (1, 2, 3), ("t", 1): (3, 1, 2)}, lag)
    m.leaders = {("t", 0): 2, ("t", 1): 3}
    f = tmp_path / "d.json"
    drained = dsvc.drain(m, Identity(), 1, save=f, dry_run=False, force=False, timeout=timeout, sleep=sleep,
                         clock=lambda: now[0])
    if int(drained.exit_code) != 0:
        return drained, None, m
    m.late = 0
    m.reads = 0
    return drained, dsvc.undrain(m, Identity(), 1, f, dry_run=False, force=False, timeout=timeout, sleep=sleep,
                                 clock=lambda: now[0]), m


def test_a_broker_whose_metadata_lags_the_reordering_is_not_taken_for_another_reassignment(tmp_path: Path) -> None:
    """Seen in a real KRaft roll (4.3.1, load 20): broker 1, restarted, led nothing; the drain's reordering was
    applied, nothing was left to move, and the verdict's reading came from a broker that still showed the old
    order. Before: exit 1, "another reassignment changed t-0, t-1 during the drain", the roll stopped with broker 1
    left drained. Now the verdict reads again until its own reordering shows (within the deadline): exit 0."""
    drained, undrained, m = _lagging_run(tmp_path, lag=6, timeout=30)
    assert int(drained.exit_code) == 0, drained.message  # type: ignore[attr-defined]
    assert "now leads none" in drained.message and not drained.data.changed_by_others  # type: ignore[attr-defined]
    assert int(undrained.exit_code) == 0, undrained.message  # type: ignore[attr-defined]
    assert m.replicas == {("t", 0): (1, 2, 3), ("t", 1): (3, 1, 2)}


def test_a_reordering_never_seen_by_the_deadline_is_no_success(tmp_path: Path) -> None:
    """The same broker, but its metadata never catches up within the 5 s deadline: not "leads none" (the reading
    cannot show the order the verdict rests on): exit 1, naming the partitions."""
    drained, _, _ = _lagging_run(tmp_path, lag=10_000, timeout=5)
    assert int(drained.exit_code) == ExitCode.CONDITION_NOT_MET, drained.message  # type: ignore[attr-defined]
    assert "t-0, t-1" in drained.message  # type: ignore[attr-defined]
