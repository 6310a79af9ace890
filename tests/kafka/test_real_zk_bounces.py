"""SIGKILL bounces and `brokers wait --in-sync` against three real Apache Kafka 3.9.1 brokers (ZooKeeper mode).

A SIGKILLed broker closes nothing: its ZooKeeper session, and so its /brokers/ids/<id> znode, lingers
until the session expires (`zookeeper.session.timeout.ms`, 20 s here); a broker started meanwhile
cannot register: Kafka 3.9's checked ephemeral create fails with NODEEXISTS while the owner is the old
session, and the broker exits (it does not retry until the session expires). What kadmin says during
that window, and once the new registration (a new czxid: the new broker epoch) appears, is checked
against the znodes themselves. The order of events is
taken from ZooKeeper (the znode's czxid, its absence) and from what kadmin's own processes printed,
never from sleeps. The graceful-restart bounce is in test_real_zk_mode.py.

`brokers wait` and `brokers watch` run as separate processes (as a rolling-bounce script runs them);
a test waits until ZooKeeper shows their session watching the znode before it acts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kadmin.sandbox.zkserver import Ensemble
from tests.support.kafka import (
    TOPIC_COMMAND,
    RealCluster,
    ZkModeBroker,
    describe,
    last_logged_epoch,
    tool,
    wait_for,
    zk_mode_cluster,
)
from tests.support.zkwatch import wait_for_new_watcher, watchers

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

IDS = (1, 2, 3)
SESSION_MS = 20_000  # the brokers' ZooKeeper session: how long a SIGKILLed broker's registration lingers
WAIT = 240.0  # generous: two busy cores, other suites running alongside

T = TypeVar("T")


@pytest.fixture(scope="module")
def kafka(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with zk_mode_cluster(zk_server, tmp_path_factory.mktemp("kafka39-bounces"), IDS, chroot_prefix="kbounce",
                         session_timeout_ms=SESSION_MS) as cluster:
        yield cluster


# ---------------------------------------------------------------------------------------------------
# kadmin as a separate process


@dataclass
class Kadmin:
    """A `python -m kadmin ...` process; stdout and stderr go to files (read while it runs: NDJSON)."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def lines(self) -> list[str]:
        text = self.out.read_text(errors="replace")
        return [line for line in text.split("\n")[:-1] if line.strip()]  # complete lines only

    def finish(self, timeout: float) -> tuple[int, str, str]:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"kadmin did not exit within {timeout:g}s:\n{self.err.read_text()[-2000:]}") from None
        return code, self.out.read_text(), self.err.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def spawn(kafka: RealCluster, tmp: Path, name: str, watched: str, *args: str) -> Kadmin:
    """Start kadmin ARGS and return once its ZooKeeper session watches `watched` (a path under the chroot)."""
    port, path = kafka.zk_server.servers[0].client_port, kafka.chroot + watched
    seen = watchers(port, path)
    out, err = tmp / f"{name}.out", tmp / f"{name}.err"
    env = {**os.environ, "KADMIN_ZOOKEEPER": kafka.zk}
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "kadmin", *args], stdout=o, stderr=e,
                                stdin=subprocess.DEVNULL, env=env)
    k = Kadmin(proc, out, err)
    try:
        wait_for_new_watcher(port, path, seen, alive=lambda: proc.poll() is None, timeout=WAIT)
    except AssertionError:
        k.stop()
        raise AssertionError(f"kadmin {' '.join(args)} never watched {path}:\n{err.read_text()[-2000:]}") from None
    return k


# ---------------------------------------------------------------------------------------------------
# What ZooKeeper and Kafka say


def non_controller(kafka: RealCluster) -> ZkModeBroker:
    controller = kafka.controller()
    assert controller in IDS
    return kafka.brokers[min(b for b in IDS if b != controller)]


def czxid(kafka: RealCluster, b: ZkModeBroker) -> int | None:
    got = b.registration(kafka.kz)
    return None if got is None else int(got[1].czxid)



def while_znode(kafka: RealCluster, b: ZkModeBroker, expected: int | None, look: Callable[[], T]) -> T:
    """`look()`, proven to have run while /brokers/ids/<id> was `expected` (its czxid; None: absent):
    ZooKeeper shows that before and after. The znode never returns to an earlier state, so it was
    that throughout."""
    got = maybe_while_znode(kafka, b, expected, look)
    assert got is not None, (f"broker {b.id}'s znode was not {expected} throughout kadmin's look "
                             f"(a {SESSION_MS} ms session expired that fast?)")
    return got[0]


