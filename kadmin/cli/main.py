"""The `kadmin` process's entry point: a gate command (kadmin/cli/fastpath.py) runs without Typer; every other
command line goes to the full CLI (kadmin/cli/app.py)."""

from __future__ import annotations

import sys


def main() -> None:
    try:  # Ctrl-C while Python loads kadmin: exit 130, quietly
        from kadmin.cli.codecache import install

        install()  # before any dataclass of kadmin's is created: see there
        if sys.argv[1:2] == ["__complete"]:  # a completion script asking for values (kadmin/cli/complete_values.py)
            from kadmin.cli.complete_values import run as complete
            from kadmin.cli.process_exit import exit_now

            exit_now(complete(sys.argv[2:]))
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
