"""Leadership drain planning (kadmin/domain/drain.py) and the drain file's round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kadmin.domain import drain as dom
from kadmin.domain.drain import PartitionView
from kadmin.errors import UsageError
from kadmin.services.drain import default_dir, read_file, write_file
from tests.conftest import Run


def pv(topic: str, p: int, replicas: list[int], isr: list[int] | None = None, leader: int | None = None,
       reassigning: bool = False, offline: list[int] | None = None) -> PartitionView:
    return PartitionView(topic, p, tuple(replicas), tuple(replicas if isr is None else isr),
                         replicas[0] if leader is None else leader, reassigning, tuple(offline or ()))


def test_demoted_moves_only_the_broker_to_the_end() -> None:
    assert dom.demoted([1, 2, 3], 1) == (2, 3, 1)
    assert dom.demoted([2, 1, 3], 1) == (2, 3, 1)
    assert dom.demoted([2, 3, 1], 1) == (2, 3, 1)
    assert dom.demoted([2, 3], 1) == (2, 3)


def test_plan_reorders_and_elects_only_what_the_broker_touches() -> None:
    parts = [pv("t", 0, [1, 2, 3]), pv("t", 1, [2, 1, 3]), pv("t", 2, [2, 3, 1]), pv("t", 3, [2, 3]),
             pv("t", 4, [2, 1, 3], leader=1)]
    plan = dom.plan_drain(parts, 1)
    assert plan.reorder == {("t", 0): (2, 3, 1), ("t", 1): (2, 3, 1), ("t", 4): (2, 3, 1)}
    assert sorted(plan.elect) == [("t", 0), ("t", 4)]  # t-1 is led by 2 already, t-2 needs nothing
    assert [p.key for p in plan.hosted] == [("t", 0), ("t", 1), ("t", 2), ("t", 4)]
    assert plan.only_isr == plan.sole_replica == plan.in_flight == []
    # the reorder keeps every replica set as it is: no data moves
    for key, target in plan.reorder.items():
        assert sorted(target) == sorted(next(p.replicas for p in parts if p.key == key))


@pytest.mark.parametrize(("replicas", "isr", "offline", "want"), [
    ([1, 2, 3], [1, 2, 3], [], (2, 3, 1)),  # all in sync: only the broker moves
    ([1, 3, 2], [1, 2], [], (2, 3, 1)),  # issue 20: 3 is out of sync, so 2 goes first
    ([1, 3, 2], [1, 2], [3], (2, 3, 1)),
    ([3, 1, 2], [1, 2], [], (2, 3, 1)),  # the broker not first: still the in-sync ones first
    ([1, 4, 3, 2, 5], [1, 5, 2], [], (2, 5, 4, 3, 1)),  # each group keeps its relative order
    ([1, 3, 2], [1, 2, 3], [3], (2, 3, 1)),  # 3 in the ISR but not live (fenced): a live one first
    ([1, 3, 2], [1, 2, 3], [2, 3], (3, 2, 1)),  # none live: the ISR order is kept
    ([1, 3, 2], [1], [], (3, 2, 1)),  # only the broker in sync: the others keep their order
    ([2, 3], [2, 3], [], (2, 3)),  # not a replica: nothing to put last
])
def test_isr_first_order(replicas: list[int], isr: list[int], offline: list[int], want: tuple[int, ...]) -> None:
    assert dom.isr_first(replicas, 1, isr, offline) == want
    assert sorted(want) == sorted(replicas)  # the same set: no data moves


def test_plan_puts_in_sync_replicas_first_where_the_broker_leads() -> None:
    """Issue 20: replicas [1,3,2], ISR [1,2] (broker 3 down). Moving only 1 last gives [3,2,1], whose
    preferred leader 3 is not in sync: the election fails and 1 keeps leading. [2,3,1] lets 2 take over."""
    parts = [pv("t", 0, [1, 3, 2], isr=[1, 2]),
             pv("t", 1, [3, 2, 1], isr=[1, 2], leader=1),  # the broker last already but leading: reordered
             pv("t", 2, [1, 3, 2], isr=[1, 2, 3], offline=[3]),  # 3 fenced, still in the ISR: 2 first
             pv("t", 3, [1, 2, 3])]  # all in sync: as before, only the broker moves
    plan = dom.plan_drain(parts, 1)
    assert plan.reorder == {("t", 0): (2, 3, 1), ("t", 1): (2, 3, 1), ("t", 2): (2, 3, 1), ("t", 3): (2, 3, 1)}
    assert plan.elect == [("t", 0), ("t", 1), ("t", 2), ("t", 3)] and plan.only_isr == []
    # the saved file holds the original order, which undrain puts back exactly
    doc = dom.drain_file(1, plan, "now", {"mode": "protocol"})
    saved = dom.parse_drain_file(doc, 1)
    assert saved == {p.key: p.replicas for p in parts}
    after = [pv(t, n, list(plan.reorder[(t, n)]), isr=list(p.isr), leader=2) for p in parts for t, n in [p.key]]
    undo = dom.plan_undrain(saved, after, 1)
    assert undo.restore == saved and undo.changed == []


def test_plan_leaves_partitions_the_broker_does_not_lead_as_they_were() -> None:
    """Where the broker does not lead, only the broker moves (to the end): the others' order is not the
    in-sync-first one, and no election moves a leadership between other brokers."""
    parts = [pv("t", 0, [3, 2, 1], isr=[1, 2], leader=2),  # last already, not preferred, not leading: untouched
             pv("t", 1, [2, 1, 3], isr=[1, 2], leader=2),  # led by 2 already: 1 goes last, no election
             pv("t", 2, [1, 3, 2], isr=[1, 2], leader=2),  # preferred but not leading: 3 (out of sync) stays first
             pv("t", 3, [3, 1, 2, 4], isr=[1, 2, 4], leader=4),  # no election to move 4's leadership to 2
             pv("t", 4, [3, 1, 2], isr=[1, 2, 3], leader=2, offline=[3])]  # 3 fenced: not electable, no election
    plan = dom.plan_drain(parts, 1)
    assert plan.reorder == {("t", 1): (2, 3, 1), ("t", 2): (3, 2, 1), ("t", 3): (3, 2, 4, 1), ("t", 4): (3, 2, 1)}
    assert plan.elect == [] and plan.only_isr == []


def test_backends_say_which_replicas_are_not_live() -> None:
    """Metadata's offline_replicas (absent before v5: unknown, so none); ZooKeeper: no /brokers/ids entry."""
    from types import SimpleNamespace

    from kadmin.cluster.base import PartitionScan
    from kadmin.cluster.drain import AdminDrain, ZkDrain
    from kadmin.domain.models import PartitionState

    ns = SimpleNamespace
    metadata = ns(error_code=0, topics=[ns(name="t", error_code=0, partitions=[
        ns(partition_index=0, replica_nodes=[1, 3, 2], isr_nodes=[1, 2, 3], leader_id=1, offline_replicas=[3]),
        ns(partition_index=1, replica_nodes=[2, 1], isr_nodes=[2, 1], leader_id=2)])])  # v0-v4: no offline
    admin = AdminDrain(ns(addresses=["b:9092"], send_any=lambda make: ("b:9092", metadata)))  # type: ignore[arg-type]
    got = admin.partitions(in_flight=False)
    assert [(p.key, p.offline) for p in got] == [(("t", 0), (3,)), (("t", 1), ())]
    assert dom.plan_drain(got, 1).reorder[("t", 0)] == (2, 3, 1)

    scan = PartitionScan([PartitionState("t", 0, (1, 3, 2), (1, 2, 3), 1)], frozenset({1, 2}))
    zk = ZkDrain(SimpleNamespace(zk=None, description="zk", scan_partitions=lambda: scan))
    assert [(p.key, p.offline) for p in zk.partitions(in_flight=False)] == [(("t", 0), (3,))]


