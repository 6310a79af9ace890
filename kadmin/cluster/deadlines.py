"""How long one wait for an answer may last (docs/connecting.md, Deadlines): the rule ZooKeeper's session
(kadmin/cluster/zookeeper/session.py) and the Kafka client (kadmin/cluster/kraft.py) both keep.

A wait lasts at most --connect-timeout and never past the command's deadline (its --timeout; without one,
OVERALL × --connect-timeout from when it started). Once that has passed, a request gets LAST_LOOK (the last look a
verdict needs); LAST_LOOKS after it, nothing more is asked: OutOfTime. So a server that answers every request just
under --connect-timeout cannot make a command run for minutes."""

from __future__ import annotations

from kadmin.errors import OutOfTime

OVERALL = 3  # × --connect-timeout: the deadline of a command without a --timeout of its own
LAST_LOOK = 0.5  # s: one request's wait once the deadline has passed
LAST_LOOKS = 1.0  # s past the deadline: the last look's requests are sent until then, none after


WHICH = f"its --timeout, or {OVERALL} × --connect-timeout for a command without one: a slow cluster needs more"


def wait_bound(timeout: float, deadline: float | None, now: float) -> float:
    """How long one wait for an answer may last at `now` (seconds on the deadline's clock): `timeout`
    (--connect-timeout), never past `deadline` (None: the command has none); LAST_LOOK for a while after it."""
    if deadline is None:
        return timeout
    if now <= deadline:
        return min(timeout, max(deadline - now, LAST_LOOK))
    if now < deadline + LAST_LOOKS:
        return min(timeout, LAST_LOOK)
    raise out_of_time(deadline, now)


def out_of_time(deadline: float, now: float) -> OutOfTime:
    """The one line for a request not sent because the command's deadline passed."""
    return OutOfTime(f"out of time: the command's deadline passed {round(now - deadline, 1):g} s ago and nothing "
                     f"more is asked ({WHICH})")


def after_deadline(deadline: float | None, now: float) -> str:
    """What to add to "did not answer within N s" when the wait was cut short by the command's deadline (the
    server may only be slow): "" when it was not."""
    return "" if deadline is None or now < deadline else f"; the command's deadline passed ({WHICH})"
