"""`migration status`'s decision (kadmin/domain/migration.py) over what real Kafka 3.9.1 showed at every phase:
docs/migration-observed.json, recorded by tests/support/migration.py (docs/migration-observed.md). Each record is
turned into the Observation kadmin's reads would make of the same sources, and the answer is checked against the
phase the record was taken in (whose controller log is the referee)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kadmin.domain.migration import MigrationZnode, NodeApis, Observation, QuorumView, Unread, ZkView, decide
from kadmin.domain.models import Controller

RECORDS = json.loads((Path(__file__).parents[2] / "docs" / "migration-observed.json").read_text())


def record(prefix: str) -> dict[str, Any]:
    return next(r for r in RECORDS if r["label"].startswith(prefix))


def observation(r: dict[str, Any], *, zookeeper: bool = True, controllers: bool = True, brokers: bool = True,
                now_ms: int = 0) -> Observation:
    """What kadmin's reads make of record `r` with the given sources (-z, --bootstrap-controller, -b)."""
    z = None
    zn = r.get("znodes")
    if zookeeper and zn is not None:
        c = (zn.get("/controller") or {}).get("data")
        m = zn.get("/migration")
        d = (m or {}).get("data") or {}
        mig = None if m is None else MigrationZnode(d["kraft_controller_id"], d["kraft_controller_epoch"],
                                                    d["kraft_metadata_offset"], d["kraft_metadata_epoch"], 0,
                                                    m["version"])
        ctl = None if c is None else Controller(c["brokerid"], c["version"], None, c.get("kraftControllerEpoch", -1))
        ids = tuple(sorted(int(k.rsplit("/", 1)[1]) for k, v in zn.items() if k.startswith("/brokers/ids/") and v))
        z = ZkView(True, ctl, mig, ids)
    elif zookeeper and "none" in r["label"]:
        z = ZkView(False, None, None, ())
    q = None
    unread: list[Unread] = []
    dq = r.get("describe_quorum")
    if controllers and isinstance(dq, dict) and "leader" in dq:
        q = QuorumView(dq["leader"], dq["epoch"], tuple(dq["voters"]), tuple(dq["observers"]))
    elif controllers and "controllers stopped" in r["label"]:  # given, but none answers
        unread.append(Unread("DescribeQuorum", "unreachable", "--bootstrap-controller"))
    nodes = []
    for key, av in r.items():
        if not key.startswith("api_versions "):
            continue
        role, _, nid = key.split()[1].partition("-")
        if (role == "controller" and not controllers) or (role == "broker" and not brokers):
            continue
        if av.get("error") != 0:
            nodes.append(NodeApis(int(nid), role, "x", error="unreachable"))  # type: ignore[arg-type]
            continue
        nodes.append(NodeApis(int(nid), role, "x", bool(av["zk_migration_ready"]),  # type: ignore[arg-type]
                              av["controlled_shutdown_v"] is not None and role == "broker"))
    given = frozenset(n for n, on in (("zookeeper", zookeeper), ("controllers", controllers), ("brokers", brokers))
                      if on)
    return Observation(given, z, q, tuple(nodes), (), tuple(unread), now_ms)


PHASES = [  # record label prefix -> state, brokers' modes (1, 2, 3), the active controller is KRaft
    ("zk:", "ZK", ("zk", "zk", "zk"), False),
    ("pre-migration: controllers up", "PRE_MIGRATION", ("zk", "zk", "zk"), False),
    ("pre-migration: 1 of 3", "PRE_MIGRATION", ("zk_migrating", "zk", "zk"), False),
    ("pre-migration: 2 of 3", "PRE_MIGRATION", ("zk_migrating", "zk_migrating", "zk"), False),
    ("migration: all brokers migrating", "MIGRATION", ("zk_migrating",) * 3, True),
    ("migration: 1 of 3 brokers kraft", "MIGRATION", ("kraft", "zk_migrating", "zk_migrating"), True),
    ("migration: 2 of 3 brokers kraft", "MIGRATION", ("kraft", "kraft", "zk_migrating"), True),
    ("migration: 3 of 3 brokers kraft", "MIGRATION", ("kraft",) * 3, True),
    ("migration: controller 3002 finalized", "MIGRATION", ("kraft",) * 3, True),
    ("migration: controller 3003 finalized", "MIGRATION", ("kraft",) * 3, True),
    ("post-migration", "POST_MIGRATION", ("kraft",) * 3, True),
    ("rollback: MIGRATION", "MIGRATION", ("zk_migrating",) * 3, True),
    ("rollback: /controller and /migration deleted", "ZK", ("zk_migrating",) * 3, False),
    ("rollback: brokers zk again", "ZK", ("zk", "zk", "zk"), False),
]


@pytest.mark.parametrize(("prefix", "state", "modes", "kraft"), PHASES, ids=[p[0] for p in PHASES])
def test_every_observed_phase(prefix: str, state: str, modes: tuple[str, ...], kraft: bool) -> None:
    s = decide(observation(record(prefix)))
    assert s.state == state, s.sources
    assert tuple(b.mode for b in s.brokers if b.id in (1, 2, 3)) == modes
    assert s.controllers.active_is_kraft is kraft
    assert s.rollback_possible is (state != "POST_MIGRATION")


def test_verdicts_along_the_way() -> None:
    assert decide(observation(record("zk:"))).level == "ok"
    assert decide(observation(record("pre-migration: 1 of 3"))).level == "ok"  # a roll in progress, not stuck
    assert decide(observation(record("migration: 2 of 3 brokers kraft"))).level == "ok"
    assert decide(observation(record("post-migration"))).level == "ok"
    # half-way back: migration enabled on the brokers, no KRaft controller
    s = decide(observation(record("rollback: /controller and /migration deleted")))
    assert s.level == "warning" and s.findings[0].code == "migrating_without_controller"


