"""Issue 21 §2: every exit code docs/exit-codes.md documents, provoked through the real CLI.

docs/exit-codes.md is generated from kadmin/cli/exit_docs.py: COMMANDS names each command's codes, and the
check verbs follow the monitoring convention (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, 130 on Ctrl-C). CASES
has one case per documented (command, code): it builds a situation that calls for that code and returns the
command line, which the test runs in-process (CliRunner, as every CLI test does) and whose exit code it
checks. Situations are real and cheap: chroots of the session's ZooKeeper with brokers registered from their
own sessions (ThreadedFleet, serving ControlledShutdown where a controller must answer), znodes written as a
broken or migrating cluster leaves them, the emulated KRaft server (tests/support/kraft_server.py), one real
sandbox, a local Spark, files on disk. Ctrl-C is a real SIGINT to a `python -m kadmin` process, sent once it
has connected. Nothing sleeps: every wait is on something the test observes.

test_every_documented_code_has_a_case fails when exit_docs gains a command or a code without a case here (or
loses one that has a case). What the code does differently from the documentation stays in view:

- NEVER_RETURNED: documented codes the command never returns. Their case builds the situation the row
  describes; the test checks the code it returns instead, and xfails saying so.
- A code a command was found to return that its row did not name is now documented and has its case (the
  last one, --bootstrap-server given a controller's address, was exit 6 and is now 3).

Fixing the command makes its NEVER_RETURNED entry fail: then remove the entry.
UNPROVOKABLE holds the documented codes no fast fixture can provoke, each with where it is proven instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kadmin.cli import exit_docs
from kadmin.domain import znodes
from kadmin.exit_codes import CHECK_COMMANDS, Verdict
from kadmin.exit_codes import ExitCode as X
from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.zkserver import Ensemble
from tests.support.hung import Hung
from tests.support.kraft_server import API_VERSIONS, INVALID_UPDATE_VERSION, KraftServer, Scenario

pytestmark = pytest.mark.integration

# A command --timeout that must pass: it also bounds connecting and the reads before the wait, so it leaves a loaded
# machine time for them. (The reading after the deadline has 1 s, LAST_LOOKS, whatever --timeout: at load 15-17 the
# undrain's final reading did not always fit, exit 4 instead of 1. Fixed in the product: that verdict now comes from
# the last reading before the deadline, tests/unit/test_undrain_truth.py.)
EXPIRES = "5"
NOWHERE = ["-z", "127.0.0.1:1"]  # loopback port 1 refuses at once: kadmin says unreachable within 0.3 s
CLUSTER_ID = "kadmin-sandbox-cluster"  # what ThreadedFleet.setup_cluster writes to /cluster/id
NOT_CONTROLLER = 41


# ---------------------------------------------------------------------------------------------- situations
class Zk:
    """A ZooKeeper-mode cluster in its own chroot of the session's ZooKeeper: brokers registered from their own
    sessions (with `serve_kafka`, each also answers the Kafka protocol, its controller ControlledShutdown), and a
    kazoo client to write znodes as a broken or migrating cluster leaves them."""

    def __init__(self, server: Ensemble, *brokers: int, serve_kafka: bool = False) -> None:
        self.chroot = f"/exit-{uuid.uuid4().hex[:10]}"
        self.fleet = ThreadedFleet(server.hosts, chroot=self.chroot, session_timeout_ms=4000, serve_kafka=serve_kafka)
        self.fleet.setup_cluster(CLUSTER_ID)
        self.kz = KazooClient(hosts=server.connect_string + self.chroot)
        self.kz.start(timeout=10)
        self.z = ["-z", server.connect_string + self.chroot]
        for b in brokers:
            self.fleet.register(BrokerSpec(b))

    def topic(self, name: str, assignment: dict[int, list[int]], **kw: Any) -> Zk:
        self.fleet.create_topic(name, assignment, **kw)
        return self

    def put(self, path: str, data: bytes) -> Zk:
        """Write `path` (created with its parents when absent)."""
        if self.kz.exists(path):
            self.kz.set(path, data)
        else:
            self.kz.create(path, data, makepath=True)
        return self

    def garble_state(self, topic: str, partition: int) -> Zk:
        return self.put(f"/brokers/topics/{topic}/partitions/{partition}/state", b"{not json")

    def epoch(self, broker: int) -> int:
        return int(self.kz.get(f"/brokers/ids/{broker}")[1].czxid)

    def close(self) -> None:
        self.kz.stop()
        self.kz.close()
        self.fleet.shutdown()


def kraft_scenario(change: Callable[[Scenario], object] = lambda s: None) -> Scenario:
    """A healthy KRaft cluster (3 brokers, 3 controllers) stamped now, then `change`d."""
    sc = Scenario.cluster(now_ms=int(time.time() * 1000))
    change(sc)
    return sc


class World:
    """The situations the cases share, built once for the module and never changed by a case.

    healthy: brokers 1-5 and every partition in sync; broker 4 hosts tail-0 but leads nothing and is last in its
        replicas (drain has nothing to do), broker 5 is the only replica of solo-0 (it cannot stop or drain).
    garbage: what kadmin cannot parse: a registration, a /brokers/ids child that is no id, a partition state, a
        topic znode, a host mapping and /cluster/id.
    missing: broker 1, and partitions assigned to brokers 8 and 9 that never registered (under-replicated).
    empty: no broker registered.
    deleting: topic doomed, queued for deletion, with an unreadable state on broker 2.
    kraft: the emulated KRaft cluster, healthy.
    Spark and the sandbox are started in the background when a selected case needs them.
    """

    def __init__(self, server: Ensemble, tmp: Path, wanted: set[str]) -> None:
        self.server = server
        self.tmp = tmp
        self._stack = contextlib.ExitStack()
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="exit-codes-setup")
        self._spark: Future[Any] | None = None
        self._sandbox: Future[Path] | None = None
        if "history" in wanted:  # a JVM start (10-20 s) overlapping the other cases
            self._spark = self._pool.submit(start_spark)
        if "sandbox" in wanted:
            self._sandbox = self._pool.submit(start_sandbox, tmp / "sandbox")
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        self.healthy = self.cluster(1, 2, 3, 4, 5).topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}) \
            .topic("tail", {0: [1, 4]}).topic("solo", {0: [5]})
        g = self.garbage = self.cluster(1, 2).topic("orders", {0: [1, 2]}).topic("broken", {0: [2]})
        g.garble_state("broken", 0).put("/brokers/topics/unparsable", b"garbage").put("/brokers/ids/7", b"garbage")
        g.put("/brokers/ids/not-an-id", b"").put("/brokers/hosts/box-bad", b"garbage").put("/cluster/id", b"garbage")
        self.missing = self.cluster(1).topic("m", {0: [1, 8], 1: [1, 9]})
        self.empty = self.cluster()
        self.deleting = self.cluster(1, 2).topic("orders", {0: [1, 2]}).topic("doomed", {0: [1, 2]})
        self.deleting.garble_state("doomed", 0).put("/admin/delete_topics/doomed", b"")
        self.kraft_server = self._stack.enter_context(KraftServer(kraft_scenario()))
        self.kraft = ["-b", self.kraft_server.bootstrap()]

    def cluster(self, *brokers: int, serve_kafka: bool = False) -> Zk:
        z = Zk(self.server, *brokers, serve_kafka=serve_kafka)
        self._stack.callback(z.close)
        return z

    def spark(self) -> Any:
        """The local Spark session, active in this (the main) thread: kadmin's history commands use it and leave
        it running."""
        assert self._spark is not None, "no history case was selected"
        s, _ = self._spark.result()
        from pyspark.sql import SparkSession

        if SparkSession.getActiveSession() is None:  # started on another thread: the JVM keeps it per thread
            SparkSession._get_j_spark_session_class(s._jvm).setActiveSession(s._jsparkSession)
        assert SparkSession.getActiveSession() is not None
        return s

    def sandbox(self) -> Path:
        assert self._sandbox is not None, "no sandbox case was selected"
        return self._sandbox.result()

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            if self._sandbox is not None:
                from kadmin.sandbox.manager import Sandbox

                with contextlib.suppress(Exception):
                    self._sandbox.result()
                Sandbox(self.tmp / "sandbox").down()
            if self._spark is not None:
                s, owned = self._spark.result()
                if owned:
                    s.stop()
            self._pool.shutdown()


def start_spark() -> tuple[Any, bool]:
    """A local[2] session (kadmin's own settings), or the one this process already has (the pipeline tests'):
    (session, whether this module started it)."""
    from pyspark.sql import SparkSession

    from kadmin.pipeline.spark import session

    existing = SparkSession._instantiatedSession
    if existing is not None and existing._sc._jsc is not None:
        return existing, False
    return session("local[2]"), True


def start_sandbox(directory: Path) -> Path:
    """A running sandbox of 2 emulated brokers (what `kadmin sandbox up --brokers 2` starts)."""
    from kadmin.sandbox.manager import Sandbox

    Sandbox(directory).up(brokers=2)
    return directory


@pytest.fixture(scope="module")
def world(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory,
          request: pytest.FixtureRequest) -> Iterator[World]:
    selected = [item.name for item in request.session.items if item.nodeid.startswith(request.node.nodeid)]
    wanted = {what for what in ("history", "sandbox") if any(what in name for name in selected)}
    w = World(zk_server, tmp_path_factory.mktemp("exit-codes"), wanted)
    yield w
    w.close()


@dataclass(frozen=True)
class Ran:
    argv: list[str]
    exit_code: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return f"`kadmin {' '.join(self.argv)}` exited {self.exit_code}:\n{self.stderr}"


class Ctx:
    """What a case gets: the shared situations (`w`), its own directory and clusters, and the CLI."""

    def __init__(self, world: World, run: Any, tmp: Path) -> None:
        self.w = world
        self._run = run
        self.tmp = tmp
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> Ctx:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def cli(self, *argv: str) -> Ran:
        r = self._run(*argv)
        return Ran(list(argv), r.exit_code, r.stdout, r.stderr)

    def ok(self, *argv: str) -> Ran:
        """Set-up through the CLI: it must succeed."""
        r = self.cli(*argv)
        assert r.exit_code == 0, f"set-up failed: {r}"
        return r

    def cluster(self, *brokers: int, serve_kafka: bool = False) -> Zk:
        z = Zk(self.w.server, *brokers, serve_kafka=serve_kafka)
        self.stack.callback(z.close)
        return z

    def kraft(self, change: Callable[[Scenario], object]) -> list[str]:
        """--bootstrap-server of an emulated KRaft cluster of its own, `change`d from a healthy one."""
        srv = self.stack.enter_context(KraftServer(kraft_scenario(change)))
        return ["--bootstrap-server", srv.bootstrap()]

    def file(self, name: str, text: str) -> str:
        path = self.tmp / name
        path.write_text(text)
        return str(path)


Case = Callable[[Ctx], "Sequence[str] | Ran"]


# ---------------------------------------------------------------------------------------------- helpers
def listing(c: Ctx, z: Zk, fmt: str = "json", name: str = "brokers.json") -> str:
    """A saved `kadmin brokers list -o FMT` of `z`, as an operator saves one."""
    return c.file(name, c.ok("brokers", "list", *z.z, "-o", fmt).stdout)


def drain_file(c: Ctx, broker: int, saved: dict[tuple[str, int], list[int]]) -> str:
    """A drain file as `kadmin brokers drain BROKER` writes it, saving these replica orders."""
    from kadmin.domain.drain import FILE_KIND, FILE_VERSION

    doc = {"version": FILE_VERSION, "kind": FILE_KIND, "broker_id": broker, "created": "2026-01-01T00:00:00+00:00",
           "cluster": {"mode": "zookeeper", "where": "test"},
           "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in saved.items()]}
    return c.file(f"drain-{broker}.json", json.dumps(doc))


def meta_properties(c: Ctx, cluster_id: str) -> str:
    return c.file(f"meta-{cluster_id}.properties", f"version=0\nbroker.id=1\ncluster.id={cluster_id}\n")


def three_brokers_serving(c: Ctx) -> Zk:
    """Brokers 1-3 answering the Kafka protocol, broker 1 the controller; orders' partitions led by 2, 1, 3."""
    z = c.cluster(1, 2, 3, serve_kafka=True)
    z.topic("orders", {0: [2, 1, 3], 1: [1, 2, 3], 2: [3, 2, 1]}, configs={"min.insync.replicas": "2"})
    assert z.fleet.fleet.controller_id == 1
    return z


