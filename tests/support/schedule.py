"""The suite's order for pytest-xdist (`make test` runs `-n N --dist loadscope --no-loadscope-reorder`).

loadscope hands each idle worker the next scope (a module, or a class of one) in collection order, and keeps a
scope on one worker, so that a module's real cluster starts once. The run ends when the last worker finishes its
last scope: the longest scopes must go first (longest-processing-time-first), or a real-Kafka module started at
the end leaves the other workers idle for minutes.

So the items are ordered by their scope's measured seconds, longest first, from tests/scope_seconds.json; a scope
not in it is estimated from its directory. `KADMIN_TEST_TIMES=FILE` writes this run's measured seconds per scope
to FILE (from the controller, with every worker's reports): `make test-times` refreshes tests/scope_seconds.json
so, and bench/README.md's per-directory budget is read from that file.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

TIMES = Path(__file__).resolve().parent.parent / "scope_seconds.json"

# Seconds per scope when a scope was never measured (a new module): a real cluster's start is most of it.
DEFAULT_SECONDS = {"tests/kafka": 90.0, "tests/pipeline": 30.0, "tests/integration": 5.0, "tests/cli": 3.0,
                   "tests/unit": 1.0}


def scope_of(nodeid: str) -> str:
    """The scope xdist's loadscope puts a test in (its module, or its class)."""
    return nodeid.rsplit("::", 1)[0]


def directory_of(scope: str) -> str:
    return "/".join(scope.split("::", 1)[0].split("/")[:2])


def load_times(path: Path = TIMES) -> dict[str, float]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.get("scopes", {}).items()}


def estimate(scope: str, times: dict[str, float]) -> float:
    if scope in times:
        return times[scope]
    return DEFAULT_SECONDS.get(directory_of(scope), 5.0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    times = load_times()
    # stable: the tests of one scope keep pytest's order (parametrized module fixtures grouped)
    items.sort(key=lambda item: -estimate(scope_of(item.nodeid), times))


class _Recorder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[scope_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # a worker: the controller writes the whole run's
        scopes = {k: round(v, 1) for k, v in sorted(self.seconds.items())}
        dirs: dict[str, float] = defaultdict(float)
        for k, v in scopes.items():
            dirs[directory_of(k)] += v
        self.path.write_text(json.dumps({"directories": {k: round(v, 1) for k, v in sorted(dirs.items())},
                                         "scopes": scopes}, indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    out = os.environ.get("KADMIN_TEST_TIMES")
    if out and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(Path(out)), "kadmin-test-times")