def test_plan_names_partitions_whose_only_in_sync_replica_is_the_broker() -> None:
    parts = [pv("t", 0, [1, 2], isr=[1]), pv("t", 1, [2, 1], isr=[1], leader=1), pv("solo", 0, [1])]
    plan = dom.plan_drain(parts, 1)
    assert plan.only_isr == [("t", 0), ("t", 1)] and plan.sole_replica == [("solo", 0)]
    assert plan.elect == [] and plan.stuck == {("t", 0), ("t", 1), ("solo", 0)}
    assert plan.reorder == {("t", 0): (2, 1)}


def test_plan_with_a_reassignment_in_flight() -> None:
    parts = [pv("t", 0, [1, 2, 3]), pv("m", 0, [2, 3, 1], isr=[1], leader=1, reassigning=True),
             pv("x", 0, [2, 3], reassigning=True)]  # not hosted by 1: not affected
    plan = dom.plan_drain(parts, 1)
    assert plan.in_flight == [("m", 0)] and plan.skipped == []
    forced = dom.plan_drain(parts, 1, skip_in_flight=True)
    assert forced.skipped == [("m", 0)] and ("m", 0) not in forced.reorder and ("m", 0) in forced.stuck
    doc = dom.drain_file(1, forced, "now", {"mode": "protocol"})
    assert [(p["topic"], p["partition"]) for p in doc["partitions"]] == [("t", 0)]


