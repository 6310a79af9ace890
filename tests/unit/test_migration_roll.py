"""`migration roll`'s entry gate, node choice and exit gate (kadmin/services/migration_roll.py) on what real Kafka
3.9.1 showed at each phase (docs/migration-observed.json, read as tests/unit/test_migration.py reads it); the roll
in between is roll run's engine (tested on its own), here a recorder of what it was asked."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kadmin.domain import roll as dom
from kadmin.errors import UsageError
from kadmin.payloads_ops import RollReport
from kadmin.results import Result
from kadmin.services import migration_roll as svc
from kadmin.services.roll_engine import Options
from kadmin.services.roll_hooks import Hooks
from tests.unit.test_migration import observation, record


@dataclass
class Source:
    """What the migration's sources show, one recorded observation per look (the last one repeats)."""

    labels: list[str]
    looks: int = 0

    def observe(self) -> Any:
        label = self.labels[min(self.looks, len(self.labels) - 1)]
        self.looks += 1
        return observation(record(label))


@dataclass
class FakeBackend:
    migration: Source

    def close(self) -> None:
        pass


@dataclass
class Recorder:
    asked: list[Options] = field(default_factory=list)

    def __call__(self, cluster: Any, directory: Path, opts: Options, *a: Any, **kw: Any) -> Result[RollReport]:
        self.asked.append(opts)
        return Result(data=RollReport(str(directory), None, None, "done", (), None, None, None, None))


def run(tmp_path: Path, phase: str, labels: list[str], nodes: tuple[int, ...] | None = None,
        only_if: str | None = None) -> tuple[Result[RollReport], Recorder, list[str]]:
    source = Source(labels)
    said: list[str] = []
    rec = Recorder()
    opts = Options(dom.Request(nodes, "skip", 1), Hooks("true", "true", None, only_if), step_timeout=5.0)
    res = svc.run(phase, lambda: FakeBackend(source), lambda: FakeBackend(source),  # type: ignore[arg-type,return-value]
                  tmp_path / "state", opts, lambda e: None, said.append, roll=rec)
    return res, rec, said


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("time.sleep", lambda s: None)  # the exit gate's pause between looks
    yield


def test_the_wrong_state_is_refused_with_nothing_written(tmp_path: Path) -> None:
    res, rec, _ = run(tmp_path, "brokers-kraft", ["pre-migration: controllers up"])
    assert int(res.exit_code) == 7 and rec.asked == []
    assert "begins in MIGRATION, and the cluster is in PRE_MIGRATION; the phase that fits is brokers-migrating" in \
        str(res.message)
    assert not (tmp_path / "state").exists()


def test_an_unreadable_state_is_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Source, "observe", lambda self: observation(record("migration: all brokers migrating"),
                                                                    zookeeper=False, controllers=False))
    res, rec, _ = run(tmp_path, "brokers-kraft", ["unused"])
    assert int(res.exit_code) == 4 and rec.asked == [] and "could not be read" in str(res.message)


def test_only_the_nodes_not_yet_in_the_mode_are_rolled_and_the_end_state_is_awaited(tmp_path: Path) -> None:
    res, rec, said = run(tmp_path, "brokers-migrating", ["pre-migration: 2 of 3", "pre-migration: 2 of 3",
                                                         "migration: all brokers migrating"])
    assert [o.request.nodes for o in rec.asked] == [(3,)]
    assert int(res.exit_code) == 0 and "the cluster is in MIGRATION" in str(res.message)
    assert any("waiting for MIGRATION" in s for s in said)


def test_the_end_state_not_reached_is_exit_1(tmp_path: Path) -> None:
    res, rec, _ = run(tmp_path, "brokers-migrating", ["pre-migration: 2 of 3"])
    assert int(res.exit_code) == 1 and "not MIGRATION yet" in str(res.message)


def test_nodes_asks_for_part_of_a_phase_and_its_end_state_is_not_awaited(tmp_path: Path) -> None:
    res, rec, _ = run(tmp_path, "brokers-migrating", ["pre-migration: controllers up"], nodes=(2,))
    assert [o.request.nodes for o in rec.asked] == [(2,)]
    assert int(res.exit_code) == 0 and "brokers 1, 2, 3 are not zk_migrating yet" in str(res.message)
    with pytest.raises(UsageError, match="--nodes: 9: no broker of the cluster"):
        run(tmp_path / "other", "brokers-migrating", ["pre-migration: controllers up"], nodes=(2, 9))


def test_controllers_finalize_says_the_point_of_no_return_first(tmp_path: Path) -> None:
    res, rec, said = run(tmp_path, "controllers-finalize", ["migration: 3 of 3 brokers kraft",
                                                             "migration: 3 of 3 brokers kraft", "post-migration"])
    assert [o.request.nodes for o in rec.asked] == [(3001, 3002, 3003)]
    assert [o.request.controllers for o in rec.asked] == ["first"]
    assert any("point of no return" in s for s in said) and int(res.exit_code) == 0
