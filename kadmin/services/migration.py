"""`kadmin migration status`: where a ZooKeeper -> KRaft migration stands, as a check verb (0/1/2/3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kadmin.domain.migration import STUCK_AFTER_S, Status, decide
from kadmin.exit_codes import Verdict
from kadmin.payloads.migration import (
    MigrationBroker,
    MigrationControllerNode,
    MigrationControllers,
    MigrationFinding,
    MigrationStatus,
    MigrationUnread,
)
from kadmin.results import Problem, Result

if TYPE_CHECKING:
    from kadmin.cluster.base import MigrationSource

VERDICTS = {"ok": Verdict.OK, "warning": Verdict.WARNING, "critical": Verdict.CRITICAL, "unknown": Verdict.UNKNOWN}


def payload(s: Status) -> MigrationStatus:
    c = s.controllers
    return MigrationStatus(
        status=s.level, state=s.state, possible_states=s.possible_states,
        brokers=tuple(MigrationBroker(b.id, b.mode, b.source) for b in s.brokers),
        controllers=MigrationControllers(c.voters, c.observers, c.leader, c.epoch, c.zookeeper_controller, c.active,
                                         c.active_is_kraft, tuple(MigrationControllerNode(n.id, n.address,
                                                                                          n.migration_enabled, n.error)
                                                                  for n in c.nodes)),
        rollback_possible=s.rollback_possible, next_step=s.next_step, rollback=s.rollback, sources=dict(s.sources),
        findings=tuple(MigrationFinding(f.level.upper(), f.code, f.message) for f in s.findings),
        unread=tuple(MigrationUnread(u.what, u.why, u.needs) for u in s.unread))


def status(source: MigrationSource, stuck_after_s: float = STUCK_AFTER_S) -> Result[MigrationStatus]:
    s = decide(source.observe(), stuck_after_s)
    data = payload(s)
    problems = [Problem("unread", f"{u.what}: {u.why} (needs {u.needs})") for u in s.unread]
    state = s.state or " or ".join(s.possible_states)
    words = "; ".join(f.message for f in s.findings) or f"next: {s.next_step}"
    return Result(data=data, errors=problems, exit_code=VERDICTS[s.level],
                  message=f"{s.level.upper()}: {state}: {words}")
