"""Exit codes: the one table scripts depend on. The README table is generated from this module."""

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
    INTERRUPTED = 130


DESCRIPTIONS: dict[ExitCode, str] = {
    ExitCode.OK: "success; the condition holds",
    ExitCode.CONDITION_NOT_MET: (
        "condition not met: a wait timed out, a check failed, `diff --exit-code` found changes, "
        "a broker is not registered"
    ),
    ExitCode.USAGE: "usage error: bad option, argument or input file",
    ExitCode.CONFIG: "configuration error: no cluster given, unknown context, wrong chroot, missing ZooKeeper",
    ExitCode.UNREACHABLE: "cluster unreachable or authentication failed",
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
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}


def markdown_table() -> str:
    """The exit-code table as Markdown, for the README (a test checks it is current)."""
    lines = ["| code | name | meaning |", "|---|---|---|"]
    for code in ExitCode:
        lines.append(f"| {int(code)} | `{code.name}` | {DESCRIPTIONS[code]} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(markdown_table())