def migrating(c: Ctx) -> Zk:
    """A ZooKeeper to KRaft migration (KIP-866): /controller names KRaft controller 3000 (kraftControllerEpoch
    5), replaced in one multi as KafkaZkClient.tryRegisterKRaftControllerAsActiveController does."""
    z = c.cluster(1, 2).topic("orders", {0: [1, 2]})
    tx = z.kz.transaction()
    tx.delete("/controller")
    tx.create("/controller", znodes.encode_controller(3000, int(time.time() * 1000), 5))
    assert all(r is True or isinstance(r, str) for r in tx.commit())
    return z


def with_lock_held(c: Ctx, out: Path) -> None:
    """Another ingest holds `out`'s table lock (the flock every ingest takes, on its own descriptor)."""
    from kadmin.pipeline.table import Table

    out.mkdir()
    c.stack.enter_context(Table(str(out)).lock("another-ingest"))


def ingest_args(c: Ctx, out: Path) -> list[str]:
    """`history ingest` of a saved `kadmin brokers list -o ndjson` into `out`."""
    source = listing(c, c.w.healthy, "ndjson", "brokers.ndjson")
    return ["history", "ingest", source, "--cluster", "prod", "--out", str(out), "--master", "local[2]"]


def history_table(c: Ctx) -> str:
    """The module's event table, committed by an ingest through the CLI (the ingest case's, when it ran)."""
    from kadmin.pipeline.table import Table

    c.w.spark()
    out = c.w.tmp / "history-table"
    if not Table(str(out)).exists():
        c.ok(*ingest_args(c, out))
    return str(out)


