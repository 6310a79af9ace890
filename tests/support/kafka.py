"""Real Apache Kafka in the loop: a classpath fetched from Maven Central, Kafka's own tools, ZK-mode brokers.

- `kafka_home(version)`: a directory whose `libs/*.jar` is a Kafka distribution's classpath. Taken from
  `KADMIN_KAFKA_HOME_<major>_<minor>` (e.g. `KADMIN_KAFKA_HOME_3_9`) or `KADMIN_KAFKA_HOME`, else from
  the cache that `scripts/fetch-kafka.sh` fills (`KADMIN_KAFKA_CACHE`, default ~/.cache/kadmin/kafka),
  running the script when needed. Without Kafka a test is skipped locally, and fails under CI=true.
- `tool(home, main_class, *args)`: one of Kafka's command-line tools, as `bin/kafka-run-class.sh` runs it.
- `ZkModeBroker`: one 3.9 broker in ZooKeeper mode on loopback (its own dir, port, logs), started and
  stopped as an operator would (SIGTERM runs Kafka's controlled shutdown; SIGKILL is a crash), with waits
  on what ZooKeeper shows (its /brokers/ids/<id> znode), never on sleeps. With `request_log`, the broker
  logs every request it completes as Kafka's JSON request log (`requests()` reads it back).
- `zk_mode_cluster(...)`: a context manager running N such brokers under a fresh chroot of a ZooKeeper
  (a module fixture's body), yielding a `RealCluster`; `describe()` parses TopicCommand --describe.

Every broker process started here is killed at interpreter exit if a fixture did not stop it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kadmin.sandbox import cds
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import java_binary

REPO = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = REPO / "scripts" / "fetch-kafka.sh"

KAFKA_3_9 = "3.9.1"  # the last line with ZooKeeper mode
KAFKA_4 = "4.3.1"  # the newest 4.x whose kafka_2.13 and kafka-tools Maven Central both serve
ALIASES = {"3.9": KAFKA_3_9, "4": KAFKA_4, "4.x": KAFKA_4}

# The project's JVM flags for short-lived processes on small machines (kadmin/sandbox/zkserver.py).
TOOL_JVM = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
BROKER_JVM = ["-Xmx384m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]

# Kafka's tools log warnings to stderr (the distribution's tools-log4j.properties): reload4j for 3.9,
# log4j2 for 4.x. Both files are passed; each logging backend reads its own.
TOOLS_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""
TOOLS_LOG4J2 = """\
appender.stderr.type=Console
appender.stderr.name=STDERR
appender.stderr.target=SYSTEM_ERR
appender.stderr.layout.type=PatternLayout
appender.stderr.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.stderr.ref=STDERR
"""


class KafkaUnavailable(RuntimeError):
    """No Kafka classpath could be found or fetched."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(message: str) -> None:
    """Skip the test locally; under CI a missing Kafka fails it (CI must not go green without testing)."""
    if in_ci():
        pytest.fail(f"real Kafka unavailable under CI: {message}", pytrace=False)
    pytest.skip(f"real Kafka unavailable: {message}")


def resolve_version(version: str) -> str:
    return ALIASES.get(version, version)


def _check_home(home: Path, version: str) -> Path:
    jars = sorted((home / "libs").glob("kafka_2.13-*.jar"))
    major_minor = ".".join(version.split(".")[:2])
    if not any(j.name.startswith(f"kafka_2.13-{major_minor}.") for j in jars):
        found = ", ".join(j.name for j in jars) or "no kafka_2.13 jar"
        raise KafkaUnavailable(f"{home}/libs holds {found}, not Kafka {major_minor}")
    return home


