"""A referee for rolling restarts: no write acknowledged with acks=all may be lost.

Kafka's own `org.apache.kafka.tools.VerifiableProducer` (kafka-tools, 3.9.1 and 4.3.1 alike) writes
`PREFIX.N` values (N counts up from 0) at a throttled rate and prints one JSON line per outcome on stdout:
`startup_complete`, `producer_send_success` (topic, partition, offset, key, value), `producer_send_error`
(exception, message, value), then on SIGTERM (its shutdown hook closes the producer, which first
completes every batch in flight) `shutdown_complete` and `tool_data` (sent, acked, avg_throughput).

- `Producer(home, bootstrap, topic, ...)`: a context manager running one VerifiableProducer with an
  idempotent acks=all producer whose retries end at `delivery.timeout.ms` (30 s at most by default), so
  a stall shows as send errors rather than a silent pause. A thread reads its stdout; the waits are on
  what it printed (an ack, an error, the exit), never on sleeps.
- `read_back(bootstrap, topic, home)`: every record of the topic from the log start offsets to the end
  offsets as of the call (Kafka's GetOffsetShell), read with Kafka's ConsoleConsumer, which is stopped
  as soon as every offset in those ranges has been seen.
- `assert_no_write_lost(producer, read)`: no send error, and every acknowledged (partition, offset) is
  in what was read back, holding the value that was acknowledged.
- `Poller(fn, interval)`: calls `fn` every `interval` seconds in a thread (e.g. `kadmin partitions check`)
  and keeps (time, result) pairs: "never CRITICAL during the roll".

Every producer and consumer process started here is killed at interpreter exit if a test did not stop it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import random
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Generic, TypeVar

from tests.support.kafka import tool, tool_argv

VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
CONSOLE_CONSUMER_OPTIONS = "org.apache.kafka.tools.consumer.ConsoleConsumerOptions"
GET_OFFSET_SHELL = "org.apache.kafka.tools.GetOffsetShell"

Key = tuple[int, int]  # (partition, offset)

# What a send gets when it races the shutdown hook's producer.close(): the tool's send loop does not stop
# on SIGTERM, and a record handed to a closing or closed producer is refused at once, never sent
# (KafkaProducer's IllegalStateException, RecordAccumulator's KafkaException; kafka-clients 3.9 and 4.x).
CLOSED_PRODUCER_ERRORS = ("Cannot perform operation after producer has been closed",
                          "Producer closed while send in progress")


# ---------------------------------------------------------------------------------------------------
# Processes and options


_live: set[subprocess.Popen[Any]] = set()


@atexit.register
def _kill_leftovers() -> None:
    for p in list(_live):
        _kill(p)


def _kill(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its own session (start_new_session): the JVM only
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    _live.discard(proc)


_options: dict[tuple[str, str, str], bool] = {}


def has_option(home: Path, class_name: str, option: str) -> bool:
    """Whether the tool class in HOME/libs/kafka-tools-*.jar declares the command-line option `option`, e.g.
    VerifiableProducer's --command-config (4.x, not 3.9): a string constant of the class file that is the
    option, with its dashes (argparse4j) or without (jopt-simple, e.g. ConsoleConsumerOptions')."""
    key = (str(home), class_name, option)
    if key not in _options:
        entry = class_name.replace(".", "/") + ".class"
        found = False
        for jar in sorted(Path(home, "libs").glob("kafka-tools-*.jar")):
            with zipfile.ZipFile(jar) as z:
                if entry in z.namelist():
                    code = z.read(entry)
                    # a CONSTANT_Utf8 entry: tag 1, a big-endian u2 length, the bytes
                    found = any(b"\x01" + struct.pack(">H", len(name)) + name in code
                                for name in {option.encode(), option.lstrip("-").encode()})
                    break
        _options[key] = found
    return _options[key]


def _write_props(path: Path, props: Mapping[str, object]) -> Path:
    """A java.util.Properties file (keys and values escaped as Properties.load reads them)."""
    def esc(s: str, key: bool) -> str:
        s = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        for c in ("=", ":", "#", "!") + ((" ",) if key else ()):
            s = s.replace(c, "\\" + c)
        return s

    path.write_text("".join(f"{esc(str(k), True)}={esc(str(v), False)}\n" for k, v in props.items()))
    return path


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:].strip()
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------------
# The producer


