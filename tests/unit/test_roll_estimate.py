"""What a roll costs (kadmin/domain/roll_estimate.py): its time from a journal's measured steps (`roll plan --from`,
the time left of `roll run` / `roll status` / the live view) and the ZooKeeper-mode controller failover's full
UpdateMetadata fan-out (seed 003), its sizes from the request's schema (kadmin/cluster/update_metadata.py).

The journals are real ones: a roll run in-process on the fake cluster (tests/support/fake_roll.py) with real hooks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kadmin.cluster import update_metadata as um
from kadmin.domain import roll_estimate as est
from kadmin.domain import roll_events as ev
from kadmin.domain.models import Broker, PartitionState, Registered, Registration, Stat
from kadmin.domain.roll import STEP, Request
from kadmin.errors import ConfigError, UsageError
from kadmin.services import roll as svc
from kadmin.services.roll_engine import Options
from kadmin.services.roll_hooks import Hooks
from kadmin.services.roll_journal import Journal
from tests.support.fake_roll import FakeCluster

pytestmark = pytest.mark.timeout(120)


def options(fc: FakeCluster, parallel: int = 1, nodes: tuple[int, ...] | None = None) -> Options:
    return Options(request=Request(nodes, "first", parallel, "distinct"),
                   hooks=Hooks(fc.ops_hook("stop"), fc.ops_hook("start"), None, None),
                   step_timeout=5.0, patience=0.5, unseen_grace=0.5)


def rolled(fc: FakeCluster, d: Path, **kw: object) -> ev.RollState:
    """A whole roll in-process on `fc`, journaled in `d`; its journal replayed."""
    res = svc.run(fc, d, options(fc, **kw), lambda e: None, lambda s: None,  # type: ignore[arg-type]
                  sleep=lambda s: time.sleep(min(s, 0.01)))
    assert int(res.exit_code) == 0, res.message
    return ev.replay(Journal(d).read())


def zk(tmp_path: Path, brokers: tuple[int, ...] = (1, 2, 3)) -> FakeCluster:
    fc = FakeCluster.zookeeper(tmp_path / "ops", brokers)
    return fc.topic("t", *[[b, *[x for x in brokers if x != b][:2]] for b in brokers])


def kraft(tmp_path: Path) -> FakeCluster:
    fc = FakeCluster.kraft(tmp_path / "ops")
    return fc.topic("t", [1, 2, 3], [2, 3, 1], [3, 1, 2])


# ------------------------------------------------------------------------------------------------ role_times
def test_role_times_are_the_means_of_the_nodes_done_split_into_hooks_and_kadmins_steps(tmp_path: Path) -> None:
    st = rolled(kraft(tmp_path), tmp_path / "roll")
    basis = est.role_times(st)
    assert set(basis) == {"broker", "controller"}
    for role, b in basis.items():
        done = [np for np in st.nodes.values() if np.role == role and np.finished]
        assert b.nodes == len(done) == 3
        hooks = [sum(s for k, s in np.elapsed.items() if STEP[k].hook) for np in done]
        own = [sum(s for k, s in np.elapsed.items() if not STEP[k].hook) for np in done]
        assert b.hooks_s == pytest.approx(sum(hooks) / 3, abs=1e-3) and b.hooks_s > 0  # the stop and start hooks
        assert b.kadmin_s == pytest.approx(sum(own) / 3, abs=1e-3)
        assert b.mean_s == pytest.approx(b.hooks_s + b.kadmin_s, abs=2e-3)


def test_role_times_leave_out_skipped_and_unfinished_nodes_and_make_up_no_role() -> None:
    at = "2026-01-01T00:00:00.000Z"
    events: list[ev.Event] = [
        ev.StepEvent(at, 1, "broker", "drain", "done", 2.0), ev.StepEvent(at, 1, "broker", "stop", "done", 8.0),
        ev.NodeDone(at, 1, "broker", "done", 10.0),
        ev.StepEvent(at, 2, "broker", "only_if", "done", 0.5), ev.NodeDone(at, 2, "broker", "skipped", 0.5),
        ev.StepEvent(at, 3, "broker", "drain", "done", 50.0),  # under way: not a measure of a whole node
    ]
    assert est.role_times(ev.replay(events)) == {"broker": est.RoleTimes("broker", 1, 10.0, 2.0, 8.0)}
    assert est.role_times(ev.replay(events[3:])) == {}


# ------------------------------------------------------------------------------------------------ plan_estimate
BASIS = {"broker": est.RoleTimes("broker", 3, 60.0, 40.0, 20.0),
         "controller": est.RoleTimes("controller", 3, 15.0, 5.0, 10.0)}


def test_a_batch_counts_once_as_long_as_its_slowest_node() -> None:
    b = [est.PlannedNode(i, "broker") for i in (1, 2, 3, 4, 5)]
    one = est.plan_estimate([[n] for n in b], BASIS)
    assert (one.total_s, one.unestimated) == (300.0, ())
    assert one.per_node == {1: 60.0, 2: 60.0, 3: 60.0, 4: 60.0, 5: 60.0}
    batched = est.plan_estimate([b[:2], b[2:4], b[4:]], BASIS)
    assert batched.total_s == 180.0 and batched.per_node == one.per_node
    mixed = est.plan_estimate([[est.PlannedNode(3001, "controller")], b[:2]], BASIS)
    assert mixed.total_s == 75.0


def test_a_role_the_journal_has_no_node_of_has_no_estimate_and_a_skipped_node_none_to_take() -> None:
    e = est.plan_estimate([[est.PlannedNode(9, "combined")], [est.PlannedNode(1, "broker")],
                           [est.PlannedNode(2, "broker", skip=True)]], BASIS)
    assert e.per_node == {9: None, 1: 60.0, 2: 0.0}
    assert (e.unestimated, e.total_s) == ((9,), 60.0)  # the total leaves 9 out: a lower bound, and said so


# ------------------------------------------------------------------------------------------------ time_left
def P(role: str, status: str, seconds: float = 0.0) -> est.Progress:  # noqa: N802
    return est.Progress(role, status, seconds)


def test_time_left_from_the_nodes_done() -> None:
    assert est.time_left([P("broker", "pending")] * 3) is None  # none done: nothing to go by
    assert est.time_left([P("broker", "done", 60.0)] * 3) is None  # all done
    nodes = [P("broker", "done", 50.0), P("broker", "done", 70.0), P("broker", "running", 20.0),
             P("broker", "pending"), P("broker", "pending")]
    assert est.time_left(nodes) == 40.0 + 120.0
    assert est.time_left(nodes, parallel=2) == 40.0 + 60.0  # the two pending ones in one batch
    assert est.time_left([P("broker", "done", 60.0), P("broker", "running", 90.0)]) == 0.0  # overdue: not < 0


def test_time_left_goes_by_the_role_else_by_every_node_done() -> None:
    nodes = [P("controller", "done", 10.0), P("controller", "done", 20.0), P("broker", "pending"),
             P("controller", "pending")]
    assert est.time_left(nodes) == 15.0 + 15.0  # no broker done yet: the mean of all
    nodes += [P("broker", "done", 100.0)]
    assert est.time_left(nodes) == 100.0 + 15.0
    batch = [P("broker", "done", 100.0), P("broker", "running", 30.0), P("broker", "running", 80.0)]
    assert est.time_left(batch) == 70.0  # a batch under way ends with its slowest


def test_the_report_of_a_stopped_roll_and_the_live_view_use_the_same_estimate(tmp_path: Path) -> None:
    from kadmin.services.roll_report import progress, report

    fc = zk(tmp_path)
    st = rolled(fc, tmp_path / "roll")
    events = Journal(tmp_path / "roll").read()
    first_done = next(i for i, e in enumerate(events) if isinstance(e, ev.NodeDone))
    part = ev.replay(events[:first_done + 1])
    r = report(part, tmp_path / "roll")
    took = st.nodes[r.nodes[0].node].elapsed
    assert r.estimate_left_s == pytest.approx(2 * sum(took.values()), abs=2e-3)
    assert r.estimate_left_s == est.time_left(progress(r.nodes))
    assert report(st, tmp_path / "roll").estimate_left_s is None


# ------------------------------------------------------------------------------------------------ roll plan --from
def test_plan_from_a_real_rolls_journal(tmp_path: Path) -> None:
    st = rolled(kraft(tmp_path), tmp_path / "roll")
    basis = est.role_times(st)
    fc = kraft(tmp_path / "again")
    res = svc.plan(fc, options(fc), estimate_from=tmp_path / "roll")
    e = res.data.estimate
    assert e is not None and e.from_ == str(tmp_path / "roll")
    assert {n.node: e.per_node[n.node] for n in res.data.nodes} == \
        {n.node: basis[n.role].mean_s for n in res.data.nodes}
    assert e.total_s == pytest.approx(3 * basis["controller"].mean_s + 3 * basis["broker"].mean_s, abs=1e-2)
    assert [b.role for b in e.basis] == ["broker", "controller"] and e.unestimated == ()
    assert "about " in res.message and f"from {tmp_path / 'roll'}" in res.message
    j = res.data.to_json()["estimate"]
    assert list(j) == ["total_s", "per_node", "unestimated", "from", "basis"]
    assert set(j["per_node"]) == {str(n.node) for n in res.data.nodes}


def test_plan_from_a_roll_of_brokers_only_has_no_estimate_for_the_controllers(tmp_path: Path) -> None:
    rolled(zk(tmp_path), tmp_path / "roll")
    fc = kraft(tmp_path / "k")
    res = svc.plan(fc, options(fc), estimate_from=tmp_path / "roll")
    e = res.data.estimate
    assert e is not None and sorted(e.unestimated) == [3001, 3002, 3003]
    assert all(e.per_node[i] is None for i in (3001, 3002, 3003))
    assert e.total_s == pytest.approx(3 * est.role_times(ev.replay(Journal(tmp_path / "roll").read()))
                                      ["broker"].mean_s, abs=1e-2)
    assert "at least " in res.message and "no estimate for node(s) 3001, 3002, 3003" in res.message


def test_plan_from_parallel_batches_counts_each_batch_once(tmp_path: Path) -> None:
    rolled(zk(tmp_path, (1, 2, 3, 4)), tmp_path / "roll")
    fc = FakeCluster.zookeeper(tmp_path / "ops2", (1, 2, 3, 4)).topic("t", [1, 2], [3, 4])
    one = svc.plan(fc, options(fc), estimate_from=tmp_path / "roll").data
    two = svc.plan(fc, options(fc, parallel=2), estimate_from=tmp_path / "roll").data
    assert one.estimate is not None and two.estimate is not None
    assert len(two.batches) < len(one.batches)
    per = one.estimate.per_node[1]
    assert per is not None
    assert one.estimate.total_s == pytest.approx(len(one.batches) * per, abs=1e-2)
    assert two.estimate.total_s == pytest.approx(len(two.batches) * per, abs=1e-2)


@pytest.mark.parametrize(("content", "error", "says"), [
    (None, UsageError, "no roll there (no journal.ndjson)"),
    ("", UsageError, "no node of the roll there is done yet"),
    ('{"event":"roll_started","at":"x","journal_version":2,"clus', UsageError, "no node of the roll there is done"),
    ('{"event":"roll_done","at":"x","elapsed_s":1}\nnot json\n', ConfigError, "journal.ndjson line 2 is not JSON"),
    ('{"event":"step"}\n', ConfigError, "journal.ndjson line 1: a step event without 'at'"),
])
def test_plan_from_a_directory_without_a_measure_fails_before_the_cluster_is_asked(
        tmp_path: Path, content: str | None, error: type[Exception], says: str) -> None:
    d = tmp_path / "roll"
    if content is not None:
        d.mkdir()
        (d / "journal.ndjson").write_text(content)
    fc = zk(tmp_path)
    with pytest.raises(error) as e:
        svc.plan(fc, options(fc), estimate_from=d)
    assert str(e.value).startswith(f"--from {d}: ") and says in str(e.value)
    assert not fc.calls  # the cluster was not asked anything


# ------------------------------------------------------------------------------------------------ the failover
def test_the_failover_is_in_the_plan_when_the_roll_moves_a_zookeeper_mode_controller(tmp_path: Path) -> None:
    fc = zk(tmp_path)
    f = svc.plan(fc, options(fc)).data.controller_failover
    assert f is not None and (f.partitions, f.live_brokers) == (3, 3) and f.warning is None
    assert f.update_metadata_bytes == 3 * f.request_bytes
    fc = zk(tmp_path / "b")
    assert svc.plan(fc, options(fc, nodes=(1, 2))).data.controller_failover is None  # 3, the controller, stays
    fc = kraft(tmp_path / "k")
    assert svc.plan(fc, options(fc)).data.controller_failover is None  # a quorum leader sends no UpdateMetadata


def registered(i: int, host: str) -> Registered:
    reg = Registration(5, host, 9092, (f"PLAINTEXT://{host}:9092", f"SSL://{host}:9093"),
                       {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}, -1, 0, f"rack-{i % 3}")
    return Registered(i, host, 9092, reg.rack, 100 + i, None, 1, Broker(i, Stat(*[0] * 11), b"", reg))


def test_the_sizes_are_those_of_the_request_encoded_whole() -> None:
    """The model (fixed part + partitions x their entry + brokers x theirs) against the whole request encoded by
    kafka-python from the schema: the same bytes but for a varint's byte here and there."""
    from kadmin.cluster.messages import UpdateMetadataRequest as U

    parts = [PartitionState(f"topic-{t}", p, tuple(range(rf)), tuple(range(rf - p % 2)))
             for t, rf in ((1, 3), (2, 2), (3, 5)) for p in range(7)]
    brokers = [registered(i, f"broker-{i}.kafka.example.com") for i in range(1, 6)]
    s = um.sizes(parts, brokers)
    modelled = est.failover_cost(len(parts), len(brokers), s).request_bytes
    topics = [um._topic(len(f"topic-{t}"), [um._partition(len(p.replicas), len(p.isr)) for p in parts
                                            if p.topic == f"topic-{t}"]) for t in (1, 2, 3)]
    whole = len(U(controller_id=1, controller_epoch=1, broker_epoch=1, topic_states=topics,
                  live_brokers=[um._broker(b) for b in brokers]).encode(version=um.VERSION))
    assert abs(modelled - whole) <= 3, (modelled, whole)


