"""A module that starts a real cluster of its own where the worker's shared one would do fails here.

Every test file is read (not run): a call of one of tests/support/clusters.py's STARTERS, or a `kadmin sandbox up`
run as a command, starts a cluster. Outside the files that start the shared ones, each module that does so needs
an entry in OWN_CLUSTER saying why the shared `zk_server` / `shared_zk_kafka` would not do (the time budget of
the suite is mostly cluster start-ups: bench/README.md).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.support.clusters import OWN_CLUSTER, SHARED, STARTERS

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


def starts(source: str) -> list[str]:
    """Where `source` starts a cluster: `NAME:LINE` for each starter call."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in STARTERS:
            found.append(f"{name}:{node.lineno}")
            continue
        if name and "complete" in name:
            continue  # a shell completing the words `sandbox up` starts nothing
        words = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if any(words[i:i + 2] == ["sandbox", "up"] for i in range(len(words) - 1)):
            found.append(f"sandbox up:{node.lineno}")
    return found


@functools.cache
def starting_modules() -> dict[str, list[str]]:
    out = {}
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        where = starts(path.read_text())
        if where and rel not in SHARED:
            out[rel] = where
    return out


def test_every_module_starting_a_cluster_says_why_a_shared_one_would_not_do() -> None:
    unexplained = {m: w for m, w in starting_modules().items() if not OWN_CLUSTER.get(m, "").strip()}
    assert not unexplained, (
        "these modules start a cluster of their own: use the worker's shared one (zk_server in tests/conftest.py, "
        "zk_kafka in tests/kafka/conftest.py) or say in tests/support/clusters.py OWN_CLUSTER why it cannot: "
        + "; ".join(f"{m} ({', '.join(w)})" for m, w in unexplained.items()))


def test_no_reason_is_left_for_a_module_that_no_longer_starts_one() -> None:
    stale = sorted(set(OWN_CLUSTER) - set(starting_modules()))
    assert not stale, f"OWN_CLUSTER names modules that start no cluster of their own: {stale}"


@pytest.mark.parametrize("source", [
    "with sandbox(tmp / 'sb', '--mode', 'kraft') as sb:\n    pass\n",
    "from tests.support import kafka\nc = kafka.zk_mode_cluster(zk, base)\n",
    "q.run('sandbox', 'up', '--kafka-home', home)\n",
    "s = started(ZkServer(d, port))\n",
    "with secure_kraft(home, version, base) as k:\n    pass\n",
])
def test_the_reader_sees_each_way_of_starting_one(source: str) -> None:
    assert starts(source)


def test_the_reader_does_not_see_one_in_a_fixture_that_only_uses_a_shared_cluster() -> None:
    assert starts("def kafka(zk_kafka):\n    return zk_kafka\n") == []
    assert starts("r = sb.run('sandbox', 'status')\n") == []
    assert starts("bash_complete(tmp, 'kadmin', 'sandbox', 'up', '--mode', '')\n") == []
