"""The test suite's time per directory against its budget (issue 38 §1).

    python bench/suite.py [TIMES.json]      (default: tests/scope_seconds.json, written by `make test-times`)

`make test` runs the suite on pytest-xdist workers; TIMES holds each scope's measured worker-seconds (setup, call
and teardown of its tests: tests/support/schedule.py) from one run. The wall time of a run is about the sum over
the workers, so each directory has a budget of worker-seconds: one that grows past it is where a module should use
a worker's shared cluster (tests/support/clusters.py) or be made cheaper. Prints each directory against its budget,
the largest scopes, and one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Worker-seconds per directory, measured beside a 2-core CPU hog on the project's 2-core machine with 4 workers
# (bench/README.md: "The suite in parallel"); the real-Kafka tests are most of it.
BUDGET = {"tests/kafka": 5000.0, "tests/pipeline": 1800.0, "tests/integration": 800.0, "tests/cli": 400.0,
          "tests/unit": 250.0}


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else REPO / "tests" / "scope_seconds.json"
    try:
        data = json.loads(path.read_text())
        dirs, scopes = data["directories"], data["scopes"]
    except (OSError, ValueError, KeyError) as e:
        print(f"bench/suite.py: {path}: {e}", file=sys.stderr)
        return 2
    over = []
    print(f"{'directory':<20} {'worker-s':>9} {'budget':>8}")
    for d in sorted(set(BUDGET) | set(dirs)):
        got, budget = float(dirs.get(d, 0.0)), BUDGET.get(d)
        mark = "" if budget is None or got <= budget else "  OVER"
        if mark:
            over.append(d)
        print(f"{d:<20} {got:>9.0f} {budget if budget is not None else float('nan'):>8.0f}{mark}")
    total = sum(float(v) for v in dirs.values())
    print(f"{'total':<20} {total:>9.0f} {sum(BUDGET.values()):>8.0f}")
    print("\nlargest scopes:")
    for name, secs in sorted(scopes.items(), key=lambda kv: -float(kv[1]))[:12]:
        print(f"  {float(secs):7.0f} s  {name}")
    print(json.dumps({"bench": "suite", "times": str(path), "directories": dirs, "total": round(total, 1),
                      "over_budget": over}))
    return 1 if over else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except BrokenPipeError:  # a reader that stopped early (| head)
        sys.exit(0)
