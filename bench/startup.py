"""Benchmark kadmin's start-up the way a shell loop pays for it (issue 13 §2): whole processes, side by side.

Nine commands, each a real subprocess, run in interleaved rounds (round i runs all nine, in an order that
rotates with i, so load on a shared machine falls on all of them alike); each one's median wall time over
the rounds, and its median CPU time (user + sys of the process, from wait4) as a second view that load
disturbs less:
  A. `python -c "import typer"`                      the floor: Python plus the CLI framework
  B. `kadmin --version`
  C. `kadmin brokers --help`
  D. a bare kazoo script: connect, get_children /brokers/ids, get each, stop, close (what max-epoch reads)
  E. `kadmin brokers max-epoch -z ZK` against a 5-broker sandbox (ZooKeeper on 127.0.0.1, emulated brokers)
  F. a bare kazoo script reading broker 1's registration, and G. `kadmin brokers wait 1 --epoch-gt 0` (met at once)
  H. a bare kazoo script of can-stop's reads (pipelined with get_async), and I. `kadmin brokers can-stop 1`
`kadmin` is the console script next to this Python (what scripts run), else `python -m kadmin`.
Ratios and goals (issue 38 §4): B/A <= 1.3, C/A <= 1.5, E/D <= 1.15, G/F <= 1.15, I/H <= 1.15 (issue 24's were 2 and
1.5). Prints them and the load average before and after, then one line of JSON with every number.
kadmin's dataclass-code cache (kadmin/cli/codecache.py) is the run's own, filled by the warm-up run;
KADMIN_BENCH_NO_CODECACHE=1 measures kadmin without it.
Usage: python bench/startup.py [--rounds 21] [--brokers 5] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kadmin.sandbox.manager import Sandbox

KAZOO_SCRIPT = """\
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start(timeout=10)
ids = zk.get_children("/brokers/ids")
print(max(zk.get(f"/brokers/ids/{i}")[1].czxid for i in ids))
zk.stop()
zk.close()
"""

# `brokers wait 1 --epoch-gt 0`: the registration of broker 1 read once (met at once: its epoch is above 0)
KAZOO_WAIT_SCRIPT = """\
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start(timeout=10)
print(zk.get("/brokers/ids/1")[1].czxid)
zk.stop()
zk.close()
"""

# `brokers can-stop 1`: what kadmin reads for it in ZooKeeper mode (the listings, then every broker
# registration, topic znode, topic config, dynamic broker config and partition state), pipelined as kazoo can
KAZOO_CAN_STOP_SCRIPT = """\
import json, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start(timeout=10)
zk.exists("/")
ids, topics, brokers_cfg, deleting = (zk.get_children(p) for p in (
    "/brokers/ids", "/brokers/topics", "/config/brokers", "/admin/delete_topics"))
def get_all(paths):
    return [a.get() for a in [zk.get_async(p) for p in paths]]
