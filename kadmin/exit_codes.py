"""Exit codes and JSON statuses: the one table scripts depend on. The README table is generated from here.

Two tables, one per kind of command:

- Every command but the check verbs uses `ExitCode`; its JSON envelope's `status` is `STATUS[code]`.
- The check verbs (`CHECK_COMMANDS`: `partitions check`, `quorum check`, `migration status`) follow the
  monitoring-plugin convention exactly (Nagios, Icinga, Sensu): `Verdict` 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, where
  UNKNOWN is anything that prevented a verdict (usage error, configuration, unreachable cluster, internal
  error); their `status` is `ok`, `warning`, `critical` or `unknown`. Ctrl-C still exits 130.

The envelope's `status` is a function of its `exit_code` alone (`status()`), so the two never disagree.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    CONDITION_NOT_MET = 1
    USAGE = 2
    CONFIG = 3
    UNREACHABLE = 4
    PARTIAL = 5
    REJECTED = 6
    UNSAFE = 7
    UNSUPPORTED = 8
    HOOK_FAILED = 9  # a command kadmin ran for the operator (a `roll` hook) failed
    WINDOW_CLOSED = 10  # `roll run --until`: the window closed before the roll finished (resumable)
    INTERNAL = 70  # EX_SOFTWARE (sysexits.h): a bug in kadmin, never an answer about the cluster
    OUTPUT_LOST = 74  # EX_IOERR (sysexits.h): stdout's reader closed the pipe before all of it was written
    INTERRUPTED = 130


class Verdict(IntEnum):
    """The exit codes of the check verbs (the monitoring-plugin convention). UNKNOWN is 3, as CONFIG is in
    `ExitCode`: the two tables are separate on purpose, a check verb never returns an `ExitCode` but 130."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3


CHECK_COMMANDS = ("partitions check", "quorum check", "migration status")
"""The commands whose job is a verdict for a monitoring system. `cluster check-id` and `brokers can-stop`
are gates for scripts (a mismatch or an unsafe stop is a plain "no", exit 1), not monitoring checks."""

GATE_COMMANDS = (*CHECK_COMMANDS, "brokers can-stop", "brokers wait", "cluster check-id", "roll run")
"""The commands whose exit code is a verdict a script acts on: it stands whatever becomes of stdout (a reader that
closed the pipe, `| true`, never turns a "no" into a 0, nor a "yes" into an error). Every other command whose
output could not be written all exits OUTPUT_LOST (74) when it would have exited 0."""

DESCRIPTIONS: dict[ExitCode, str] = {
    ExitCode.OK: "success; the condition holds",
    ExitCode.CONDITION_NOT_MET: (
        "condition not met: a wait timed out, `brokers can-stop` said unsafe, `cluster check-id` found another "
        "cluster's id, `diff --exit-code` found changes, a broker is not registered"
    ),
    ExitCode.USAGE: "usage error: bad option, argument or input file",
    ExitCode.CONFIG: "configuration error: no cluster given, unknown context, wrong chroot, missing ZooKeeper",
    ExitCode.UNREACHABLE: (
        "cluster unreachable or authentication failed, or the command's deadline passed before it had its "
        "answers (its --timeout; without one, 3 × --connect-timeout: docs/connecting.md)"
    ),
    ExitCode.PARTIAL: "partial result: some data could not be read or parsed (named on stderr)",
    ExitCode.REJECTED: "rejected by the cluster (stale broker epoch, not controller after retries)",
    ExitCode.UNSAFE: (
        "refused as unsafe (repeat with --force to override), or `history ingest` found the table locked by "
        "another ingest (`--wait-lock` waits)"
    ),
    ExitCode.UNSUPPORTED: (
        "the cluster does not serve this operation (a KRaft controller is active during a ZooKeeper to KRaft "
        "migration, or the controller lacks the API)"
    ),
    ExitCode.HOOK_FAILED: (
        "a command kadmin ran for the operator failed: a `roll run` hook (--stop, --start, --restart, --only-if, "
        "--before-node, --after-node) exited non-zero or did not return within --step-timeout"
    ),
    ExitCode.WINDOW_CLOSED: (
        "`roll run --until TIME`: the window closed with nodes left; none was started after TIME, none is left "
        "down or drained; the same command without --until (or with a new window) continues"
    ),
    ExitCode.INTERNAL: (
        "internal error: a bug in kadmin (one line on stderr naming the exception; the traceback with -v)"
    ),
    ExitCode.OUTPUT_LOST: (
        "output lost: stdout's reader closed the pipe before all of it was written (`| head`, `| true`); said "
        "on stderr. Never from a gate (`brokers can-stop`, `brokers wait`, `cluster check-id`, the check verbs, "
        "`roll run`): its exit code is its verdict whatever becomes of stdout"
    ),
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); a stream ended by Ctrl-C (`brokers watch`) is still printed",
}