def maybe_while_znode(kafka: RealCluster, b: ZkModeBroker, expected: int | None,
                      look: Callable[[], T]) -> tuple[T] | None:
    """`(look(),)` if /brokers/ids/<id> was `expected` before and after it; None if not (then no look
    is taken, or what it saw is discarded)."""
    if czxid(kafka, b) != expected:
        return None
    got = look()
    return (got,) if czxid(kafka, b) == expected else None


def save_listing(kafka: RealCluster, tmp: Path) -> tuple[Path, dict[int, int]]:
    listed = kafka.run("brokers", "list", "-o", "json")
    assert listed.exit_code == 0, listed.stderr
    saved = tmp / "before.json"
    saved.write_text(listed.stdout)
    return saved, {r["id"]: r["epoch"] for r in json.loads(listed.stdout)["data"]}


def changes(data: dict[str, Any]) -> dict[str, Any]:
    """A `brokers diff` result without the two listings' epoch maps (old_epochs, new_epochs)."""
    return {k: v for k, v in data.items() if k not in ("old_epochs", "new_epochs")}


def victim_events(watch: Kadmin, broker_id: int) -> list[tuple[str, int | None, int | None]]:
    """The NDJSON events `brokers watch` printed so far about `broker_id`: (event, epoch, old epoch)."""
    out = []
    for line in watch.lines():
        ev = json.loads(line)
        if ev["id"] == broker_id:
            out.append((ev["event"], ev["epoch"], ev["old_epoch"]))
    return out


Events = list[tuple[str, int | None, int | None]]


def reported(watch: Kadmin, broker_id: int, done: Callable[[Events], bool]) -> Events | None:
    """The watch's events about `broker_id` so far (event, epoch, old epoch), once there are some and `done`."""
    ev = victim_events(watch, broker_id)
    return ev if ev and done(ev) else None


# ---------------------------------------------------------------------------------------------------


def test_a_broker_started_while_its_killed_session_lingers_exits_and_kadmin_keeps_the_old_epoch(
        kafka: RealCluster, tmp_path: Path) -> None:
    kafka.ready(timeout=WAIT)
    victim = non_controller(kafka)
    saved, before = save_listing(kafka, tmp_path)
    old = before[victim.id]
    others = sorted(b for b in IDS if b != victim.id)
    waiter = spawn(kafka, tmp_path, "wait", victim.znode,
                   "brokers", "wait", str(victim.id), "--epoch-gt", str(old), "--timeout", "900", "-o", "json")
    watch = spawn(kafka, tmp_path, "watch", victim.znode, "brokers", "watch", "--timeout", "900", "-o", "ndjson")
    try:
        victim.kill()  # a crash: nothing is closed
        assert not victim.alive()

        # The dead broker's session lingers: ZooKeeper still holds its registration, and kadmin says so.
        def look() -> tuple[Any, Any, int | None, list[Any]]:
            return (kafka.run.json("brokers", "list"), kafka.run.json("brokers", "diff", "--since", str(saved)),
                    waiter.proc.poll(), victim_events(watch, victim.id))

        (code, listed, err), (dcode, diffed, derr), waited, seen = while_znode(kafka, victim, old, look)
        assert code == 0, err
        row = next(r for r in listed["data"] if r["id"] == victim.id)
        assert row["epoch"] == old and row["state"] == "registered"
        session = row["session"]
        assert dcode == 0, derr
        assert changes(diffed["data"]) == {"new": [], "dead": [], "bounced": [], "unchanged": list(IDS)}
        assert waited is None, f"wait --epoch-gt {old} returned while the old registration was still there"
        assert seen == []

        # Started again at once, Kafka 3.9 finds its id still registered by the dead session and exits
        # (KafkaZkClient's checked ephemeral create: NODEEXISTS, owner != current session; no retry).
        victim.start()
        outcome = wait_for(lambda: "exited" if not victim.alive() else
                           "registered" if czxid(kafka, victim) not in (old, None) else None,
                           WAIT, f"broker {victim.id} to exit or register")
        if outcome == "exited":
            assert victim.proc is not None and victim.proc.returncode == 1
            log = victim.server_log.read_text(errors="replace")
            assert (f"Error while creating ephemeral at /brokers/ids/{victim.id}, node already exists and owner "
                    f"'{session}' does not match current session") in log
            assert "Exiting Kafka due to fatal exception during startup" in log
            # (if the old session has not expired meanwhile) kadmin still shows the old registration
            again = maybe_while_znode(kafka, victim, old,
                                      lambda: (kafka.run.json("brokers", "list"), waiter.proc.poll()))
            if again is not None:
                (code, listed, err), waited = again[0]
                assert code == 0, err
                assert next(r for r in listed["data"] if r["id"] == victim.id)["epoch"] == old
                assert waited is None
            # What an operator runs before starting a crashed broker again: wait until its registration is gone.
            gone = kafka.run("brokers", "wait", str(victim.id), "--gone", "--timeout", str(WAIT))
            assert gone.exit_code == 0, gone.stderr
            assert czxid(kafka, victim) is None
            victim.start()
        else:  # the JVM took longer to start than the session to expire (a very busy machine)
            print(f"broker {victim.id} registered after the old session expired: the NODEEXISTS exit was not seen")
        new = victim.wait_registered(kafka.kz, timeout=WAIT, epoch_gt=old)
        assert new > old

        code, out, err = waiter.finish(WAIT)
        assert code == 0, err
        doc = json.loads(out)["data"]
        assert doc["met"] is True and doc["epoch"] == new and doc["condition"] == "epoch_gt"

        # The watch saw the bounce: at once (the new znode replaced the old between two reads), or as
        # the expiry's deregistration followed by the new registration.
        got = wait_for(lambda: reported(watch, victim.id, lambda ev: ev[-1][1] == new), WAIT,
                       f"brokers watch to report broker {victim.id} with epoch {new}")
        assert got in ([("bounced", new, old)], [("deregistered", None, old), ("bounced", new, old)]), got
        assert all(json.loads(line)["id"] == victim.id for line in watch.lines()), watch.lines()
    finally:
        waiter.stop()
        watch.stop()
        if not victim.alive():
            victim.start()
    assert last_logged_epoch(victim, new) == new  # the broker's own word for its new epoch
    code, doc, err = kafka.run.json("brokers", "diff", "--since", str(saved))
    assert code == 0, err
    assert changes(doc["data"]) == {"new": [], "dead": [], "bounced": [{"id": victim.id, "old_epoch": old,
                                                                        "new_epoch": new}], "unchanged": others}
    assert kafka.run("brokers", "diff", "--since", str(saved), "--exit-code").exit_code == 1


