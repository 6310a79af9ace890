"""`kadmin migration roll`: the whole ZooKeeper -> KRaft journey of real Kafka 3.9.1 (3 ZooKeeper-mode brokers, 3
controllers: `kadmin sandbox up --mode migration`), phase by phase, under Kafka's VerifiableProducer.

One cluster for the module, its tests in order. A phase asked in the wrong state exits 7 and runs no hook. Then,
with the producer writing acks=all (idempotent, RF 3, min ISR 2) all along: brokers-migrating (kadmin SIGKILLed
between a broker's stop and its start, and the same command run again finishes the phase), brokers-kraft and
controllers-finalize, each with the sandbox's own commands as hooks (`sandbox kill`; `sandbox phase ID P && sandbox
start ID`, counted by tests/support/roll.py's hook script). Referees: Kafka's controllers' own log lines (the
metadata copied, POST_MIGRATION), `kadmin migration status` after each phase, the hooks' counters (each node
stopped and started exactly once per phase), and every acknowledged record read back with its value. Then onto
Kafka 4.3.1 as Kafka's upgrade notes have it: a plain `roll run` starting each node from 4.3.1's installation
(`sandbox start --kafka-home`), and `features upgrade --release-version 4.3`.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka import KAFKA_3_9, KAFKA_4, TOPIC_COMMAND, kafka_home, tool, wait_for
from tests.support.migration import COPY_DONE, FINALIZED, Migration
from tests.support.producer import Producer, assert_no_write_lost, read_back
from tests.support.roll import Counter, RollRun, hook_args, journal, on, write_hook
from tests.support.sandbox import sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

BROKERS, CONTROLLERS = [1, 2, 3], [3001, 3002, 3003]
WAIT = 300.0
NODE_PHASE = {"brokers-migrating": "migrating", "brokers-kraft": "kraft", "controllers-finalize": "finalized"}


@dataclass
class Journey:
    m: Migration
    home: Path
    work: Path
    connection: list[str]
    bootstrap: str

    def status(self) -> tuple[int, dict[str, Any]]:
        code, data, err = self.m.sb.json("migration", "status", "--timeout", "60", *self.connection)
        assert data is not None, err
        return code, data

    def hooks(self, phase: str) -> tuple[list[str], Counter]:
        """--stop/--start through the counting hook script: `sandbox kill ID`; `sandbox phase ID P && sandbox
        start ID` (a script of its own, the id appended)."""
        kadmin = [sys.executable, "-m", "kadmin", "sandbox"]
        d = ["--dir", str(self.m.sb.dir), "-o", "plain"]
        starter = self.work / f"start-{phase}.sh"
        starter.write_text("#!/bin/sh\nset -e\n"
                           f'{shlex.join([*kadmin, "phase"])} "$1" {NODE_PHASE[phase]} {shlex.join(d)}\n'
                           f'{shlex.join([*kadmin, "start"])} "$1" {shlex.join(d)}\n')
        starter.chmod(0o755)
        hook = write_hook(self.work / f"hook-{phase}.sh", [*kadmin, "kill", *d], [str(starter)])
        counter = self.work / f"{phase}.counter"
        return hook_args(hook, counter), Counter(counter)

    def upgrade_hooks(self, home: Path) -> tuple[list[str], Counter]:
        """--stop/--start that move each node onto the Kafka installation `home` (`sandbox start --kafka-home`)."""
        kadmin = [sys.executable, "-m", "kadmin", "sandbox"]
        d = ["--dir", str(self.m.sb.dir), "-o", "plain"]
        hook = write_hook(self.work / "hook-upgrade.sh", [*kadmin, "kill", *d],
                          [*kadmin, "start", "--kafka-home", str(home), *d])
        counter = self.work / "upgrade.counter"
        return hook_args(hook, counter), Counter(counter)

    def roll(self, phase: str, state: Path, hook: list[str], **kw: Any) -> RollRun:
        return RollRun(["--phase", phase, "--state", str(state), "--step-timeout", "240", *hook, *self.connection],
                       self.m.sb.env, self.work / f"{phase}.stderr", verb=("migration", "roll"), **kw)


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journey]:
    home = kafka_home(KAFKA_3_9)
    work = tmp_path_factory.mktemp("migration-roll")
    with sandbox(work / "sb", "--kafka-home", str(home), "--mode", "migration", "--brokers", "3") as sb:
        st = sb.status()
        brokers = ",".join(f"127.0.0.1:{p['port']}" for p in st["processes"] if p["role"] == "broker")
        connection = ["-z", st["zookeeper"], "--bootstrap-controller", st["bootstrap_controllers"], "-b", brokers]
        yield Journey(Migration(sb), home, work, connection, brokers)


def test_a_phase_asked_in_the_wrong_state_is_refused_and_touches_nothing(journey: Journey) -> None:
    code, data = journey.status()
    assert (code, data["state"]) == (0, "PRE_MIGRATION"), data
    for phase in ("brokers-kraft", "controllers-finalize"):
        hook, counter = journey.hooks(phase)
        state = journey.work / f"refused-{phase}"
        run = journey.roll(phase, state, hook)
        assert run.wait(WAIT) == 7, run.stderr()
        err = run.stderr()
        assert "nothing touched" in err and "PRE_MIGRATION" in err and "brokers-migrating" in err, err
        assert counter.lines() == [] and not (state / "journal.ndjson").exists()


def test_the_whole_journey_phase_by_phase_loses_no_acknowledged_write(journey: Journey) -> None:
    topic = "migration-roll"
    tool(journey.home, TOPIC_COMMAND, "--bootstrap-server", journey.bootstrap, "--create", "--topic", topic,
         "--partitions", "6", "--replication-factor", "3", "--config", "min.insync.replicas=2")
    with Producer(journey.home, journey.bootstrap, topic, delivery_timeout_ms=30000,
                  work_dir=journey.work) as producer:
        producer.wait_acked_more_than(100, WAIT)

        # brokers-migrating, kadmin SIGKILLed between the second broker's stop and its start, then run again
        hook, counter = journey.hooks("brokers-migrating")
        state = journey.work / "phase-1"
        first = journey.roll("brokers-migrating", state, hook)
        second = first.wait_event(on(2, "wait_stopped", "done"), WAIT, "broker 2 seen stopped")
        assert first.kill() == -9 and second["node"] == 2
        resumed = journey.roll("brokers-migrating", state, hook)
        assert resumed.wait(WAIT) == 0, resumed.stderr()
        assert "the cluster is in MIGRATION" in resumed.stderr()
        counter.assert_each_restarted_once(BROKERS)
        kinds = [e["event"] for e in journal(state)]
        assert kinds.count("roll_started") == 1 and kinds.count("roll_resumed") == 1 and kinds[-1] == "roll_done"
        journey.m.wait_log(COPY_DONE)  # Kafka's own word: the controller copied the metadata
        code, data = journey.status()
        assert (code, data["state"]) == (0, "MIGRATION"), data
        assert {b["id"]: b["mode"] for b in data["brokers"]} == {b: "zk_migrating" for b in BROKERS}
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)

        # brokers-kraft
        hook, counter = journey.hooks("brokers-kraft")
        run = journey.roll("brokers-kraft", journey.work / "phase-2", hook)
        assert run.wait(WAIT * 2) == 0, run.stderr()
        counter.assert_each_restarted_once(BROKERS)
        code, data = journey.status()
        assert (code, data["state"]) == (0, "MIGRATION"), data
        assert {b["id"]: b["mode"] for b in data["brokers"]} == {b: "kraft" for b in BROKERS}
        assert FINALIZED not in journey.m.log_text()
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)

        # controllers-finalize: the point of no return, said before the first controller
        hook, counter = journey.hooks("controllers-finalize")
        run = journey.roll("controllers-finalize", journey.work / "phase-3", hook)
        assert run.wait(WAIT * 2) == 0, run.stderr()
        assert "point of no return" in run.stderr()
        counter.assert_each_restarted_once(CONTROLLERS)
        journey.m.wait_log(FINALIZED)
        code, data = journey.status()
        assert (code, data["state"], data["rollback_possible"]) == (0, "POST_MIGRATION", False), data
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)

        # onto Kafka 4.3.1: a plain `roll run` (controllers first, the quorum leader last), then features upgrade
        new = kafka_home(KAFKA_4)
        hook, counter = journey.upgrade_hooks(new)
        upgrade = RollRun(["--state", str(journey.work / "upgrade"), "--step-timeout", "240", *hook,
                           "-b", journey.bootstrap], journey.m.sb.env, journey.work / "upgrade.stderr")
        assert upgrade.wait(WAIT * 3) == 0, upgrade.stderr()
        counter.assert_each_restarted_once(BROKERS + CONTROLLERS)
        pids = journey.m.sb.pids()
        assert all(f"{new}/libs/*" in Path(f"/proc/{p}/cmdline").read_bytes().decode().split("\0") for p in pids
                   if Path(f"/proc/{p}/cmdline").exists() and b"kafka.Kafka" in Path(f"/proc/{p}/cmdline").read_bytes())
        code, feats, err = journey.m.sb.json("features", "upgrade", "--release-version", "4.3", "-b", journey.bootstrap)
        assert code == 0, err
        code, feats, err = journey.m.sb.json("features", "describe", "-b", journey.bootstrap)
        assert code == 0, err
        levels = {f["name"]: f["finalized_level"] for f in feats["features"]}
        assert levels["metadata.version"] == 30, feats  # 4.3-IV0
        producer.wait_acked_more_than(producer.acked_count() + 100, WAIT)
        producer.stop()
    wait_for(lambda: journey.m.sb.run("sandbox", "status").returncode == 0, WAIT, "every node up")
    assert_no_write_lost(producer, read_back(journey.bootstrap, topic, journey.home))
    # the finished phase asked again with its state: done, nothing restarted; with a new state: refused
    hook, counter = journey.hooks("controllers-finalize")
    again = journey.roll("controllers-finalize", journey.work / "phase-3", hook)
    assert again.wait(WAIT) == 0, again.stderr()
    assert "nothing to restart" in again.stderr()
    fresh = journey.roll("controllers-finalize", journey.work / "phase-3-again", hook)
    assert fresh.wait(WAIT) == 7, fresh.stderr()  # POST_MIGRATION: no phase begins there
    counter.assert_each_restarted_once(CONTROLLERS)
