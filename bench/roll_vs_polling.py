"""Issue 38 §5: `kadmin roll run` against the polling script the peers use, on one real 6-broker cluster.

The cluster: kadmin's sandbox running real Kafka (3.9.1 in ZooKeeper mode, the cp-ansible / Yelp world; with
`--modes zk kraft` also 4.3.1 in KRaft mode, 3 controllers that neither roll touches), 6 brokers in 3 racks
(broker.rack r0 r1 r2 for 1-3, again for 4-6, as bench/roll.py part 3 starts them), `--topics` x 6 partitions of
replication factor 3 and min.insync.replicas 2 (rack-aware: one replica per rack), no data, no clients.

Each round rolls it, in an order that rotates from round to round:
  kadmin      `kadmin roll run --parallel 2` (the default batch rule, distinct: two brokers that share no
              partition at once; with these racks the two brokers of a rack), -o ndjson.
  kadmin-p1   `kadmin roll run` one broker at a time (shown beside, not judged; `--no-serial` leaves it out).
  script      bench/urp-poll-roll.sh: for each broker in id order, stop it, start it, then run Kafka's
              TopicCommand `--describe --under-replicated-partitions` until it prints nothing (a whole JVM per
              poll: the harness's tool runner, tests/support/kafka.py `tool_argv`, from the class-data archive as
              the brokers) with `--delay` s between polls, before the next broker (cp-ansible's loop).
Both use the same hooks: stop `kadmin sandbox kill {id}` (SIGTERM, returns once the JVM has exited), start
bench/roll.py's START_HOOK (`kadmin sandbox start {id}`'s steps under a lock; returns once the broker is registered
again: ZooKeeper mode a new /brokers/ids znode, KRaft unfenced).

Before every roll (not timed): every broker registered, every ISR full, the preferred leaders elected. After every
roll (not timed), the correctness check: every broker runs a new process (its pid changed), is registered, and is in
every ISR at once (else how long until it is); and how many partitions are led by their preferred replica.

kadmin's own share of a roll (from DIR/journal.ndjson: each step's `done` event, `at` and `elapsed_s`):
  hooks       the wall time while a stop or start hook ran: Kafka's restart (the start hook returns once the
              broker is registered again, so it ends at the restart receipt's fact)
  catch-up    the wall time of wait_in_sync outside the hooks: Kafka's follower fetching until the leaders take
              it back into every ISR (what the script waits for too), plus kadmin's notice of it (§5.1: <= 0.06 s)
  own         the rest of the roll's wall time: kadmin's gates (can_stop, others_healthy, wait_stopped,
              wait_restarted, wait_healthy), drain, ControlledShutdown, undrain, the start of the process and what
              lies between steps. Shown as `own / wall` (= per node: own / 6 over wall / 6), with the catch-up
              counted as kadmin's (strict) and as Kafka's.
Goals: kadmin's wall <= 0.6 x the script's (medians); kadmin's own share <= 10 % of a node's time.
Prints a line per roll and per round (load average at its start and end), the medians, then one line of JSON.
Usage: python bench/roll_vs_polling.py [--rounds 3] [--modes zk [kraft]] [--topics 2] [--delay 1] [--no-serial]
                                       [--dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import roll as rollbench  # noqa: E402  (bench/roll.py: the start hook, the journal's spans, the machine)

from kadmin.sandbox import cds  # noqa: E402

SCRIPT = REPO / "bench" / "urp-poll-roll.sh"
VERSIONS = {"zk": "3.9.1", "kraft": "4.3.1"}
BROKERS, RACKS, PARTITIONS = 6, 3, 6
WALL_GOAL = 0.6  # kadmin roll / the script
SHARE_GOAL = 0.10  # kadmin's own share of a node's time
STEP_TIMEOUT = 300
HOOKS = ("stop", "start", "restart")

# Run in a child process: the sandbox as `kadmin sandbox up --kafka-home` starts it, with broker.rack added.
UP = """\
import json, sys
from pathlib import Path
from kadmin.sandbox import realkafka
from kadmin.sandbox.manager import Sandbox
directory, home, brokers, racks, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
zk_plain, kraft_plain = realkafka.zk_broker_properties, realkafka.kraft_properties
def rack(node, props):
    if racks and node.get("role", "broker") == "broker":
        props["broker.rack"] = f"r{(int(node['id']) - 1) % racks}"
    return props