def test_led_by_and_not_preferred() -> None:
    parts = [pv("t", 0, [2, 1], leader=1), pv("t", 1, [1, 2], leader=2), pv("t", 2, [1, 2], isr=[2], leader=2)]
    assert dom.led_by(parts, 1) == [("t", 0)]
    assert dom.led_by(parts, 1, {("t", 1)}) == []
    pref = {("t", 0): 2, ("t", 1): 1, ("t", 2): 1}
    assert dom.not_preferred(parts, pref) == [("t", 0), ("t", 1)]  # t-2: its preferred is not in sync


def test_undrain_plan_restores_same_sets_only() -> None:
    saved = {("t", 0): (1, 2, 3), ("t", 1): (2, 1, 3), ("t", 2): (1, 2), ("gone", 0): (1, 2), ("m", 0): (1, 2)}
    now = [pv("t", 0, [2, 3, 1]), pv("t", 1, [2, 1, 3]), pv("t", 2, [2, 3]), pv("m", 0, [2, 1], reassigning=True)]
    plan = dom.plan_undrain(saved, now, 1)
    assert plan.restore == {("t", 0): (1, 2, 3), ("m", 0): (1, 2)} and plan.already == [("t", 1)]
    assert plan.changed == [("t", 2)] and plan.gone == [("gone", 0)] and plan.in_flight == [("m", 0)]
    assert plan.preferred(saved) == {("m", 0): 1, ("t", 0): 1, ("t", 1): 2}
    forced = dom.plan_undrain(saved, now, 1, skip_in_flight=True)
    assert forced.skipped == [("m", 0)] and ("m", 0) not in forced.restore and ("m", 0) not in forced.elect


def test_a_batch_drained_together_goes_last_as_one() -> None:
    """A roll's batch (brokers stopping together) is planned as one drain: every member last, in its order."""
    parts = [pv("t", 0, [1, 2, 3]), pv("t", 1, [2, 3, 1]), pv("t", 2, [3, 1, 2]), pv("t", 3, [3, 4, 1]),
             pv("t", 4, [1, 2], isr=[1, 2]), pv("t", 5, [1, 2, 3], isr=[1, 2]), pv("t", 6, [4, 3])]
    plan = dom.plan_drain(parts, [2, 1])
    assert plan.broker_id == 1
    # t-1 led by 2: 3 goes first; t-2 has both last already; t-3 has 1 last already; t-5: 3 first, out of sync
    assert plan.reorder == {("t", 0): (3, 1, 2), ("t", 1): (3, 2, 1), ("t", 5): (3, 1, 2)}
    assert sorted(plan.elect) == [("t", 0), ("t", 1)]
    assert plan.sole_replica == [("t", 4)]  # no replica outside the batch
    assert plan.only_isr == [("t", 5)]  # no in-sync replica outside the batch
    assert [p.key for p in plan.hosted] == [("t", k) for k in range(6)]
    assert dom.led_by(parts, {1, 2}) == [("t", 0), ("t", 1), ("t", 4), ("t", 5)]
    # each member's own file holds only the partitions it hosts
    for i, want in ((1, {0, 1, 2, 3, 4, 5}), (2, {0, 1, 2, 4, 5})):
        doc = dom.drain_file(i, plan, "2026-01-01T00:00:00+00:00", {})
        assert doc["broker_id"] == i and {p["partition"] for p in doc["partitions"]} == want
    # one broker: the same plan as before
    assert dom.plan_drain(parts, [1]) == dom.plan_drain(parts, 1)


