"""KraftCluster.watch_states' polling schedule (issue 13 §5): the interval runs from one poll's start to the
next, so a poll that takes a while (20,000 partitions) does not add itself to every interval. The cluster's
answers come from a subclass with a virtual clock; the schedule is the code under test."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from kadmin.cluster.kraft import KraftClient
from kadmin.cluster.kraft_cluster import POLL_FIRST, POLL_MAX, KraftCluster
from kadmin.results import Problem, Progress


class Answers(KraftCluster):
    """A cluster whose every DescribeTopicPartitions takes `takes` s of the virtual clock; ISR [1] from the
    fourth poll on (broker 1 back)."""

    def __init__(self, takes: float) -> None:
        super().__init__(KraftClient("127.0.0.1:1", {}, 1.0, controllers=False))
        self.takes = takes
        self.now = 0.0
        self.polls: list[float] = []  # when each poll began

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds

    def describe_partitions(self, topics: Sequence[str] | None,
                            progress: Progress | None = None) -> tuple[list[Any], list[Problem]]:
        self.polls.append(self.now)
        self.now += self.takes
        isr = [1] if len(self.polls) >= 4 else [2]
        return [(SimpleNamespace(name="t"), SimpleNamespace(partition_index=0, isr_nodes=isr))], []


def test_polls_start_one_interval_apart_however_long_a_poll_takes() -> None:
    c = Answers(takes=0.3)
    seen = []
    for got in c.watch_states([("t", 0)], timeout=60.0, sleep=c.sleep, clock=c.clock):
        seen.append(got)
        if len(seen) == 7:
            break
    gaps = [round(b - a, 6) for a, b in zip(c.polls, c.polls[1:], strict=False)]
    assert gaps == [POLL_FIRST, 2 * POLL_FIRST, 4 * POLL_FIRST, 8 * POLL_FIRST, POLL_MAX, POLL_MAX]
    assert seen[3] == [(("t", 0), (1,))] and seen[2] == [(("t", 0), (2,))]


def test_a_poll_longer_than_the_interval_is_followed_at_once_and_the_timeout_holds() -> None:
    c = Answers(takes=0.8)
    polls = list(c.watch_states([("t", 0)], timeout=2.0, sleep=c.sleep, clock=c.clock))
    gaps = [round(b - a, 6) for a, b in zip(c.polls, c.polls[1:], strict=False)]
    assert gaps[0] == 0.8  # no pause after a 0.8 s poll on a 0.5 s interval
    assert c.now <= 2.0 + 0.8 and len(polls) == len(c.polls)