class Producer:
    """Kafka's VerifiableProducer writing `topic` with acks=all (-1) until stopped.

    Producer properties: enable.idempotence=true, retries=2147483647, max.in.flight 5,
    delivery.timeout.ms `delivery_timeout_ms` (<= 30 s: a write that cannot be acknowledged within it is a
    `producer_send_error`, so a stall fails the test instead of pausing it), request.timeout.ms
    `request_timeout_ms` (default a third of it), max.block.ms = delivery.timeout.ms (a send blocked on
    metadata or a full buffer also ends in an error), linger.ms 5; then `extra_props` (e.g. a secured
    cluster's security.protocol, sasl.*, ssl.*), which win. Values are `value_prefix.N`: the prefix (an
    integer, random unless given) keeps producers apart on one topic. Keys cycle through "0" ..
    `repeating_keys - 1` (--repeating-keys), which spreads the records over every partition from the
    start; without keys (None) the default partitioner sticks to one partition for batch.size (16 KB) of
    records before moving on, ~1000 of these small records, so a short run can leave partitions unwritten.

    Use as a context manager (started on entry, stopped on exit), or call start() and stop().
    """

    def __init__(self, home: Path, bootstrap: str, topic: str, *, throughput: int = 200,
                 delivery_timeout_ms: int = 30000, request_timeout_ms: int | None = None,
                 extra_props: Mapping[str, object] | None = None, value_prefix: int | None = None,
                 repeating_keys: int | None = 1000, work_dir: Path | None = None) -> None:
        linger_ms = 5
        if delivery_timeout_ms > 30000:
            raise ValueError(f"delivery.timeout.ms {delivery_timeout_ms} > 30000: a stall must show as send errors "
                             "within 30 s")
        if request_timeout_ms is None:
            request_timeout_ms = max(1000, delivery_timeout_ms // 3)
        if delivery_timeout_ms < request_timeout_ms + linger_ms:  # KafkaProducer refuses to start otherwise
            raise ValueError(f"delivery.timeout.ms {delivery_timeout_ms} must be at least request.timeout.ms "
                             f"{request_timeout_ms} + linger.ms {linger_ms}")
        self.home = Path(home)
        self.bootstrap = bootstrap
        self.topic = topic
        self.throughput = throughput
        self.delivery_timeout_ms = delivery_timeout_ms
        self.value_prefix = value_prefix if value_prefix is not None else random.randrange(1, 2**31 - 1)
        self.repeating_keys = repeating_keys
        self.props: dict[str, str] = {
            "enable.idempotence": "true",
            "acks": "all",
            "retries": "2147483647",
            "max.in.flight.requests.per.connection": "5",
            "delivery.timeout.ms": str(delivery_timeout_ms),
            "request.timeout.ms": str(request_timeout_ms),
            "max.block.ms": str(delivery_timeout_ms),
            "linger.ms": str(linger_ms),
            "client.id": f"verifiable-producer-{self.value_prefix}",
        }
        self.props.update({k: str(v) for k, v in (extra_props or {}).items()})
        if work_dir is None:  # kept until exit: describe() shows the stderr tail after stop()
            work_dir = Path(tempfile.mkdtemp(prefix="kadmin-producer-"))
            atexit.register(shutil.rmtree, work_dir, ignore_errors=True)
        self.dir = Path(work_dir)
        self.proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._cond = threading.Condition()
        self._acked: dict[Key, str] = {}
        self._conflicts: list[tuple[Key, str, str]] = []
        self._errors: list[dict[str, Any]] = []
        self._closing_errors: list[dict[str, Any]] = []
        self._counters: Counter[str] = Counter()
        self._noise: list[str] = []
        self._tool_data: dict[str, Any] | None = None
        self._shutdown_complete = False
        self._eof = False
        self._stopping = False
        self.killed = False

    # -- lifecycle

    @property
    def stderr_file(self) -> Path:
        return self.dir / f"producer-{self.value_prefix}.stderr"

    def command(self) -> list[str]:
        config = _write_props(self.dir / f"producer-{self.value_prefix}.properties", self.props)
        # 4.x deprecates --producer.config for --command-config, and prints a (non-JSON) warning on stdout
        # for the old one; 3.9 has only --producer.config. Either file is loaded over the tool's own
        # defaults (its retries=0 among them).
        config_flag = ("--command-config" if has_option(self.home, VERIFIABLE_PRODUCER, "--command-config")
                       else "--producer.config")
        return tool_argv(self.home, VERIFIABLE_PRODUCER, "--bootstrap-server", self.bootstrap, "--topic", self.topic,
                     "--throughput", str(self.throughput), "--acks", "-1", "--max-messages", "-1",
                     "--value-prefix", str(self.value_prefix), config_flag, str(config),
                     *(["--repeating-keys", str(self.repeating_keys)] if self.repeating_keys else []))

    def start(self) -> Producer:
        if self.proc is not None:
            raise RuntimeError("this Producer was already started")
        self.dir.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        with open(self.stderr_file, "w") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                         text=True, bufsize=1, start_new_session=True)
        _live.add(self.proc)
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True,
                                        name=f"verifiable-producer-{self.value_prefix}")
        self._reader.start()
        return self

    def __enter__(self) -> Producer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self, timeout: float | None = None) -> int | None:
        """SIGTERM (the tool's shutdown hook closes the producer: every batch in flight is completed, acked
        or failed, then `shutdown_complete`), and wait until the process exits and its stdout is read.
        After `timeout` (default delivery.timeout.ms + 90 s) SIGKILL (`killed` is set then). Idempotent;
        returns the exit status."""
        if self.proc is None:
            return None
        if timeout is None:
            timeout = self.delivery_timeout_ms / 1000 + 90
        with self._cond:
            self._stopping = True
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.killed = True
                _kill(self.proc)
        _live.discard(self.proc)
        if self._reader is not None:
            self._reader.join(timeout=30)  # the pipe's writer is gone: EOF comes at once
        return self.proc.returncode

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- reading the tool's stdout

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._event(line.strip())
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _event(self, line: str) -> None:
        try:
            ev = json.loads(line) if line.startswith("{") else None
        except ValueError:
            ev = None
        with self._cond:
            if not isinstance(ev, dict) or "name" not in ev:
                if line:
                    self._noise = [*self._noise[-19:], line]  # e.g. a deprecation warning, a stray log line
                return
            name = str(ev["name"])
            self._counters[name] += 1
            if name == "producer_send_success":
                try:
                    k = (int(ev["partition"]), int(ev["offset"]))
                except (KeyError, TypeError, ValueError):  # not the tool's shape: shown, not trusted
                    self._noise = [*self._noise[-19:], line]
                    return
                value = str(ev.get("value"))
                old = self._acked.setdefault(k, value)
                if old != value:  # two acks for one offset: the log cannot hold both
                    self._conflicts.append((k, old, value))
            elif name == "producer_send_error":
                closing = self._stopping and any(x in str(ev.get("message", "")) for x in CLOSED_PRODUCER_ERRORS)
                (self._closing_errors if closing else self._errors).append(ev)
            elif name == "shutdown_complete":
                self._shutdown_complete = True
            elif name == "tool_data":
                self._tool_data = ev
            self._cond.notify_all()

    # -- what it printed

    def acked(self) -> dict[Key, str]:
        """{(partition, offset): value} of every acknowledged send so far."""
        with self._cond:
            return dict(self._acked)

    def acked_count(self) -> int:
        with self._cond:
            return len(self._acked)

    def errors(self) -> list[dict[str, Any]]:
        """The `producer_send_error` events (exception, message, value, ...), less the sends that raced the
        shutdown hook's close after stop() (those were refused at once, never written: `closing_errors`)."""
        with self._cond:
            return list(self._errors)

    def closing_errors(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._closing_errors)

    def conflicts(self) -> list[tuple[Key, str, str]]:
        """Offsets acknowledged twice with different values ((partition, offset), first, second)."""
        with self._cond:
            return list(self._conflicts)

    def counters(self) -> dict[str, int]:
        """How many events of each name were printed (producer_send_success, producer_send_error, ...)."""
        with self._cond:
            return dict(self._counters)

    def other_output(self) -> list[str]:
        """The last (up to 20) lines of stdout that were not the tool's JSON events (e.g. a deprecation notice)."""
        with self._cond:
            return list(self._noise)

    def tool_data(self) -> dict[str, Any] | None:
        """The tool's own summary (sent, acked, target_throughput, avg_throughput), printed at exit."""
        with self._cond:
            return self._tool_data

    @property
    def shutdown_complete(self) -> bool:
        with self._cond:
            return self._shutdown_complete

    def describe(self) -> str:
        """A summary for failure messages: counters, the last errors, stdout noise, the stderr tail."""
        with self._cond:
            errs = self._errors[-3:]
            noise = self._noise[-5:]
            counters = dict(self._counters)
        code = None
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):  # stdout ended: the exit status follows
                code = self.proc.wait(timeout=5) if self._eof else self.proc.poll()
        parts = [f"VerifiableProducer topic={self.topic} prefix={self.value_prefix} exit={code} "
                 f"events={counters}"]
        if errs:
            parts.append("last errors: " + "; ".join(f"{e.get('exception')}: {e.get('message')}" for e in errs))
        if noise:
            parts.append("other stdout: " + " | ".join(noise))
        err = _tail(self.stderr_file)
        if err:
            parts.append(f"stderr tail:\n{err}")
        return "\n".join(parts)

    # -- waits on facts

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until `ready()` (evaluated under the lock, after each event) holds; fail after `timeout`, or
        as soon as the tool's stdout ends without it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not ready():
                if self._eof:
                    raise AssertionError(f"the producer exited before {what}\n{self.describe()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}\n"
                                         f"{self.describe()}")  # the Condition's lock is an RLock
                self._cond.wait(left)  # woken by every event and at EOF

    def wait_started(self, timeout: float = 180.0) -> int:
        """Wait for the first acknowledged send (the producer reached a leader, which reached min ISR); the
        ack count then."""
        self._wait(lambda: len(self._acked) > 0, timeout, "the first acknowledged send")
        return self.acked_count()

    def wait_acked_more_than(self, n: int, timeout: float = 180.0) -> int:
        """Wait until more than `n` sends have been acknowledged (writes go on); the ack count then."""
        self._wait(lambda: len(self._acked) > n, timeout, f"more than {n} acknowledged sends")
        return self.acked_count()

    def wait_errors(self, at_least: int = 1, timeout: float = 180.0) -> list[dict[str, Any]]:
        """Wait until at least `at_least` send errors have been reported; errors()."""
        self._wait(lambda: len(self._errors) >= at_least, timeout, f"{at_least} send error(s)")
        return self.errors()


