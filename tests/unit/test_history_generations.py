"""Broker generations (kadmin.domain.history): what starts one, what ends one, what is no bounce; and KRaft
fence episodes (kadmin.domain.fences): a fence the same registration is unfenced from is no end."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kadmin.domain import fences as pg
from kadmin.domain.history import Generation, RegEvent, bounce_stats, generations, max_epoch_over_time


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


# ------------------------------------------------------------------ KRaft fence episodes (kadmin.domain.fences)


def ev(event: str, pos: int, ts: int, epoch: int | None, inc: str | None = None, bid: int = 2) -> pg.LifeEvent:
    return pg.LifeEvent(bid, pos, ts, f"broker_{event}", epoch, inc)


def test_fenced_and_unfenced_with_the_same_epoch_continues_the_generation() -> None:
    # KRaft, a broker paused past broker.session.timeout.ms: fenced, then unfenced at the same epoch
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("unfenced", 16, 1_500, 15),
                       ev("fenced", 30, 5_000, 15), ev("unfenced", 40, 12_000, 15)])
    (gen,) = hist.generations
    assert (gen.epoch, gen.end_ms, gen.gap_ms) == (15, None, None)
    assert hist.episodes == [pg.FenceEpisode(2, 15, 5_000, 12_000)]
    assert (len(hist.episodes_of(gen)), hist.fenced_ms(gen)) == (1, 7_000)
    (s,) = bounce_stats(hist.generations)
    assert (s.bounces, s.downtime_p50_ms, s.downtime_max_ms) == (0, None, None)
    assert pg.fence_stats(hist)[2] == pg.FenceStats(2, 1, 7_000, 7_000)


def test_a_fence_followed_by_a_new_registration_is_a_bounce_with_downtime_from_the_fence() -> None:
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("unfenced", 16, 1_500, 15),
                       ev("fenced", 34, 5_000, 15), ev("registered", 55, 15_000, 55, "B"),
                       ev("unfenced", 56, 16_000, 55)])
    assert hist.generations == [Generation(2, 15, 1_000, 15, 5_000, 10_000), Generation(2, 55, 15_000, 55, None, None)]
    assert hist.episodes == []
    assert bounce_stats(hist.generations)[0].bounces == 1


def test_controlled_shutdown_then_a_new_registration_stays_a_bounce() -> None:
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("unfenced", 16, 1_500, 15),
                       ev("controlled_shutdown", 30, 4_000, 15), ev("fenced", 31, 4_500, 15),
                       ev("registered", 40, 9_000, 40, "B"), ev("unfenced", 41, 9_500, 40)])
    assert [(g.epoch, g.end_ms, g.gap_ms) for g in hist.generations] == [(15, 4_000, 5_000), (40, None, None)]
    assert hist.episodes == [] and bounce_stats(hist.generations)[0].bounces == 1


def test_one_record_fencing_and_shutting_down_ends_the_generation() -> None:
    # BrokerRegistrationChangeRecord Fenced=1 and InControlledShutdown=1: two events at one offset
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("controlled_shutdown", 30, 4_000, 15),
                       ev("fenced", 30, 4_000, 15), ev("unfenced", 35, 6_000, 15)])
    assert [(g.end_ms, g.gap_ms) for g in hist.generations] == [(4_000, None)] and hist.episodes == []


def test_episodes_then_a_hard_kill_count_apart_from_the_bounce() -> None:
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("unfenced", 16, 1_000, 15),
                       ev("fenced", 20, 2_000, 15), ev("unfenced", 21, 3_000, 15),
                       ev("fenced", 22, 4_000, 15), ev("fenced", 23, 4_100, 15),  # fenced again while fenced
                       ev("unfenced", 24, 7_000, 15),
                       ev("fenced", 30, 9_000, 15), ev("registered", 40, 19_000, 40, "B")])
    g1, g2 = hist.generations
    assert (g1.end_ms, g1.gap_ms, g2.end_ms) == (9_000, 10_000, None)
    assert [(e.start_ms, e.end_ms) for e in hist.episodes_of(g1)] == [(2_000, 3_000), (4_000, 7_000)]
    assert hist.fenced_ms(g1) == 4_000 and hist.episodes_of(g2) == []
    (s,) = bounce_stats(hist.generations)
    assert (s.bounces, s.downtime_max_ms) == (1, 10_000)
    assert pg.fence_stats(hist)[2] == pg.FenceStats(2, 2, 4_000, 3_000)


def test_a_fence_still_open_when_the_history_ends_ends_the_generation_there() -> None:
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("fenced", 30, 5_000, 15)])
    assert [(g.end_ms, g.gap_ms) for g in hist.generations] == [(5_000, None)] and hist.episodes == []


def test_an_unfence_of_another_epoch_closes_no_episode() -> None:
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("fenced", 30, 5_000, 15),
                       ev("unfenced", 31, 6_000, 7), ev("registered", 55, 15_000, 55, "B")])
    assert [(g.epoch, g.end_ms, g.gap_ms) for g in hist.generations] == [(15, 5_000, 10_000), (55, None, None)]
    assert hist.episodes == []


def test_a_stale_fence_of_an_older_epoch_starts_no_episode_and_ends_nothing() -> None:
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("registered", 20, 2_000, 20, "B"),
                       ev("fenced", 21, 2_500, 15), ev("unfenced", 22, 3_000, 20)])
    assert [(g.epoch, g.end_ms) for g in hist.generations] == [(15, 2_000), (20, None)] and hist.episodes == []


def test_the_first_unfence_after_registering_is_no_episode() -> None:
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("unfenced", 16, 2_000, 15)])
    assert hist.episodes == [] and [g.end_ms for g in hist.generations] == [None]


def test_an_amending_registration_during_a_fence_keeps_the_episode_open() -> None:
    # the same incarnation registering again (here with a new epoch) while fenced, then unfenced at that epoch
    hist = pg.history([ev("registered", 15, 1_000, 15, "A"), ev("unfenced", 16, 1_500, 15),
                       ev("fenced", 30, 5_000, 15), ev("registered", 35, 6_000, 35, "A"),
                       ev("unfenced", 36, 8_000, 35)])
    assert [(g.epoch, g.end_ms) for g in hist.generations] == [(15, None)]
    assert [(e.start_ms, e.end_ms) for e in hist.episodes] == [(5_000, 8_000)]


def test_ends_only_zookeeper_deregistrations_are_unchanged() -> None:
    events = [ev("registered", 15, 1_000, 15), ev("deregistered", 30, 4_000, None), ev("registered", 40, 9_000, 40)]
    regs = [RegEvent(2, 15, 1_000, True, 15), RegEvent(2, 30, 4_000, False, None), RegEvent(2, 40, 9_000, True, 40)]
    assert pg.history(events).generations == generations(regs)


def test_a_fence_episode_moves_neither_the_max_epoch_nor_the_rejoin_window() -> None:
    hist = pg.history([ev("registered", 10, 1_000, 10, "A", bid=1), ev("registered", 15, 1_000, 15, "B"),
                       ev("fenced", 30, 5_000, 15), ev("unfenced", 40, 12_000, 15),
                       ev("fenced", 50, 20_000, 15), ev("registered", 60, 30_000, 60, "C"),
                       ev("fenced", 70, 40_000, 60), ev("unfenced", 80, 41_000, 60)])
    # the max epoch stays 15 through the episode (the registration is still there) and moves only at the
    # generation's end (the fence that the new registration followed)
    assert [(e, b) for _, e, b in max_epoch_over_time(hist.generations)] == [(10, 1), (15, 2), (10, 1), (60, 2)]
    # the bounce's rejoin window closes at its first fence episode: ISR expands after an unfence are no rejoin
    assert pg.rejoin_windows(hist) == [(2, 30_000, 40_000)]


@st.composite
def lifecycles(draw: st.DrawFn) -> tuple[list[pg.LifeEvent], list[pg.LifeEvent], list[tuple[int, int]]]:
    """One broker's history (registrations, each generation ended by nothing, a controlled shutdown, a
    deregistration or a fence not followed by an unfence), and the same history with fence episodes (a fence and
    an unfence of the generation's epoch) inserted inside generations, before their end; with those episodes."""
    base: list[pg.LifeEvent] = []
    episodes: list[tuple[int, int]] = []
    with_eps: list[pg.LifeEvent] = []
    pos, ts = 0, 1_000
    for n in range(draw(st.integers(1, 4))):
        epoch = pos + 1
        reg = ev("registered", pos + 1, ts, epoch, f"I{n}")
        unfence = ev("unfenced", pos + 2, ts + 100, epoch)
        base += [reg, unfence]
        with_eps += [reg, unfence]
        pos, ts = pos + 2, ts + 100
        for _ in range(draw(st.integers(0, 3))):
            fence_ts = ts + draw(st.integers(1, 5_000))
            unfence_ts = fence_ts + draw(st.integers(0, 20_000))
            with_eps += [ev("fenced", pos + 1, fence_ts, epoch), ev("unfenced", pos + 2, unfence_ts, epoch)]
            episodes.append((fence_ts, unfence_ts))
            pos, ts = pos + 2, unfence_ts
        end = draw(st.sampled_from(["none", "controlled_shutdown", "deregistered", "fenced"]))
        ts += draw(st.integers(1, 5_000))
        if end != "none":
            base.append(ev(end, pos + 1, ts, epoch))
            with_eps.append(ev(end, pos + 1, ts, epoch))
            pos, ts = pos + 1, ts + draw(st.integers(0, 30_000))
    return base, with_eps, episodes


@given(lifecycles())
def test_fence_episodes_change_no_generation_bounce_or_downtime(case: Any) -> None:
    base, with_eps, episodes = case
    plain, fenced = pg.history(base), pg.history(with_eps)
    assert fenced.generations == plain.generations
    assert bounce_stats(fenced.generations) == bounce_stats(plain.generations)
    assert max_epoch_over_time(fenced.generations) == max_epoch_over_time(plain.generations)
    assert [(e.start_ms, e.end_ms) for e in fenced.episodes] == episodes
    assert sum(fenced.fenced_ms(g) for g in fenced.generations) == sum(b - a for a, b in episodes)