def test_a_crashed_broker_is_dead_after_its_session_expires_and_bounced_when_back(kafka: RealCluster,
                                                                                   tmp_path: Path) -> None:
    kafka.ready(timeout=WAIT)
    victim = non_controller(kafka)
    saved, before = save_listing(kafka, tmp_path)
    old = before[victim.id]
    others = sorted(b for b in IDS if b != victim.id)
    waiter = spawn(kafka, tmp_path, "wait", victim.znode,
                   "brokers", "wait", str(victim.id), "--epoch-gt", str(old), "--timeout", "900", "-o", "json")
    watch = spawn(kafka, tmp_path, "watch", victim.znode, "brokers", "watch", "--timeout", "900", "-o", "ndjson")
    try:
        victim.kill()
        assert not victim.alive()
        # ZooKeeper expires the session and deletes the registration; the broker stays down meanwhile.
        wait_for(lambda: czxid(kafka, victim) is None, WAIT, f"broker {victim.id}'s session to expire")
        got = wait_for(lambda: victim_events(watch, victim.id), WAIT, "brokers watch to report the deregistration")
        assert got == [("deregistered", None, old)]

        def look() -> tuple[Any, Any, Any, int | None]:
            return (kafka.run.json("brokers", "list"), kafka.run.json("brokers", "diff", "--since", str(saved)),
                    kafka.run("brokers", "diff", "--since", str(saved), "--exit-code"), waiter.proc.poll())

        (code, listed, err), (dcode, diffed, derr), flagged, waited = while_znode(kafka, victim, None, look)
        assert code == 0, err
        assert sorted(r["id"] for r in listed["data"]) == others
        assert dcode == 0, derr
        assert changes(diffed["data"]) == {"new": [], "dead": [victim.id], "bounced": [], "unchanged": others}
        assert diffed["data"]["old_epochs"][str(victim.id)] == old  # the dead broker's epoch in the saved listing
        assert flagged.exit_code == 1
        assert waited is None, f"wait --epoch-gt {old} returned while broker {victim.id} was not registered"

        victim.start()
        new = victim.wait_registered(kafka.kz, timeout=WAIT, epoch_gt=old)
        code, out, err = waiter.finish(WAIT)
        assert code == 0, err
        assert json.loads(out)["data"]["epoch"] == new
        got = wait_for(lambda: reported(watch, victim.id, lambda ev: len(ev) > 1), WAIT,
                       "brokers watch to report the new registration")
        assert got == [("deregistered", None, old), ("bounced", new, old)]
    finally:
        waiter.stop()
        watch.stop()
        if not victim.alive():
            victim.start()
    assert last_logged_epoch(victim, new) == new
    code, doc, err = kafka.run.json("brokers", "diff", "--since", str(saved))
    assert code == 0, err
    assert changes(doc["data"]) == {"new": [], "dead": [], "bounced": [{"id": victim.id, "old_epoch": old,
                                                                        "new_epoch": new}], "unchanged": others}