# ---------------------------------------------------------------------------------------------------
# Reading back


def end_offsets(home: Path, bootstrap: str, topic: str, time_spec: str = "-1",
                config_file: Path | None = None, timeout: float = 180.0) -> dict[int, int]:
    """GetOffsetShell --time `time_spec` (-1 latest: the high watermark, -2 earliest): {partition: offset}."""
    # --topic is a Java regex: quote the name, and keep only lines of exactly this topic
    args = ["--bootstrap-server", bootstrap, "--topic", f"\\Q{topic}\\E", "--time", time_spec]
    if config_file is not None:
        args += ["--command-config", str(config_file)]
    out = tool(home, GET_OFFSET_SHELL, *args, timeout=timeout).stdout
    offsets: dict[int, int] = {}
    for line in out.splitlines():
        name, sep, rest = line.strip().rpartition(":")  # TOPIC:PARTITION:OFFSET
        t, sep2, p = name.rpartition(":")
        if sep and sep2 and t == topic and p.isdigit() and rest.lstrip("-").isdigit():
            offsets[int(p)] = int(rest)
    assert offsets, f"GetOffsetShell printed no offsets for topic {topic}:\n{out[-1000:]}"
    return offsets


def read_back(bootstrap: str, topic: str, home: Path, extra_props: Mapping[str, object] | None = None,
              timeout: float = 240.0) -> dict[Key, str]:
    """Every record of `topic` from each partition's log start offset up to its end offset (high watermark)
    as of the call: {(partition, offset): value}.

    The ranges come from GetOffsetShell (--time -2 and -1); Kafka's ConsoleConsumer reads from the
    beginning (a fresh group) printing partition, offset and value, and is stopped as soon as every
    offset of every range has been read (records past the ends, from a producer still running, are
    left out). Fails after `timeout` naming the partitions still short. Offsets are taken as one record
    each: true of a topic without transactions (no control records), which is what Producer writes.
    The consumer joins a fresh group: the group coordinator (__consumer_offsets) must be available.
    `extra_props`: client properties for a secured cluster (given to both tools).
    """
    home = Path(home)
    work = Path(tempfile.mkdtemp(prefix="kadmin-readback-"))
    try:
        config = _write_props(work / "client.properties", dict(extra_props or {})) if extra_props else None
        ends = end_offsets(home, bootstrap, topic, "-1", config, timeout)
        starts = end_offsets(home, bootstrap, topic, "-2", config, timeout)
        want = {p: (starts.get(p, 0), end) for p, end in ends.items() if end > starts.get(p, 0)}
        if not want:
            return {}
        new = has_option(home, CONSOLE_CONSUMER_OPTIONS, "--formatter-property")  # 4.x; 3.9 has --property
        prop = "--formatter-property" if new else "--property"
        args = ["--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning",
                "--group", f"kadmin-readback-{random.randrange(2**40):x}",
                prop, "print.partition=true", prop, "print.offset=true", prop, "print.value=true",
                prop, "print.key=false", prop, "print.timestamp=false"]
        if config is not None:
            args += ["--command-config" if new else "--consumer.config", str(config)]
        return _consume(home, args, want, work, timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _parse_record(line: str) -> tuple[int, int, str] | None:
    """`Partition:P<TAB>Offset:O<TAB>VALUE` (DefaultMessageFormatter, 3.9 and 4.x) or None."""
    fields = line.split("\t", 2)
    if len(fields) != 3 or not fields[0].startswith("Partition:") or not fields[1].startswith("Offset:"):
        return None
    try:
        return int(fields[0][len("Partition:"):]), int(fields[1][len("Offset:"):]), fields[2]
    except ValueError:
        return None


def _consume(home: Path, args: list[str], want: dict[int, tuple[int, int]], work: Path,
             timeout: float) -> dict[Key, str]:
    stderr_file = work / "consumer.stderr"
    with open(stderr_file, "w") as err:
        proc = subprocess.Popen(tool_argv(home, CONSOLE_CONSUMER, *args), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1, start_new_session=True)
    _live.add(proc)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.put(raw.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True, name="readback-consumer").start()
    read: dict[Key, str] = {}
    missing = {p: end - start for p, (start, end) in want.items()}
    deadline = time.monotonic() + timeout
    try:
        while any(missing.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"read_back: timed out after {timeout:g}s with records still unread "
                                     f"(partition: count) {_short(missing)} of ranges {want}\n"
                                     f"{_tail(stderr_file)}")
            try:
                line = lines.get(timeout=min(left, 5.0))
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"read_back: the ConsoleConsumer exited ({proc.wait()}) with records still "
                                     f"unread {_short(missing)} of ranges {want}\n{_tail(stderr_file)}")
            rec = _parse_record(line)
            if rec is None:
                continue
            p, o, v = rec
            if p in want and want[p][0] <= o < want[p][1] and (p, o) not in read:
                read[(p, o)] = v
                missing[p] -= 1
        return read
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)  # the consumer leaves its group and exits
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _kill(proc)
        _live.discard(proc)


