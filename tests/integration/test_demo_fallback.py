"""`make demo` without real Kafka: scripts/demo.sh with no KAFKA_HOME, as the Makefile's fallback runs it, on the
sandbox's real ZooKeeper and emulated brokers. The roll's drains (reorderings through /admin/reassign_partitions,
preferred-leader elections through /admin/preferred_replica_election) need the emulated controller to carry them out:
without it the first drain waits until its step timeout and the demo fails."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sandbox import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


def kadmin_on_path(bin_dir: Path) -> str:
    """A `kadmin` command (what the venv's console script is to `make demo`): this interpreter, this checkout."""
    bin_dir.mkdir()
    exe = bin_dir / "kadmin"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kadmin "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(bin_dir)


def test_demo_fallback_rolls_every_emulated_broker_once(tmp_path: Path) -> None:
    sandbox_dir = tmp_path / "sb"
    env = {**os.environ, "KADMIN_SANDBOX_DIR": str(sandbox_dir),
           "PATH": os.pathsep.join([kadmin_on_path(tmp_path / "bin"), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    for var in ("KADMIN_ZOOKEEPER", "KADMIN_BOOTSTRAP_SERVER", "KADMIN_BOOTSTRAP_CONTROLLER", "KADMIN_CONTEXT"):
        env.pop(var, None)
    try:
        demo = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh")], capture_output=True, text=True, env=env,
                              timeout=800, stdin=subprocess.DEVNULL, cwd=tmp_path)
    finally:  # the script's own trap stops the sandbox; this is for a script killed by the timeout
        subprocess.run([sys.executable, "-m", "kadmin", "sandbox", "down"], capture_output=True, env=env, timeout=120)
    assert demo.returncode == 0, demo.stderr[-4000:]
    assert "kadmin: rolled 5 node(s)" in demo.stderr
    assert demo.stderr.rstrip().endswith("demo finished")

    # the journal the roll kept: every broker stopped and started once, each with a new epoch
    status = subprocess.run([sys.executable, "-m", "kadmin", "roll", "status", "--state", str(sandbox_dir / "roll"),
                             "-o", "json"], capture_output=True, text=True, env=env, timeout=120)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)["data"]
    assert data["status"] == "done"
    nodes = data["nodes"]
    assert sorted(n["node"] for n in nodes) == [1, 2, 3, 4, 5]
    for n in nodes:
        assert n["status"] == "done", n
        assert n["new_epoch"] is not None and n["new_epoch"] > n["old_epoch"], n
    journal = [json.loads(line) for line in (sandbox_dir / "roll" / "journal.ndjson").read_text().splitlines()]
    hooks = [(e.get("node"), e.get("step")) for e in journal if e.get("step") in ("stop", "start")
             and e.get("status") == "done"]
    assert sorted(hooks) == sorted((b, s) for b in range(1, 6) for s in ("stop", "start")), hooks
