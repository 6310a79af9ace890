"""`kadmin history ingest --master spark://...` on a real Spark standalone cluster on loopback.

A master and one worker are started from pip's pyspark with `bin/spark-class` (the wheel has no
start-master.sh); the ingest runs in a real `python -m kadmin` subprocess, so no SparkSession of
this pytest process is reused and kadmin creates its own against the standalone master.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble, pid_alive, stop_pid
from tests.support import spark_jvm

pytestmark = pytest.mark.integration

APP = "kadmin-history"  # kadmin.pipeline.spark.session's default app name


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _spark_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SPARK_HOME=str(_spark_home()), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(tmp / "logs"), SPARK_LOCAL_DIRS=str(tmp / "local"),
               # the master and the worker JVMs as the drivers run (C1-only, Spark's class-data archive), small GC
               SPARK_DAEMON_JAVA_OPTS=f"{spark_jvm.ENV['SPARK_SUBMIT_OPTS']} -XX:+UseSerialGC")
    (tmp / "logs").mkdir(parents=True, exist_ok=True)
    (tmp / "local").mkdir(parents=True, exist_ok=True)
    return env


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d.name))
    return kids


def _descendants(pid: int) -> list[int]:
    kids, out, todo = _children(), [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _master_json(webui: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=2) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def _wait(what: str, cond: Any, timeout: float, procs: list[subprocess.Popen[bytes]], logs: Path) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        for p in procs:
            if p.poll() is not None:
                tails = {f.name: f.read_text(errors="replace")[-1500:] for f in logs.glob("*.out")}
                pytest.fail(f"{what}: a Spark daemon exited with {p.returncode}; logs: {tails}")
        time.sleep(0.2)
    pytest.fail(f"{what} within {timeout:.0f}s")


@dataclass
class Standalone:
    url: str
    webui: int
    work_dir: Path


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    """A Spark master and one worker (1 core, 1 GiB) on 127.0.0.1; both stopped by pid at the end,
    with any executor JVM the worker still has."""
    base = tmp_path / "spark"
    env = _spark_env(base)
    work = base / "work"
    work.mkdir()
    spark_class = str(_spark_home() / "bin" / "spark-class")
    port, webui, worker_webui = free_port(), free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def launch(name: str, *args: str) -> subprocess.Popen[bytes]:
        with open(base / "logs" / f"{name}.out", "wb") as out:
            p = subprocess.Popen([spark_class, *args], env=env, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(p)
        return p

    try:
        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(webui))
        _wait("the Spark master did not become ALIVE",
              lambda: (_master_json(webui) or {}).get("status") == "ALIVE", 45, procs, base / "logs")
        url = f"spark://127.0.0.1:{port}"
        launch("worker", "org.apache.spark.deploy.worker.Worker", url, "--cores", "1", "--memory", "1g",
               "--host", "127.0.0.1", "--webui-port", str(worker_webui), "--work-dir", str(work))
        _wait("the Spark worker did not register",
              lambda: (_master_json(webui) or {}).get("aliveworkers") == 1, 45, procs, base / "logs")
        yield Standalone(url, webui, work)
    finally:
        # The worker first (its executors with it), then the master; then anything left under them.
        left: list[int] = []
        for p in reversed(procs):
            left += _descendants(p.pid)
            stop_pid(p.pid, signal.SIGTERM, wait=10)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        for pid in left:
            if pid_alive(pid):
                stop_pid(pid, signal.SIGTERM, wait=5)


def _zk_log(base: Path) -> tuple[Path, dict[int, list[int]]]:
    """A real ZooKeeper's txn log: three brokers register, broker 2 bounces; and the czxids a live read saw."""
    ens = Ensemble(base, size=1, tick_ms=250)
    ens.start(timeout=60)
    live: dict[int, list[int]] = {}
    fleet = ThreadedFleet(ens.hosts, chroot="/kafka", session_timeout_ms=4000)
    kz = KazooClient(hosts=ens.connect_string + "/kafka")
    try:
        fleet.setup_cluster()  # creates the /kafka chroot first
        kz.start(timeout=10)
        for b in (1, 2, 3):
            fleet.register(BrokerSpec(b))
            live.setdefault(b, []).append(kz.get(f"/brokers/ids/{b}")[1].czxid)
        fleet.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1]})
        fleet.bounce(2, down_seconds=0.2)
        live[2].append(kz.get("/brokers/ids/2")[1].czxid)
    finally:
        kz.stop()
        kz.close()
        fleet.shutdown()
        ens.stop()
    logs = base / "zk1" / "data" / "version-2"
    assert list(logs.glob("log.*"))
    return logs, live


def _kadmin(*args: str, timeout: float) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))} | spark_jvm.ENV
    p = subprocess.run([sys.executable, "-m", "kadmin", *args, "-o", "json"], capture_output=True, text=True,
                       timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    return p.returncode, doc, p.stderr


def test_ingest_runs_on_a_standalone_master(standalone: Standalone, tmp_path: Path) -> None:
    logs, live = _zk_log(tmp_path / "zk")
    out = tmp_path / "events"

    code, doc, err = _kadmin("history", "ingest", str(logs), "--cluster", "sa", "--out", str(out),
                             "--master", standalone.url, timeout=480)
    assert code == 0, err
    assert doc["data"]["events_added"] > 0 and doc["data"]["damage"] == []

    # The application ran on the standalone cluster: the master lists it as completed (kadmin stopped
    # the session it created) and the worker ran an executor for it.
    apps = (_master_json(standalone.webui) or {}).get("completedapps", [])
    assert [a["name"] for a in apps] == [APP], apps
    assert apps[0]["state"] == "FINISHED"
    assert [d.name for d in standalone.work_dir.iterdir()] == [apps[0]["id"]]

    code, doc, err = _kadmin("history", "report", str(out), "generations", timeout=480)
    assert code == 0, err
    epochs: dict[int, list[int]] = {}
    for g in doc["data"]:
        epochs.setdefault(g["broker_id"], []).append(g["epoch"])
    assert epochs == live  # KIP-380: the epoch derived from the log is the czxid a live read returned