get_all([f"/brokers/ids/{i}" for i in ids] + [f"/config/brokers/{b}" for b in brokers_cfg])
znodes = get_all(f"/brokers/topics/{t}" for t in topics)
assignments = {t: json.loads(d)["partitions"] for t, (d, _) in zip(topics, znodes)}
get_all([f"/config/topics/{t}" for t in topics])
keys = [(t, p) for t, parts in assignments.items() for p, replicas in parts.items() if 1 in replicas]
get_all([f"/brokers/topics/{t}/partitions/{p}/state" for t, parts in assignments.items() for p in parts])
print(len(keys))
zk.stop()
zk.close()
"""

GOALS = {"version_over_import_typer": 1.3, "brokers_help_over_import_typer": 1.5,
         "max_epoch_over_bare_kazoo": 1.15, "wait_epoch_gt_over_bare_kazoo": 1.15, "can_stop_over_bare_kazoo": 1.15}


def kadmin_command() -> list[str]:
    script = Path(sys.executable).with_name("kadmin")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kadmin"]


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the process, stdout) of one run; fails on a non-zero exit."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} exited {proc.returncode}: {stderr.strip()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, stdout


def ms(x: float) -> float:
    return round(x * 1000, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--brokers", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="sandbox directory [default: a fresh temp dir]")
    args = ap.parse_args()
    own_dir = args.dir is None
    directory = Path(tempfile.mkdtemp(prefix="kadmin-bench-startup-")) if own_dir else args.dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}
    env["XDG_CONFIG_HOME"] = str(directory / "config")  # no user contexts file: the same on every machine
    # kadmin's dataclass-code cache (kadmin/cli/codecache.py) of this run's own: the warm-up run below fills it, as
    # an operator's first command does; KADMIN_BENCH_NO_CODECACHE=1 puts it under /dev/null, where none is kept
    env["XDG_CACHE_HOME"] = "/dev/null" if os.environ.get("KADMIN_BENCH_NO_CODECACHE") else str(directory / "cache")
    # kadmin's modules compiled as `pip install` compiles a wheel's (kazoo's and Typer's were, at install): with
    # PYTHONDONTWRITEBYTECODE set (some CI images and sandboxes set it), a source tree's edited modules would be
    # compiled again in every process, a cost no installed kadmin pays
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "kadmin"), quiet=1)
    sb = Sandbox(directory)
    res: dict[str, object] = {"rounds": args.rounds, "brokers": args.brokers, "python": sys.version.split()[0]}
    try:
        st = sb.up(brokers=args.brokers, ensemble=1, timeout=120)
        connect = st["zookeeper"]
        kadmin = kadmin_command()
        commands = {
            "import_typer": [sys.executable, "-c", "import typer"],
            "version": [*kadmin, "--version"],
            "brokers_help": [*kadmin, "brokers", "--help"],
            "bare_kazoo": [sys.executable, "-c", KAZOO_SCRIPT, connect],
            "max_epoch": [*kadmin, "brokers", "max-epoch", "-z", connect],  # plain: stdout is not a terminal
            "bare_kazoo_wait": [sys.executable, "-c", KAZOO_WAIT_SCRIPT, connect],
            "wait_epoch_gt": [*kadmin, "brokers", "wait", "1", "--epoch-gt", "0", "-z", connect],
            "bare_kazoo_can_stop": [sys.executable, "-c", KAZOO_CAN_STOP_SCRIPT, connect],
            "can_stop": [*kadmin, "brokers", "can-stop", "1", "-z", connect],
        }
        print(f"sandbox: {args.brokers} brokers at {connect}; kadmin = {' '.join(kadmin)}")
        # one warm-up run of each (page cache, .pyc files), and the two epoch readers must agree
        outs = {name: run(cmd, env)[2] for name, cmd in commands.items()}
        if outs["max_epoch"].strip() != outs["bare_kazoo"].strip():
            raise RuntimeError(f"max-epoch printed {outs['max_epoch']!r}, the kazoo script {outs['bare_kazoo']!r}")
        hosted = json.loads(run([*commands["can_stop"], "-o", "json"], env)[2])["data"]["hosted_partitions"]
        if hosted != int(outs["bare_kazoo_can_stop"]):
            raise RuntimeError(f"can-stop saw {hosted} partitions, the kazoo script {outs['bare_kazoo_can_stop']!r}")
        names = list(commands)
        res["load_before"] = [round(x, 2) for x in os.getloadavg()]
        print(f"load average before: {res['load_before']}")
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for i in range(args.rounds):
            for name in names[i % len(names):] + names[:i % len(names)]:
                w, c, _ = run(commands[name], env)
                wall[name].append(w)
                cpu[name].append(c)
        res["load_after"] = [round(x, 2) for x in os.getloadavg()]
        print(f"load average after: {res['load_after']}")
        med = {n: statistics.median(wall[n]) for n in names}
        med_cpu = {n: statistics.median(cpu[n]) for n in names}
        res["wall_median_ms"] = {n: ms(v) for n, v in med.items()}
        res["cpu_median_ms"] = {n: ms(v) for n, v in med_cpu.items()}
        res["wall_min_ms"] = {n: ms(min(wall[n])) for n in names}
        labels = {"import_typer": 'python -c "import typer"', "version": "kadmin --version",
                  "brokers_help": "kadmin brokers --help", "bare_kazoo": "python -c <kazoo connect-get-close>",
                  "max_epoch": "kadmin brokers max-epoch -z ZK",
                  "bare_kazoo_wait": "python -c <kazoo get of broker 1>",
                  "wait_epoch_gt": "kadmin brokers wait 1 --epoch-gt 0",
                  "bare_kazoo_can_stop": "python -c <kazoo reads of can-stop>",
                  "can_stop": "kadmin brokers can-stop 1 -z ZK"}
        print(f"{'command (' + str(args.rounds) + ' rounds)':<38} {'wall median':>12} {'wall min':>10} "
              f"{'CPU median':>11}")
        for n in names:
            print(f"{labels[n]:<38} {ms(med[n]):>9} ms {ms(min(wall[n])):>7} ms {ms(med_cpu[n]):>8} ms")
        pairs = {"version_over_import_typer": ("version", "import_typer"),
                 "brokers_help_over_import_typer": ("brokers_help", "import_typer"),
                 "max_epoch_over_bare_kazoo": ("max_epoch", "bare_kazoo"),
                 "wait_epoch_gt_over_bare_kazoo": ("wait_epoch_gt", "bare_kazoo_wait"),
                 "can_stop_over_bare_kazoo": ("can_stop", "bare_kazoo_can_stop")}
        ratios, cpu_ratios = {}, {}
        for key, (a, b) in pairs.items():
            ratios[key] = round(med[a] / med[b], 2)
            cpu_ratios[key] = round(med_cpu[a] / med_cpu[b], 2)
            verdict = "met" if ratios[key] <= GOALS[key] else "NOT met"
            print(f"{key}: ratio {ratios[key]:.2f} (goal <= {GOALS[key]}) {verdict}; by CPU time {cpu_ratios[key]:.2f}")
        res["ratios"], res["cpu_ratios"], res["goals"] = ratios, cpu_ratios, GOALS
    finally:
        sb.down()
        if own_dir:
            shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
