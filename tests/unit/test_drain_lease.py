"""One leadership move at a time per cluster (issue 34 §4): `brokers drain` and `undrain` take the cluster's lease
before their first reading and give it back when they end, so two kadmins never interleave their reorderings.

The cluster is the in-memory LeadershipMoves of test_undrain_truth (the seam the drain services see) with a lease
two "kadmins" share: the services' waiting, refusing, stale and resumed-roll rules run for real. The backends'
own leases (an ephemeral znode, a topic) are proven on real ZooKeeper and Kafka (tests/integration/test_drain_lease.py,
tests/kafka/test_real_drain.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kadmin.domain.lease import Holder, LeaseTry, holder_from_znode, token_of
from kadmin.errors import Unsafe
from kadmin.exit_codes import ExitCode
from kadmin.services import drain as dsvc
from tests.unit.test_undrain_truth import Identity, Moves

ORIGINAL = {("t", 0): (1, 2, 3), ("t", 1): (2, 1, 3), ("t", 2): (3, 2, 1)}


def later(seconds: float) -> int:
    return int((time.time() + seconds) * 1000)


def test_a_drain_waits_for_another_kadmins_lease_then_plans_from_what_it_left(tmp_path: Path) -> None:
    """Drain 2 holds the lease; drain 1 waits, and once drain 2 has reordered and given it back, reads afresh:
    both brokers end last everywhere (before the lease, drain 1 could reorder from an older reading and put
    broker 2 first again after drain 2 had verified)."""
    lease: dict[str, Holder] = {}
    m = Moves(dict(ORIGINAL), lease)
    other = Moves({}, lease)
    assert other.try_lease(Holder(7, later(60), "drain 2"), later(0)).state == "taken"
    waits: list[float] = []

    def sleep(s: float) -> None:  # drain 2 does its work while drain 1 waits, then gives the lease back
        waits.append(s)
        if len(waits) == 2:
            m.replicas.update({k: (*[b for b in r if b != 2], 2) for k, r in m.replicas.items()})
            other.release_lease()

    r = dsvc.drain(m, Identity(), 1, save=tmp_path / "d1.json", dry_run=False, force=False, timeout=5, sleep=sleep)
    assert int(r.exit_code) == 0, r.message
    assert len(waits) == 2 and m.reads and "holder" not in lease  # waited, then gave its own lease back
    assert all(r[-2:] in ((2, 1), (1, 2)) for r in m.replicas.values()), m.replicas
    assert all(leader not in (1, 2) for leader in m.leaders.values()), m.leaders


def test_a_lease_held_past_the_deadline_refuses_with_nothing_sent_and_no_file(tmp_path: Path) -> None:
    lease: dict[str, Holder] = {}
    m = Moves(dict(ORIGINAL), lease)
    Moves({}, lease).try_lease(Holder(7, later(600), "host h, pid 9"), later(0))
    clock = [0.0]

    def sleep(s: float) -> None:
        clock[0] += s

    with pytest.raises(Unsafe) as e:
        dsvc.drain(m, Identity(), 1, save=tmp_path / "d1.json", dry_run=False, force=False, timeout=3,
                   sleep=sleep, clock=lambda: clock[0])
    assert e.value.exit_code == ExitCode.UNSAFE
    assert "another kadmin is moving leadership" in e.value.message and "host h, pid 9" in e.value.message
    assert m.reads == 0 and not m.submitted and not (tmp_path / "d1.json").exists()
    assert clock[0] >= 2.7  # it waited for the deadline, not one try
    assert lease["holder"].token == 7  # the other's lease is untouched


def test_a_stale_lease_is_taken_and_a_resumed_rolls_own_is_its_own(tmp_path: Path) -> None:
    lease: dict[str, Holder] = {}
    m = Moves(dict(ORIGINAL), lease)
    lease["holder"] = Holder(7, later(-1), "a killed kadmin")  # past its expiry
    r = dsvc.drain(m, Identity(), 1, save=tmp_path / "d1.json", dry_run=False, force=False, timeout=5,
                   sleep=lambda s: pytest.fail("waited for a stale lease"))
    assert int(r.exit_code) == 0 and "holder" not in lease, r.message
    token = token_of(str(tmp_path))
    lease["holder"] = Holder(token, later(600), "the same roll, killed")
    r = dsvc.undrain_together(m, Identity(), {1: tmp_path / "d1.json"}, timeout=5, token=token,
                              sleep=lambda s: pytest.fail("waited for its own lease"))
    assert int(r.exit_code) == 0 and "holder" not in lease, r.message


def test_a_lease_kadmin_may_not_take_is_said_and_the_drain_goes_on(tmp_path: Path) -> None:
    class Denied(Moves):
        def try_lease(self, holder: Holder, now_ms: int) -> LeaseTry:
            return LeaseTry("denied", "CreateTopics: TOPIC_AUTHORIZATION_FAILED")

    m = Denied(dict(ORIGINAL))
    r = dsvc.drain(m, Identity(), 1, save=tmp_path / "d1.json", dry_run=False, force=False, timeout=5,
                   sleep=lambda s: None)
    assert int(r.exit_code) == 0, r.message
    assert any(w.startswith("no lease (CreateTopics: TOPIC_AUTHORIZATION_FAILED)") for w in r.warnings), r.warnings


def test_the_lease_is_given_back_however_the_move_ends_and_a_dry_run_takes_none(tmp_path: Path) -> None:
    lease: dict[str, Holder] = {}

    class Failing(Moves):
        def reassign(self, plan: object) -> dict:  # type: ignore[override]
            assert "holder" in lease  # held while it moves
            raise Unsafe("the controller refused")

    m = Failing(dict(ORIGINAL), lease)
    with pytest.raises(Unsafe):
        dsvc.drain(m, Identity(), 1, save=tmp_path / "d1.json", dry_run=False, force=False, timeout=5,
                   sleep=lambda s: None)
    assert "holder" not in lease
    lease["holder"] = Holder(7, later(600), "another")
    r = dsvc.drain(Moves(dict(ORIGINAL), lease), Identity(), 1, save=None, dry_run=True, force=False, timeout=5,
                   sleep=lambda s: pytest.fail("a dry run waited for the lease"))
    assert int(r.exit_code) == 0 and lease["holder"].token == 7, r.message


@pytest.mark.parametrize("data", [b"", b"{}", b'{"token": "1", "expires_ms": 1}', b'{"token": true, "expires_ms": 1}',
                                  b"\xff", b"[]"])
def test_a_lease_znode_kadmin_did_not_write_is_no_holder(data: bytes) -> None:
    assert holder_from_znode(data) is None  # taken as held by someone, never as free


def test_a_holders_znode_reads_back() -> None:
    h = Holder(123, 456, "host h, pid 1")
    assert holder_from_znode(h.znode()) == h


def test_a_cluster_that_stopped_answering_is_not_asked_to_take_the_lease_back(tmp_path: Path) -> None:
    """Giving the lease back to a cluster that just did not answer would wait another --connect-timeout past the
    deadline: the error goes out at once (ZooKeeper's lease goes with the session, the topic expires)."""
    from kadmin.errors import ClusterUnreachable

    lease: dict[str, Holder] = {}

    class Silent(Moves):
        def reassign(self, plan: object) -> dict:  # type: ignore[override]
            raise ClusterUnreachable("ZooKeeper did not answer within 2 s")

        def release_lease(self) -> str | None:
            pytest.fail("asked a silent cluster to take the lease back")

    with pytest.raises(ClusterUnreachable):
        dsvc.drain(Silent(dict(ORIGINAL), lease), Identity(), 1, save=tmp_path / "d1.json", dry_run=False,
                   force=False, timeout=5, sleep=lambda s: None)