def _short(d: Mapping[Any, Any], n: int = 10) -> str:
    items = [f"{k}: {v}" for k, v in list(d.items())[:n] if v]
    return "{" + ", ".join(items) + (", ..." if len(d) > n else "") + "}"


# ---------------------------------------------------------------------------------------------------
# The verdict


def assert_no_write_lost(producer: Producer, read: Mapping[Key, str], *, allow_send_errors: bool = False,
                         show: int = 10) -> None:
    """No send error (unless `allow_send_errors`: a stall was provoked; the writes acknowledged must still
    all be there), no offset acknowledged twice with two values, and every acknowledged (partition, offset)
    is in `read` holding the acknowledged value. The message lists up to `show` of each kind."""
    acked = producer.acked()
    errors = producer.errors()
    problems = []
    if errors and not allow_send_errors:
        by_kind = Counter(f"{e.get('exception')}: {e.get('message')}" for e in errors)
        problems.append(f"{len(errors)} send error(s): " + "; ".join(f"{n} x {k}" for k, n in by_kind.most_common(5)))
    conflicts = producer.conflicts()
    if conflicts:
        problems.append(f"{len(conflicts)} offset(s) acknowledged twice: {conflicts[:show]}")
    missing = sorted(k for k in acked if k not in read)
    changed = sorted(k for k in acked if k in read and read[k] != acked[k])
    if missing:
        problems.append(f"{len(missing)} of {len(acked)} acknowledged write(s) missing from the log, e.g. "
                        + ", ".join(f"p{p}@{o}={acked[(p, o)]!r}" for p, o in missing[:show]))
    if changed:
        problems.append(f"{len(changed)} acknowledged offset(s) hold another value, e.g. "
                        + ", ".join(f"p{p}@{o}: acked {acked[(p, o)]!r}, read {read[(p, o)]!r}"
                                    for p, o in changed[:show]))
    if not acked:
        problems.append("nothing was acknowledged: there is nothing to verify")
    if problems:
        raise AssertionError(f"acks=all writes lost or unverifiable (topic {producer.topic}, {len(acked)} acked, "
                             f"{len(read)} read back):\n- " + "\n- ".join(problems))


