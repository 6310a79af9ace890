"""`brokers watch` and `brokers wait`, driven by real ZooKeeper watches; bounces never missed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from kazoo.client import KazooClient

from kadmin.cluster.zookeeper import ZkCluster, ZkConnection
from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.services import brokers as svc

pytestmark = pytest.mark.integration


def cluster_for(zk: str, timeout: float = 10.0) -> ZkCluster:
    hosts, _, chroot = zk.partition("/")
    return ZkCluster(ZkConnection(hosts=hosts, chroot="/" + chroot if chroot else "")).start()


class Watcher:
    """Runs the watch service in a thread and collects its events."""

    def __init__(self, cluster: ZkCluster, **kw) -> None:
        self.events: list[dict] = []
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self.cluster = cluster

        orig = cluster.watch_brokers

        def instrumented(timeout):
            for i, tick in enumerate(orig(timeout)):
                yield tick
                if i == 0:
                    self.ready.set()

        cluster.watch_brokers = instrumented  # type: ignore[method-assign]

        def body() -> None:
            try:
                for ev in svc.watch(cluster, **kw):
                    self.events.append(ev)
            except BaseException as e:  # noqa: BLE001
                self.error = e

        self.thread = threading.Thread(target=body, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def wait_for(self, pred, timeout=15.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.events):
                return self.events
            time.sleep(0.02)
        raise AssertionError(f"condition not met; events: {self.events}")


def test_watch_reports_register_bounce_update_deregister(fleet, zk):
    fleet.register(BrokerSpec(1))
    c = cluster_for(zk)
    try:
        w = Watcher(c, count=5, timeout=30)
        e2 = fleet.register(BrokerSpec(2))
        w.wait_for(lambda evs: len(evs) == 1)
        old1, new1 = fleet.bounce(1)
        w.wait_for(lambda evs: any(e["event"] == "bounced" for e in evs))
        fleet.update(2)
        w.wait_for(lambda evs: any(e["event"] == "updated" for e in evs))
        fleet.stop(2)
        w.thread.join(20)
        assert not w.thread.is_alive()  # --count ends the stream
        kinds = [(e["event"], e["id"]) for e in w.events]
        assert kinds[0] == ("registered", 2) and w.events[0]["epoch"] == e2
        b = [e for e in w.events if e["event"] == "bounced"]
        assert b and b[0]["id"] == 1 and b[0]["old_epoch"] == old1 and b[0]["epoch"] == new1
        assert ("updated", 2) in kinds and kinds[-1] == ("deregistered", 2)
        assert all(set(e) == {"event", "id", "epoch", "old_epoch", "at"} for e in w.events)
        assert w.error is None
    finally:
        c.close()


def test_watch_resyncs_after_session_expiry_and_reports_the_bounce(fleet, zk, zk_server):
    fleet.register(BrokerSpec(1))
    fleet.register(BrokerSpec(2))
    c = cluster_for(zk)
    try:
        w = Watcher(c, timeout=30)
        # Expire kadmin's session the way kazoo's own test harness does: close it from a second
        # client holding the same session id and password.
        sid, pwd = c.zk.client_id
        other = KazooClient(hosts=zk_server.connect_string, client_id=(sid, pwd))
        other.start(timeout=10)
        old, new = fleet.bounce(2)  # happens while kadmin's session is gone
        other.stop()
        other.close()
        w.wait_for(lambda evs: any(e["event"] == "bounced" and e["id"] == 2 for e in evs))
        bounced = [e for e in w.events if e["event"] == "bounced"][0]
        assert (bounced["old_epoch"], bounced["epoch"]) == (old, new)
        fleet.register(BrokerSpec(3))  # and watches work again on the new session
        w.wait_for(lambda evs: any(e["event"] == "registered" and e["id"] == 3 for e in evs))
    finally:
        c.close()


def test_watch_count_not_reached_exits_1(run, fleet):
    fleet.register(BrokerSpec(1))
    r = run("brokers", "watch", "--count", "1", "--timeout", "0.5", "-o", "ndjson")
    assert r.exit_code == 1 and r.stdout == "" and "saw 0 of 1 events" in r.stderr


def test_watch_initial_lists_live_brokers_as_ndjson(run, fleet):
    e = fleet.register(BrokerSpec(5))
    r = run("brokers", "watch", "--initial", "--count", "1", "--timeout", "5", "-o", "ndjson")
    assert r.exit_code == 0
    ev = json.loads(r.stdout.splitlines()[0])
    assert (ev["event"], ev["id"], ev["epoch"], ev["old_epoch"]) == ("registered", 5, e, None)


def test_wait_registered_gone_and_epoch_gt(run, fleet):
    e1 = fleet.register(BrokerSpec(1))
    assert run("brokers", "wait", "1", "--registered", "--timeout", "5").exit_code == 0
    timer = threading.Timer(0.3, lambda: fleet.bounce(1))
    timer.start()
    code, doc, err = run.json("brokers", "wait", "1", "--epoch-gt", str(e1), "--timeout", "10")
    timer.join()
    assert code == 0 and doc["data"]["met"] is True and doc["data"]["epoch"] > e1
    threading.Timer(0.3, lambda: fleet.stop(1)).start()
    assert run("brokers", "wait", "1", "--gone", "--timeout", "10").exit_code == 0


def test_wait_times_out_saying_what_is_missing(run, fleet):
    e = fleet.register(BrokerSpec(2))
    r = run("brokers", "wait", "2", "--epoch-gt", str(e), "--timeout", "0.5")
    assert r.exit_code == 1
    assert f"broker 2 is registered with epoch {e}, not greater than {e}" in r.stderr
    r = run("brokers", "wait", "9", "--registered", "--timeout", "0.3")
    assert r.exit_code == 1 and "broker 9 is not registered" in r.stderr


def test_wait_needs_exactly_one_condition(run, fleet):
    r = run("brokers", "wait", "1", "--registered", "--gone")
    assert r.exit_code == 2 and "exactly one of" in r.stderr


def test_wait_returns_promptly_after_reregistration(fleet, zk):
    """A real process, as a rolling-bounce script runs it."""
    e = fleet.register(BrokerSpec(4))
    p = subprocess.Popen([sys.executable, "-m", "kadmin", "brokers", "wait", "4", "--epoch-gt", str(e),
                          "--timeout", "20", "-z", zk, "-o", "json"], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)  # let it start and set its watches
    assert p.poll() is None
    fleet.bounce(4)
    t0 = time.monotonic()
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 0 and json.loads(out)["data"]["met"]
    assert time.monotonic() - t0 < 2.0


@pytest.mark.slow
def test_watch_survives_the_death_of_its_ensemble_member_during_a_bounce(ensemble, chroot):
    conn_hosts = ensemble.connect_string
    c = ZkCluster(ZkConnection(hosts=conn_hosts, chroot=chroot))
    # the fleet needs the chroot first
    setup = ThreadedFleet(ensemble.hosts, chroot=chroot)
    setup.setup_cluster()
    c.start()
    member = c.connected_server()
    assert member is not None
    victim = next(s for s in ensemble.servers if s.address == member)
    others = [("127.0.0.1", s.client_port) for s in ensemble.servers if s is not victim]
    setup.shutdown()
    fleet = ThreadedFleet(others, chroot=chroot, session_timeout_ms=6000)  # brokers live on the other members
    try:
        fleet.register(BrokerSpec(1))
        fleet.register(BrokerSpec(2))
        w = Watcher(c, timeout=60)
        victim.kill()  # SIGKILL the member kadmin is connected to ...
        old, new = fleet.bounce(2)  # ... while broker 2 bounces
        w.wait_for(lambda evs: any(e["event"] == "bounced" and e["id"] == 2 for e in evs), timeout=30)
        b = [e for e in w.events if e["event"] == "bounced" and e["id"] == 2][0]
        assert (b["old_epoch"], b["epoch"]) == (old, new)
        assert c.connected_server() != member
    finally:
        fleet.shutdown()
        c.close()
        victim.write_config()
        victim.start()
        ensemble.wait_ready(60)


@pytest.mark.parametrize("argv", [["brokers", "watch"], ["brokers", "wait", "1", "--gone", "--timeout", "60"]])
def test_ctrl_c_exits_130_without_traceback(fleet, zk, argv):
    import signal

    fleet.register(BrokerSpec(1))
    p = subprocess.Popen([sys.executable, "-m", "kadmin", *argv, "-z", zk], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    assert p.poll() is None
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130
    assert "Traceback" not in err and "interrupted" in err
