"""Benchmark `kadmin roll run` (issue 23 §5) on real Kafka 3.9.1 in ZooKeeper mode, beside the script it replaces.

What it measures (kadmin's own sandbox runs the clusters, one after the other, each in its own directory):
  1. Gate latency. While every roll runs, an independent poller (a kazoo session in a thread of this process,
     every 100 ms) reads the cluster directly: each broker's /brokers/ids/<id> (its czxid is the epoch) and
     every partition's /brokers/topics/<t>/partitions/<p>/state. For each waiting step of each node it finds
     when the fact became true (midpoint between the last sample without it and the first with it: +-50 ms):
       wait_stopped     the old registration is gone (no znode, or another czxid)
       wait_restarted   a registration with a czxid above the old epoch (the restart receipt)
       wait_in_sync     the node in the ISR of every partition that lists it as a replica
       wait_healthy     every partition's ISR is its full replica set (no under-replicated partition)
     and the latency = the step's `done` event `at` (from `-o ndjson`) - max(fact, the step's `started` at).
     Samples come from every kadmin roll below. The goal (median <= 0.5 s, p99 <= 2 s, p99 by nearest rank:
     the maximum below 100 samples) is judged per step on the samples whose fact came while the step waited;
     a fact already true when the step began (the sandbox's hooks return only once the broker is down, or
     registered again) measures one check, and is shown beside (judged only for a step that never waited).
     The rolls of part 1 use a start hook that returns at once (as `systemctl start` does), so that the
     restart receipt is a real wait there.
  2. A whole roll of 3 brokers: `kadmin roll run` / `bench/rolling-bounce-v1.sh`, the same cluster and hooks
     (`kadmin sandbox kill {id}` / `kadmin sandbox start {id}`), interleaved rounds; medians. Goal <= 1.0.
  3. 6 brokers in 3 racks (broker.rack r0 r1 r2 for 1-3, again for 4-6; rack-aware RF-3 min-ISR-2 topics, so
     the two brokers of a rack share no partition): `--parallel 2` / `--parallel 1`, wall time. Goal <= 0.6.
     `kadmin sandbox up` has no rack option: the bench starts the same sandbox (`Sandbox.up`) from a child
     Python process with `realkafka.zk_broker_properties` wrapped to add `broker.rack` (the sandbox's later
     `start` of a broker reuses the server.properties written then); kadmin's source is not changed.
The topics are 2 x 6 partitions, RF 3, min.insync.replicas 2, with no data and no client load. KRaft is not
measured (its poller would read DescribeCluster and Metadata instead; the 3 controllers add a minute or two).
Each roll's per-step time (kadmin: the journal's elapsed_s; the script: the gaps between its progress lines)
is summed by step, to show where the time goes. Load average at the start, after each part and at the end.
Prints every number next to its goal ("(goal"), then one line of JSON.
Usage: python bench/roll.py [--quick] [--rounds 3] [--gate-rolls 5] [--parallel-rounds 3] [--dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import json
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kadmin.sandbox import cds

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "bench" / "rolling-bounce-v1.sh"
KAFKA_VERSION = "3.9.1"
POLL = 0.1  # s: the independent poller's period
GATE_GOAL = {"median_s": 0.5, "p99_s": 2.0}
ROLL_GOAL = 1.0  # kadmin roll / the script
PARALLEL_GOAL = 0.6  # --parallel 2 / --parallel 1
GATES = ("wait_stopped", "wait_restarted", "wait_in_sync", "wait_healthy")
PARTITIONS = 6
STEP_TIMEOUT = 300

# Run in a child process: the sandbox as `kadmin sandbox up --kafka-home` starts it, with broker.rack added.
UP = """\
import json, sys
from pathlib import Path
from kadmin.sandbox import realkafka
from kadmin.sandbox.manager import Sandbox
directory, home, brokers, racks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
plain = realkafka.zk_broker_properties
def with_rack(node, *a, **k):
    props = plain(node, *a, **k)
    if racks:
        props["broker.rack"] = f"r{(int(node['id']) - 1) % racks}"
    return props