def test_pre_migration_stuck() -> None:
    r = record("pre-migration: 2 of 3")
    s = decide(observation(r, now_ms=3_600_000), stuck_after_s=1800)
    assert s.level == "warning" and s.findings[0].code == "stuck_waiting_for_brokers" and "3" in s.findings[0].message
    s = decide(observation(r, now_ms=60_000), stuck_after_s=1800)
    assert s.level == "ok"


def test_a_zk_broker_during_migration_is_critical() -> None:
    r = json.loads(json.dumps(record("migration: all brokers migrating")))
    r["api_versions broker-2"]["zk_migration_ready"] = None  # rolled back alone to plain ZooKeeper mode
    s = decide(observation(r))
    assert s.state == "MIGRATION" and s.level == "critical" and s.findings[0].code == "zk_broker_in_migration"


def test_controllers_stopped_during_rollback_is_unknown_not_a_guess() -> None:
    s = decide(observation(record("rollback: controllers stopped")))
    assert s.state is None and s.possible_states == ("MIGRATION", "POST_MIGRATION") and s.level == "unknown"
    assert s.rollback_possible is None and s.unread


def test_none_needs_zookeeper_to_tell_it_from_post_migration() -> None:
    r = record("none:")
    assert decide(observation(r)).state == "NONE"
    s = decide(observation(r, zookeeper=False))
    assert s.state is None and s.possible_states == ("POST_MIGRATION", "NONE") and s.level == "unknown"


def test_zookeeper_alone_tells_zk_and_pre_migration_only() -> None:
    assert decide(observation(record("pre-migration: 1 of 3"), controllers=False)).state == "PRE_MIGRATION"
    s = decide(observation(record("migration: 1 of 3 brokers kraft"), controllers=False))
    assert s.state is None and s.possible_states == ("MIGRATION", "POST_MIGRATION")


def test_a_broker_not_asked_is_unknown() -> None:
    s = decide(observation(record("migration: 1 of 3 brokers kraft"), brokers=False))
    assert s.state == "MIGRATION" and all(b.mode is None for b in s.brokers) and s.level == "unknown"
    assert {b.id for b in s.brokers} == {1, 2, 3}  # the znodes and the quorum's observers name them


def test_next_step_finalizes_the_leader_last() -> None:
    s = decide(observation(record("migration: controller 3002 finalized")))
    assert "roll 3003, 3001" in s.next_step and s.controllers.leader == 3001


# ------------------------------------------------------------------ the phases of `migration roll` (real observations)
FITS = [  # record -> the phase that fits, the nodes it would restart
    ("zk:", None, ()),
    ("pre-migration: controllers up", "brokers-migrating", (1, 2, 3)),
    ("pre-migration: 2 of 3", "brokers-migrating", (3,)),
    ("migration: all brokers migrating", "brokers-kraft", (1, 2, 3)),
    ("migration: 2 of 3 brokers kraft", "brokers-kraft", (3,)),
    ("migration: 3 of 3 brokers kraft", "controllers-finalize", (3001, 3002, 3003)),
    ("migration: controller 3002 finalized", "controllers-finalize", (3001, 3003)),
    ("post-migration", None, ()),
]


@pytest.mark.parametrize(("prefix", "fits", "todo"), FITS, ids=[f[0] for f in FITS])
def test_each_state_has_the_phase_that_fits_it_and_only_its_nodes_left(prefix: str, fits: str | None,
                                                                      todo: tuple[int, ...]) -> None:
    from kadmin.domain.migration import PHASES, fitting_phase, refusal
    from kadmin.domain.migration import todo as left

    s = decide(observation(record(prefix)))
    assert fitting_phase(s) == fits
    for name, phase in PHASES.items():
        why = refusal(phase, s, resumed=False)
        if name == fits:
            assert why is None, why
            assert tuple(sorted(left(phase, s))) == todo
        elif name == "brokers-kraft" and fits == "controllers-finalize":  # done already: asked again, a no-op
            assert why is None and left(phase, s) == ()
        else:
            assert why is not None and (fits is None or f"the phase that fits is {fits}" in why or "first" in why), why


def test_a_resumed_phase_accepts_the_state_it_ends_at_and_says_what_is_left() -> None:
    from kadmin.domain.migration import PHASES, finished, refusal

    migrating = PHASES["brokers-migrating"]
    s = decide(observation(record("migration: all brokers migrating")))  # its last broker started the copy
    assert refusal(migrating, s, resumed=False) is not None and refusal(migrating, s, resumed=True) is None
    assert finished(migrating, s) is None
    finalize = PHASES["controllers-finalize"]
    half = decide(observation(record("migration: controller 3003 finalized")))
    assert finished(finalize, half) == "the cluster is in MIGRATION, not POST_MIGRATION yet"
    assert finished(finalize, decide(observation(record("post-migration")))) is None


def test_finalizing_with_a_broker_not_kraft_or_of_unknown_mode_is_refused() -> None:
    from kadmin.domain.migration import PHASES, refusal

    finalize = PHASES["controllers-finalize"]
    s = decide(observation(record("migration: 2 of 3 brokers kraft")))
    assert "brokers 3 are not KRaft brokers yet" in str(refusal(finalize, s, resumed=True))
    unknown = decide(observation(record("migration: 3 of 3 brokers kraft"), brokers=False))
    assert "unknown" in str(refusal(finalize, unknown, resumed=False))