realkafka.zk_broker_properties = lambda node, *a, **k: rack(node, zk_plain(node, *a, **k))
realkafka.kraft_properties = lambda node, *a, **k: rack(node, kraft_plain(node, *a, **k))
st = Sandbox(Path(directory)).up(brokers=brokers, ensemble=1, timeout=600, kafka_home=home, mode=mode)
print(json.dumps(st))
"""


def loadavg() -> list[float]:
    return rollbench.loadavg()


# ------------------------------------------------------------------------------------------------ the cluster
@dataclass
class Cluster:
    mode: str  # zk | kraft
    dir: Path
    home: Path
    bootstrap: str = ""
    env: dict[str, str] = field(default_factory=dict)
    topics: list[str] = field(default_factory=list)
    up_s: float = 0.0

    @property
    def sandbox(self) -> Path:
        return self.dir / "sb"

    def up(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
        env["XDG_CONFIG_HOME"] = str(self.dir / "config")  # no user contexts: the same on every machine
        env["PYTHONPATH"] = str(REPO)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", UP, str(self.sandbox), str(self.home), str(BROKERS), str(RACKS),
                            self.mode], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
        self.up_s = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError(f"sandbox up ({self.mode}) exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        st = json.loads(r.stdout.strip().splitlines()[-1])
        self.bootstrap = st["bootstrap_servers"]
        self.env = {**env, "KADMIN_SANDBOX_DIR": str(self.sandbox)}
        if self.mode == "zk":
            self.env["KADMIN_ZOOKEEPER"] = st["zookeeper"]
        else:
            self.env["KADMIN_BOOTSTRAP_SERVER"] = self.bootstrap

    def down(self) -> None:
        if (self.sandbox / "state.json").exists():
            subprocess.run([rollbench.kadmin_exe(), "sandbox", "down"], env=self.env, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=600)
        for pid in rollbench.own_processes(self.sandbox):  # one the state file lost track of: by its directory
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, 9)
                print(f"{self.mode}: killed pid {pid}, left running by `sandbox down`", flush=True)

    def pids(self) -> dict[int, int]:
        st = json.loads((self.sandbox / "state.json").read_text())
        return {int(n["id"]): int(n["pid"]) for n in st["nodes"] if n["role"] == "broker"}

    def admin(self) -> Any:
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=30000)

    def view(self) -> tuple[set[int], dict[tuple[str, int], tuple[int, list[int], list[int]]]]:
        """(the brokers the cluster lists, {partition: (leader, replicas, isr)}) of the bench's topics."""
        a = self.admin()
        try:
            brokers = {int(b["broker_id"]) for b in a.describe_cluster()["brokers"] if not b.get("is_fenced")}
            parts = {(t["name"], int(p["partition_index"])): (int(p["leader_id"]), list(p["replica_nodes"]),
                                                              list(p["isr_nodes"]))
                     for t in a.describe_topics(self.topics) for p in t["partitions"]}
        finally:
            a.close()
        return brokers, parts

    def create_topics(self, count: int) -> None:
        from kafka.admin import NewTopic

        self.topics = [f"roll-{i}" for i in range(count)]
        a = self.admin()
        try:
            a.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=3,
                                      topic_configs={"min.insync.replicas": "2"}) for n in self.topics],
                            timeout_ms=120000)
        finally:
            a.close()
        parts = self.wait(lambda b, ps: len(ps) == count * PARTITIONS and healthy(b, ps), 300, "topics created")
        for k, (_, reps, _) in parts.items():  # one replica per rack: the two brokers of a rack share none
            racks = [(b - 1) % RACKS for b in reps]
            if len(set(racks)) != len(racks):
                raise RuntimeError(f"{k}: replicas {reps} share a rack (not rack-aware)")

    def wait(self, ok: Any, timeout: float, what: str) -> dict[tuple[str, int], tuple[int, list[int], list[int]]]:
        end = time.monotonic() + timeout
        last: Any = None
        while True:
            try:
                brokers, parts = self.view()
                if ok(brokers, parts):
                    return parts
                last = (sorted(brokers), {k: v for k, v in parts.items() if set(v[2]) != set(v[1])})
            except (KeyError, TypeError):  # the bench's own mistake: not a broker restarting
                raise
            except Exception as e:  # noqa: BLE001 - a broker restarting: ask again
                last = repr(e)
            if time.monotonic() > end:
                raise RuntimeError(f"{self.mode}: timed out waiting for {what} (last seen: {last})")
            time.sleep(0.2)

    def prepare(self) -> None:
        """Before a roll (not timed): every broker listed, every ISR full, every preferred replica leading."""
        self.wait(healthy, STEP_TIMEOUT, "every broker registered and every ISR full")
        a = self.admin()
        try:
            a.elect_leaders(0, topic_partitions=self.topics, timeout_ms=60000, raise_errors=False)
        finally:
            a.close()
        self.wait(lambda b, ps: healthy(b, ps) and preferred(ps) == len(ps), 120, "the preferred leaders")


