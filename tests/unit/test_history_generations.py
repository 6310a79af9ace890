"""Broker generations (kadmin.domain.history): what starts one, what ends one, what is no bounce."""

from __future__ import annotations

from kadmin.domain.history import Generation, RegEvent, bounce_stats, generations


def reg(pos: int, ts: int, epoch: int, inc: str | None = None, bid: int = 2) -> RegEvent:
    return RegEvent(bid, pos, ts, True, epoch, inc)


def end(pos: int, ts: int, epoch: int | None, bid: int = 2) -> RegEvent:
    return RegEvent(bid, pos, ts, False, epoch)


def test_a_fence_ends_the_generation_and_the_downtime_runs_to_the_next_registration() -> None:
    # KRaft, hard kill: the controller fences the broker when its session expires, then it registers again
    gens = generations([reg(15, 1_000, 15, "A"), end(34, 5_000, 15), reg(55, 15_000, 55, "B")])
    assert gens == [Generation(2, 15, 1_000, 15, 5_000, 10_000), Generation(2, 55, 15_000, 55, None, None)]
    (s,) = bounce_stats(gens)
    assert (s.bounces, s.downtime_p50_ms, s.downtime_max_ms) == (1, 10_000, 10_000)


def test_controlled_shutdown_ends_the_generation_and_the_later_fence_does_not_move_the_end() -> None:
    gens = generations([reg(15, 1_000, 15, "A"), end(30, 4_000, 15), end(31, 4_500, 15), reg(40, 9_000, 40, "B")])
    assert [(g.end_ms, g.gap_ms) for g in gens] == [(4_000, 5_000), (None, None)]


def test_an_end_naming_another_epoch_is_stale_and_ends_nothing() -> None:
    gens = generations([reg(15, 1_000, 15, "A"), end(20, 2_000, 7), end(30, 3_000, None)])
    assert [(g.epoch, g.end_ms) for g in gens] == [(15, 3_000)]


def test_the_same_incarnation_registering_again_is_an_amendment_not_a_bounce() -> None:
    gens = generations([reg(15, 1_000, 15, "A"), reg(60, 8_000, 60, "A")])
    assert [(g.epoch, g.end_ms) for g in gens] == [(15, None)]
    assert bounce_stats(gens)[0].bounces == 0


def test_the_same_epoch_re_sent_is_an_amendment_not_a_bounce() -> None:
    gens = generations([reg(15, 1_000, 15), reg(15, 1_000, 15), reg(15, 2_000, 15, "A")])
    assert len(gens) == 1 and bounce_stats(gens)[0].bounces == 0


def test_a_new_incarnation_without_a_logged_end_is_a_fast_bounce_with_no_downtime() -> None:
    gens = generations([reg(15, 1_000, 15, "A"), reg(20, 3_000, 20, "B")])
    assert [(g.end_ms, g.gap_ms) for g in gens] == [(3_000, 0), (None, None)]


def test_ends_before_any_registration_are_ignored_and_brokers_are_apart() -> None:
    gens = generations([end(1, 500, 3), reg(15, 1_000, 15, "A"), reg(16, 1_100, 16, "C", bid=3),
                        end(30, 2_000, 16, bid=3)])
    assert [(g.broker_id, g.end_ms) for g in gens] == [(2, None), (3, 2_000)]
