"""How long the real-Kafka part of the suite takes: fetching Kafka, starting brokers, each test module.

What it measures (wall time, on whatever else the machine is doing):
  1. `scripts/fetch-kafka.sh VERSION` for each pinned version with the cache already filled: the cost
     `make test` pays on every run after the first (it must be near zero).
  2. With `--cold`: the same into an empty KADMIN_KAFKA_CACHE (Maven's ~/.m2 may still hold the jars;
     pass `--cold-m2` to use an empty Maven repository too: a true first fetch from Maven Central).
  3. One real Kafka 3.9.1 broker in ZooKeeper mode: JVM start to its /brokers/ids/<id> znode.
  4. `pytest -m kafka` module by module (`--durations=0`): each module's wall time and its three slowest
     test phases (setup = starting the module's cluster).
Prints human-readable lines, then one final line of JSON with every number.
Usage: python bench/realkafka.py [--cold] [--cold-m2] [--modules tests/kafka/test_x.py ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

VERSIONS = ("3.9.1", "4.3.1")


def fetch(version: str, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([str(REPO / "scripts" / "fetch-kafka.sh"), version], capture_output=True, text=True,
                          env=env, check=True)
    return time.monotonic() - t0, proc.stdout.strip().splitlines()[-1]


def broker_start(home: Path) -> float:
    from kazoo.client import KazooClient

    from kadmin.sandbox.zkserver import Ensemble
    from tests.support.kafka import ZkModeBroker

    with tempfile.TemporaryDirectory(prefix="kadmin-bench-kafka-") as d:
        ens = Ensemble(Path(d) / "zk", size=1, tick_ms=250)
        ens.start(timeout=120)
        try:
            kz = KazooClient(hosts=ens.connect_string)
            kz.start(timeout=60)
            kz.ensure_path("/bench")
            kz.stop()
            kz.close()
            b = ZkModeBroker(home, 1, ens.connect_string + "/bench", Path(d))
            t0 = time.monotonic()
            b.start()
            try:
                b.wait_registered(ens.connect_string + "/bench")
                return time.monotonic() - t0
            finally:
                b.kill()
        finally:
            ens.stop()


DURATION = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)$")


def run_module(module: str) -> dict[str, object]:
    env = {**os.environ, "CI": "true"}  # a missing Kafka fails instead of skipping
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0",
                           "--durations-min=0", module], cwd=REPO, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    phases = []
    for line in proc.stdout.splitlines():
        m = DURATION.match(line)
        if m:
            phases.append((float(m.group(1)), m.group(2), m.group(3).split("::")[-1]))
    phases.sort(reverse=True)
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    return {"module": module, "wall_s": round(wall, 1), "rc": proc.returncode, "summary": tail,
            "slowest": [{"s": s, "phase": ph, "test": t} for s, ph, t in phases[:3]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true", help="also time a fetch into an empty kadmin cache")
    ap.add_argument("--cold-m2", action="store_true", help="with --cold: an empty Maven repository too")
    ap.add_argument("--modules", nargs="*", default=None, help="test modules (default: tests/kafka/test_*.py)")
    args = ap.parse_args()
    out: dict[str, object] = {}

    env = dict(os.environ)
    warm = {}
    home = None
    for v in VERSIONS:
        s, h = fetch(v, env)
        warm[v] = round(s, 2)
        home = home or Path(h)
        print(f"fetch-kafka.sh {v} (cache filled): {s:.2f} s", flush=True)
    out["fetch_warm_s"] = warm

    if args.cold:
        with tempfile.TemporaryDirectory(prefix="kadmin-bench-cache-") as d:
            cold_env = {**env, "KADMIN_KAFKA_CACHE": str(Path(d) / "cache")}
            if args.cold_m2:
                cold_env["MAVEN_OPTS"] = (env.get("MAVEN_OPTS", "") + f" -Dmaven.repo.local={d}/m2").strip()
            cold = {}
            for v in VERSIONS:
                s, _ = fetch(v, cold_env)
                cold[v] = round(s, 1)
                print(f"fetch-kafka.sh {v} (empty cache{', empty ~/.m2' if args.cold_m2 else ''}): {s:.1f} s",
                      flush=True)
            out["fetch_cold_s"] = cold

    assert home is not None
    s = broker_start(home)
    out["broker_start_s"] = round(s, 1)
    print(f"one Kafka 3.9.1 broker, JVM start to registration: {s:.1f} s", flush=True)

    modules = args.modules or sorted(str(p.relative_to(REPO)) for p in (REPO / "tests" / "kafka").glob("test_*.py"))
    results = []
    total = 0.0
    for m in modules:
        r = run_module(m)
        results.append(r)
        total += float(r["wall_s"])  # type: ignore[arg-type]
        slow = ", ".join(f"{x['test']} {x['phase']} {x['s']:.1f}s" for x in r["slowest"])  # type: ignore[union-attr]
        print(f"{m}: {r['wall_s']} s ({r['summary']}); slowest: {slow}", flush=True)
    out["modules"] = results
    out["total_s"] = round(total, 1)
    print(f"real-Kafka tests, all modules: {total:.0f} s", flush=True)
    print(json.dumps(out))
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