def test_drain_file_round_trip_and_refusals(tmp_path: Path) -> None:
    plan = dom.plan_drain([pv("t", 0, [1, 2, 3]), pv("t", 1, [2, 3, 1])], 1)
    f = tmp_path / "sub" / "d.json"
    write_file(f, dom.drain_file(1, plan, "2026-01-01T00:00:00+00:00", {"mode": "zookeeper", "id": "abc"}))
    # the original order, and the order the drain set (broker 1 last: what a later undrain expects to find)
    assert read_file(f, 1) == dom.SavedDrain(1, "abc", {("t", 0): (1, 2, 3), ("t", 1): (2, 3, 1)},
                                             {("t", 0): (2, 3, 1), ("t", 1): (2, 3, 1)})
    assert [p.name for p in f.parent.iterdir()] == ["d.json"]  # no temporary file left beside it
    with pytest.raises(UsageError, match="exists"):  # never overwrites an original order
        write_file(f, {})
    with pytest.raises(UsageError, match="for broker 1, not 2"):
        read_file(f, 2)
    assert read_file(f, 2, force=True).broker_id == 1  # --force: another broker's file is read
    doc = json.loads(f.read_text())
    for bad, msg in ((dict(doc, version=2), "version 2 is not supported"), ({"x": 1}, "not a kadmin drain file"),
                     (dict(doc, partitions=[{"topic": "t", "partition": "0", "replicas": [1]}]), r"partitions\[0\]"),
                     (dict(doc, partitions=[{"topic": "t", "partition": 0, "replicas": [1, 1]}]), "distinct"),
                     (dict(doc, partitions=[{"topic": "t", "partition": 0, "replicas": [1, 2], "set": [1, 3]}]),
                      "set is not its replicas")):
        g = tmp_path / f"bad-{len(msg)}.json"
        g.write_text(json.dumps(bad))
        with pytest.raises(UsageError, match=msg):
            read_file(g, 1)
    for i, text in enumerate(["{", "[" * 100_000 + "]" * 100_000, '{"broker_id":' + "9" * 5000 + "}"]):
        g = tmp_path / f"notjson-{i}.json"
        g.write_text(text)
        with pytest.raises(UsageError, match="not JSON"):  # too deep or too long a number: no RecursionError
            read_file(g, 1)
    with pytest.raises(UsageError, match="--from"):
        read_file(tmp_path / "missing.json", 1)


def test_default_dir_follows_xdg_state_home(tmp_path: Path) -> None:
    assert default_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "kadmin" / "drain"
    assert default_dir({"HOME": str(tmp_path)}) == tmp_path / ".local" / "state" / "kadmin" / "drain"


def test_cli_refuses_bad_input_before_contacting_anything(run_nozk: Run, tmp_path: Path) -> None:
    r = run_nozk("brokers", "undrain", "1", "--from", str(tmp_path / "missing.json"), "--zookeeper", "127.0.0.1:1")
    assert r.exit_code == 2 and "missing.json" in r.stderr
    r = run_nozk("brokers", "drain", "1", "--bootstrap-controller", "127.0.0.1:1")
    assert r.exit_code == 3 and "--bootstrap-server" in r.stderr
    r = run_nozk("brokers", "drain", "1", "--timeout", "0", "--zookeeper", "127.0.0.1:1")
    assert r.exit_code == 2


def test_a_drain_elects_within_50_ms_of_the_controller_applying_its_reordering(tmp_path: Path) -> None:
    """The controller applies the reordering 0.7 s after it is asked (a busy ZooKeeper-mode controller): the
    drain asks for the election within 50 ms of that, not at the end of a pause grown to a second (a roll drains
    and undrains every batch: each late look was the operator's time)."""
    from collections.abc import Iterable, Mapping

    from kadmin.domain.drain import Key
    from kadmin.services import drain as dsvc
    from tests.unit.test_undrain_truth import Identity, Moves

    now = [0.0]
    applied_at: list[float] = []
    elected_at: list[float] = []

    class Busy(Moves):
        def reassign(self, plan: Mapping[Key, tuple[int, ...]]) -> dict[Key, str]:
            applied_at.append(now[0] + 0.7)
            return super().reassign(plan)

        def reassigned(self, keys: Iterable[Key]) -> bool:
            return now[0] >= applied_at[0]

        def elect_preferred(self, keys: Iterable[Key]) -> dict[Key, str]:
            elected_at.append(now[0])
            return super().elect_preferred(keys)

    def sleep(s: float) -> None:
        now[0] += s

    m = Busy({("t", 0): (1, 2, 3), ("t", 1): (2, 1, 3), ("t", 2): (3, 2, 1)})
    r = dsvc.drain(m, Identity(), 1, save=tmp_path / "d1.json", dry_run=False, force=False, timeout=30,
                   sleep=sleep, clock=lambda: now[0])
    assert int(r.exit_code) == 0, r.message
    assert elected_at and 0 <= elected_at[0] - applied_at[0] <= 0.05 + 1e-9, (applied_at, elected_at)
    assert all(leader != 1 for leader in m.leaders.values()), m.leaders