def kafka_home(version: str = KAFKA_3_9) -> Path:
    """The home of Kafka `version` (3.9.1, 4.3.1, or 3.9 / 4): env override, else the fetched cache."""
    version = resolve_version(version)
    major_minor = "_".join(version.split(".")[:2])
    for var in (f"KADMIN_KAFKA_HOME_{major_minor}", "KADMIN_KAFKA_HOME"):
        if os.environ.get(var):
            try:
                return _check_home(Path(os.environ[var]), version)
            except KafkaUnavailable as e:
                unavailable(f"${var}: {e}")
    try:
        java_binary()
        proc = subprocess.run([str(FETCH_SCRIPT), version], capture_output=True, text=True, timeout=900)
    except Exception as e:  # no java, no bash, a hung Maven
        unavailable(f"{FETCH_SCRIPT.name} {version}: {e}")
        raise  # unreachable: unavailable() skips or fails
    if proc.returncode != 0:
        unavailable(f"{FETCH_SCRIPT.name} {version} exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    home = Path(proc.stdout.strip().splitlines()[-1])
    try:
        return _check_home(home, version)
    except KafkaUnavailable as e:
        unavailable(str(e))
        raise


_tools_dir: Path | None = None


def _tools_logging() -> list[str]:
    global _tools_dir
    if _tools_dir is None:
        d = Path(tempfile.mkdtemp(prefix="kadmin-kafka-tools-"))
        (d / "tools-log4j.properties").write_text(TOOLS_LOG4J)
        (d / "tools-log4j2.properties").write_text(TOOLS_LOG4J2)
        atexit.register(shutil.rmtree, d, ignore_errors=True)
        _tools_dir = d
    return [f"-Dlog4j.configuration=file:{_tools_dir / 'tools-log4j.properties'}",
            f"-Dlog4j2.configurationFile={_tools_dir / 'tools-log4j2.properties'}"]


def tool_argv(home: Path, main_class: str, *args: str) -> list[str]:
    """A Kafka tool's command line: `java -cp 'HOME/libs/*' MAIN ARGS` (what bin/kafka-run-class.sh runs)."""
    return [java_binary(), *TOOL_JVM, *cds.flags(home, server=False), *_tools_logging(), "-cp", cds.classpath(home),
            main_class, *args]


def tool(home: Path, main_class: str, *args: str, timeout: float = 180.0,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a Kafka tool: `java -cp 'HOME/libs/*' MAIN ARGS` (what bin/kafka-run-class.sh does).

    e.g. `tool(home, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", b, "--list")`.
    With `check`, a non-zero exit raises AssertionError carrying the tool's stderr. The tools in
    tool_server.SERVED run in this process's warm JVM for HOME (tests/support/tool_server.py): the same
    tool's `main`, answering what a fresh JVM would, without a JVM start per call.
    """
    from tests.support import tool_server

    proc = tool_server.run(home, main_class, list(args), timeout, tool_argv(home, main_class, *args))
    if check and proc.returncode != 0:
        raise AssertionError(f"{main_class} {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stderr.strip()[-2000:]}\n{proc.stdout.strip()[-1000:]}")
    return proc


# ---------------------------------------------------------------------------------------------------
# Brokers

_live: set[ZkModeBroker] = set()


@atexit.register
def _kill_leftovers() -> None:
    for b in list(_live):
        b.kill()


BROKER_LOG4J = """\
log4j.rootLogger=INFO, kafkaAppender
log4j.appender.kafkaAppender=org.apache.log4j.FileAppender
log4j.appender.kafkaAppender.File={log}
log4j.appender.kafkaAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.kafkaAppender.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.state.change.logger=INFO
"""

# Kafka's request log (KIP-673 JSON, one "Completed request:{...}" line per request at DEBUG), to its own file.
REQUEST_LOG4J = """\
log4j.logger.kafka.request.logger=DEBUG, requestAppender
log4j.additivity.kafka.request.logger=false
log4j.appender.requestAppender=org.apache.log4j.FileAppender
log4j.appender.requestAppender.File={log}
log4j.appender.requestAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.requestAppender.layout.ConversionPattern=%m%n
"""


class ZkModeBroker:
    """One Kafka 3.9 broker in ZooKeeper mode on 127.0.0.1, living in `base_dir`.

    `zk_connect` is `HOST:PORT[,...]/CHROOT` (Kafka creates the chroot). `replication` sets the internal
    topics' replication factors (offsets, transactions): at most the number of brokers.
    The port is chosen once, so a restarted broker registers the same endpoint with a new epoch.
    """

    def __init__(self, home: Path, broker_id: int, zk_connect: str, base_dir: Path, replication: int = 1,
                 port: int | None = None, extra: Mapping[str, str] | None = None,
                 session_timeout_ms: int = 6000, request_log: bool = False) -> None:
        self.home = Path(home)
        self.id = broker_id
        self.zk_connect = zk_connect
        self.dir = Path(base_dir) / f"broker-{broker_id}"
        self.port = port if port is not None else free_port()
        self.replication = replication
        self.extra = dict(extra or {})
        self.session_timeout_ms = session_timeout_ms
        self.request_log = request_log
        self.proc: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"ZkModeBroker(id={self.id}, port={self.port}, pid={self.pid})"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def znode(self) -> str:
        """The registration path, relative to the chroot."""
        return f"/brokers/ids/{self.id}"

    @property
    def server_log(self) -> Path:
        return self.dir / "logs" / "server.log"

    @property
    def request_log_file(self) -> Path:
        return self.dir / "logs" / "kafka-request.log"

    def requests(self, api_key: int | None = None, client_id: str | None = None) -> list[dict[str, Any]]:
        """The requests this broker completed, from its JSON request log (needs `request_log=True`):
        each `{"requestHeader": {"requestApiKey", "requestApiVersion", "clientId", ...}, "request": {...},
        "response": {...}, ...}`, optionally only those of one API key and client id."""
        if not self.request_log_file.exists():
            return []
        out = []
        for line in self.request_log_file.read_text(errors="replace").splitlines():
            if not line.startswith("Completed request:"):
                continue
            try:
                doc = json.loads(line[len("Completed request:"):])
            except ValueError:  # a line being written
                continue
            header = doc.get("requestHeader", {})
            if api_key is not None and header.get("requestApiKey") != api_key:
                continue
            if client_id is not None and header.get("clientId") != client_id:
                continue
            out.append(doc)
        return out

    def await_requests(self, api_key: int | None = None, client_id: str | None = None, at_least: int = 1,
                       timeout: float = 240.0) -> list[dict[str, Any]]:
        """`requests(...)` once it holds at least `at_least` entries. Kafka writes a request's line when the
        response has been sent, so a client can hold the answer before the line exists: read after waiting."""
        return wait_count(lambda: self.requests(api_key, client_id), at_least, timeout,
                          f"{at_least} request(s) of key {api_key} in broker {self.id}'s request log")

    def properties(self) -> dict[str, str]:
        r = str(self.replication)
        props = {
            "broker.id": str(self.id),
            "zookeeper.connect": self.zk_connect,
            "zookeeper.session.timeout.ms": str(self.session_timeout_ms),
            "zookeeper.connection.timeout.ms": "60000",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.dir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": r,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": r,
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "controlled.shutdown.enable": "true",
            # smaller thread pools and buffers: two busy cores run three brokers
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "background.threads": "2",
            "log.cleaner.enable": "false",
        }
        props.update(self.extra)
        return props

    def write_config(self) -> Path:
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        cfg = self.dir / "server.properties"
        cfg.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        log4j = BROKER_LOG4J.format(log=self.server_log)
        if self.request_log:  # java.util.Properties: a later key overrides the WARN above
            log4j += REQUEST_LOG4J.format(log=self.request_log_file)
        (self.dir / "log4j.properties").write_text(log4j)
        return cfg

    def start(self) -> int:
        """Launch the JVM (returns at once; see wait_registered). Returns the pid."""
        if self.alive():
            raise RuntimeError(f"broker {self.id} is already running (pid {self.pid})")
        cfg = self.write_config()
        cmd = [java_binary(), *BROKER_JVM, *cds.flags(self.home),
               f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}",
               f"-Dkafka.logs.dir={self.dir / 'logs'}",
               "-cp", f"{self.home}/libs/*", "kafka.Kafka", str(cfg)]
        with open(self.dir / "logs" / "stdout.log", "ab") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        _live.add(self)
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def accepting(self) -> bool:
        """Its listener accepts a TCP connection (what a client needs, beyond the registration znode)."""
        import socket

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5):
                return True
        except OSError:
            return False

    def log_tail(self, chars: int = 3000) -> str:
        parts = []
        for f in (self.dir / "logs" / "stdout.log", self.server_log):
            if f.exists():
                parts.append(f"--- {f} ---\n{f.read_text(errors='replace')[-chars:]}")
        return "\n".join(parts)

    def registration(self, zk: Any) -> tuple[dict[str, Any], Any] | None:
        """(JSON, Stat) of this broker's znode, or None while it is absent."""
        from kazoo.exceptions import NoNodeError

        try:
            data, stat = zk.get(self.znode)
        except NoNodeError:
            return None
        return json.loads(data), stat

    def wait_registered(self, zk: Any, timeout: float = 300.0, epoch_gt: int | None = None) -> int:
        """Wait until /brokers/ids/<id> holds this broker's port (and an epoch > `epoch_gt`); the epoch.

        `zk` is a started KazooClient on the chroot, or a connect string `HOSTS/CHROOT`. Fails at once
        if the process exits, showing its log.
        """
        from kazoo.exceptions import ConnectionLoss, SessionExpiredError

        with zk_client(zk) as k:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    got = self.registration(k)
                except (SessionExpiredError, ConnectionLoss):  # a test froze ZooKeeper past this client's session
                    got = None  # timeout: kazoo makes a new session, and the next look asks again
                if got is not None:
                    doc, stat = got
                    if doc.get("port") == self.port and (epoch_gt is None or stat.czxid > epoch_gt):
                        return int(stat.czxid)
                if not self.alive():
                    code = self.proc.returncode if self.proc is not None else None
                    raise AssertionError(f"broker {self.id} exited ({code}) before registering\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"broker {self.id} did not register within {timeout:g}s "
                                         f"(last znode: {got})\n{self.log_tail()}")
                time.sleep(0.1)

    def stop(self, graceful: bool = True, timeout: float = 120.0) -> int | None:
        """SIGTERM (Kafka's shutdown hook runs a controlled shutdown) and wait for the exit; SIGKILL
        after `timeout`. `graceful=False` is kill(). Returns the exit status (None if not running)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            if not graceful:
                return self.kill()
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"broker {self.id} did not stop within {timeout:g}s of SIGTERM; "
                                     f"killed\n{self.log_tail()}") from None
        _live.discard(self)
        return self.proc.returncode

    def kill(self) -> int | None:
        """SIGKILL the broker's process group (a crash: its ZooKeeper session lingers until it expires)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        _live.discard(self)
        return self.proc.returncode

    def restart(self, zk: Any, graceful: bool = True, timeout: float = 180.0) -> tuple[int, int]:
        """Stop (SIGTERM, or SIGKILL when not graceful), start, wait for the new registration.

        After a SIGKILL it first waits until ZooKeeper expires the dead session (its /brokers/ids/<id>
        znode goes): a 3.9 broker started while that znode is still held fails its checked ephemeral
        create (NODEEXISTS, owner != current session) and exits at startup.
        Returns (old epoch, new epoch): the czxids of the registration before and after.
        """
        with zk_client(zk) as k:
            got = self.registration(k)
            assert got is not None, f"broker {self.id} is not registered"
            old = int(got[1].czxid)
            self.stop(graceful=graceful, timeout=timeout)
            if not graceful:
                wait_for(lambda: self.registration(k) is None, timeout, f"broker {self.id}'s session to expire")
            self.start()
            return old, self.wait_registered(k, timeout=timeout, epoch_gt=old)


def logged_epochs(b: ZkModeBroker) -> list[int]:
    """The epochs the broker logged at each registration: "... czxid (broker epoch): N" (KafkaZkClient)."""
    return [int(m) for m in re.findall(r"czxid \(broker epoch\): (\d+)", b.server_log.read_text(errors="replace"))]


def last_logged_epoch(b: ZkModeBroker, registered: int, timeout: float = 60.0) -> int:
    """The broker's own word for its epoch, once its log has caught up with a registration seen in ZooKeeper
    (`registered`, the znode's czxid): KafkaZkClient logs the epoch after its create returns, so under load the
    znode (and a waiter watching it) comes first. The last epoch logged, at the latest at `timeout`."""
    def caught_up() -> bool:
        got = logged_epochs(b)
        return bool(got) and got[-1] >= registered

    with contextlib.suppress(AssertionError):
        wait_for(caught_up, timeout, f"broker {b.id}'s log to show epoch {registered}", interval=0.05)
    got = logged_epochs(b)
    return got[-1] if got else -1


def stop_all(brokers: Iterable[ZkModeBroker], graceful: bool = True, timeout: float = 60.0) -> None:
    """Stop brokers together: SIGTERM to all, then wait; any still running after `timeout` is killed.
    `graceful=False` kills them all at once.

    When a whole cluster stops, its last brokers cannot move their leaders anywhere: their controlled
    shutdowns retry (3 x 5 s by default) and give up. A fixture's teardown kills instead.
    """
    brokers = [b for b in brokers if b.alive()]
    if not graceful:
        for b in brokers:
            b.kill()
        return
    procs = [(b, b.proc) for b in brokers if b.proc is not None]
    for _, p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for b, p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            b.kill()
        _live.discard(b)


@contextlib.contextmanager
def zk_client(zk: Any) -> Any:
    """Use a started KazooClient as is, or open one on a connect string for the duration."""
    if not isinstance(zk, str):
        yield zk
        return
    from kazoo.client import KazooClient

    k = KazooClient(hosts=zk)
    k.start(timeout=30)
    try:
        yield k
    finally:
        k.stop()
        k.close()


# ---------------------------------------------------------------------------------------------------
# Clusters

T = TypeVar("T")
V = TypeVar("V", bound=Mapping[tuple[str, int], Any])  # a view of partitions: TopicCommand's or a cheap one
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"


def settle(attempt: Callable[[], tuple[T | None, str]], timeout: float, interval: float = 0.0) -> T:
    """Repeat `attempt` until the fact it looks for is there: it returns (result, "") then, and (None, why not)
    before. Fails after `timeout` with the last why-not (e.g. what kadmin and Kafka's tool still disagree on)."""
    deadline = time.monotonic() + timeout
    while True:
        got, why = attempt()
        if got is not None:
            return got
        assert time.monotonic() < deadline, why
        if interval:
            time.sleep(interval)  # between polls only: the condition is the answer, not the time


def wait_for(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll an observable condition until it returns something truthy; fail after `timeout`."""
    def attempt() -> tuple[T | None, str]:
        got = check()
        return (got if got else None), f"timed out after {timeout:g}s waiting for {what}"

    return settle(attempt, timeout, interval)


def wait_count(read: Callable[[], list[T]], at_least: int, timeout: float, what: str) -> list[T]:
    """Poll `read()` until it returns at least `at_least` items; that list."""
    got: list[T] = []

    def enough() -> bool:
        nonlocal got
        got = read()
        return len(got) >= at_least

    wait_for(enough, timeout, what)
    return got


@dataclass
class RealCluster:
    """Real ZK-mode brokers under one chroot: `kz` is a kazoo client on the chroot, `run` runs kadmin on it."""

    home: Path
    zk_server: Any  # kadmin.sandbox.zkserver.Ensemble
    chroot: str
    brokers: dict[int, ZkModeBroker]
    kz: Any  # kazoo.client.KazooClient
    run: Any  # tests.conftest.Run

    @property
    def zk(self) -> str:
        return self.zk_server.connect_string + self.chroot

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def controller(self) -> int | None:
        from kazoo.exceptions import NoNodeError

        try:
            return int(json.loads(self.kz.get("/controller")[0])["brokerid"])
        except NoNodeError:
            return None

    def registrations(self) -> dict[int, tuple[dict[str, Any], Any]]:
        out = {}
        for bid, b in self.brokers.items():
            got = b.registration(self.kz)
            if got is not None:
                out[bid] = got
        return out

    def ready(self, timeout: float = 300.0) -> None:
        """All brokers registered (restarting any a test left stopped) and a controller elected."""
        for b in self.brokers.values():
            if not b.alive():
                b.start()
        for b in self.brokers.values():
            b.wait_registered(self.kz, timeout=timeout)
        for b in self.brokers.values():
            # the znode can come before the listener accepts: a client told of the broker gets ECONNREFUSED
            wait_for(b.accepting, timeout, f"broker {b.id} to accept connections on {b.bootstrap}")
        wait_for(lambda: self.controller() in self.brokers, timeout, "a controller among the brokers")

    def partition_states(self, topics: Iterable[str] | None = None) -> dict[tuple[str, int], dict[str, Any]]:
        """{(topic, partition): the state znode's JSON plus "replicas"} for `topics` (default: all),
        read from ZooKeeper as the controller wrote them. A partition without a state znode is left out."""
        from kazoo.exceptions import NoNodeError

        names = list(topics) if topics is not None else self.kz.get_children("/brokers/topics")
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for t in names:
            try:
                assignment = json.loads(self.kz.get(f"/brokers/topics/{t}")[0])["partitions"]
            except NoNodeError:
                continue
            for p, replicas in assignment.items():
                try:
                    state = json.loads(self.kz.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])
                except NoNodeError:
                    continue
                out[(t, int(p))] = {**state, "replicas": replicas}
        return out

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides as ZooKeeper holds them (/config/topics/<t>)."""
        from kazoo.exceptions import NoNodeError

        try:
            return dict(json.loads(self.kz.get(f"/config/topics/{topic}")[0])["config"])
        except NoNodeError:
            return {}


@contextlib.contextmanager
def zk_mode_cluster(zk_server: Any, base_dir: Path, ids: Iterable[int] = (1, 2, 3), chroot_prefix: str = "kafka",
                    timeout: float = 300.0, **broker_kw: Any) -> Iterator[RealCluster]:
    """Brokers `ids` of Kafka 3.9 under a fresh chroot of `zk_server` (an Ensemble), started together and
    ready (all registered, a controller elected); killed on exit (a whole cluster cannot shut down
    gracefully: see stop_all). `broker_kw` goes to each ZkModeBroker (e.g. request_log=True)."""
    from kazoo.client import KazooClient

    from tests.conftest import Run

    ids = list(ids)
    home = kafka_home(KAFKA_3_9)
    chroot = f"/{chroot_prefix}-{uuid.uuid4().hex[:10]}"
    broker_kw.setdefault("replication", len(ids))
    brokers = {i: ZkModeBroker(home, i, zk_server.connect_string + chroot, base_dir, **broker_kw) for i in ids}
    root = KazooClient(hosts=zk_server.connect_string)
    root.start(timeout=30)
    try:
        root.ensure_path(chroot)  # Kafka would create it too; a kazoo client on a missing chroot warns
    finally:
        root.stop()
        root.close()
    kz = KazooClient(hosts=zk_server.connect_string + chroot)
    kz.start(timeout=30)
    try:
        for b in brokers.values():  # all JVMs start together
            b.start()
        cluster = RealCluster(home, zk_server, chroot, brokers, kz, Run(zk_server.connect_string + chroot))
        cluster.ready(timeout=timeout)
        yield cluster
    finally:
        stop_all(brokers.values(), graceful=False)
        kz.stop()
        kz.close()


def int_list(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def describe(cluster: RealCluster, topic: str, *flags: str, bootstrap: str | None = None) -> dict[str, Any]:
    """TopicCommand --describe --topic T [FLAGS], parsed: {"topic_id", "configs": {k: v},
    "partitions": {p: (leader, replicas, isr)}, "raw"}; a leader of "none" is -1. With a filter flag
    (--under-min-isr-partitions, --at-min-isr-partitions, ...) Kafka prints only the matching partition
    lines (no topic line, so no topic_id or configs). No partitions (and no topic_id) while the broker asked has not
    yet got the topic's metadata (described_out)."""
    out = described_out(cluster.home, bootstrap or cluster.bootstrap, [topic], *flags)
    # Topic: t	TopicId: X	PartitionCount: 3	ReplicationFactor: 3	Configs: min.insync.replicas=2
    # 	Topic: t	Partition: 0	Leader: 2	Replicas: 2,3,1	Isr: 2,3,1	Elr: N/A	LastKnownElr: N/A
    topic_id, configs, parts = None, {}, {}
    for line in out.splitlines():
        fields = dict(f.split(": ", 1) if ": " in f else (f.rstrip(":"), "") for f in line.strip().split("\t"))
        if "Partition" in fields:
            leader = -1 if fields["Leader"] == "none" else int(fields["Leader"])
            parts[int(fields["Partition"])] = (leader, int_list(fields["Replicas"]), int_list(fields["Isr"]))
        elif "TopicId" in fields:
            topic_id = fields["TopicId"]
            configs = dict(kv.split("=", 1) for kv in fields.get("Configs", "").split(",") if "=" in kv)
    return {"topic_id": topic_id, "configs": configs, "partitions": parts, "raw": out}


# ---------------------------------------------------------------------------------------------------
# Crash restarts (SIGKILL bounces; appended for tests/kafka/test_real_zk_bounces.py and test_real_zk_history.py)


def crash_restart(broker: ZkModeBroker, zk: Any, timeout: float = 240.0) -> tuple[int, int]:
    """SIGKILL the broker, wait until ZooKeeper expires its session, start it, wait for the new
    registration: `broker.restart(zk, graceful=False)`. (old epoch, new epoch)."""
    return broker.restart(zk, graceful=False, timeout=timeout)


# ---------------------------------------------------------------------------------------------------
# More of Kafka's tools (partition health: tests/kafka/test_real_zk_partitions.py)

CONFIG_COMMAND = "kafka.admin.ConfigCommand"
REASSIGN_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def parse_partition_lines(out: str) -> dict[tuple[str, int], dict[str, str]]:
    """The partition lines of TopicCommand --describe output, all topics: {(topic, partition): fields}.

    A partition line is tab-separated `Name: value` fields with a `Partition` field (filtered output,
    e.g. --under-min-isr-partitions, has only those); topic lines and anything else are skipped.
    """
    parts: dict[tuple[str, int], dict[str, str]] = {}
    for line in out.splitlines():
        fields: dict[str, str] = {}
        for f in line.strip().split("\t"):
            name, _, value = f.partition(": ")
            fields[name.rstrip(":")] = value
        if "Partition" in fields and "Topic" in fields:
            parts[(fields["Topic"], int(fields["Partition"]))] = fields
    return parts


def broker_view(bootstrap: str, topics: Iterable[str] | None) -> dict[tuple[str, int], dict[str, str]] | None:
    """The partitions of `topics` as a broker's Metadata answer has them, read in this process (kafka-python),
    shaped as TopicCommand's partition lines (Leader "none" when there is none; Replicas and Isr comma-separated);
    None when no broker answered. A cheap first look for the waits below, never a test's answer."""
    from kafka.admin import KafkaAdminClient

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    except Exception:  # no broker answered: the caller asks Kafka's tool instead
        return None
    try:
        described = admin.describe_topics(None if topics is None else list(topics))
    except Exception:
        return None
    finally:
        admin.close()
    view: dict[tuple[str, int], dict[str, str]] = {}
    for t in described:
        for p in t.get("partitions") or []:
            leader = int(p["leader_id"])
            view[(t["name"], int(p["partition_index"]))] = {
                "Topic": t["name"], "Partition": str(p["partition_index"]),
                "Leader": "none" if leader < 0 else str(leader),
                "Replicas": ",".join(map(str, p["replica_nodes"])), "Isr": ",".join(map(str, p["isr_nodes"]))}
    return view


def broker_states(bootstrap: str, topics: Iterable[str] | None) -> dict[tuple[str, int], Any] | None:
    """broker_view as {(topic, partition): (leader, replicas, isr)} (leader -1 when there is none)."""
    view = broker_view(bootstrap, topics)
    return None if view is None else {
        k: (-1 if f["Leader"] == "none" else int(f["Leader"]), int_list(f["Replicas"]), int_list(f["Isr"]))
        for k, f in view.items()}


def confirmed(ok: Callable[[V], bool], confirm: Callable[[], V], cheap: Callable[[], V | None]) -> V | None:
    """Kafka's TopicCommand's view (`confirm()`) when `ok` holds for it, else None; its JVM is started only once the
    brokers' Metadata answer read in this process (`cheap()`: broker_view, broker_states) already shows `ok`, or
    could not be read. One look of a wait: it costs no JVM while the state is still coming, and its verdict is
    still TopicCommand's."""
    seen = cheap()
    if seen is not None and not ok(seen):
        return None
    got = confirm()
    return got if ok(got) else None


def wait_seen(ok: Callable[[V], bool], confirm: Callable[[], V], cheap: Callable[[], V | None], timeout: float,
              what: str, interval: float = 1.0) -> V:
    """Wait until `ok` holds for TopicCommand's view, looking as `confirmed` does; that view (even an empty one)."""
    def look() -> tuple[V] | None:
        got = confirmed(ok, confirm, cheap)
        return None if got is None else (got,)

    return wait_for(look, timeout, what, interval=interval)[0]


def described_out(home: Path, bootstrap: str, topics: Iterable[str] | None = None, *flags: str) -> str:
    """TopicCommand --describe [--topic T1|T2...] [FLAGS] against `bootstrap`: its stdout. Empty while the broker it
    asked has not yet got a named topic's metadata: a topic just created is in ZooKeeper (or the controller's log)
    before it is in every broker's cache, and TopicCommand then exits 1 with "Topic ... does not exist as
    expected". Every caller waits through that: its check fails on an empty answer until the topic arrives (or
    the wait times out, saying what it waited for). Any other non-zero exit raises AssertionError."""
    named = ["--topic", "|".join(topics)] if topics else []
    proc = tool(home, TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--describe", *named, *flags, check=False)
    if proc.returncode != 0 and named and "does not exist as expected" in proc.stderr + proc.stdout:
        return ""
    assert proc.returncode == 0, (f"TopicCommand --describe {' '.join(named + list(flags))} exited "
                                  f"{proc.returncode}:\n{proc.stderr.strip()[-2000:]}\n{proc.stdout.strip()[-1000:]}")
    return proc.stdout


def every_topic_but_the_lease(home: Path, bootstrap: str) -> list[str]:
    """TopicCommand --list (one ListTopics: no race with a deletion), kadmin's drain lease topic left out. For a
    describe of every topic by name: kadmin deletes the lease topic as a drain or undrain through
    --bootstrap-server (each of a roll's too) gives it back, and TopicCommand's describe of all topics lists them,
    then describes them, so a topic deleted in between (it leaves each broker's cache a moment apart) makes it exit
    1 with UnknownTopicOrPartitionException."""
    from kadmin.domain.lease import LEASE_TOPIC

    listed = tool(home, TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--list").stdout.split()
    return sorted(t for t in listed if t != LEASE_TOPIC)


def topic_lines(home: Path, bootstrap: str, topics: Iterable[str] | None = None,
                *flags: str) -> dict[tuple[str, int], dict[str, str]]:
    """The partition lines (parse_partition_lines) of described_out: empty while a named topic is not yet known to
    the broker asked."""
    return parse_partition_lines(described_out(home, bootstrap, topics, *flags))


def describe_all(cluster: RealCluster, *flags: str,
                 bootstrap: str | None = None) -> dict[tuple[str, int], dict[str, str]]:
    """TopicCommand --describe over all topics (internal ones included) with `flags`, e.g.
    --under-replicated-partitions: {(topic, partition): that partition line's fields}."""
    return topic_lines(cluster.home, bootstrap or cluster.bootstrap, None, *flags)


def config_command(cluster: RealCluster, *args: str, bootstrap: str | None = None) -> subprocess.CompletedProcess[str]:
    """kafka-configs: `config_command(c, "--entity-type", "brokers", "--entity-default", "--alter",
    "--add-config", "min.insync.replicas=2")` (the bootstrap servers are added)."""
    return tool(cluster.home, CONFIG_COMMAND, "--bootstrap-server", bootstrap or cluster.bootstrap, *args)


def reassign(cluster: RealCluster, plan: Mapping[tuple[str, int], list[int]], *args: str,
             work_dir: Path) -> subprocess.CompletedProcess[str]:
    """kafka-reassign-partitions with a plan {(topic, partition): target replicas}, e.g.
    `reassign(c, {("t", 0): [2, 3]}, "--execute", "--throttle", "1", work_dir=tmp)`."""
    doc = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
                                        for (t, p), r in sorted(plan.items())]}
    f = Path(work_dir) / f"reassign-{uuid.uuid4().hex[:8]}.json"
    f.write_text(json.dumps(doc))
    return tool(cluster.home, REASSIGN_COMMAND, "--bootstrap-server", cluster.bootstrap,
                "--reassignment-json-file", str(f), *args)


def produce(cluster: RealCluster, topic: str, partition: int, count: int, size: int = 1000) -> None:
    """Write `count` records of `size` bytes to one partition (acks=1) with kafka-python; all acknowledged."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks=1, linger_ms=20, batch_size=256 * 1024,
                             max_request_size=2 * 1024 * 1024)
    try:
        value = os.urandom(size)  # incompressible, and no compression anyway
        futures = [producer.send(topic, value=value, partition=partition) for _ in range(count)]
        producer.flush(timeout=120)
        for f in futures:
            f.get(timeout=120)
    finally:
        producer.close(timeout=30)