# ---------------------------------------------------------------------------------------------------
# brokers wait --in-sync


def out_of_isr(kafka: RealCluster, broker_id: int) -> set[tuple[str, int]]:
    """The partitions (of every topic) listing `broker_id` as a replica without it in their ISR (state znodes)."""
    return {k for k, st in kafka.partition_states().items()
            if broker_id in st["replicas"] and broker_id not in st["isr"]}


def full_isrs(kafka: RealCluster) -> dict[tuple[str, int], dict[str, Any]] | None:
    s = kafka.partition_states()
    return s if s and all(st["leader"] in IDS and sorted(st["isr"]) == sorted(st["replicas"]) for st in s.values()) \
        else None


def test_wait_in_sync_returns_once_the_restarted_broker_is_back_in_every_isr(kafka: RealCluster,
                                                                             tmp_path: Path) -> None:
    kafka.ready(timeout=WAIT)
    topic, partitions = "in-sync", 6
    tool(kafka.home, TOPIC_COMMAND, "--bootstrap-server", kafka.bootstrap, "--create", "--if-not-exists",
         "--topic", topic, "--partitions", str(partitions), "--replication-factor", "3")
    wait_for(lambda: full_isrs(kafka) if {p for (t, p) in kafka.partition_states([topic])} == set(range(partitions))
             else None, WAIT, "every partition led with a full ISR (state znodes)", interval=0.25)
    victim = non_controller(kafka)
    old = czxid(kafka, victim)
    assert old is not None
    hosted = {k for k, st in kafka.partition_states().items() if victim.id in st["replicas"]}
    assert {(topic, p) for p in range(partitions)} <= hosted

    victim.stop(graceful=True, timeout=WAIT)  # Kafka's controlled shutdown takes it out of every ISR
    wait_for(lambda: czxid(kafka, victim) is None, WAIT, f"/brokers/ids/{victim.id} to go")
    wait_for(lambda: out_of_isr(kafka, victim.id) == hosted, WAIT,
             f"broker {victim.id} to leave every ISR (state znodes)", interval=0.25)
    state0 = f"/brokers/topics/{topic}/partitions/0/state"
    waiter = spawn(kafka, tmp_path, "in-sync", state0,
                   "brokers", "wait", str(victim.id), "--in-sync", "--timeout", "900", "-o", "json")
    window_seen = False
    try:
        # It scanned, found the partitions waiting for the broker, and watches them: still waiting.
        assert waiter.proc.poll() is None
        assert out_of_isr(kafka, victim.id) == hosted

        victim.start()
        new = victim.wait_registered(kafka.kz, timeout=WAIT, epoch_gt=old)
        # Right after the re-registration the broker has not caught up everywhere yet (the leaders add
        # it back one partition at a time): while ZooKeeper shows it outside some ISR, the wait runs on.
        missing = out_of_isr(kafka, victim.id)
        if missing:
            running = waiter.proc.poll() is None
            still = missing & out_of_isr(kafka, victim.id)
            if still:
                window_seen = True
                assert running, f"wait --in-sync returned while broker {victim.id} was outside the ISR of {still}"

        code, out, err = waiter.finish(WAIT)
        at_return = kafka.partition_states()
    finally:
        waiter.stop()
        if not victim.alive():
            victim.start()
    # When it returned, ZooKeeper had the broker in the ISR of every partition it replicates.
    assert code == 0, err
    assert {k for k, st in at_return.items() if victim.id in st["replicas"]} == hosted
    assert all(victim.id in at_return[k]["isr"] for k in hosted), at_return
    doc = json.loads(out)["data"]
    assert doc == {**doc, "broker_id": victim.id, "in_sync": True, "waiting": [], "hosted_partitions": len(hosted)}
    assert czxid(kafka, victim) == new
    # The stderr progress named partitions still waiting, in decreasing numbers, as ISRs grew back.
    counts = [int(n) for n in re.findall(r"not yet in the ISR of (\d+) partitions?", err)]
    assert counts == sorted(counts, reverse=True) and all(0 < n <= len(hosted) for n in counts), err

    # Kafka's own view (the brokers' metadata, updated after ZooKeeper) agrees: the broker is in every ISR.
    def agreed() -> dict[int, Any] | None:
        parts = describe(kafka, topic)["partitions"]
        return parts if len(parts) == partitions and all(victim.id in isr for _, _, isr in parts.values()) else None

    parts = wait_for(agreed, WAIT, f"TopicCommand to show broker {victim.id} in every ISR of {topic}", interval=0.5)
    assert {p: isr for p, (_, _, isr) in parts.items()} == {p: at_return[(topic, p)]["isr"] for p in parts}
    print(f"in-sync: the post-registration window was {'seen' if window_seen else 'not seen'}")
