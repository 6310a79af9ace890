"""KraftCluster.watch_states' polling schedule and shrinking polls (issue 13 §5). Whatever an answer missed
happened after its poll began, so the next answer is due one interval after that start: the next poll starts
early by the time it is expected to take (the last one's, scaled to the partitions still asked for). Keys whose
ISR is settled are no longer followed, topics with none left no longer asked for. The cluster's answers come
from a subclass with a virtual clock; the schedule and the requests are the code under test."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from kadmin.cluster.kraft import KraftClient
from kadmin.cluster.kraft_cluster import POLL_FIRST, POLL_MAX, KraftCluster
from kadmin.results import Problem, Progress


class Answers(KraftCluster):
    """A cluster whose DescribeTopicPartitions takes `takes` s of the virtual clock per partition answered;
    topic t has partitions 0..`size`-1. Broker 1 is in the ISR of partition p of topic t from poll `back[t][p]`
    on (ISR [2] before)."""

    def __init__(self, takes: float, back: dict[str, list[int]]) -> None:
        super().__init__(KraftClient("127.0.0.1:1", {}, 1.0, controllers=False))
        self.takes = takes
        self.back = back
        self.now = 0.0
        self.polls: list[float] = []  # when each poll began
        self.asked: list[list[str]] = []  # the topics each poll asked for

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds

    def describe_partitions(self, topics: Sequence[str] | None,
                            progress: Progress | None = None) -> tuple[list[Any], list[Problem]]:
        assert topics is not None
        self.polls.append(self.now)
        self.asked.append(list(topics))
        n = len(self.polls)
        rows = [(SimpleNamespace(name=t), SimpleNamespace(partition_index=p, isr_nodes=[2, 1] if n >= at else [2]))
                for t in topics for p, at in enumerate(self.back[t])]
        self.now += self.takes * len(rows)
        return rows, []


def answers_at(c: Answers) -> list[float]:
    return [round(b - a, 6) for a, b in zip(c.polls, c.polls[1:], strict=False)]


def test_each_answer_comes_one_interval_after_the_previous_poll_began() -> None:
    c = Answers(takes=0.3, back={"t": [4]})
    seen = []
    for got in c.watch_states([("t", 0)], timeout=60.0, sleep=c.sleep, clock=c.clock):
        seen.append(got)
        if len(seen) == 7:
            break
    # poll k+1 answers at (its start + 0.3) = poll k's start + the interval; on the first interval (0.5 s) a
    # 0.3 s poll cannot answer in time, so polls start one interval apart there (not back to back)
    answered = [round(s + 0.3 - prev, 6) for prev, s in zip(c.polls, c.polls[1:], strict=False)]
    assert answered == [POLL_FIRST + 0.3, 2 * POLL_FIRST, 4 * POLL_FIRST, 8 * POLL_FIRST, POLL_MAX, POLL_MAX]
    assert seen[3] == [(("t", 0), (2, 1))] and seen[2] == [(("t", 0), (2,))]  # no settled(): followed on


def test_a_poll_longer_than_the_interval_is_followed_at_once_and_the_timeout_holds() -> None:
    c = Answers(takes=0.8, back={"t": [99]})
    polls = list(c.watch_states([("t", 0)], timeout=2.0, sleep=c.sleep, clock=c.clock))
    assert answers_at(c)[0] == 0.8  # no pause after a 0.8 s poll on a 0.5 s interval
    assert c.now <= 2.0 + 0.8 and len(polls) == len(c.polls)


def test_settled_keys_are_no_longer_polled_and_their_topics_no_longer_asked_for() -> None:
    # a: both back at the 2nd poll; b: partition 0 at the 2nd, partition 1 at the 4th; c: never
    c = Answers(takes=0.01, back={"a": [2, 2], "b": [2, 4], "c": [99]})
    keys = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0)]
    seen = list(c.watch_states(keys, timeout=20.0, settled=lambda isr: 1 in isr, sleep=c.sleep, clock=c.clock))
    assert c.asked[:5] == [["a", "b", "c"], ["a", "b", "c"], ["b", "c"], ["b", "c"], ["c"]]
    assert all(a == ["c"] for a in c.asked[4:]) and c.now >= 20.0
    assert seen[0] == [(k, (2,)) for k in keys]
    assert seen[1] == [(("a", 0), (2, 1)), (("a", 1), (2, 1)), (("b", 0), (2, 1)), (("b", 1), (2,)), (("c", 0), (2,))]
    assert seen[2] == [(("b", 1), (2,)), (("c", 0), (2,))]  # each settled key yielded once, then not followed
    assert seen[3] == [(("b", 1), (2, 1)), (("c", 0), (2,))] and seen[4] == [(("c", 0), (2,))]


def test_the_polls_end_when_every_key_is_settled() -> None:
    c = Answers(takes=0.01, back={"t": [1, 3]})
    seen = list(c.watch_states([("t", 0), ("t", 1)], timeout=None, settled=lambda isr: 1 in isr,
                               sleep=c.sleep, clock=c.clock))
    assert len(c.polls) == 3 and seen[-1] == [(("t", 1), (2, 1))]


def test_the_expected_time_of_the_next_poll_shrinks_with_what_is_left_to_ask() -> None:
    # 10 topics of 1 partition at 0.1 s each (1 s a poll); 9 of them back at the 5th poll (interval 5 s)
    back = {f"t{i}": [5 if i < 9 else 99] for i in range(10)}
    c = Answers(takes=0.1, back=back)
    for i, _ in enumerate(c.watch_states([(t, 0) for t in back], timeout=30.0, settled=lambda isr: 1 in isr,
                                         sleep=c.sleep, clock=c.clock)):
        if i == 6:
            break
    # 1 s polls start 1 s early (4 s interval); after 9 topics settle, the 0.1 s polls start 0.1 s early
    assert answers_at(c)[3:6] == [8 * POLL_FIRST - 1.0, POLL_MAX - 0.1, POLL_MAX - 0.1]
    assert c.asked[5] == ["t9"]
