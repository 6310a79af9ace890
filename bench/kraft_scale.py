"""KRaft health at scale against Kafka's own tool (issue 13 §5), on a real Kafka 4.3.1 KRaft cluster.

What it does:
  1. Starts Kafka 4.3.1 in KRaft mode on loopback as the sandbox's real-Kafka engine does
     (kadmin/sandbox/realkafka.py: 3 controllers in a static quorum + 3 brokers; the Kafka home from
     tests/support/kafka.py), with larger heaps than the sandbox's (a broker hosts ~13,000 replicas).
  2. Creates TOPICS x PARTITIONS partitions (default 1,000 x 20 = 20,000, replication 2) in a few large
     CreateTopics batches (kafka-python's admin client), and waits until every partition is fully in sync.
  3. Side by side, interleaved, RUNS times each (medians): `kadmin partitions check -b` and
     `kadmin brokers can-stop 3 -b` (whole processes), Kafka's TopicCommand `--describe
     --under-replicated-partitions` (whole process, a JVM of its own from the class-data archive:
     the harness's `tests.support.kafka.tool_argv`), and
     the wire's limit for each command: bench/kraft_wire.py (whole process), the same DescribeTopicPartitions
     pages and log dirs (every broker's for the check, broker 3's for can-stop) read the same way and nothing
     else. RATIO = kadmin / TopicCommand (goal <= 0.3) and kadmin / its bare reads (goal <= 1.3), for each
     command (issue 38 §2).
  4. Stops broker 3 (SIGTERM: controlled shutdown), waits until it is out of every ISR, starts
     `kadmin brokers wait 3 --in-sync -b` and then the broker again. An independent poller (kafka-python's
     admin client, Metadata back to back of only the topics with a partition of broker 3's, read before the
     stop, whose ISR it is not yet seen in: the polls that bracket the return are short) notes when broker 3
     is back in every ISR it belongs in; the delay from then (the upper bound: the previous poll's send) to
     the moment the `wait` process exits 0 is printed in units of kadmin's poll interval at that time
     (POLL_MAX; goal <= 1).
Prints human-readable lines, then one final line of JSON with every number.
Usage: python bench/kraft_scale.py [--topics 1000] [--partitions 20] [--runs 5] [--keep DIR] [--skip-bounce]
                                   [--hold]
       python bench/kraft_scale.py --attach DIR [--runs 5] [--profile]: step 3 only, against the cluster another
       run holds (--keep DIR --hold: it writes DIR/bootstrap); it neither starts nor stops anything.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

HEAPS = {"broker": "-Xmx2g", "controller": "-Xmx512m"}  # 1g: ~700 MB live at 20,000 partitions, full GCs of ~2 s
BROKERS = (1, 2, 3)
BOUNCED = 3
GOAL = 0.3  # kadmin / TopicCommand, for partitions check and for brokers can-stop (issue 38 §2)
WIRE_GOAL = 1.3  # kadmin / the same reads alone (bench/kraft_wire.py), for each command (issue 38 §2)
WIRE = REPO / "bench" / "kraft_wire.py"


def now() -> float:
    return time.monotonic()


class Cluster:
    def __init__(self, home: Path, base: Path) -> None:
        from kadmin.sandbox import realkafka as rk
        from kadmin.sandbox.ports import free_port

        self.rk, self.home, self.base = rk, home, base
        self.version = rk.detect_version(home)
        rk.write_logging(base)
        self.controllers = [{"id": c, "role": "controller", "port": free_port(), "dir": str(base / f"controller-{c}")}
                            for c in rk.CONTROLLERS]
        self.brokers = {b: {"id": b, "role": "broker", "port": free_port(), "dir": str(base / f"broker-{b}")}
                        for b in BROKERS}
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        for n in [*self.controllers, *self.brokers.values()]:
            props = rk.kraft_properties(n, self.controllers, len(BROKERS), self.version)
            if n["role"] == "broker":
                props["replica.lag.time.max.ms"] = "30000"  # Kafka's default, said explicitly
            rk.write_config(n, props)
        rk.format_storage(str(home), self.version, base, [*self.controllers, *self.brokers.values()],
                          rk.new_cluster_id())

    def bootstrap(self, without: int | None = None) -> str:
        return ",".join(f"127.0.0.1:{n['port']}" for b, n in self.brokers.items() if b != without)

    def start(self, node: dict[str, Any]) -> None:
        argv = self.rk.command(str(self.home), self.version, self.base, node)
        argv[1] = HEAPS[node["role"]]
        logs = Path(node["dir"]) / "logs"
        with open(logs / "stdout.log", "ab") as out:
            self.procs[node["id"]] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                                      stderr=subprocess.STDOUT, start_new_session=True)

    def start_all(self) -> None:
        for n in [*self.controllers, *self.brokers.values()]:
            self.start(n)
        self.wait_unfenced(set(BROKERS))

    def wait_unfenced(self, ids: set[int], timeout: float = 600) -> None:
        deadline = now() + timeout
        while True:
            try:
                fenced, _ = self.rk.kraft_view(self.bootstrap())
                if all(fenced.get(b) is False for b in ids):
                    return
            except Exception:  # not up yet
                pass
            if now() > deadline:
                raise TimeoutError(f"brokers {sorted(ids)} not unfenced after {timeout}s")
            time.sleep(0.5)

    def stop(self, node_id: int, sig: int = signal.SIGTERM, timeout: float = 300) -> None:
        p = self.procs[node_id]
        if p.poll() is None:
            os.killpg(p.pid, sig)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def stop_all(self) -> None:
        for nid in list(self.procs):
            self.stop(nid, signal.SIGKILL, 60)


def admin(bootstrap: str) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=300000, client_id="bench")


def create_topics(bootstrap: str, topics: int, partitions: int, batch: int = 100) -> float:
    from kafka.admin import NewTopic

    t0 = now()
    a = admin(bootstrap)
    try:
        for start in range(0, topics, batch):
            a.create_topics([NewTopic(f"t{i:05d}", partitions, 2) for i in range(start, min(topics, start + batch))],
                            timeout_ms=300000)
    finally:
        a.close()
    return now() - t0


def isr_state(a: Any, topics: list[str] | None = None) -> dict[tuple[str, int], tuple[list[int], list[int], int]]:
    """(topic, partition) -> (replicas, isr, leader) from Metadata of all topics or of `topics` (kafka-python's
    admin client)."""
    out = {}
    for t in a.describe_topics(topics):
        for p in t["partitions"]:
            out[(t["name"], int(p["partition_index"]))] = (list(p["replica_nodes"]), list(p["isr_nodes"]),
                                                           int(p["leader_id"]))
    return out


def wait_all_in_sync(bootstrap: str, expect: int, timeout: float = 1800, in_sync_for: float = 180) -> tuple[float, int]:
    """Every partition there with a leader; then up to `in_sync_for` s more for all to be in sync (a busy
    machine's followers may keep dropping out of ISRs). (seconds, partitions still under-replicated)."""
    t0 = now()
    a = admin(bootstrap)
    led = None
    try:
        while True:
            st = isr_state(a)
            bench = {k: v for k, v in st.items() if k[0].startswith("t")}
            under = sum(1 for v in bench.values() if len(v[1]) < len(v[0]))
            if len(bench) >= expect and all(v[2] >= 0 for v in bench.values()):
                led = led or now()
                if not under or now() - led > in_sync_for:
                    return now() - t0, under
            if now() - t0 > timeout:
                raise TimeoutError(f"{len(bench)} partitions, not all with a leader after {timeout}s")
            time.sleep(1.0)
    finally:
        a.close()


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's children reaped so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def kadmin(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
    return subprocess.run([sys.executable, "-m", "kadmin", *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, cwd=REPO)


def wire(boot: str, log_dirs: list[str]) -> subprocess.CompletedProcess[str]:
    """bench/kraft_wire.py: the pages and the log dirs at `log_dirs`, alone (the wire's limit)."""
    return subprocess.run([sys.executable, str(WIRE), boot, "--log-dirs", ",".join(log_dirs)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, cwd=REPO)


def broker_addresses(boot: str) -> dict[int, str]:
    """Each broker's advertised address (DescribeCluster): where the bare reads ask for its log dirs."""
    from kadmin.cluster.kraft import KraftClient

    client = KraftClient(boot, {}, 60.0, controllers=False)
    try:
        return {b.id: f"{b.host}:{b.port}" for b in client.describe_cluster().brokers}
    finally:
        client.close()


def side_by_side(cluster: Any, runs: int) -> dict[str, Any]:
    from tests.support.kafka import TOPIC_COMMAND, tool_argv

    boot = cluster.bootstrap()
    at = broker_addresses(boot)
    k_times, c_times, t_times, wk_times, wc_times = [], [], [], [], []
    k_cpu, c_cpu, t_cpu, wk_cpu, wc_cpu = [], [], [], [], []  # CPU s of each process: what load moves least
    k_out = t_out = w_out = ""
    load = [os.getloadavg()[0]]
    for i in range(runs + 1):  # the first round warms the page cache and the brokers; not counted
        t0, u0 = now(), children_cpu()
        r = kadmin("partitions", "check", "--bootstrap-server", boot)
        dk, uk = now() - t0, children_cpu() - u0
        assert r.returncode in (0, 1, 2), r.stderr
        t0, u0 = now(), children_cpu()
        c = kadmin("brokers", "can-stop", str(BOUNCED), "--bootstrap-server", boot)
        dc, uc = now() - t0, children_cpu() - u0
        assert c.returncode in (0, 1), c.stderr
        t0, u0 = now(), children_cpu()
        # a JVM of its own, as an operator runs it (not the suite's warm tool server, which `tool` goes through)
        tc = subprocess.run(tool_argv(cluster.home, TOPIC_COMMAND, "--bootstrap-server", boot, "--describe",
                                      "--under-replicated-partitions"), capture_output=True, text=True, timeout=900)
        assert tc.returncode == 0, tc.stderr
        dt, ut = now() - t0, children_cpu() - u0
        t0, u0 = now(), children_cpu()
        wk = wire(boot, sorted(at.values()))
        dwk, uwk = now() - t0, children_cpu() - u0
        assert wk.returncode == 0, wk.stderr
        t0, u0 = now(), children_cpu()
        wc = wire(boot, [at[BOUNCED]])
        dwc, uwc = now() - t0, children_cpu() - u0
        assert wc.returncode == 0, wc.stderr
        k_out, t_out, w_out = r.stdout, tc.stdout, wk.stdout
        load.append(os.getloadavg()[0])
        print(f"  run {i}{' (warm-up)' if i == 0 else ''}: kadmin partitions check -b {dk:.2f} s ({uk:.2f} CPU, exit "
              f"{r.returncode}), kadmin brokers can-stop {BOUNCED} -b {dc:.2f} s ({uc:.2f} CPU, exit {c.returncode}), "
              f"TopicCommand --describe --under-replicated-partitions {dt:.2f} s ({ut:.2f} CPU), bare reads of the "
              f"check {dwk:.2f} s ({uwk:.2f} CPU), of can-stop {dwc:.2f} s ({uwc:.2f} CPU); load {load[-1]:.1f}",
              flush=True)
        if i:
            for got, x in ((k_times, dk), (c_times, dc), (t_times, dt), (wk_times, dwk), (wc_times, dwc),
                           (k_cpu, uk), (c_cpu, uc), (t_cpu, ut), (wk_cpu, uwk), (wc_cpu, uwc)):
                got.append(x)
    mk, mc, mt = statistics.median(k_times), statistics.median(c_times), statistics.median(t_times)
    mwk, mwc = statistics.median(wk_times), statistics.median(wc_times)
    return {"kadmin_s": [round(x, 3) for x in k_times], "can_stop_s": [round(x, 3) for x in c_times],
            "topiccommand_s": [round(x, 3) for x in t_times], "wire_check_s": [round(x, 3) for x in wk_times],
            "wire_can_stop_s": [round(x, 3) for x in wc_times],
            "kadmin_median_s": round(mk, 3), "can_stop_median_s": round(mc, 3), "topiccommand_median_s": round(mt, 3),
            "wire_check_median_s": round(mwk, 3), "wire_can_stop_median_s": round(mwc, 3),
            "ratio": round(mk / mt, 3), "can_stop_ratio": round(mc / mt, 3),
            "wire_ratio": round(mk / mwk, 3), "can_stop_wire_ratio": round(mc / mwc, 3),
            "kadmin_cpu_median_s": round(statistics.median(k_cpu), 3),
            "can_stop_cpu_median_s": round(statistics.median(c_cpu), 3),
            "topiccommand_cpu_median_s": round(statistics.median(t_cpu), 3),
            "wire_check_cpu_median_s": round(statistics.median(wk_cpu), 3),
            "wire_can_stop_cpu_median_s": round(statistics.median(wc_cpu), 3),
            "load_min": round(min(load), 1), "load_max": round(max(load), 1),
            "kadmin_stdout_lines": len(k_out.splitlines()), "topiccommand_stdout_lines": len(t_out.splitlines()),
            "wire_read": w_out.split()}


def report(s: dict[str, Any]) -> None:
    """The side-by-side medians and the four ratio lines (`make bench` collects the lines with "(goal")."""
    print(f"kadmin partitions check -b: median {s['kadmin_median_s']:.2f} s; kadmin brokers can-stop {BOUNCED} -b: "
          f"median {s['can_stop_median_s']:.2f} s; TopicCommand --describe --under-replicated-partitions: median "
          f"{s['topiccommand_median_s']:.2f} s; bare reads of the check {s['wire_check_median_s']:.2f} s, of "
          f"can-stop {s['wire_can_stop_median_s']:.2f} s (load {s['load_min']}-{s['load_max']}); CPU medians "
          f"{s['kadmin_cpu_median_s']:.2f}, {s['can_stop_cpu_median_s']:.2f}, {s['topiccommand_cpu_median_s']:.2f}, "
          f"{s['wire_check_cpu_median_s']:.2f}, {s['wire_can_stop_cpu_median_s']:.2f} s", flush=True)
    for name, key, against, goal in (("partitions check", "ratio", "TopicCommand", GOAL),
                                     ("brokers can-stop", "can_stop_ratio", "TopicCommand", GOAL),
                                     ("partitions check", "wire_ratio", "its bare reads", WIRE_GOAL),
                                     ("brokers can-stop", "can_stop_wire_ratio", "its bare reads", WIRE_GOAL)):
        met = "met" if s[key] <= goal else "NOT met"
        print(f"RATIO kadmin {name} / {against}: ratio {s[key]:.2f} (goal <= {goal:g}) {met}", flush=True)


class Attached:
    """A cluster another run of this script holds (--keep DIR --hold): its bootstrap from DIR/bootstrap."""

    def __init__(self, base: Path) -> None:
        from tests.support.kafka import KAFKA_4, kafka_home

        self.home = kafka_home(KAFKA_4)
        self._bootstrap = (base / "bootstrap").read_text().strip()

    def bootstrap(self, without: int | None = None) -> str:
        assert without is None
        return self._bootstrap


def profile(cluster: Any) -> dict[str, Any]:
    """Where kadmin's time goes: start-up alone (`--version`), then one check under cProfile (top functions by
    cumulative time, printed)."""
    import pstats

    t0 = now()
    kadmin("--version")
    startup = now() - t0
    code = ("import cProfile, marshal, sys\n"
            "from kadmin.cli.app import app\n"
            "pr = cProfile.Profile()\n"
            "pr.enable()\n"
            "try:\n"
            "    app(prog_name='kadmin', args=sys.argv[2:])\n"
            "except SystemExit:\n"
            "    pass\n"
            "pr.disable()\n"
            "pr.dump_stats(sys.argv[1])\n")
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
        t0 = now()
        subprocess.run([sys.executable, "-c", code, f"{d}/p", "partitions", "check", "--bootstrap-server",
                        cluster.bootstrap()], capture_output=True, env=env, cwd=REPO, stdin=subprocess.DEVNULL)
        whole = now() - t0
        st = pstats.Stats(f"{d}/p")
        rows = sorted(((v[3], v[2], f"{k[0].rsplit('/', 2)[-1]}:{k[1]}({k[2]})")
                       for k, v in st.stats.items()), reverse=True)  # type: ignore[attr-defined]
    print(f"profile: kadmin --version {startup:.2f} s; partitions check under cProfile {whole:.2f} s; "
          "top by cumulative time:", flush=True)
    for cum, tot, name in rows[:25]:
        print(f"  {cum:7.3f} s cum {tot:7.3f} s own  {name}", flush=True)
    return {"version_s": round(startup, 3), "check_profiled_s": round(whole, 3),
            "top": [[round(c, 3), round(t, 3), n] for c, t, n in rows[:25]]}


# `kadmin` (its main) with every DescribeTopicPartitions timed into argv[1]: [began, answered, topics, partitions]
# per line, on the monotonic clock this script uses too (CLOCK_MONOTONIC is system-wide)
TIMED_POLLS = """
import json, sys, time
from kadmin.cluster import kraft_cluster as kc
log = open(sys.argv.pop(1), "a", buffering=1)
describe = kc.KraftCluster.describe_partitions
def timed(self, topics, progress=None):
    began = time.monotonic()
    got = describe(self, topics, progress)
    log.write(json.dumps([began, time.monotonic(), len(topics or []), len(got[0])]) + "\\n")
    return got
kc.KraftCluster.describe_partitions = timed
from kadmin.cli.app import main
sys.argv[0] = "kadmin"
main()
"""


class Poller(threading.Thread):
    """Metadata back to back: notes the first answer in which BOUNCED is in every ISR it belongs in (its send time
    and the previous answer's send time: the return happened between the previous request's snapshot and this
    answer). It asks only for the topics with a partition of `hosted` (BOUNCED's, read before it stopped: Metadata
    leaves a stopped broker out of the replica lists) whose ISR BOUNCED has not been seen in yet (as kadmin follows
    them), so the last polls, which bracket the return, are short."""

    def __init__(self, bootstrap: str, hosted: set[tuple[str, int]]) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.waiting = set(hosted)
        self.back: tuple[float, float, float] | None = None  # (previous send, this send, this receive)
        self.polls: list[float] = []
        self.sizes: list[int] = []  # partitions in each answer
        self.stop_flag = False

    def run(self) -> None:
        a = admin(self.bootstrap)
        prev = now()
        try:
            while not self.stop_flag:
                sent = now()
                try:
                    st = isr_state(a, sorted({t for t, _ in self.waiting}))
                except Exception:  # noqa: BLE001 - a broker restarting; ask again
                    time.sleep(0.05)
                    continue
                got = now()
                self.polls.append(got - sent)
                self.sizes.append(len(st))
                self.waiting = {k for k in self.waiting if k not in st or BOUNCED not in st[k][1]}
                if not self.waiting:
                    self.back = (prev, sent, got)
                    return
                prev = sent
        finally:
            a.close()


def bounce(cluster: Cluster) -> dict[str, Any]:
    from kadmin.cluster.kraft_cluster import POLL_MAX

    live = cluster.bootstrap(without=BOUNCED)
    a = admin(live)
    try:
        hosted = {k for k, v in isr_state(a).items() if k[0].startswith("t") and BOUNCED in v[0]}
    finally:
        a.close()
    t0 = now()
    cluster.stop(BOUNCED)
    stopped_s = now() - t0
    a = admin(live)
    try:  # out of every ISR (controlled shutdown shrinks them, the controller fences it)
        while any(BOUNCED in v[1] for v in isr_state(a).values()):
            time.sleep(0.5)
    finally:
        a.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
    polls_log = Path(tempfile.mkdtemp(prefix="kadmin-bench-polls-")) / "polls.jsonl"
    wait = subprocess.Popen([sys.executable, "-c", TIMED_POLLS, str(polls_log), "brokers", "wait", str(BOUNCED),
                             "--in-sync", "--bootstrap-server", live, "--timeout", "1800", "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            stdin=subprocess.DEVNULL)
    exited: list[float] = []
    done = threading.Event()

    def reap() -> None:
        wait.wait()
        exited.append(now())
        done.set()

    threading.Thread(target=reap, daemon=True).start()
    poller = Poller(live, hosted)
    # kadmin's first scan must be over before the broker returns (else it may find it in sync at once):
    # it says on stderr what it waits for once that scan is done.
    assert wait.stderr is not None
    first = wait.stderr.readline()
    started = now()
    cluster.start(cluster.brokers[BOUNCED])
    poller.start()
    done.wait()
    poller.stop_flag = True
    poller.join(timeout=120)
    out, err = wait.communicate()
    assert wait.returncode == 0, (wait.returncode, first, err)
    data = json.loads(out)["data"]
    assert poller.back is not None, "the poller never saw the broker back in every ISR"
    prev_sent, sent, got = poller.back
    t_exit = exited[0]
    polls = [json.loads(line) for line in polls_log.read_text().splitlines()]
    # kadmin's last two polls (the last saw the broker back), relative to the return's bracket
    last = [{"began_s": round(b - prev_sent, 3), "took_s": round(e - b, 3), "topics": nt, "partitions": npart}
            for b, e, nt, npart in polls[-2:]]
    print(f"kadmin's polls: {len(polls)} (the first is its scan); the last two, from the bracket's start "
          f"(the return is after 0 and before {got - prev_sent:.3f} s): {last}; exit at {t_exit - prev_sent:.3f} s",
          flush=True)
    return {"stop_s": round(stopped_s, 1), "rejoin_s": round(got - started, 1),
            "hosted": data["hosted_partitions"], "poll_interval_s": POLL_MAX,
            "poller_median_s": round(statistics.median(poller.polls), 3) if poller.polls else None,
            "poller_last_s": round(got - sent, 3), "poller_last_partitions": poller.sizes[-1],
            "poller_polls": len(poller.polls), "poller_hosted": len(hosted),
            "kadmin_polls": len(polls), "kadmin_last_polls": last, "exit_after_last_answer_s":
            round(t_exit - polls[-1][1], 3) if polls else None,
            # the delay is bracketed: the fact happened after the previous poll was sent, before this one answered
            "delay_min_s": round(t_exit - got, 3), "delay_max_s": round(t_exit - prev_sent, 3),
            "delay_mid_s": round(t_exit - (prev_sent + got) / 2, 3),
            "ratio": round((t_exit - prev_sent) / POLL_MAX, 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", default=None, help="cluster directory (default: a temporary one)")
    ap.add_argument("--skip-bounce", action="store_true")
    ap.add_argument("--hold", action="store_true", help="after the side-by-side runs, keep the cluster up")
    ap.add_argument("--attach", default=None, metavar="DIR",
                    help="only the side-by-side runs, against the cluster a --keep DIR --hold run holds")
    ap.add_argument("--profile", action="store_true", help="with --attach: also profile one check")
    args = ap.parse_args()
    if args.attach:
        attached = Attached(Path(args.attach))
        s = side_by_side(attached, args.runs)
        report(s)
        got: dict[str, Any] = {"attached": args.attach, "check": s}
        if args.profile:
            got["profile"] = profile(attached)
        print(json.dumps(got))
        return 0
    from tests.support.kafka import KAFKA_4, kafka_home

    home = kafka_home(KAFKA_4)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kadmin-bench-kraft-"))
    base.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"kafka": KAFKA_4, "topics": args.topics, "partitions_per_topic": args.partitions,
                           "replication": 2}
    total = args.topics * args.partitions
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a SIGTERM still stops the cluster (finally)
    t0 = now()
    cluster = Cluster(home, base)
    try:
        cluster.start_all()
        out["start_s"] = round(now() - t0, 1)
        print(f"Kafka {cluster.version} KRaft, 3 controllers + 3 brokers up in {out['start_s']} s ({base})", flush=True)
        out["create_s"] = round(create_topics(cluster.bootstrap(), args.topics, args.partitions), 1)
        waited, under = wait_all_in_sync(cluster.bootstrap(), total)
        out["in_sync_s"], out["under_replicated_at_start"] = round(waited, 1), under
        print(f"{total:,} partitions ({args.topics} topics x {args.partitions}, RF 2) created in {out['create_s']} s, "
              f"{'all in sync' if not under else f'{under} still under-replicated'} {out['in_sync_s']} s later",
              flush=True)
        s = side_by_side(cluster, args.runs)
        out["check"] = s
        report(s)
        if args.hold:  # keep the cluster for profiling by hand, until SIGTERM/SIGINT
            (base / "bootstrap").write_text(cluster.bootstrap())
            print(f"holding: bootstrap {cluster.bootstrap()} (in {base / 'bootstrap'}); SIGTERM ends it", flush=True)
            while True:
                time.sleep(3600)
        out["profile"] = profile(cluster)
        if not args.skip_bounce:
            b = bounce(cluster)
            out["wait_in_sync"] = b
            print(f"broker {BOUNCED} stopped in {b['stop_s']} s; back in all ISRs of its {b['hosted']} partitions "
                  f"{b['rejoin_s']} s after its start; independent poll {b['poller_median_s']} s", flush=True)
            print(f"brokers wait --in-sync exited {b['delay_min_s']:.2f}..{b['delay_max_s']:.2f} s after the return "
                  f"(poll interval {b['poll_interval_s']:g} s)", flush=True)
            print(f"RATIO wait --in-sync delay / poll interval: ratio {b['ratio']:.2f} (goal <= 1)", flush=True)
    finally:
        cluster.stop_all()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