# ---------------------------------------------------------------------------------------------------
# Polling a check during the roll

R = TypeVar("R")


class Poller(Generic[R]):
    """Calls `fn()` every `interval` seconds (between the end of one call and the start of the next) in a
    thread, from entry until exit, keeping (time.monotonic(), result) pairs. A call that raises is kept
    as (time, the exception) and polling goes on. Exit waits (up to `join_timeout`) for a call in progress.
    """

    def __init__(self, fn: Callable[[], R], interval: float = 1.0, join_timeout: float = 120.0) -> None:
        self.fn = fn
        self.interval = interval
        self.join_timeout = join_timeout
        self._results: list[tuple[float, R | BaseException]] = []
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                got: R | BaseException = self.fn()
            except Exception as e:  # kept as a result: the test decides
                got = e
            with self._lock:
                self._results.append((time.monotonic(), got))
                self._lock.notify_all()
            self._stop.wait(self.interval)

    def __enter__(self) -> Poller[R]:
        self._thread = threading.Thread(target=self._loop, daemon=True, name="poller")
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop(check=et is None)  # an exception on its way out is not masked

    def stop(self, check: bool = True) -> None:
        """Stop polling; with `check`, fail if the call in progress does not return within join_timeout."""
        self._stop.set()
        with self._lock:
            self._lock.notify_all()  # a wait_results() in progress gives up
        if self._thread is not None:
            self._thread.join(self.join_timeout)
            if check and self._thread.is_alive():
                raise AssertionError(f"the poller's call did not return within {self.join_timeout:g}s of stop")

    def results(self) -> list[tuple[float, R | BaseException]]:
        with self._lock:
            return list(self._results)

    def since(self, t: float) -> list[tuple[float, R | BaseException]]:
        """The results recorded at or after monotonic time `t`."""
        return [(at, r) for at, r in self.results() if at >= t]

    def wait_results(self, at_least: int, timeout: float = 180.0, after: float | None = None) -> list[
            tuple[float, R | BaseException]]:
        """Wait until at least `at_least` results are recorded (at or after monotonic time `after`)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                got = [(at, r) for at, r in self._results if after is None or at >= after]
                if len(got) >= at_least:
                    return got
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    raise AssertionError(f"the poller recorded {len(got)} result(s), not {at_least}, "
                                         f"within {timeout:g}s")
                self._lock.wait(left)

    def wait_result(self, pred: Callable[[R | BaseException], bool], timeout: float = 180.0,
                    after: float | None = None) -> tuple[float, R | BaseException]:
        """Wait until a result (recorded at or after monotonic time `after`) satisfies `pred`; that pair."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for at, r in self._results:
                    if (after is None or at >= after) and pred(r):
                        return at, r
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    last = self._results[-3:]
                    raise AssertionError(f"no poller result satisfied the condition within {timeout:g}s "
                                         f"({len(self._results)} recorded; last {last})")
                self._lock.wait(left)