def healthy(brokers: set[int], parts: dict[tuple[str, int], tuple[int, list[int], list[int]]]) -> bool:
    return brokers >= set(range(1, BROKERS + 1)) and bool(parts) and all(
        leader >= 0 and set(isr) == set(reps) for leader, reps, isr in parts.values())


def preferred(parts: dict[tuple[str, int], tuple[int, list[int], list[int]]]) -> int:
    return sum(1 for leader, reps, _ in parts.values() if reps and leader == reps[0])


# ------------------------------------------------------------------------------------------------ the rolls
@dataclass
class Roll:
    tool: str  # kadmin | kadmin-p1 | script
    wall_s: float
    t_start: float
    t_end: float
    events: list[dict[str, Any]] = field(default_factory=list)  # kadmin: DIR/journal.ndjson
    lines: list[tuple[float, str]] = field(default_factory=list)  # the script: (wall time, stderr line)
    check: dict[str, Any] = field(default_factory=dict)
    load: tuple[list[float], list[float]] = ([], [])


def hooks(c: Cluster) -> tuple[str, str]:
    script = c.dir / "start_hook.py"
    script.write_text(rollbench.START_HOOK)
    return f"{rollbench.kadmin_exe()} sandbox kill {{id}}", f"{sys.executable} {script} {{id}}"


def kafka_topics(c: Cluster) -> str:
    """bin/kafka-topics.sh as the harness runs it: one JVM (tests/support/kafka.py `tool_argv`)."""
    from tests.support.kafka import TOPIC_COMMAND, tool_argv

    path = c.dir / "kafka-topics.sh"
    path.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in tool_argv(c.home, TOPIC_COMMAND))
                    + ' "$@"\n')
    path.chmod(0o755)
    return str(path)


def kadmin_roll(c: Cluster, state: Path, parallel: int) -> Roll:
    stop, start = hooks(c)
    cmd = [rollbench.kadmin_exe(), "roll", "run", "--state", str(state), "--stop", stop, "--start", start,
           "--parallel", str(parallel), "--step-timeout", str(STEP_TIMEOUT), "-o", "ndjson"]
    if c.mode == "kraft":
        cmd += ["--controllers", "skip"]  # the script restarts the brokers only
    t_start = time.time()
    t0 = time.monotonic()
    with open(state.with_suffix(".out"), "w") as out, open(state.with_suffix(".err"), "w") as err:
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=c.env).returncode
    wall = time.monotonic() - t0
    if rc != 0:
        tail = state.with_suffix(".err").read_text()[-2000:]
        raise RuntimeError(f"kadmin roll run ({state.name}) exited {rc}: {tail}")
    events = [json.loads(x) for x in (state / "journal.ndjson").read_text().splitlines() if x.strip()]
    return Roll("kadmin" if parallel > 1 else "kadmin-p1", wall, t_start, time.time(), events=events)


def script_roll(c: Cluster, topics_cmd: str, delay: float) -> Roll:
    stop, start = hooks(c)
    cmd = ["bash", str(SCRIPT), "--stop", stop, "--start", start, "--brokers",
           " ".join(map(str, range(1, BROKERS + 1))), "--kafka-topics", topics_cmd, "--bootstrap", c.bootstrap,
           "--delay", str(delay), "--timeout", str(STEP_TIMEOUT)]
    wall, t_start, lines = rollbench.run_script(cmd, c.env, "urp-poll-roll.sh")
    return Roll("script", wall, t_start, time.time(), lines=lines)


