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
from tests.support.zkwatch import wait_for_new_watcher, watchers

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
                    self.events.append(ev.to_json())  # the events as -o ndjson prints them
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
    old1 = fleet.register(BrokerSpec(1))
    c = cluster_for(zk)
    try:
        w = Watcher(c, count=5, timeout=120)
        e2 = fleet.register(BrokerSpec(2))
        w.wait_for(lambda evs: len(evs) == 1)
        # A restart the watch sees the gap of: deregistered, then bounced (not registered) on its return.
        # (fleet.bounce is so fast that a watch sees it in one tick or in two, depending on the machine's
        # load: one event or two. That is pinned by the unit tests; here the count must be exact.)
        fleet.stop(1)
        w.wait_for(lambda evs: ("deregistered", 1) in [(e["event"], e["id"]) for e in evs])
        new1 = fleet.register(BrokerSpec(1))
        w.wait_for(lambda evs: any(e["event"] == "bounced" for e in evs))
        fleet.update(2)
        w.wait_for(lambda evs: any(e["event"] == "updated" for e in evs))
        fleet.stop(2)
        w.thread.join(60)
        assert not w.thread.is_alive()  # --count ends the stream
        kinds = [(e["event"], e["id"]) for e in w.events]
        assert kinds == [("registered", 2), ("deregistered", 1), ("bounced", 1), ("updated", 2), ("deregistered", 2)]
        assert w.events[0]["epoch"] == e2
        b = [e for e in w.events if e["event"] == "bounced"]
        assert b[0]["id"] == 1 and b[0]["old_epoch"] == old1 and b[0]["epoch"] == new1
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


def once_watched(port: int, path: str, action) -> threading.Thread:
    """Run `action` in a thread as soon as a session that does not watch `path` yet starts watching it."""
    before = watchers(port, path)
    t = threading.Thread(target=lambda: (wait_for_new_watcher(port, path, before), action()))
    t.start()
    return t


def test_wait_registered_gone_and_epoch_gt(run, fleet, zk_server, chroot):
    port, path = zk_server.servers[0].client_port, f"{chroot}/brokers/ids/1"
    e1 = fleet.register(BrokerSpec(1))
    assert run("brokers", "wait", "1", "--registered", "--timeout", "5").exit_code == 0
    t = once_watched(port, path, lambda: fleet.bounce(1))  # the wait saw epoch e1, then the bounce happens
    code, doc, err = run.json("brokers", "wait", "1", "--epoch-gt", str(e1), "--timeout", "60")
    t.join()
    assert code == 0 and doc["data"]["met"] is True and doc["data"]["epoch"] > e1
    t = once_watched(port, path, lambda: fleet.stop(1))
    assert run("brokers", "wait", "1", "--gone", "--timeout", "60").exit_code == 0
    t.join()


def test_wait_times_out_saying_what_is_missing(run, fleet):
    e = fleet.register(BrokerSpec(2))
    r = run("brokers", "wait", "2", "--epoch-gt", str(e), "--timeout", "0.5")
    assert r.exit_code == 1
    assert f"timed out after 0.5s: broker 2 is registered with epoch {e}, not greater than {e}" in r.stderr
    r = run("brokers", "wait", "9", "--registered", "--timeout", "0.3")
    assert r.exit_code == 1 and "timed out after 0.3s: broker 9 is not registered" in r.stderr


def test_wait_needs_exactly_one_condition(run, fleet):
    r = run("brokers", "wait", "1", "--registered", "--gone")
    assert r.exit_code == 2 and "exactly one of" in r.stderr


def test_wait_returns_after_reregistration(fleet, zk, zk_server, chroot):
    """A real process, as a rolling-bounce script runs it: its watch (not a poll) sees the new epoch.

    How fast is bench/brokers.py's business; the unit tests pin that a wait ends on the first tick
    that meets its condition."""
    port, path = zk_server.servers[0].client_port, f"{chroot}/brokers/ids/4"
    e = fleet.register(BrokerSpec(4))
    before = watchers(port, path)
    p = subprocess.Popen([sys.executable, "-m", "kadmin", "brokers", "wait", "4", "--epoch-gt", str(e),
                          "--timeout", "120", "-z", zk, "-o", "json"], stdout=subprocess.PIPE, text=True)
    try:
        wait_for_new_watcher(port, path, before, alive=lambda: p.poll() is None)  # it read epoch e and watches
        new = fleet.bounce(4)[1]
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0
    data = json.loads(out)["data"]
    assert data["met"] is True and data["epoch"] == new


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
        epochs = {1: fleet.register(BrokerSpec(1)), 2: fleet.register(BrokerSpec(2))}
        # The brokers registered through the other members: kadmin's member may not have applied that
        # yet when the watch reads. A watch that never saw broker 2 rightly calls its next registration
        # `registered`, so first see both as they are now.
        w = Watcher(c, timeout=120, initial=True)
        w.wait_for(lambda evs: {(e["id"], e["epoch"]) for e in evs if e["event"] == "registered"} >= set(
            epochs.items()), timeout=60)
        victim.kill()  # SIGKILL the member kadmin is connected to ...
        old, new = fleet.bounce(2)  # ... while broker 2 bounces
        w.wait_for(lambda evs: any(e["event"] == "bounced" and e["id"] == 2 for e in evs), timeout=60)
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
def test_ctrl_c_exits_130_without_traceback(fleet, zk, zk_server, chroot, argv):
    import signal

    port, path = zk_server.servers[0].client_port, f"{chroot}/brokers/ids/1"
    fleet.register(BrokerSpec(1))
    before = watchers(port, path)
    p = subprocess.Popen([sys.executable, "-m", "kadmin", *argv, "-z", zk], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wait_for_new_watcher(port, path, before, alive=lambda: p.poll() is None)  # waiting on its watches now
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