def test_the_seeds_example_hundreds_of_thousands_of_partitions_and_200_brokers_warns() -> None:
    """Seed 003: "hundreds of thousands of partitions, and 200 brokers ... up to 30G of ram" for the requests as
    objects and as buffers. The buffers alone, from the schema: several GB (the same order of magnitude, ~10^9 to
    10^10 bytes), far above the 1 GiB threshold."""
    parts = [PartitionState(f"events-{t:04d}", p, (1, 2, 3), (1, 2, 3)) for t in range(100) for p in range(30)]
    brokers = [registered(i, f"kafka-{i:03d}.prod.example.com") for i in range(1, 201)]
    s = um.sizes(parts, brokers)  # the mean entries of a cluster of such topics (30 partitions each, RF 3)
    f = est.failover_cost(300_000, 200, s)
    assert 1e9 < f.update_metadata_bytes < 3e10, f
    assert 30e9 / f.update_metadata_bytes < 20  # within the seed's order of magnitude: the objects add the rest
    assert f.warning is not None and "200 full UpdateMetadata requests of 300000 partitions" in f.warning
    assert "GiB" in f.warning
    small = est.failover_cost(3_000, 6, s)
    assert small.warning is None and small.update_metadata_bytes == 6 * small.request_bytes
    assert est.failover_cost(3_000, 6, s, threshold=small.update_metadata_bytes - 1).warning is not None