VERDICT_DESCRIPTIONS: dict[Verdict, str] = {
    Verdict.OK: "every finding within the limits",
    Verdict.WARNING: "some finding needs attention (e.g. an under-replicated partition, a lagging voter)",
    Verdict.CRITICAL: "some finding is critical (e.g. an offline partition, no quorum leader)",
    Verdict.UNKNOWN: (
        "no verdict: usage error, configuration error, cluster unreachable or too slow to answer within the "
        "check's deadline (its --timeout, else 3 × --connect-timeout), or internal error (Ctrl-C exits 130)"
    ),
}

STATUS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.CONDITION_NOT_MET: "condition_not_met",
    ExitCode.USAGE: "error",
    ExitCode.CONFIG: "error",
    ExitCode.UNREACHABLE: "error",
    ExitCode.PARTIAL: "partial",
    ExitCode.REJECTED: "error",
    ExitCode.UNSAFE: "error",
    ExitCode.HOOK_FAILED: "error",
    ExitCode.WINDOW_CLOSED: "window_closed",
    ExitCode.UNSUPPORTED: "error",
    ExitCode.INTERNAL: "error",
    ExitCode.OUTPUT_LOST: "error",
    ExitCode.INTERRUPTED: "interrupted",
}
"""The JSON envelope's `status` of every command but the check verbs, by exit code."""

VERDICT_STATUS: dict[Verdict, str] = {v: v.name.lower() for v in Verdict}
"""The JSON envelope's `status` of the check verbs: ok, warning, critical, unknown."""


def status(exit_code: int, *, check: bool = False) -> str:
    """The envelope's `status` for `exit_code`: `VERDICT_STATUS` for a check verb, else `STATUS`.
    130 is `interrupted` for both."""
    if exit_code == ExitCode.INTERRUPTED:
        return STATUS[ExitCode.INTERRUPTED]
    if check:
        return VERDICT_STATUS[Verdict(exit_code)] if exit_code in Verdict._value2member_map_ else "unknown"
    return STATUS[ExitCode(exit_code)] if exit_code in ExitCode._value2member_map_ else "error"


def verdict(exit_code: int) -> int:
    """A check verb's exit code: a verdict (0-2) and 130 (Ctrl-C) pass; anything else prevented the verdict
    and is UNKNOWN (3)."""
    if exit_code in (Verdict.OK, Verdict.WARNING, Verdict.CRITICAL, ExitCode.INTERRUPTED):
        return int(exit_code)
    return int(Verdict.UNKNOWN)


def markdown_table() -> str:
    """The exit-code tables as Markdown, for the README (a test checks it is current)."""
    lines = ["| code | name | JSON `status` | meaning |", "|---|---|---|---|"]
    for code in ExitCode:
        lines.append(f"| {int(code)} | `{code.name}` | `{STATUS[code]}` | {DESCRIPTIONS[code]} |")
    checks = " and ".join(f"`kadmin {c}`" for c in CHECK_COMMANDS)
    lines += ["", f"The check verbs, {checks}, follow the monitoring-plugin convention instead "
              "(and exit 130 on Ctrl-C):", "", "| code | verdict | JSON `status` | meaning |", "|---|---|---|---|"]
    for v in Verdict:
        lines.append(f"| {int(v)} | `{v.name}` | `{VERDICT_STATUS[v]}` | {VERDICT_DESCRIPTIONS[v]} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(markdown_table())