def sandbox_broker(c: Ctx, broker: int, running: bool) -> Path:
    """The shared sandbox's directory, with `broker` running or stopped as asked."""
    from kadmin.sandbox.manager import Sandbox

    d = c.w.sandbox()
    sb = Sandbox(d)
    stopped = broker in sb.status()["stopped_brokers"]
    if running and stopped:
        sb.start(broker)
    elif not running and not stopped:
        sb.kill(broker)
    return d


def no_sandbox(c: Ctx) -> str:
    return str(c.tmp / "no-sandbox")


def sandbox_state(c: Ctx, text: str | None = None) -> str:
    """A sandbox directory whose state file names processes that are gone (or holds `text`)."""
    from kadmin.sandbox.manager import STATE_VERSION

    d = c.tmp / "sb"
    d.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    state = {"version": STATE_VERSION, "dir": str(d), "connect": "127.0.0.1:1/kafka", "chroot": "/kafka",
             "brokers": 1, "zookeeper": [{"myid": 1, "port": 1, "pid": gone.pid, "data_dir": str(d / "zk1")}],
             "daemon": {"pid": gone.pid, "port": None, "identity": None}}
    (d / "state.json").write_text(text if text is not None else json.dumps(state))
    return str(d)


def migration_sandbox(c: Ctx) -> str:
    """A migration sandbox's directory as `sandbox up --kafka-home DIR --mode migration` leaves it (brokers 1-2 in phase
    zk, controllers 3001-3003 migrating), its processes never started here: `sandbox phase` rewrites a node's
    server.properties, running or not."""
    from kadmin.sandbox.manager import STATE_VERSION

    d = c.tmp / "migration-sandbox"
    d.mkdir()

    def node(role: str, node_id: int, port: int, phase: str) -> dict[str, Any]:
        return {"role": role, "id": node_id, "port": port, "dir": str(d / f"{role}-{node_id}"), "pid": None,
                "identity": None, "phase": phase}

    nodes = [node("controller", i, 1000 + i, "migrating") for i in (3001, 3002, 3003)]
    nodes += [node("broker", i, 9091 + i, "zk") for i in (1, 2)]
    state = {"version": STATE_VERSION, "dir": str(d), "engine": "kafka", "mode": "migration", "kafka_version": "3.9.1",
             "kafka_home": str(c.tmp / "kafka"), "connect": "127.0.0.1:1/kafka", "chroot": "/kafka", "brokers": 2,
             "zookeeper": [{"myid": 1, "port": 1, "pid": None, "data_dir": str(d / "zk1"), "identity": None}],
             "daemon": {"pid": None, "port": None, "identity": None}, "nodes": nodes, "cluster_id": CLUSTER_ID,
             "bootstrap_servers": "127.0.0.1:9092,127.0.0.1:9093",
             "bootstrap_controllers": "127.0.0.1:4001,127.0.0.1:4002,127.0.0.1:4003"}
    (d / "state.json").write_text(json.dumps(state))
    return str(d)


def pre_migration(c: Ctx) -> Zk:
    """ZooKeeper-mode brokers 1-2 (no migration settings) and /migration as the KRaft controllers write it when they
    wait for the brokers (PRE_MIGRATION; docs/migration-observed.md)."""
    z = c.cluster(1, 2, serve_kafka=True)
    mig = {"version": 0, "kraft_metadata_offset": -1, "kraft_controller_id": -1, "kraft_metadata_epoch": -1,
           "kraft_controller_epoch": -1}
    # more than --stuck-after (1 ms) old when kadmin reads the clock: after it asked the brokers ApiVersions
    return z.put("/migration", json.dumps(mig).encode())