realkafka.zk_broker_properties = with_rack
st = Sandbox(Path(directory)).up(brokers=brokers, ensemble=1, timeout=600, kafka_home=home, mode="zk")
print(json.dumps(st))
"""


# Part 3's start hook: `kadmin sandbox start ID`'s steps, its state-file update under a lock. The sandbox reads,
# changes and writes state.json through one fixed state.tmp with no lock of its own, so two `kadmin sandbox
# start`s at once (a batch's start hooks run together) can fail (the rename of the other's state.tmp) or lose
# the other's new pid (then `sandbox down` leaves that broker running).
START_HOOK = """\
import fcntl, os, sys, time
from pathlib import Path
from kadmin.sandbox.manager import Sandbox
sb, broker = Sandbox(Path(os.environ["KADMIN_SANDBOX_DIR"])), int(sys.argv[1])
deadline = time.monotonic() + 300
with open(sb.dir / "bench-start.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    st = sb._require()
    node, alive = sb._alive_broker(st, broker)
    if alive:
        sys.exit(f"broker {broker} is already running")
    sb._wait_deregistered(st, broker, deadline)
    sb._launch(st, node)
    sb._update(st, node)
epochs, _ = sb._wait_registered(st, [broker], deadline)
print(f"broker {broker} started with epoch {epochs[broker]}")
"""


def kadmin_exe() -> str:
    script = Path(sys.executable).with_name("kadmin")
    if not script.exists():
        raise SystemExit(f"no kadmin console script next to {sys.executable}")
    return str(script)


def iso(ts: str) -> float:
    return datetime.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def nearest_rank(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ------------------------------------------------------------------------------------------------ the poller
@dataclass
class Sample:
    t: float  # wall clock, the middle of the reads
    epochs: dict[int, int | None]  # broker id -> czxid of /brokers/ids/<id> (None: no znode)
    isr: dict[tuple[str, int], tuple[int, ...]]  # partition -> ISR (missing: unreadable)


class Poller(threading.Thread):
    """Reads the registrations and every partition state every POLL s (pipelined, kazoo async) until stopped."""

    def __init__(self, zk_connect: str, brokers: Sequence[int], replicas: dict[tuple[str, int], tuple[int, ...]]):
        super().__init__(daemon=True, name="poller")
        from kazoo.client import KazooClient

        self.zk = KazooClient(hosts=zk_connect, timeout=10)
        self.zk.start(timeout=30)
        self.brokers = list(brokers)
        self.replicas = replicas
        self.samples: list[Sample] = []
        self.read_s: list[float] = []
        self.halt = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        nxt = time.monotonic()
        while not self.halt.is_set():
            t0 = time.time()
            try:
                regs = {i: self.zk.exists_async(f"/brokers/ids/{i}") for i in self.brokers}
                states = {k: self.zk.get_async(f"/brokers/topics/{k[0]}/partitions/{k[1]}/state")
                          for k in self.replicas}
                epochs: dict[int, int | None] = {}
                for i, a in regs.items():
                    stat = a.get(timeout=10)
                    epochs[i] = None if stat is None else int(stat.czxid)
                isr: dict[tuple[str, int], tuple[int, ...]] = {}
                for k, a in states.items():
                    with contextlib.suppress(Exception):  # a partition state unreadable this once
                        isr[k] = tuple(json.loads(a.get(timeout=10)[0])["isr"])
            except Exception:  # noqa: BLE001 - ZooKeeper busy: no sample this tick
                pass
            else:
                t1 = time.time()
                with self.lock:
                    self.samples.append(Sample((t0 + t1) / 2, epochs, isr))
                    self.read_s.append(t1 - t0)
            nxt += POLL
            delay = nxt - time.monotonic()
            if delay < 0:  # late (a busy machine): the next tick from now
                nxt = time.monotonic()
                delay = 0
            self.halt.wait(delay)

    def snapshot(self) -> list[Sample]:
        with self.lock:
            return list(self.samples)

    def close(self) -> None:
        self.halt.set()
        self.join(10)
        self.zk.stop()
        self.zk.close()

    # -------------------------------------------------------------- facts
    def in_sync(self, s: Sample, node: int) -> bool:
        return all(k in s.isr and node in s.isr[k] for k, reps in self.replicas.items() if node in reps)

    def healthy(self, s: Sample) -> bool:
        return all(k in s.isr and set(s.isr[k]) == set(reps) for k, reps in self.replicas.items())

    def wait_until(self, pred: Callable[[Sample], bool], timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                last = self.samples[-1] if self.samples else None
            if last is not None and pred(last):
                return
            time.sleep(POLL)
        raise RuntimeError(f"timed out waiting for {what}")


def first_true(samples: Sequence[Sample], start: int, pred: Callable[[Sample], bool]) -> tuple[float, int] | None:
    """(when `pred` became true: the midpoint between the last false sample and the first true one, its index),
    searching from index `start`; None when it never did."""
    for i in range(start, len(samples)):
        if pred(samples[i]):
            before = samples[i - 1].t if i > 0 else samples[i].t
            return (before + samples[i].t) / 2, i
    return None


def index_at(samples: Sequence[Sample], t: float) -> int:
    """The first sample at or after wall time t."""
    for i, s in enumerate(samples):
        if s.t >= t:
            return i
    return len(samples)


# ------------------------------------------------------------------------------------------------ the cluster
@dataclass
class Cluster:
    name: str
    dir: Path
    brokers: int
    racks: int
    home: Path
    zk: str = ""
    bootstrap: str = ""
    env: dict[str, str] = field(default_factory=dict)
    replicas: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    up_s: float = 0.0
    read_ms: float = 0.0  # the poller's median time for one round of reads

    def up(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
        env["XDG_CONFIG_HOME"] = str(self.dir / "config")  # no user contexts: the same on every machine
        env["PYTHONPATH"] = str(REPO)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", UP, str(self.dir / "sb"), str(self.home), str(self.brokers),
                            str(self.racks)], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
        self.up_s = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError(f"sandbox up ({self.name}) exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        st = json.loads(r.stdout.strip().splitlines()[-1])
        self.zk, self.bootstrap = st["zookeeper"], st["bootstrap_servers"]
        self.env = {**env, "KADMIN_SANDBOX_DIR": str(self.dir / "sb"), "KADMIN_ZOOKEEPER": self.zk}

    def down(self) -> None:
        sb = self.dir / "sb"
        if (sb / "state.json").exists():
            subprocess.run([kadmin_exe(), "sandbox", "down"], env={**self.env, "KADMIN_SANDBOX_DIR": str(sb)},
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
        # a process of this sandbox that its state file lost track of (see START_HOOK): by its own directory
        for pid in own_processes(sb):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                print(f"{self.name}: killed pid {pid}, left running by `sandbox down`", flush=True)


    def create_topics(self, count: int) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kazoo.client import KazooClient

        names = [f"roll-{i}" for i in range(count)]
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=120000)
        try:
            admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=3,
                                          topic_configs={"min.insync.replicas": "2"}) for n in names],
                                timeout_ms=120000)
        finally:
            admin.close()
        zk = KazooClient(hosts=self.zk, timeout=10)
        zk.start(timeout=30)
        try:
            end = time.monotonic() + 300
            while True:
                reps: dict[tuple[str, int], tuple[int, ...]] = {}
                full = True
                for t in zk.get_children("/brokers/topics"):
                    data = json.loads(zk.get(f"/brokers/topics/{t}")[0])
                    for p, rs in data["partitions"].items():
                        reps[(t, int(p))] = tuple(rs)
                        try:
                            st = json.loads(zk.get(f"/brokers/topics/{t}/partitions/{p}/state")[0])
                        except Exception:  # noqa: BLE001 - not written yet
                            full = False
                            continue
                        full = full and set(st["isr"]) == set(rs) and st["leader"] >= 0
                if full and sum(1 for k in reps if k[0] in names) == count * PARTITIONS:
                    break
                if time.monotonic() > end:
                    raise RuntimeError(f"topics {names}: not every partition led with a full ISR within 300 s")
                time.sleep(0.5)
        finally:
            zk.stop()
            zk.close()
        self.replicas = reps
        if self.racks:  # the point of the racks: two brokers of one rack share no partition
            for k, rs in reps.items():
                racks = [(b - 1) % self.racks for b in rs]
                if len(set(racks)) != len(racks):
                    raise RuntimeError(f"{k}: replicas {rs} share a rack (not rack-aware)")


def own_processes(sandbox_dir: Path) -> list[int]:
    """Pids of the processes whose command line names a file in `sandbox_dir` (this bench's own)."""
    mark = str(sandbox_dir) + "/"
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            with contextlib.suppress(OSError):
                if mark in (d / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d.name))
    return out


# ------------------------------------------------------------------------------------------------ the rolls
@dataclass
class Roll:
    tool: str  # kadmin | script
    label: str
    wall_s: float
    events: list[dict[str, Any]]
    lines: list[tuple[float, str]]  # the script's stderr lines (wall time received, text)
    t_start: float
    t_end: float


def kadmin_roll(c: Cluster, state: Path, stop: str, start: str, parallel: int, label: str) -> Roll:
    cmd = [kadmin_exe(), "roll", "run", "--state", str(state), "--stop", stop, "--start", start,
           "--parallel", str(parallel), "--step-timeout", str(STEP_TIMEOUT), "-o", "ndjson"]
    events: list[dict[str, Any]] = []
    with open(state.with_suffix(".stderr"), "w") as err:
        t_start = time.time()
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True,
                             env=c.env)
        assert p.stdout is not None
        for line in p.stdout:
            if line.strip():
                events.append(json.loads(line))
        rc = p.wait()
        wall = time.monotonic() - t0
    if rc != 0:
        tail = state.with_suffix(".stderr").read_text()[-2000:]
        raise RuntimeError(f"kadmin roll run ({label}) exited {rc}: {tail}")
    return Roll("kadmin", label, wall, events, [], t_start, time.time())