# ------------------------------------------------------------------------------------------------ how it shows
def test_plan_views_show_the_estimate_only_with_from(tmp_path: Path) -> None:
    import io

    from kadmin.render import views
    from kadmin.render.renderer import Renderer

    rolled(zk(tmp_path), tmp_path / "roll")
    fc = kraft(tmp_path / "k")

    def shown(fmt: str, **kw: object) -> str:
        out = io.StringIO()
        Renderer(fmt, out, io.StringIO()).emit(svc.plan(fc, options(fc), **kw), views.roll_plan)  # type: ignore[arg-type]
        return out.getvalue()

    plain = shown("plain")
    assert plain.splitlines()[0] == "BATCH\tNODE\tROLE" and all(len(ln.split("\t")) == 3 for ln in plain.splitlines())
    lines = [ln.split("\t") for ln in shown("plain", estimate_from=tmp_path / "roll").splitlines()]
    assert lines[0] == ["BATCH", "NODE", "ROLE", "EST_SECONDS"]
    assert {row[1]: row[3] == "-" for row in lines[1:]} == {"3001": True, "3002": True, "3003": True, "1": False,
                                                           "2": False, "3": False}  # no controller in that roll
    table = shown("table", estimate_from=tmp_path / "roll")
    assert "EST. SECONDS" in table and "at least" in table and "EST. SECONDS" not in shown("table")