def ctrl_c(c: Ctx, flag: str, *argv: str) -> Ran:
    """`python -m kadmin ARGV FLAG SERVER` against a server that never answers, and Ctrl-C (SIGINT) once it has
    connected: the command is then blocked inside, as on a hung cluster."""
    server = c.stack.enter_context(Hung())
    args = [*argv, flag, server.address, "--connect-timeout", "60"]
    p = subprocess.Popen([sys.executable, "-m", "kadmin", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert server.accepted.wait(60), "kadmin never connected"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return Ran(args, p.returncode, out, err)


def fifo(c: Ctx) -> str:
    """A path ingest cannot list: a named pipe given as a directory of logs (as root, a directory without read
    permission is still read)."""
    path = c.tmp / "pipe"
    os.mkfifo(path)
    return str(path)


# ---------------------------------------------------------------------------------------------- the cases
def stale_epoch(c: Ctx) -> list[str]:
    z = three_brokers_serving(c)
    old = z.epoch(3)
    z.fleet.bounce(3)
    assert z.epoch(3) > old
    return ["brokers", "shutdown", "3", "--epoch", str(old), *z.z]


def undrain_ok(c: Ctx) -> list[str]:
    z = c.cluster(1, 4).topic("tail", {0: [1, 4]})
    saved = str(c.tmp / "drain.json")
    c.ok("brokers", "drain", "4", "--save", saved, *z.z)
    return ["brokers", "undrain", "4", "--from", saved, *z.z]


def undrain_not_elected(c: Ctx) -> list[str]:
    z = c.cluster(1).topic("t", {0: [4, 1]})  # broker 4 out of the ISR: its preferred leadership cannot return
    z.fleet.register(BrokerSpec(4))
    return ["brokers", "undrain", "4", "--from", drain_file(c, 4, {("t", 0): [4, 1]}), "--timeout", EXPIRES, *z.z]


def reassigning(c: Ctx, *brokers: int, topic: str) -> Zk:
    """A cluster with a reassignment of `topic`-0 in flight (Kafka's /admin/reassign_partitions)."""
    z = c.cluster(*brokers).topic(topic, {0: list(brokers)})
    doc = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": list(reversed(brokers))}]}
    return z.put("/admin/reassign_partitions", json.dumps(doc).encode())


def claim_ok(c: Ctx) -> list[str]:
    return ["ids", "claim", "--host", "box-a", "--config-id", "7", *c.cluster(1).z]


def map_ok(c: Ctx) -> list[str]:
    return ["ids", "map", "box-a", "7", *c.cluster(1).z]


def unmap_ok(c: Ctx) -> list[str]:
    z = c.cluster(1).put("/brokers/hosts/box-a", b'{"version":0,"broker.id":7}')
    return ["ids", "unmap", "box-a", *z.z]


def gc_ok(c: Ctx) -> list[str]:
    z = c.cluster(1).put("/brokers/hosts/box-old", b'{"version":0,"broker.id":1}')  # 1 registered from 127.0.0.1
    return ["ids", "gc", *z.z]


def ingest_ok(c: Ctx) -> list[str]:
    c.w.spark()
    return ingest_args(c, c.w.tmp / "history-table")  # the report case reads it (ingesting twice adds nothing)


def ingest_locked(c: Ctx) -> list[str]:
    with_lock_held(c, c.tmp / "table")
    return ingest_args(c, c.tmp / "table")


def ingest_out_is_a_file(c: Ctx) -> list[str]:
    args = ingest_args(c, c.tmp / "table")
    args[args.index("--out") + 1] = c.file("not-a-directory", "")
    return args


def lagging_observer(s: Scenario) -> None:
    s.quorum.observers[0].log_end_offset -= 5000


def no_leader(s: Scenario) -> None:
    s.quorum.leader_id = -1


def ahead_of_the_clock(s: Scenario) -> None:
    for r in s.quorum.voters + s.quorum.observers:
        r.last_fetch_timestamp = r.last_caught_up_timestamp = int(time.time() * 1000) + 86_400_000


def fenced(broker: int) -> Callable[[Scenario], None]:
    def change(s: Scenario) -> None:
        next(b for b in s.brokers if b.node_id == broker).fenced = True
    return change


def refused_unregister(s: Scenario) -> None:
    fenced(3)(s)
    s.unregister_errors[3] = NOT_CONTROLLER


def not_leader_anywhere(s: Scenario) -> None:
    s.quorum.partition_error = 6  # NOT_LEADER_OR_FOLLOWER from every node, as during an election


def brokers_without_feature_flags(s: Scenario) -> None:
    """Every broker answers ApiVersions at most v2, which carries no feature flags (Kafka before 2.7)."""
    for b in s.brokers:
        s.node_apis[b.node_id] = {API_VERSIONS: (0, 2)}


def broker_3_not_rolled(s: Scenario) -> None:
    """Broker 3 still runs 3.9 (metadata.version up to 3.9-IV0), the other nodes 4.3."""
    s.node_features[3] = {"metadata.version": (1, 21), "kraft.version": (0, 1)}


def update_features_rejected(s: Scenario) -> None:
    """The controller rejects UpdateFeatures: a broker still on 3.9 registered after kadmin asked every node."""
    s.update_features_error = INVALID_UPDATE_VERSION
    s.update_features_error_message = ("Invalid update version 25 for feature metadata.version. Broker 4 only "
                                       "supports versions 1-21")


def at_the_controllers(c: Ctx) -> list[str]:
    """--bootstrap-controller alone: the controllers do not give the brokers' addresses (KIP-919)."""
    return ["--bootstrap-controller", c.w.kraft_server.bootstrap("controller")]


NO_BROKER = ["-b", "127.0.0.1:1", "--connect-timeout", "1"]  # refused at once: unreachable


def roll_journal(c: Ctx, cluster_id: str, *, finished: bool) -> str:
    """A roll's state directory as `roll run` leaves it (docs/roll.md): brokers 1 and 2 restarted (finished), or
    broker 2 restarted and the roll stopped at broker 1's stop hook."""
    d = c.tmp / "roll"
    d.mkdir()
    ev: list[dict[str, Any]] = [{"event": "roll_started", "at": "2026-01-01T00:00:00.000Z", "journal_version": 1,
                                 "cluster_id": cluster_id, "mode": "zookeeper", "nodes_asked": None,
                                 "controllers": "first", "parallel": 1, "nodes": [{"id": 2, "role": "broker"},
                                                                                 {"id": 1, "role": "broker"}],
                                 "order": [2, 1], "step_timeout": 600.0, "pid": 1}]
    at = "2026-01-01T00:00:30.000Z"
    for node in (2, 1) if finished else (2,):
        ev += [{"event": "step", "at": at, "node": node, "role": "broker", "step": s, "status": st}
               for s in ("can_stop", "drain", "shutdown", "stop", "wait_stopped", "start", "wait_restarted",
                         "wait_in_sync", "undrain", "wait_healthy", "settle") for st in ("started", "done")]
        ev.append({"event": "node_done", "at": at, "node": node, "role": "broker", "status": "done"})
    if finished:
        ev.append({"event": "roll_done", "at": "2026-01-01T00:01:00.000Z", "elapsed_s": 60.0})
    else:
        ev += [{"event": "step", "at": at, "node": 1, "role": "broker", "step": "stop", "status": "started"},
               {"event": "step", "at": at, "node": 1, "role": "broker", "step": "stop", "status": "failed"},
               {"event": "roll_failed", "at": at, "node": 1, "step": "stop", "reason": "hook_failed",
                "message": "exited 1", "exit_code": 9}]
    (d / "journal.ndjson").write_text("".join(json.dumps(e) + "\n" for e in ev))
    return str(d)


def held(c: Ctx, state: str) -> str:
    """`state` with its lock held, as a live `roll run` holds it (flock on DIR/lock), until the case ends."""
    import fcntl

    fd = os.open(Path(state) / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    c.stack.callback(os.close, fd)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.pwrite(fd, b"4242\n", 0)
    return state


# --bootstrap-controller and -b where nothing listens: the state is read from ZooKeeper alone
NO_CONTROLLERS = ["--bootstrap-controller", "127.0.0.1:1", "-b", "127.0.0.1:1"]


def migration_roll(c: Ctx, phase: str, *args: str) -> list[str]:
    """`migration roll --phase PHASE` whose hooks touch nothing (`true`)."""
    return ["migration", "roll", "--phase", phase, "--state", str(c.tmp / "roll"), "--stop", "true", "--start", "true",
            *args]


def in_seconds(s: float) -> str:
    """An ISO 8601 time `s` seconds from now, with its offset (`--until`)."""
    import datetime

    return (datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=s)).isoformat()


def roll_run(c: Ctx, *args: str, state: str | None = None) -> list[str]:
    """`roll run` whose hooks touch nothing (`true`): what it does is up to the gates."""
    return ["roll", "run", "--state", state or str(c.tmp / "roll"), "--stop", "true", "--start", "true", *args]


CASES: dict[tuple[str, int], Case] = {
    # brokers can-stop
    ("brokers can-stop", 0): lambda c: ["brokers", "can-stop", "1", *c.w.healthy.z],
    ("brokers can-stop", 1): lambda c: ["brokers", "can-stop", "5", *c.w.healthy.z],  # the only replica of solo-0
    ("brokers can-stop", 3): lambda c: ["brokers", "can-stop", "1"],  # no cluster given
    ("brokers can-stop", 4): lambda c: ["brokers", "can-stop", "1", *NOWHERE],
    ("brokers can-stop", 5): lambda c: ["brokers", "can-stop", "2", *c.w.deleting.z],  # doomed-0 unreadable
    # brokers diff
    ("brokers diff", 0): lambda c: ["brokers", "diff", "--since", listing(c, c.w.healthy), *c.w.healthy.z],
    ("brokers diff", 1): lambda c: ["brokers", "diff", "--since", listing(c, c.w.empty), "--exit-code",
                                    *c.w.healthy.z],
    ("brokers diff", 2): lambda c: ["brokers", "diff", "--since", str(c.tmp / "never-saved.json"), *c.w.healthy.z],
    ("brokers diff", 3): lambda c: ["brokers", "diff", "--since", listing(c, c.w.empty), *c.w.kraft],
    ("brokers diff", 4): lambda c: ["brokers", "diff", "--since", listing(c, c.w.empty), *NOWHERE],
    ("brokers diff", 5): lambda c: ["brokers", "diff", "--since", listing(c, c.w.empty), *c.w.garbage.z],
    # brokers drain
    ("brokers drain", 0): lambda c: ["brokers", "drain", "4", *c.w.healthy.z],
    ("brokers drain", 1): lambda c: ["brokers", "drain", "5", *c.w.healthy.z],
    ("brokers drain", 3): lambda c: ["brokers", "drain", "4"],
    ("brokers drain", 4): lambda c: ["brokers", "drain", "4", *NOWHERE],
    ("brokers drain", 5): lambda c: ["brokers", "drain", "2", *c.w.garbage.z],  # it hosts broken-0, unreadable
    ("brokers drain", 7): lambda c: ["brokers", "drain", "1", *reassigning(c, 1, 2, topic="orders").z],
    # brokers list
    ("brokers list", 0): lambda c: ["brokers", "list", *c.w.healthy.z],
    ("brokers list", 3): lambda c: ["brokers", "list"],
    ("brokers list", 4): lambda c: ["brokers", "list", *NOWHERE],
    ("brokers list", 5): lambda c: ["brokers", "list", *c.w.garbage.z],
    # brokers max-epoch
    ("brokers max-epoch", 0): lambda c: ["brokers", "max-epoch", *c.w.healthy.z],
    ("brokers max-epoch", 1): lambda c: ["brokers", "max-epoch", *c.w.empty.z],
    ("brokers max-epoch", 3): lambda c: ["brokers", "max-epoch", *c.w.kraft],
    ("brokers max-epoch", 4): lambda c: ["brokers", "max-epoch", *NOWHERE],
    ("brokers max-epoch", 5): lambda c: ["brokers", "max-epoch", *c.w.garbage.z],
    # brokers show
    ("brokers show", 0): lambda c: ["brokers", "show", "1", *c.w.healthy.z],
    ("brokers show", 1): lambda c: ["brokers", "show", "42", *c.w.healthy.z],
    ("brokers show", 3): lambda c: ["brokers", "show", "1", *c.w.kraft],
    ("brokers show", 4): lambda c: ["brokers", "show", "1", *NOWHERE],
    ("brokers show", 5): lambda c: ["brokers", "show", "7", *c.w.garbage.z],
    # brokers shutdown
    ("brokers shutdown", 0): lambda c: ["brokers", "shutdown", "2", *three_brokers_serving(c).z],
    ("brokers shutdown", 1): lambda c: ["brokers", "shutdown", "2", "--force",  # stuck-0's other replica never came
                                        *three_brokers_serving(c).topic("stuck", {0: [2, 4]}).z],
    ("brokers shutdown", 3): lambda c: ["brokers", "shutdown", "1", *c.w.kraft],
    ("brokers shutdown", 4): lambda c: ["brokers", "shutdown", "1", *NOWHERE],
    ("brokers shutdown", 5): lambda c: ["brokers", "shutdown", "2", "--dry-run", *c.w.deleting.z],  # doomed-0
    ("brokers shutdown", 6): stale_epoch,
    ("brokers shutdown", 7): lambda c: ["brokers", "shutdown", "5", *c.w.healthy.z],
    ("brokers shutdown", 8): lambda c: ["brokers", "shutdown", "2", *migrating(c).z],
    # brokers undrain
    ("brokers undrain", 0): undrain_ok,
    ("brokers undrain", 1): undrain_not_elected,
    ("brokers undrain", 2): lambda c: ["brokers", "undrain", "4", "--from", str(c.tmp / "never-saved.json"),
                                       *c.w.healthy.z],
    ("brokers undrain", 3): lambda c: ["brokers", "undrain", "4", "--from", drain_file(c, 4, {("tail", 0): [1, 4]})],
    ("brokers undrain", 4): lambda c: ["brokers", "undrain", "4", "--from", drain_file(c, 4, {("tail", 0): [1, 4]}),
                                       *NOWHERE],
    ("brokers undrain", 5): lambda c: ["brokers", "undrain", "4", "--from",
                                       drain_file(c, 4, {("tail", 0): [1, 4], ("unparsable", 0): [1, 4]}),
                                       *c.cluster(1, 4).topic("tail", {0: [1, 4]})
                                       .put("/brokers/topics/unparsable", b"garbage").z],
    ("brokers undrain", 7): lambda c: ["brokers", "undrain", "2", "--from", drain_file(c, 2, {("tail", 0): [1, 2]}),
                                       *reassigning(c, 1, 2, topic="tail").z],
    # brokers unregister (KRaft)
    ("brokers unregister", 0): lambda c: ["brokers", "unregister", "3", *c.kraft(fenced(3))],
    ("brokers unregister", 3): lambda c: ["brokers", "unregister", "1", *c.w.healthy.z],  # ZooKeeper mode
    ("brokers unregister", 4): lambda c: ["brokers", "unregister", "3", "-b", "127.0.0.1:1", "--connect-timeout",
                                          "1"],
    ("brokers unregister", 6): lambda c: ["brokers", "unregister", "3", *c.kraft(refused_unregister)],
    ("brokers unregister", 7): lambda c: ["brokers", "unregister", "1", *c.w.kraft],  # active
    # brokers wait
    ("brokers wait", 0): lambda c: ["brokers", "wait", "1", "--registered", "--timeout", "60", *c.w.healthy.z],
    ("brokers wait", 1): lambda c: ["brokers", "wait", "42", "--registered", "--timeout", EXPIRES, *c.w.healthy.z],
    ("brokers wait", 3): lambda c: ["brokers", "wait", "1", "--epoch-gt", "5", "--timeout", "5", *c.w.kraft],
    ("brokers wait", 4): lambda c: ["brokers", "wait", "1", "--registered", "--timeout", "5", *NOWHERE],
    ("brokers wait", 5): lambda c: ["brokers", "wait", "1", "--in-sync", "--timeout", "60",  # topic unparsable
                                    *c.w.garbage.z],
    # brokers watch
    ("brokers watch", 0): lambda c: ["brokers", "watch", "--timeout", EXPIRES, *c.w.healthy.z],
    ("brokers watch", 3): lambda c: ["brokers", "watch", "--timeout", EXPIRES],
    ("brokers watch", 4): lambda c: ["brokers", "watch", "--timeout", "5", *NOWHERE],
    # cluster check-id
    ("cluster check-id", 0): lambda c: ["cluster", "check-id", meta_properties(c, CLUSTER_ID), *c.w.healthy.z],
    ("cluster check-id", 1): lambda c: ["cluster", "check-id", meta_properties(c, "another"), *c.w.healthy.z],
    ("cluster check-id", 2): lambda c: ["cluster", "check-id", str(c.tmp / "nowhere.properties"), *c.w.healthy.z],
    ("cluster check-id", 3): lambda c: ["cluster", "check-id", meta_properties(c, CLUSTER_ID)],
    ("cluster check-id", 4): lambda c: ["cluster", "check-id", meta_properties(c, CLUSTER_ID), *NOWHERE],
    # cluster id
    ("cluster id", 0): lambda c: ["cluster", "id", *c.w.healthy.z],
    ("cluster id", 3): lambda c: ["cluster", "id"],
    ("cluster id", 4): lambda c: ["cluster", "id", *NOWHERE],
    ("cluster id", 5): lambda c: ["cluster", "id", *c.w.garbage.z],  # /cluster/id holds garbage
    # completion
    ("completion", 0): lambda c: ["completion", "bash"],
    # features describe (KRaft)
    ("features describe", 0): lambda c: ["features", "describe", *c.w.kraft],
    ("features describe", 3): lambda c: ["features", "describe", *c.w.healthy.z],  # ZooKeeper mode
    ("features describe", 4): lambda c: ["features", "describe", *NO_BROKER],
    ("features describe", 5): lambda c: ["features", "describe", *at_the_controllers(c)],  # the brokers not asked
    ("features describe", 8): lambda c: ["features", "describe", *c.kraft(brokers_without_feature_flags)],
    # features upgrade: a cluster formatted at 3.9 (metadata.version 3.9-IV0), its nodes on 4.3
    ("features upgrade", 0): lambda c: ["features", "upgrade", "--release-version", "4.0", *c.kraft(lambda s: None)],
    ("features upgrade", 2): lambda c: ["features", "upgrade", "--release-version", "9.9", *c.w.kraft],
    ("features upgrade", 3): lambda c: ["features", "upgrade", "--release-version", "4.0", *c.w.healthy.z],
    ("features upgrade", 4): lambda c: ["features", "upgrade", "--release-version", "4.0", *NO_BROKER],
    ("features upgrade", 6): lambda c: ["features", "upgrade", "--release-version", "4.0",
                                        *c.kraft(update_features_rejected)],
    ("features upgrade", 7): lambda c: ["features", "upgrade", "--release-version", "4.0",
                                        *c.kraft(broker_3_not_rolled)],
    ("features upgrade", 8): lambda c: ["features", "upgrade", "--release-version", "4.0",
                                        *c.kraft(brokers_without_feature_flags)],
    ("help", 0): lambda c: ["help", "connection"],
    # history ingest
    ("history ingest", 0): ingest_ok,
    ("history ingest", 2): ingest_out_is_a_file,
    ("history ingest", 5): lambda c: ["history", "ingest", fifo(c), "--cluster", "prod", "--out",  # unlistable
                                      str(c.tmp / "table")],
    ("history ingest", 7): ingest_locked,
    # history report
    ("history report", 0): lambda c: ["history", "report", history_table(c), "bounces", "--master", "local[2]"],
    ("history report", 2): lambda c: ["history", "report", str(c.tmp), "bounces"],
    # ids claim
    ("ids claim", 0): claim_ok,
    ("ids claim", 1): lambda c: ["ids", "claim", "--host", "box-new", *c.w.missing.z],  # ids 8 and 9 both missing
    ("ids claim", 3): lambda c: ["ids", "claim", "--host", "box-new", *c.w.kraft],
    ("ids claim", 4): lambda c: ["ids", "claim", "--host", "box-new", *NOWHERE],
    ("ids claim", 5): lambda c: ["ids", "claim", "--host", "box-bad", *c.w.garbage.z],
    # ids gc
    ("ids gc", 0): gc_ok,
    ("ids gc", 3): lambda c: ["ids", "gc", *c.w.kraft],
    ("ids gc", 4): lambda c: ["ids", "gc", *NOWHERE],
    ("ids gc", 5): lambda c: ["ids", "gc", *c.w.garbage.z],
    # ids hosts
    ("ids hosts", 0): lambda c: ["ids", "hosts", *c.w.healthy.z],
    ("ids hosts", 3): lambda c: ["ids", "hosts", *c.w.kraft],
    ("ids hosts", 4): lambda c: ["ids", "hosts", *NOWHERE],
    ("ids hosts", 5): lambda c: ["ids", "hosts", *c.w.garbage.z],
    # ids map
    ("ids map", 0): map_ok,
    ("ids map", 3): lambda c: ["ids", "map", "box-a", "7", *c.w.kraft],
    ("ids map", 4): lambda c: ["ids", "map", "box-a", "7", *NOWHERE],
    ("ids map", 5): lambda c: ["ids", "map", "box-bad", "42", *c.w.garbage.z],
    ("ids map", 7): lambda c: ["ids", "map", "box-a", "1", *c.w.healthy.z],  # 1 is registered from 127.0.0.1
    # ids missing
    ("ids missing", 0): lambda c: ["ids", "missing", *c.w.healthy.z],
    ("ids missing", 3): lambda c: ["ids", "missing", *c.w.kraft],
    ("ids missing", 4): lambda c: ["ids", "missing", *NOWHERE],
    ("ids missing", 5): lambda c: ["ids", "missing", *c.w.garbage.z],
    # ids resolve
    ("ids resolve", 0): lambda c: ["ids", "resolve", "--host", "box-new", *c.w.healthy.z],
    ("ids resolve", 1): lambda c: ["ids", "resolve", "--host", "box-new", *c.w.missing.z],
    ("ids resolve", 3): lambda c: ["ids", "resolve", "--host", "box-new", *c.w.kraft],
    ("ids resolve", 4): lambda c: ["ids", "resolve", "--host", "box-new", *NOWHERE],
    ("ids resolve", 5): lambda c: ["ids", "resolve", "--host", "box-bad", *c.w.garbage.z],
    # ids unmap
    ("ids unmap", 0): unmap_ok,
    ("ids unmap", 1): lambda c: ["ids", "unmap", "box-none", *c.w.healthy.z],
    ("ids unmap", 3): lambda c: ["ids", "unmap", "box-a", *c.w.kraft],
    ("ids unmap", 4): lambda c: ["ids", "unmap", "box-a", *NOWHERE],
    # partitions check: the monitoring convention
    ("partitions check", 0): lambda c: ["partitions", "check", *c.w.healthy.z],
    ("partitions check", 1): lambda c: ["partitions", "check", *c.w.missing.z],  # m-0 and m-1 under-replicated
    ("partitions check", 2): lambda c: ["partitions", "check", *c.w.garbage.z],
    ("partitions check", 3): lambda c: ["partitions", "check"],
    ("partitions check", 130): lambda c: ctrl_c(c, "-z", "partitions", "check"),
    # partitions list
    ("partitions list", 0): lambda c: ["partitions", "list", *c.w.healthy.z],
    ("partitions list", 3): lambda c: ["partitions", "list"],
    ("partitions list", 4): lambda c: ["partitions", "list", *NOWHERE],
    ("partitions list", 5): lambda c: ["partitions", "list", *c.w.garbage.z],
    # migration status: the monitoring convention (docs/migration.md)
    ("migration status", 0): lambda c: ["migration", "status", *c.cluster(1, 2, serve_kafka=True).z],
    ("migration status", 1): lambda c: ["migration", "status", "--stuck-after", "0.001", *pre_migration(c).z],
    ("migration status", 2): lambda c: ["migration", "status", *c.cluster(10, serve_kafka=True).z, *c.w.kraft],
    ("migration status", 3): lambda c: ["migration", "status"],
    ("migration status", 130): lambda c: ctrl_c(c, "-b", "migration", "status"),
    # quorum check: the monitoring convention
    ("quorum check", 0): lambda c: ["quorum", "check", *c.w.kraft],
    ("quorum check", 1): lambda c: ["quorum", "check", "--max-lag-ms", "600000", *c.kraft(lagging_observer)],
    ("quorum check", 2): lambda c: ["quorum", "check", *c.kraft(no_leader)],
    ("quorum check", 3): lambda c: ["quorum", "check"],
    ("quorum check", 130): lambda c: ctrl_c(c, "-b", "quorum", "check"),
    # quorum describe
    ("quorum describe", 0): lambda c: ["quorum", "describe", "--status", *c.w.kraft],
    ("quorum describe", 1): lambda c: ["quorum", "describe", "--replication", "--human-readable",
                                       *c.kraft(ahead_of_the_clock)],
    ("quorum describe", 3): lambda c: ["quorum", "describe", "--status"],
    ("quorum describe", 4): lambda c: ["quorum", "describe", "--status", *c.kraft(no_leader)],
    ("quorum describe", 6): lambda c: ["quorum", "describe", "--status", *c.kraft(not_leader_anywhere)],
    # roll plan
    ("roll plan", 0): lambda c: ["roll", "plan", *c.w.healthy.z],
    ("roll plan", 2): lambda c: ["roll", "plan", "--nodes", "1,42", *c.w.healthy.z],
    ("roll plan", 3): lambda c: ["roll", "plan"],
    ("roll plan", 4): lambda c: ["roll", "plan", *NOWHERE],
    ("roll plan", 5): lambda c: ["roll", "plan", *c.w.garbage.z],
    # roll run: each case's hooks touch nothing; 0: the roll in DIR had finished
    ("roll run", 0): lambda c: roll_run(c, *c.w.healthy.z, state=roll_journal(c, CLUSTER_ID, finished=True)),
    ("roll run", 1): lambda c: roll_run(c, "--nodes", "5", "--step-timeout", "1", *c.w.healthy.z),  # can-stop 5
    ("roll run", 2): lambda c: roll_run(c, "--nodes", "42", *c.w.healthy.z),
    ("roll run", 3): lambda c: roll_run(c, *c.w.healthy.z, state=roll_journal(c, "another", finished=False)),
    # (and a cluster that cannot serve a roll, e.g. brokers without the reassignment API, before the first node)
    ("roll run", 4): lambda c: roll_run(c, "--step-timeout", "1", *NOWHERE),
    ("roll run", 7): lambda c: roll_run(c, "--step-timeout", "1", *c.w.missing.z),  # under-replicated: refused
    ("roll run", 9): lambda c: ["roll", "run", "--state", str(c.tmp / "roll"), "--stop", "exit 3", "--start", "true",
                                "--nodes", "2", *c.cluster(1, 2, serve_kafka=True).z],
    # 10: paused before the first node (--pause-after 0) while a 3 s window closes: nothing touched
    ("roll run", 10): lambda c: roll_run(c, "--pause-after", "0", "--until", in_seconds(3), *c.w.healthy.z),
    # migration roll: refused before the roll begins (the rest is the roll engine's, provoked for `roll run` above)
    ("migration roll", 2): lambda c: migration_roll(c, "brokers-kraft", *NOWHERE),  # no --bootstrap-controller
    ("migration roll", 4): lambda c: migration_roll(c, "brokers-migrating", *NOWHERE, *NO_CONTROLLERS),
    ("migration roll", 7): lambda c: migration_roll(c, "brokers-kraft", *pre_migration(c).z, *NO_CONTROLLERS),
    # roll confirm (the journal only): broker 1's stop hook failed, kadmin never saw it go
    ("roll confirm", 0): lambda c: ["roll", "confirm", "--state", roll_journal(c, CLUSTER_ID, finished=False),
                                    "--node", "1", "--never-went-down"],
    ("roll confirm", 2): lambda c: ["roll", "confirm", "--state", roll_journal(c, CLUSTER_ID, finished=False),
                                    "--node", "42", "--went-down"],
    ("roll confirm", 3): lambda c: ["roll", "confirm", "--state", c.file("journal.ndjson", "{not json\n") and
                                    str(c.tmp), "--node", "1", "--went-down"],
    ("roll confirm", 7): lambda c: ["roll", "confirm", "--state",
                                    held(c, roll_journal(c, CLUSTER_ID, finished=False)), "--node", "1",
                                    "--went-down"],
    # roll pause / continue (the journal only)
    ("roll pause", 0): lambda c: ["roll", "pause", "--state", roll_journal(c, CLUSTER_ID, finished=False)],
    ("roll pause", 2): lambda c: ["roll", "pause", "--state", str(c.tmp)],  # no journal there
    ("roll continue", 0): lambda c: ["roll", "continue", "--state", roll_journal(c, CLUSTER_ID, finished=False)],
    ("roll continue", 2): lambda c: ["roll", "continue", "--state", roll_journal(c, CLUSTER_ID, finished=True)],
    # roll status (the journal only)
    ("roll status", 0): lambda c: ["roll", "status", "--state", roll_journal(c, CLUSTER_ID, finished=False)],
    ("roll status", 2): lambda c: ["roll", "status", "--state", str(c.tmp)],  # no journal there
    ("roll status", 3): lambda c: ["roll", "status", "--state", c.file("journal.ndjson", "{not json\n") and
                                   str(c.tmp)],
    # sandbox
    ("sandbox bounce", 0): lambda c: ["sandbox", "bounce", "1", "--dir", str(sandbox_broker(c, 1, running=True))],
    ("sandbox bounce", 3): lambda c: ["sandbox", "bounce", "1", "--dir", no_sandbox(c)],
    ("sandbox down", 0): lambda c: ["sandbox", "down", "--dir", no_sandbox(c)],  # nothing to stop
    ("sandbox down", 3): lambda c: ["sandbox", "down", "--dir", sandbox_state(c, "{not json")],
    ("sandbox kill", 0): lambda c: ["sandbox", "kill", "2", "--dir", str(sandbox_broker(c, 2, running=True))],
    ("sandbox kill", 3): lambda c: ["sandbox", "kill", "2", "--dir", no_sandbox(c)],
    ("sandbox phase", 0): lambda c: ["sandbox", "phase", "1", "migrating", "--dir", migration_sandbox(c)],
    ("sandbox phase", 1): lambda c: ["sandbox", "phase", "9", "migrating", "--dir", migration_sandbox(c)],
    ("sandbox phase", 2): lambda c: ["sandbox", "phase", "3001", "kraft", "--dir", migration_sandbox(c)],  # a broker's
    ("sandbox phase", 3): lambda c: ["sandbox", "phase", "1", "migrating", "--dir", sandbox_state(c)],  # emulated
    ("sandbox start", 0): lambda c: ["sandbox", "start", "2", "--dir", str(sandbox_broker(c, 2, running=False))],
    ("sandbox start", 3): lambda c: ["sandbox", "start", "2", "--dir", no_sandbox(c)],
    ("sandbox status", 0): lambda c: ["sandbox", "status", "--dir", str(c.w.sandbox())],
    ("sandbox status", 1): lambda c: ["sandbox", "status", "--dir", sandbox_state(c)],  # its processes are gone
    ("sandbox status", 3): lambda c: ["sandbox", "status", "--dir", no_sandbox(c)],
    ("sandbox up", 0): lambda c: ["sandbox", "up", "--brokers", "2", "--dir", str(c.w.sandbox())],  # running
    ("sandbox up", 3): lambda c: ["sandbox", "up", "--brokers", "3", "--dir", str(c.w.sandbox())],  # not its size
}

# Documented codes the command never returns: (command, code) -> (what its case returns instead, why).
NEVER_RETURNED: dict[tuple[str, int], tuple[int, str]] = {}  # none left (issue 34 §6)

# Documented codes no fast fixture can provoke: (command, code) -> why.
UNPROVOKABLE: dict[tuple[str, int], str] = {
    ("migration roll", 0): "a whole phase needs real Kafka's migration: tests/kafka/test_real_migration.py",
    ("migration roll", 1): "roll run's engine (provoked for `roll run`); the phase's end state not reached needs real "
                           "Kafka's migration",
    ("migration roll", 3): "roll run's engine and journal (provoked for `roll run`), past a real migration's entry "
                           "gate",
    ("migration roll", 9): "roll run's hooks (provoked for `roll run`), past a real migration's entry gate",
}


def no_cluster_id(c: Ctx) -> list[str]:
    z = c.cluster(1)
    z.kz.delete("/cluster/id")  # a cluster no 0.10.1+ broker ever started in
    return ["cluster", "id", *z.z]


def at_a_controller(c: Ctx) -> list[str]:
    """--bootstrap-server given a controller's address (the controllers describe only themselves, KIP-919)."""
    return ["--bootstrap-server", c.w.kraft_server.address(3000, "controller")]


# The emulated KRaft broker advertises no ListPartitionReassignments (key 46), as Kafka before
# 2.4: drain and undrain say the cluster does not serve the operation (exit 8).

# Codes this test found returned and not documented, documented since (kadmin/cli/exit_docs.py): their cases.
FOUND: dict[tuple[str, int], Case] = {
    ("brokers drain", 8): lambda c: ["brokers", "drain", "1", "--dry-run", *c.w.kraft],  # no reassignment API: exit 8
    ("brokers undrain", 8): lambda c: ["brokers", "undrain", "4", "--from", drain_file(c, 4, {("tail", 0): [1, 4]}),
                                       *c.w.kraft],
    # ... and a roll cannot tell whether one is in flight: plan and run (before its first node) say so too
    ("roll plan", 8): lambda c: ["roll", "plan", *c.w.kraft],
    # --count N not reached before --timeout (the option's help says exit 1)
    ("brokers watch", 1): lambda c: ["brokers", "watch", "--count", "1", "--timeout", EXPIRES, *c.w.healthy.z],
    # UnregisterBroker answers BROKER_ID_NOT_REGISTERED: NotFound
    ("brokers unregister", 1): lambda c: ["brokers", "unregister", "42", *c.w.kraft],
    ("cluster id", 1): no_cluster_id,  # no /cluster/id: NotFound ('No cluster ID found')
    # nothing to ingest (no log, snapshot or NDJSON found)
    ("history ingest", 1): lambda c: ["history", "ingest", str(c.tmp), "--cluster", "prod", "--out",
                                      str(c.tmp / "table")],
    # --broker names a broker neither registered nor assigned: NotFound
    ("partitions list", 1): lambda c: ["partitions", "list", "--broker", "42", *c.w.healthy.z],
    # the sandbox has no broker 9, or broker 1 runs already (the daemon refuses: ConditionNotMet)
    ("sandbox bounce", 1): lambda c: ["sandbox", "bounce", "9", "--dir", str(c.w.sandbox())],
    ("sandbox kill", 1): lambda c: ["sandbox", "kill", "9", "--dir", str(c.w.sandbox())],
    ("sandbox start", 1): lambda c: ["sandbox", "start", "1", "--dir", str(sandbox_broker(c, 1, running=True))],
}
CASES.update(FOUND)

def documented() -> set[tuple[str, int]]:
    """Every (command, code) docs/exit-codes.md lists per command (kadmin/cli/docs.py's exit_codes_md)."""
    pairs = {(cmd, int(code)) for cmd, codes in exit_docs.COMMANDS.items() for code in codes}
    return pairs | {(cmd, int(v)) for cmd in CHECK_COMMANDS for v in [*Verdict, X.INTERRUPTED]}


def ident(key: tuple[str, int]) -> str:
    return f"{key[0].replace(' ', '-')}-{key[1]}"


def in_order(keys: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """By command, those that need Spark or the sandbox last: both start in the background meanwhile."""
    return sorted(keys, key=lambda k: (k[0].split()[0] in ("history", "sandbox"), k))


# ---------------------------------------------------------------------------------------------- the tests
def test_every_documented_code_has_a_case() -> None:
    assert set(exit_docs.CHECKS) == set(CHECK_COMMANDS)
    assert not set(CASES) & set(UNPROVOKABLE)
    assert set(NEVER_RETURNED) <= set(CASES)
    covered = set(CASES) | set(UNPROVOKABLE)
    assert covered == documented(), {"documented without a case": sorted(documented() - covered),
                                     "a case for no documented code": sorted(covered - documented())}


def provoke(c: Ctx, command: str, case: Case) -> Ran:
    got = case(c)
    ran = got if isinstance(got, Ran) else c.cli(*got)
    assert ran.argv[:len(command.split())] == command.split(), f"the case for {command} runs {ran.argv}"
    assert "Traceback" not in ran.stderr, str(ran)
    return ran


@pytest.mark.parametrize("key", in_order(CASES), ids=ident)
def test_documented_code_is_provoked(key: tuple[str, int], world: World, run_nozk: Any, tmp_path: Path) -> None:
    command, code = key
    with Ctx(world, run_nozk, tmp_path) as c:
        ran = provoke(c, command, CASES[key])
    if key in NEVER_RETURNED:
        instead, why = NEVER_RETURNED[key]
        assert ran.exit_code == instead, str(ran)
        pytest.xfail(f"documented {code} is never returned: {why}; `kadmin {' '.join(ran.argv)}` exits {instead}")
    assert ran.exit_code == code, str(ran)


@pytest.mark.parametrize("argv", [["brokers", "list"], ["brokers", "can-stop", "1"], ["cluster", "id"],
                                  ["partitions", "list"], ["brokers", "wait", "1", "--registered", "--timeout", "5"]])
def test_a_controller_given_as_bootstrap_server_is_a_configuration_error(argv: list[str], world: World,
                                                                         run_nozk: Any, tmp_path: Path) -> None:
    """--bootstrap-server given a controller's address: exit 3 naming --bootstrap-controller (was 6)."""
    with Ctx(world, run_nozk, tmp_path) as c:
        ran = c.cli(*argv, *at_a_controller(c))
    assert ran.exit_code == 3, str(ran)
    assert "--bootstrap-controller" in ran.stderr and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