def script_roll(c: Cluster, state: Path, stop: str, start: str, label: str) -> Roll:
    env = {**c.env, "KADMIN_BIN": kadmin_exe(), "PYTHON": sys.executable}
    cmd = ["bash", str(SCRIPT), "--stop", stop, "--start", start, "--state-dir", str(state)]
    wall, t_start, lines = run_script(cmd, env, f"rolling-bounce-v1.sh ({label})")
    return Roll("script", label, wall, [], lines, t_start, time.time())


def run_script(cmd: list[str], env: dict[str, str], name: str) -> tuple[float, float, list[tuple[float, str]]]:
    """Run a roll script to its end: (its wall time, when it began by the wall clock, its stderr lines each with
    the wall-clock time it was read); RuntimeError with its last lines when it fails."""
    lines: list[tuple[float, str]] = []
    t_start = time.time()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=env)
    assert p.stderr is not None
    for line in p.stderr:
        lines.append((time.time(), line.rstrip("\n")))
    rc = p.wait()
    wall = time.monotonic() - t0
    if rc != 0:
        raise RuntimeError(f"{name} exited {rc}: " + "\n".join(x for _, x in lines[-20:]))
    return wall, t_start, lines


def step_spans(r: Roll) -> dict[str, list[tuple[float, float]]]:
    """Each step's time spans (start, end), from its `done` events (`at` minus `elapsed_s`)."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for ev in r.events:
        if ev.get("event") == "step" and ev.get("status") == "done":
            end = iso(str(ev["at"]))
            spans[str(ev["step"])].append((end - float(ev.get("elapsed_s", 0.0)), end))
    return spans


def covered(spans: list[tuple[float, float]]) -> float:
    """The wall time the spans cover together (nodes that took a step at once, or as one, count once)."""
    total, reach = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def kadmin_step_totals(r: Roll) -> dict[str, float]:
    """Wall time spent in each step (a batch's nodes taking a step together count once)."""
    return {step: covered(sp) for step, sp in step_spans(r).items()}


STEP_LINE = re.compile(r"^rolling-bounce-v1\.sh: broker (\S+): (.*)$")


def script_step_totals(r: Roll) -> dict[str, float]:
    """Seconds between each progress line `broker N: STEP` and the next line of the script (its own time and
    the kadmin process it runs), summed by step (ids and epochs taken out of the names)."""
    tot: dict[str, float] = defaultdict(float)
    marks = [(t, m.group(2)) for t, line in r.lines if (m := STEP_LINE.match(line))]
    ends = [t for t, _ in r.lines]
    for t, what in marks:
        if what.startswith(("epoch ", "bounced in ")):  # said after the epoch read; after the broker's last step
            continue
        nxt = next((e for e in ends if e > t), r.t_end)
        name = re.sub(r"\s*\(epoch \d+\)|--epoch-gt \d+|: .*$| \d+$", "", what).strip()
        name = {"can-stop": "can_stop + epoch read", "wait --gone": "wait_stopped", "wait": "wait_restarted",
                "wait --in-sync": "wait_in_sync", "partitions check": "wait_healthy (partitions check)"}.get(name, name)
        tot[name] += nxt - t
    return dict(tot)


@dataclass
class GateSample:
    step: str
    node: int
    latency_s: float
    already: bool  # the fact was true before the step began
    raw_s: float  # done - fact, without the max()
    roll: str


def _epoch_is_not(node: int, old: int, s: Sample) -> bool:
    return s.epochs.get(node) != old


def _epoch_above(node: int, old: int, s: Sample) -> bool:
    return (s.epochs.get(node) or -1) > old


def _in_sync(poller: Poller, node: int, s: Sample) -> bool:
    return poller.in_sync(s, node)


def gate_samples(r: Roll, poller: Poller) -> tuple[list[GateSample], list[str]]:
    """Each waiting step of each node in a kadmin roll against the poller's view (see the module docstring)."""
    samples = poller.snapshot()
    started: dict[tuple[int, str], float] = {}
    done: dict[tuple[int, str], float] = {}
    first_at: dict[int, float] = {}
    epochs: dict[int, tuple[int, int]] = {}
    for ev in r.events:
        if ev.get("event") == "step":
            key = (int(ev["node"]), str(ev["step"]))
            t = iso(ev["at"])
            first_at.setdefault(key[0], t)
            if ev["status"] == "started":
                started.setdefault(key, t)
            elif ev["status"] == "done":
                done[key] = t
        elif ev.get("event") == "node_done":
            d = ev.get("detail") or {}
            if "old_epoch" in d and "new_epoch" in d:
                epochs[int(ev["node"])] = (int(d["old_epoch"]), int(d["new_epoch"]))
    out: list[GateSample] = []
    missed: list[str] = []
    for node, (old, _new) in sorted(epochs.items()):
        begin = index_at(samples, first_at[node])
        facts: dict[str, float] = {}
        gone = first_true(samples, begin, functools.partial(_epoch_is_not, node, old))
        back = first_true(samples, gone[1] if gone else begin, functools.partial(_epoch_above, node, old))
        if gone:
            facts["wait_stopped"] = gone[0]
        if back:
            facts["wait_restarted"] = back[0]
            sync = first_true(samples, back[1], functools.partial(_in_sync, poller, node))
            if sync:
                facts["wait_in_sync"] = sync[0]
                ok = first_true(samples, sync[1], poller.healthy)
                if ok:
                    facts["wait_healthy"] = ok[0]
        for step in GATES:
            key = (node, step)
            if key not in done:
                continue
            if step not in facts:
                missed.append(f"{r.label} node {node} {step}")
                continue
            fact, t0, t1 = facts[step], started[key], done[key]
            out.append(GateSample(step, node, t1 - max(fact, t0), fact <= t0, t1 - fact, r.label))
    return out, missed


# ------------------------------------------------------------------------------------------------ main
def machine() -> dict[str, Any]:
    def git(*a: str) -> str:
        r = subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True,
                           env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
        return r.stdout.strip()

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[:1]
    return {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": platform.node(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "java": java[0] if java else None,
            "commit": git("rev-parse", "--short", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def hooks(c: Cluster, async_start: bool = False, locked_start: bool = False) -> tuple[str, str]:
    k = kadmin_exe()
    stop = f"{k} sandbox kill {{id}}"
    if locked_start:
        script = c.dir / "start_hook.py"
        script.write_text(START_HOOK)
        return stop, f"{sys.executable} {script} {{id}}"
    if not async_start:
        return stop, f"{k} sandbox start {{id}}"
    d = c.dir / "starts"
    d.mkdir(exist_ok=True)
    # returns at once, as `systemctl start` does; the sandbox's own start runs on (its exit code kept)
    return stop, (f"( {k} sandbox start {{id}} >{d}/start-{{id}}.log 2>&1; echo $? >{d}/start-{{id}}.rc ) "
                  ">/dev/null 2>&1 </dev/null &")


def settle_async_starts(c: Cluster) -> None:
    """Wait for the backgrounded `sandbox start`s of a part-1 roll to have exited 0 (then remove their marks)."""
    d = c.dir / "starts"
    end = time.monotonic() + STEP_TIMEOUT
    want = c.brokers
    while True:
        codes = {f.name: f.read_text().strip() for f in d.glob("start-*.rc")}
        if len(codes) >= want and all(codes.values()):
            break
        if time.monotonic() > end:
            raise RuntimeError(f"backgrounded sandbox starts did not all end: {sorted(os.listdir(d))}")
        time.sleep(0.2)
    bad = {name: code for name, code in codes.items() if code != "0"}
    if bad:
        raise RuntimeError(f"backgrounded sandbox start failed: {bad}")
    for f in d.glob("start-*"):
        f.unlink()


def ready(c: Cluster, poller: Poller) -> None:
    """Before a roll: every broker registered, every ISR full (both kinds of roll demand a healthy start)."""
    poller.wait_until(lambda s: all(s.epochs.get(i) for i in range(1, c.brokers + 1)) and poller.healthy(s),
                      STEP_TIMEOUT, f"{c.name}: every broker registered and every ISR full")


def print_totals(title: str, totals: Sequence[dict[str, float]], walls: Sequence[float]) -> dict[str, float]:
    keys = sorted({k for t in totals for k in t}, key=lambda k: -statistics.median([t.get(k, 0.0) for t in totals]))
    med = {k: round(statistics.median([t.get(k, 0.0) for t in totals]), 2) for k in keys}
    wall = statistics.median(walls)
    print(f"  {title}: median wall {wall:.1f} s; wall time per step (median over rolls): "
          + ", ".join(f"{k} {v:.1f}" for k, v in med.items() if v >= 0.05))
    return med


class Bench:
    """The three parts' state: where rolls go, the gate samples from every kadmin roll, the JSON result."""

    def __init__(self, base: Path, home: Path, res: dict[str, Any]) -> None:
        self.base, self.home, self.res = base, home, res
        self.n = 0
        self.gates: list[GateSample] = []
        self.missed: list[str] = []
        self.loads: dict[str, list[float]] = {}

    def state(self) -> Path:
        self.n += 1
        return self.base / f"roll-{self.n}"

    def kadmin(self, c: Cluster, poller: Poller, stop: str, start: str, parallel: int, label: str,
               async_start: bool = False) -> Roll:
        ready(c, poller)
        r = kadmin_roll(c, self.state(), stop, start, parallel, label)
        if async_start:
            settle_async_starts(c)
        g, m = gate_samples(r, poller)
        self.gates += g
        self.missed += m
        return r

    def script(self, c: Cluster, poller: Poller, stop: str, start: str, label: str) -> Roll:
        ready(c, poller)
        return script_roll(c, self.state(), stop, start, label)

    # ---------------------------------------------------------------- part 1
    def part1(self, c: Cluster, poller: Poller, rolls: int) -> None:
        stop, start = hooks(c, async_start=True)
        walls, steps = [], []
        for i in range(rolls):
            r = self.kadmin(c, poller, stop, start, 1, f"part1-{i + 1}", async_start=True)
            walls.append(r.wall_s)
            steps.append(kadmin_step_totals(r))
            print(f"part 1 roll {i + 1} (a start hook that returns at once): {r.wall_s:.1f} s "
                  f"(load {loadavg()[0]})", flush=True)
        self.res["part1"] = {"roll_s": [round(x, 1) for x in walls],
                             "steps": print_totals("kadmin roll run, start hook returning at once", steps, walls)}
        self.loads["after_part1"] = loadavg()

    # ---------------------------------------------------------------- part 2
    def part2(self, c: Cluster, poller: Poller, rounds: int) -> None:
        stop, start = hooks(c)
        rolls: dict[str, list[Roll]] = {"script": [], "kadmin": []}
        for i in range(rounds):
            for tool in (["script", "kadmin"] if i % 2 == 0 else ["kadmin", "script"]):
                label = f"part2-{tool}-{i + 1}"
                r = (self.kadmin(c, poller, stop, start, 1, label) if tool == "kadmin"
                     else self.script(c, poller, stop, start, label))
                rolls[tool].append(r)
                print(f"part 2 round {i + 1}: {tool} {r.wall_s:.1f} s (load {loadavg()[0]})", flush=True)
        ks = [r.wall_s for r in rolls["kadmin"]]
        ss = [r.wall_s for r in rolls["script"]]
        ratio = statistics.median(ks) / statistics.median(ss)
        self.res["part2"] = {
            "kadmin_s": [round(x, 1) for x in ks], "script_s": [round(x, 1) for x in ss], "ratio": round(ratio, 2),
            "kadmin_steps": print_totals("kadmin roll run", [kadmin_step_totals(r) for r in rolls["kadmin"]], ks),
            "script_steps": print_totals("rolling-bounce-v1.sh", [script_step_totals(r) for r in rolls["script"]],
                                         ss)}
        print(f"whole roll, 3 brokers: kadmin roll run / rolling-bounce-v1.sh = {statistics.median(ks):.1f} s / "
              f"{statistics.median(ss):.1f} s = {ratio:.2f} (goal <= {ROLL_GOAL}) "
              f"{'met' if ratio <= ROLL_GOAL else 'NOT met'}; medians of {len(ks)} interleaved rounds", flush=True)
        self.loads["after_part2"] = loadavg()

    # ---------------------------------------------------------------- part 3
    def part3(self, c: Cluster, poller: Poller, rounds: int) -> None:
        stop, start = hooks(c, locked_start=True)
        rolls: dict[int, list[Roll]] = {1: [], 2: []}
        for i in range(rounds):
            for par in ([1, 2] if i % 2 == 0 else [2, 1]):
                r = self.kadmin(c, poller, stop, start, par, f"part3-p{par}-{i + 1}")
                rolls[par].append(r)
                print(f"part 3 round {i + 1}: --parallel {par} {r.wall_s:.1f} s (batches {batches_of(r)}, "
                      f"load {loadavg()[0]})", flush=True)
        p1 = [r.wall_s for r in rolls[1]]
        p2 = [r.wall_s for r in rolls[2]]
        ratio = statistics.median(p2) / statistics.median(p1)
        split = {par: {k: round(statistics.median([breakdown(r)[k] for r in rolls[par]]), 2)
                       for k in breakdown(rolls[par][0])} for par in (1, 2)}
        for par in (1, 2):
            b = split[par]
            print(f"  --parallel {par}, where the wall time goes (medians): the hooks {b['hooks_s']:.1f} s (while any "
                  f"hook ran), the other steps {b['other_steps_s']:.1f} s (while any other step ran), between "
                  f"steps {b['between_s']:.1f} s; one start hook {b['start_hook_s']:.2f} s, one stop "
                  f"hook {b['stop_hook_s']:.2f} s", flush=True)
        self.res["part3"] = {
            "parallel1_s": [round(x, 1) for x in p1], "parallel2_s": [round(x, 1) for x in p2],
            "ratio": round(ratio, 2),
            "p1_steps": print_totals("--parallel 1", [kadmin_step_totals(r) for r in rolls[1]], p1),
            "p2_steps": print_totals("--parallel 2", [kadmin_step_totals(r) for r in rolls[2]], p2),
            "p2_batches": [batches_of(r) for r in rolls[2]], "split": split}
        print(f"6 brokers in 3 racks: --parallel 2 / --parallel 1 = {statistics.median(p2):.1f} s / "
              f"{statistics.median(p1):.1f} s = {ratio:.2f} (goal <= {PARALLEL_GOAL}) "
              f"{'met' if ratio <= PARALLEL_GOAL else 'NOT met'}; medians of {len(p1)} interleaved rounds", flush=True)
        self.loads["after_part3"] = loadavg()

    # ---------------------------------------------------------------- gate latency
    def report_gates(self) -> None:
        """Per step: the samples whose fact came while the step waited carry the goal; those whose fact was true
        before the step began (the hook returned only once it was) measure one check, said beside."""
        self.res["gates"] = {}
        for step in GATES:
            xs = [g for g in self.gates if g.step == step]
            if not xs:
                continue
            waited = [g.latency_s for g in xs if not g.already]
            before = [g.latency_s for g in xs if g.already]
            judged = waited or before
            med, p99 = statistics.median(judged), nearest_rank(judged, 0.99)
            ok = med <= GATE_GOAL["median_s"] and p99 <= GATE_GOAL["p99_s"]
            self.res["gates"][step] = {
                "waited": stats(waited), "already_true": stats(before),
                "judged": "waited" if waited else "already_true", "met": ok,
                "samples": [[g.roll, g.node, round(g.latency_s, 3), round(g.raw_s, 3), g.already] for g in xs]}
            p99_name = "p99" if len(judged) >= 100 else "p99 (= max)"
            what = "the fact came while the step waited" if waited else "every fact was true before the step began"
            other = (f"; fact already true when the step began: {len(before)} samples, median "
                     f"{statistics.median(before):.3f} s, max {max(before):.3f} s" if waited and before else "")
            print(f"gate latency {step}: {what}: {len(judged)} samples, median {med:.2f} s, {p99_name} {p99:.2f} s "
                  f"(goal median <= {GATE_GOAL['median_s']} s, p99 <= {GATE_GOAL['p99_s']} s) "
                  f"{'met' if ok else 'NOT met'}{other}", flush=True)
        if self.missed:
            print(f"gate facts the poller did not see: {self.missed}")
        self.res["gates_missed"] = self.missed


def stats(xs: Sequence[float]) -> dict[str, Any]:
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median_s": round(statistics.median(xs), 3), "p99_s": round(nearest_rank(xs, 0.99), 3),
            "min_s": round(min(xs), 3)}


def on_cluster(c: Cluster, topics: int, body: Callable[[Poller], None]) -> None:
    """Start `c`, create its topics, run `body` with a poller on it; the poller and the cluster stopped after."""
    try:
        c.up()
        # The sandbox's JVMs share one class-data archive per Kafka installation once one exists (built in
        # the background after the first broker start on a machine): built here so that every roll measured
        # starts its brokers the same way.
        res_cds = cds.build_now(c.home)
        c.create_topics(topics)
        print(f"{c.name}: up in {c.up_s:.0f} s; {len(c.replicas)} partitions (RF 3, min ISR 2"
              f"{', one replica per rack' if c.racks else ''}); class-data archive: {res_cds or 'none'}",
              flush=True)
        poller = Poller(c.zk, range(1, c.brokers + 1), c.replicas)
        poller.start()
        try:
            body(poller)
        finally:
            poller.close()
            c.read_ms = round(1000 * statistics.median(poller.read_s or [0]), 1)
    finally:
        c.down()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one roll of each kind (smoke)")
    ap.add_argument("--rounds", type=int, default=3, help="part 2: rounds of (script, kadmin), alternating")
    ap.add_argument("--gate-rolls", type=int, default=5, help="part 1: kadmin rolls with a start hook that "
                    "returns at once")
    ap.add_argument("--parallel-rounds", type=int, default=3, help="part 3: rounds of (--parallel 1, 2)")
    ap.add_argument("--kafka-home", type=Path, default=None, help="Kafka 3.9.1 (default: scripts/fetch-kafka.sh)")
    ap.add_argument("--dir", type=Path, default=None, help="working directory (default: /tmp/benchroll-XXXX)")
    ap.add_argument("--keep", action="store_true", help="keep the working directory (logs, journals)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["1", "2", "3"], help="parts not to run")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.gate_rolls, args.parallel_rounds = 1, 1, 1
    home = args.kafka_home
    if home is None:
        r = subprocess.run([str(REPO / "scripts" / "fetch-kafka.sh"), KAFKA_VERSION], capture_output=True,
                           text=True, check=True)
        home = Path(r.stdout.strip().splitlines()[-1])
    base = args.dir or Path(tempfile.mkdtemp(prefix="benchroll-", dir="/tmp"))
    base.mkdir(parents=True, exist_ok=True)
    info = machine()
    res: dict[str, Any] = {**info, "kafka": KAFKA_VERSION, "mode": "zookeeper", "load_start": loadavg(),
                           "rounds": args.rounds, "gate_rolls": args.gate_rolls,
                           "parallel_rounds": args.parallel_rounds, "quick": args.quick}
    print(f"{info['date']} {info['host']} ({info['cpus']} cpus, {info['platform']}; {info['java']}), commit "
          f"{info['commit']}{' + uncommitted changes' if info['dirty'] else ''}; Kafka {KAFKA_VERSION}, ZooKeeper "
          f"mode; load at start {res['load_start']}; working dir {base}", flush=True)
    t0 = time.monotonic()
    b = Bench(base, home, res)
    try:
        if not {"1", "2"} <= set(args.skip):
            c3 = Cluster("3 brokers", base / "c3", 3, 0, home)

            def parts12(poller: Poller) -> None:
                if "1" not in args.skip:
                    b.part1(c3, poller, args.gate_rolls)
                if "2" not in args.skip:
                    b.part2(c3, poller, args.rounds)

            on_cluster(c3, 2, parts12)
            res["poller_read_ms_3_brokers"] = c3.read_ms
        if "3" not in args.skip:
            c6 = Cluster("6 brokers in 3 racks", base / "c6", 6, 3, home)
            on_cluster(c6, 2, lambda poller: b.part3(c6, poller, args.parallel_rounds))
            res["poller_read_ms_6_brokers"] = c6.read_ms
        b.report_gates()
    finally:
        res["load_end"] = loadavg()
        res["loads"] = b.loads
        res["bench_s"] = round(time.monotonic() - t0)
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"load average (1, 5, 15 min) at start {res['load_start']}, after each part {b.loads}, at the end "
          f"{res['load_end']}; whole bench {res['bench_s']} s", flush=True)
    print(json.dumps(res))
    return 0


def breakdown(r: Roll) -> dict[str, float]:
    """A kadmin roll's wall time in three parts: the hooks (the wall time while any stop or start hook ran),
    the other steps (while any other step ran: a batch's joint drain or undrain counts once), and what lies
    between the steps (choosing the next batch, the preflight, reconnecting); with the median single start
    and stop hook."""
    spans = step_spans(r)
    hooks_s = covered(spans.get("stop", []) + spans.get("start", []))
    other = covered([sp for step, sps in spans.items() if step not in ("stop", "start") for sp in sps])
    starts = [b - a for a, b in spans.get("start", [])] or [0.0]
    stops = [b - a for a, b in spans.get("stop", [])] or [0.0]
    return {"hooks_s": hooks_s, "other_steps_s": other, "between_s": r.wall_s - hooks_s - other,
            "start_hook_s": statistics.median(starts), "stop_hook_s": statistics.median(stops)}


def batches_of(r: Roll) -> list[list[int]]:
    """The batches a roll ran: a batch's nodes all pass can-stop before any of them is done."""
    out: list[list[int]] = []
    open_batch = False
    for ev in r.events:
        if ev.get("event") == "node_done":
            open_batch = False
        elif ev.get("event") == "step" and ev.get("step") == "can_stop" and ev.get("status") == "started":
            if open_batch:
                out[-1].append(int(ev["node"]))
            else:
                out.append([int(ev["node"])])
                open_batch = True
    return out


if __name__ == "__main__":
    sys.exit(main())
