"""Ctrl-C: exit 130 without a traceback, and never hide a result the user is owed.

SIGINT is sent at points the test observes (a watch on a znode, an import, a committed multi),
never after a sleep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from kadmin.cluster.zookeeper import ZkCluster
from kadmin.sandbox.fleet import BrokerSpec
from tests.support.ctrl_c import ctrl_c_inside_kazoo
from tests.support.zkwatch import wait_for_new_watcher, watchers

pytestmark = pytest.mark.integration




def test_watch_json_ended_by_ctrl_c_prints_the_events_seen(zk_server, zk, chroot, fleet):
    server = zk_server.servers[0]
    ids = f"{chroot}/brokers/ids"
    fleet.register(BrokerSpec(1))
    before = watchers(server.client_port, f"{ids}/1")
    p = subprocess.Popen([sys.executable, "-m", "kadmin", "brokers", "watch", "-z", zk, "-o", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_new_watcher(server.client_port, f"{ids}/1", before)  # the watch has read the brokers
        fleet.register(BrokerSpec(2))
        wait_for_new_watcher(server.client_port, f"{ids}/2", before)
        # The watch reads broker 3 only after the CLI took broker 2's event: the generator is lazy.
        fleet.register(BrokerSpec(3))
        wait_for_new_watcher(server.client_port, f"{ids}/3", before)
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    doc = json.loads(out)
    assert (doc["command"], doc["status"], doc["exit_code"]) == ("brokers watch", "interrupted", 130)
    assert {"event": "registered", "id": 2} in [{"event": e["event"], "id": e["id"]} for e in doc["data"]]


STARTUP = """
import os, signal, sys

class CtrlCWhileImporting:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlCWhileImporting())
sys.argv = ["kadmin", "--version"]
from kadmin.cli.main import main  # what the `kadmin` console script runs
sys.exit(main())
"""


def test_ctrl_c_during_start_up_exits_130_quietly():
    p = subprocess.run([sys.executable, "-c", STARTUP], capture_output=True, text=True, timeout=60)
    assert p.returncode == 130, p.stderr
    assert p.stderr == "" and p.stdout == ""


def test_ctrl_c_after_the_multi_committed_still_reports_the_claim(run, kz, mocker):
    real = ZkCluster.write_mapping

    def commit_then_ctrl_c(self, *a, **kw):
        real(self, *a, **kw)
        os.kill(os.getpid(), signal.SIGINT)  # delivered to this (the main) thread at once

    mocker.patch.object(ZkCluster, "write_mapping", commit_then_ctrl_c)
    r = run("ids", "claim", "--host", "h1", "--config-id", "7", "-o", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["data"]["broker_id"] == 7 and doc["status"] == "success"
    assert "interrupted after the change was committed" in r.stderr
    assert kz.get("/brokers/hosts/h1")[0]  # it did happen


def test_ctrl_c_before_anything_was_committed_still_interrupts(run, kz, mocker):
    def ctrl_c(self, *a, **kw):
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("not reached: the interrupt comes first")

    mocker.patch.object(ZkCluster, "id_state", ctrl_c)
    before = signal.getsignal(signal.SIGINT)  # Python's, or Spark's where a worker started a SparkContext before
    r = run("ids", "claim", "--host", "h2", "--config-id", "8")
    assert r.exit_code == 130 and "interrupted" in r.stderr
    assert kz.exists("/brokers/hosts/h2") is None
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back


def test_ctrl_c_after_the_controller_accepted_a_shutdown_reports_it(zk_server, chroot, fleet, zk, run, mocker):
    """ControlledShutdown accepted, then Ctrl-C: the move happened, so its result is reported (exit 0)."""
    from kadmin.cluster.kraft import ControllerConnection
    from tests.integration.test_shutdown import Cluster, three_brokers

    kc = Cluster(zk_server, chroot, fleet, zk)
    try:
        three_brokers(kc)
        real = ControllerConnection.controlled_shutdown

        def accepted_then_ctrl_c(self, *a, **kw):
            reply = real(self, *a, **kw)
            os.kill(os.getpid(), signal.SIGINT)
            return reply

        mocker.patch.object(ControllerConnection, "controlled_shutdown", accepted_then_ctrl_c)
        code, doc, err = run.json("brokers", "shutdown", "2")
        assert code == 0, err
        assert doc["data"]["error"] is None and doc["data"]["remaining_partitions"] == []
        assert "interrupted after the change was committed" in err
        assert all(kc.state("orders", p)[0]["leader"] != 2 for p in range(3))  # it did happen
    finally:
        kc.close()


def test_ctrl_c_while_a_refused_shutdown_waits_to_retry_interrupts(zk_server, chroot, fleet, zk, run, mocker):
    """A refused request changed nothing: a Ctrl-C that came with the refusal interrupts (130)."""
    from kadmin.cluster.base import ShutdownReply
    from kadmin.cluster.kraft import ControllerConnection
    from tests.integration.test_shutdown import Cluster, three_brokers

    kc = Cluster(zk_server, chroot, fleet, zk)
    try:
        three_brokers(kc)
        before = {p: kc.state("orders", p) for p in range(3)}

        def refused_then_ctrl_c(self, broker_id, epoch):
            os.kill(os.getpid(), signal.SIGINT)  # deferred: the request counts as sent
            return ShutdownReply(3, 41, [])  # NOT_CONTROLLER

        mocker.patch.object(ControllerConnection, "controlled_shutdown", refused_then_ctrl_c)
        r = run("brokers", "shutdown", "2", "--timeout", "30")
        assert r.exit_code == 130 and "interrupted" in r.stderr
        assert {p: kc.state("orders", p) for p in range(3)} == before
    finally:
        kc.close()


@pytest.mark.parametrize("argv, request_type", [
    (["brokers", "list"], "GetChildren"),
    (["brokers", "watch"], "GetChildren"),
    (["brokers", "watch"], "GetData"),  # the watched read of a registration
    (["brokers", "watch", "-o", "json"], "GetData"),
])
def test_ctrl_c_a_library_swallowed_still_exits_130(run, fleet, mocker, argv, request_type):
    from kazoo.protocol import serialization

    fleet.register(BrokerSpec(1))
    ctrl_c_inside_kazoo(mocker, getattr(serialization, request_type))
    r = run(*argv)
    assert r.exit_code == 130, r.stderr
    assert "interrupted" in r.stderr and "internal error" not in r.stderr and "Traceback" not in r.stderr
    if "json" in argv:
        doc = json.loads(r.stdout)
        assert (doc["status"], doc["exit_code"]) == ("interrupted", 130)
