"""KIP-380's classification and seed 003's max broker epoch, as pure rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kadmin.domain.epochs import Bounce, classify, max_broker_epoch, registration_events
from kadmin.domain.models import Generation

epoch_maps = st.dictionaries(st.integers(0, 50), st.integers(1, 10**12), max_size=30)


def test_classify_table() -> None:
    d = classify({1: 10, 2: 20, 3: 30}, {2: 20, 3: 35, 4: 40})
    assert d.new == (4,)
    assert d.dead == (1,)
    assert d.bounced == (Bounce(3, 30, 35),)
    assert d.unchanged == (2,)
    assert d.changed


def test_unchanged_cluster_is_not_changed() -> None:
    assert not classify({1: 5, 2: 6}, {1: 5, 2: 6}).changed


def test_epoch_going_backwards_is_not_a_bounce() -> None:
    d = classify({1: 50}, {1: 40})
    assert d.bounced == ()
    assert d.went_backwards == (Bounce(1, 50, 40),)
    assert d.changed


@given(epoch_maps, epoch_maps)
def test_classification_partitions_every_broker(before: dict[int, int], after: dict[int, int]) -> None:
    d = classify(before, after)
    bounced = {b.id for b in d.bounced} | {b.id for b in d.went_backwards}
    groups = [set(d.new), set(d.dead), bounced, set(d.unchanged)]
    assert set().union(*groups) == set(before) | set(after)
    assert sum(len(g) for g in groups) == len(set(before) | set(after))  # disjoint
    assert set(d.new) == set(after) - set(before)
    assert set(d.dead) == set(before) - set(after)
    assert all(b.new_epoch > b.old_epoch for b in d.bounced)
    assert all(before[i] == after[i] for i in d.unchanged)


@given(epoch_maps)
def test_nothing_changes_against_itself(m: dict[int, int]) -> None:
    d = classify(m, m)
    assert not d.changed and set(d.unchanged) == set(m)


@given(epoch_maps)
def test_max_broker_epoch_is_the_largest_live_epoch(m: dict[int, int]) -> None:
    found = max_broker_epoch(m)
    if not m:
        assert found is None
        return
    epoch, bid = found
    assert epoch == max(m.values()) and m[bid] == epoch
    assert all(bid <= b for b, e in m.items() if e == epoch)


def test_events_fast_bounce_is_a_bounce() -> None:
    before = {1: Generation(10, 10), 2: Generation(20, 22)}
    after = {1: Generation(15, 15), 2: Generation(20, 25), 3: Generation(30, 30)}
    evs = [(e.event, e.id, e.epoch, e.old_epoch) for e in registration_events(before, after)]
    assert evs == [("bounced", 1, 15, 10), ("updated", 2, 20, 20), ("registered", 3, 30, None)]


def test_reregistration_after_a_seen_deregistration_is_a_bounce() -> None:
    gone = registration_events({4: Generation(40, 40)}, {})
    assert [(e.event, e.old_epoch) for e in gone] == [("deregistered", 40)]
    back = registration_events({}, {4: Generation(47, 47)}, last_epochs={4: 40})
    assert [(e.event, e.epoch, e.old_epoch) for e in back] == [("bounced", 47, 40)]


@given(st.dictionaries(st.integers(0, 20), st.integers(1, 1000), max_size=10),
       st.dictionaries(st.integers(0, 20), st.integers(1, 1000), max_size=10))
def test_events_agree_with_classify(b: dict[int, int], a: dict[int, int]) -> None:
    evs = registration_events({k: Generation(v, v) for k, v in b.items()}, {k: Generation(v, v) for k, v in a.items()})
    d = classify(b, a)
    assert {e.id for e in evs if e.event == "registered"} == set(d.new)
    assert {e.id for e in evs if e.event == "deregistered"} == set(d.dead)
    assert {e.id for e in evs if e.event == "bounced"} == {x.id for x in d.bounced + d.went_backwards}
