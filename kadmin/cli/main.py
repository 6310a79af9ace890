"""The `kadmin` process's entry point: a gate command (kadmin/cli/fastpath.py) runs without Typer; every other
command line goes to the full CLI (kadmin/cli/app.py)."""

from __future__ import annotations

import gc
import sys

# Python's cyclic collector runs a pass every 700 net allocations (its default first threshold), each one walking
# the young objects and, every 10th and 100th, older ones. A kadmin process makes most of its objects in its first
# tenth of a second, loading modules (kazoo or Typer, its own) that it keeps to the end: at 700 those passes walk
# them again and again, ~4 % of a gate's instructions (issue 38 §4). At 50,000 a gate finishes before its first
# pass, and a long command (`roll run`, `brokers watch`, `history ingest`) still has its garbage cycles collected,
# in rarer, larger passes. Only the `kadmin` process sets it, not an import of kadmin as a library.
GC_FIRST_THRESHOLD = 50_000


def main() -> None:
    gc.set_threshold(GC_FIRST_THRESHOLD, *gc.get_threshold()[1:])
    try:  # Ctrl-C while Python loads kadmin: exit 130, quietly
        from kadmin.cli.codecache import install

        install()  # before any dataclass of kadmin's is created: see there
        if sys.argv[1:2] == ["__complete"]:  # a completion script asking for values (kadmin/cli/complete_values.py)
            from kadmin.cli.complete_values import run as complete
            from kadmin.cli.process_exit import exit_now

            exit_now(complete(sys.argv[2:]))
        code = None
        if not {"--help", "-h"} & set(sys.argv[1:]):  # a help is Typer's: the fast path reads no help option
            from kadmin.cli.fastpath import run

            code = run(sys.argv[1:])
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    if code is None:
        from kadmin.cli.app import main as full

        full()
        return
    from kadmin.cli.process_exit import exit_now

    exit_now(code)