def check_after(c: Cluster, before: dict[int, int]) -> dict[str, Any]:
    """Every broker a new process, registered and in every ISR at once (else how long until it is); the
    partitions led by their preferred replica."""
    now = c.pids()
    live = set(rollbench.own_processes(c.sandbox))
    restarted = sorted(i for i in before if now.get(i) != before[i] and now.get(i) in live)
    t0 = time.monotonic()
    brokers, parts = c.view()
    in_sync_at_once = healthy(brokers, parts)
    late_s = 0.0
    if not in_sync_at_once:
        parts = c.wait(healthy, STEP_TIMEOUT, "every broker back in every ISR after the roll")
        late_s = round(time.monotonic() - t0, 2)
    ok = restarted == list(range(1, BROKERS + 1)) and in_sync_at_once
    return {"ok": ok, "restarted": restarted, "in_sync_at_once": in_sync_at_once, "in_sync_after_s": late_s,
            "preferred_leaders": preferred(parts), "partitions": len(parts)}


# ------------------------------------------------------------------------------------------------ the shares
def spans(events: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Each step's time spans (start, end): from its `started` event's `at`, `elapsed_s` long, and never past its
    `done` event's `at`. A batch's hooks are journaled done together once the last has ended, each with its own
    elapsed_s: the `done` event's `at` minus elapsed_s would shift an earlier hook's span to the last one's end."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    began: dict[tuple[int, str], float] = {}
    for ev in events:
        if ev.get("event") != "step":
            continue
        key, at = (int(ev["node"]), str(ev["step"])), rollbench.iso(str(ev["at"]))
        if ev.get("status") == "started":
            began[key] = at
        elif ev.get("status") == "done":
            start = began.pop(key, at - float(ev.get("elapsed_s", 0.0)))
            out[key[1]].append((start, min(at, start + float(ev.get("elapsed_s", 0.0)))))
    return out


def minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of spans `a` outside every span of `b`."""
    out: list[tuple[float, float]] = []
    for x0, x1 in a:
        pieces = [(x0, x1)]
        for y0, y1 in b:
            pieces = [q for p0, p1 in pieces for q in ((p0, min(p1, y0)), (max(p0, y1), p1)) if q[1] > q[0]]
        out += pieces
    return out


def share(r: Roll) -> dict[str, Any]:
    """kadmin's wall time split into Kafka's restart (the hooks), the catch-up (wait_in_sync outside the hooks)
    and its own (the rest), with the own time by step and outside any step (see the module docstring)."""
    sp = spans(r.events)
    hook_spans = [s for h in HOOKS for s in sp.get(h, [])]
    hooks_s = rollbench.covered(hook_spans)
    catch = minus(sp.get("wait_in_sync", []), hook_spans)
    catch_s = rollbench.covered(catch)
    own_s = r.wall_s - hooks_s - catch_s
    busy = hook_spans + catch
    by_step: dict[str, float] = {}
    for step, ss in sp.items():
        if step in HOOKS or step == "wait_in_sync":
            continue
        own_part = minus(ss, busy)  # a step's time while no hook ran (wait_stopped runs between the two)
        by_step[step] = round(rollbench.covered(own_part), 3)
        busy += own_part
    in_steps = rollbench.covered(busy)
    by_step["outside any step"] = round(r.wall_s - in_steps, 3)
    starts = [b - a for a, b in sp.get("start", [])]
    return {"hooks_s": round(hooks_s, 2), "catch_up_s": round(catch_s, 2), "own_s": round(own_s, 2),
            "own_per_node_s": round(own_s / BROKERS, 3), "node_s": round(r.wall_s / BROKERS, 3),
            "share_strict": round((own_s + catch_s) / r.wall_s, 3), "share": round(own_s / r.wall_s, 3),
            "own_by_step_s": by_step, "start_hook_s": round(statistics.median(starts), 2) if starts else None,
            "batches": rollbench.batches_of(rollbench.Roll("kadmin", "", r.wall_s, r.events, [], 0, 0))}


def script_split(r: Roll) -> dict[str, Any]:
    """The script's wall time by step (between its progress lines), and its polls."""
    tot: dict[str, float] = defaultdict(float)
    polls = []
    marks = [(t, line.split(": ", 2)[2]) for t, line in r.lines if line.count(": ") >= 2 and ": broker " in line]
    for i, (t, what) in enumerate(marks):
        nxt = marks[i + 1][0] if i + 1 < len(marks) else r.t_end
        if what.startswith("done ("):
            polls.append(int(what.split("(")[1].split()[0]))
            continue
        tot[what] += nxt - t
    return {"by_step_s": {k: round(v, 2) for k, v in tot.items()}, "polls": polls}


# ------------------------------------------------------------------------------------------------ the bench
def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def run_mode(mode: str, base: Path, rounds: int, topics: int, delay: float, serial: bool) -> dict[str, Any]:
    home = rollbench_home(mode)
    c = Cluster(mode, base / mode, home)
    c.dir.mkdir(parents=True, exist_ok=True)
    tools = ["script", "kadmin"] + (["kadmin-p1"] if serial else [])
    rolls: dict[str, list[Roll]] = {t: [] for t in tools}
    rounds_out: list[dict[str, Any]] = []
    try:
        c.up()
        archive = cds.build_now(c.home)  # every JVM measured starts from the class-data archive
        c.create_topics(topics)
        topics_cmd = kafka_topics(c)
        print(f"{mode} (Kafka {VERSIONS[mode]}): up in {c.up_s:.0f} s, {BROKERS} brokers in {RACKS} racks, "
              f"{topics} x {PARTITIONS} partitions (RF 3, min ISR 2, one replica per rack); class-data archive: "
              f"{archive or 'none'}", flush=True)
        n = 0
        for i in range(rounds):
            order = tools[i % len(tools):] + tools[:i % len(tools)]
            load_start = loadavg()
            walls = {}
            for tool in order:
                c.prepare()
                before = c.pids()
                lb = loadavg()
                n += 1
                r = (script_roll(c, topics_cmd, delay) if tool == "script"
                     else kadmin_roll(c, c.dir / f"roll-{n}", 2 if tool == "kadmin" else 1))
                r.load = (lb, loadavg())
                r.check = check_after(c, before)
                rolls[tool].append(r)
                walls[tool] = round(r.wall_s, 2)
                extra = ""
                if tool != "script":
                    s = share(r)
                    extra = (f"; own {s['own_s']:.2f} s = {100 * s['share']:.1f} % of the wall "
                             f"({100 * s['share_strict']:.1f} % with the catch-up), batches {s['batches']}")
                else:
                    extra = f"; polls per broker {script_split(r)['polls']}"
                print(f"{mode} round {i + 1}: {tool} {r.wall_s:.1f} s (load {lb[0]} -> {r.load[1][0]}); check "
                      f"{'ok' if r.check['ok'] else 'FAILED'}: {r.check}{extra}", flush=True)
            load_end = loadavg()
            ratio = walls["kadmin"] / walls["script"]
            rounds_out.append({"order": order, "walls_s": walls, "ratio": round(ratio, 3), "load_start": load_start,
                               "load_end": load_end})
            print(f"{mode} round {i + 1}: kadmin / script = {walls['kadmin']:.1f} / {walls['script']:.1f} s = "
                  f"{ratio:.2f}; load average at start {load_start}, at end {load_end}", flush=True)
    finally:
        c.down()
    return summarize(mode, rolls, rounds_out, delay, topics)


def summarize(mode: str, rolls: dict[str, list[Roll]], rounds_out: list[dict[str, Any]], delay: float,
              topics: int) -> dict[str, Any]:
    out: dict[str, Any] = {"kafka": VERSIONS[mode], "topics": topics, "partitions": topics * PARTITIONS,
                           "poll_delay_s": delay, "rounds": rounds_out}
    for tool, rs in rolls.items():
        walls = [r.wall_s for r in rs]
        entry: dict[str, Any] = {"wall_s": [round(x, 2) for x in walls], "median_s": round(med(walls), 2),
                                 "checks": [r.check for r in rs], "loads": [r.load for r in rs]}
        if tool == "script":
            splits = [script_split(r) for r in rs]
            entry["split"] = splits
            keys = sorted({k for s in splits for k in s["by_step_s"]})
            entry["median_by_step_s"] = {k: round(med([s["by_step_s"].get(k, 0.0) for s in splits]), 2)
                                         for k in keys}
        else:
            shares = [share(r) for r in rs]
            entry["shares"] = shares
            entry["median"] = {k: round(med([s[k] for s in shares]), 3)
                               for k in ("hooks_s", "catch_up_s", "own_s", "own_per_node_s", "node_s", "share",
                                         "share_strict")}
            keys = sorted({k for s in shares for k in s["own_by_step_s"]})
            entry["median_own_by_step_s"] = {k: round(med([s["own_by_step_s"].get(k, 0.0) for s in shares]), 3)
                                             for k in keys}
        out[tool] = entry
    k, s = out["kadmin"], out["script"]
    ratio = k["median_s"] / s["median_s"]
    out["ratio"] = round(ratio, 3)
    out["ratio_met"] = ratio <= WALL_GOAL
    out["share_met"] = k["median"]["share"] <= SHARE_GOAL
    out["share_strict_met"] = k["median"]["share_strict"] <= SHARE_GOAL
    out["checks_ok"] = all(r.check.get("ok") for rs in rolls.values() for r in rs)
    n = len(rolls["kadmin"])
    print(f"{mode}: script: median {s['median_s']:.1f} s; by step (median): "
          + ", ".join(f"{a} {b:.1f}" for a, b in s["median_by_step_s"].items()), flush=True)
    for tool in [t for t in rolls if t != "script"]:
        e = out[tool]
        m = e["median"]
        print(f"{mode}: {tool}: median {e['median_s']:.1f} s; hooks {m['hooks_s']:.1f} s, catch-up "
              f"{m['catch_up_s']:.1f} s, own {m['own_s']:.2f} s ({m['own_per_node_s']:.2f} s per node of "
              f"{m['node_s']:.2f} s): "
              f"{100 * m['share']:.1f} % ({100 * m['share_strict']:.1f} % with the catch-up); own by step (median): "
              + ", ".join(f"{a} {b:.2f}" for a, b in sorted(e["median_own_by_step_s"].items(), key=lambda x: -x[1])
                          if b >= 0.005), flush=True)
    print(f"{mode}: kadmin roll run --parallel 2 / urp-poll-roll.sh = {k['median_s']:.1f} s / {s['median_s']:.1f} s = "
          f"{ratio:.2f} (goal <= {WALL_GOAL}) {'met' if out['ratio_met'] else 'NOT met'}; kadmin's own share "
          f"{100 * k['median']['share']:.1f} % of a node's time (goal <= {100 * SHARE_GOAL:.0f} %) "
          f"{'met' if out['share_met'] else 'NOT met'}, {100 * k['median']['share_strict']:.1f} % counting the "
          f"catch-up as kadmin's {'met' if out['share_strict_met'] else 'NOT met'}; medians of {n} interleaved rounds; "
          f"every roll ended with every broker restarted and in sync: {'yes' if out['checks_ok'] else 'NO'}",
          flush=True)
    return out


def rollbench_home(mode: str) -> Path:
    from tests.support.kafka import kafka_home

    return kafka_home(VERSIONS[mode])


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of (script, kadmin[, kadmin-p1]), order rotating")
    ap.add_argument("--modes", nargs="+", default=["zk"], choices=list(VERSIONS), help="clusters, one after the other")
    ap.add_argument("--topics", type=int, default=2, help=f"topics of {PARTITIONS} partitions")
    ap.add_argument("--delay", type=float, default=1.0, help="the script's sleep between two polls (s)")
    ap.add_argument("--no-serial", action="store_true", help="leave out the kadmin roll one broker at a time")
    ap.add_argument("--dir", type=Path, default=None, help="working directory (default: /tmp/benchrollvs-XXXX)")
    ap.add_argument("--keep", action="store_true", help="keep the working directory (journals, logs)")
    args = ap.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="benchrollvs-", dir="/tmp"))
    base.mkdir(parents=True, exist_ok=True)
    info = rollbench.machine()
    res: dict[str, Any] = {**info, "load_start": loadavg(), "rounds": args.rounds}
    print(f"{info['date']} {info['host']} ({info['cpus']} cpus; {info['java']}), commit {info['commit']}"
          f"{' + uncommitted changes' if info['dirty'] else ''}; load at start {res['load_start']}; working dir {base}",
          flush=True)
    t0 = time.monotonic()
    try:
        for mode in args.modes:
            res[mode] = run_mode(mode, base, args.rounds, args.topics, args.delay, not args.no_serial)
    finally:
        res["load_end"] = loadavg()
        res["bench_s"] = round(time.monotonic() - t0)
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"load average (1, 5, 15 min) at start {res['load_start']}, at the end {res['load_end']}; whole bench "
          f"{res['bench_s']} s", flush=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
