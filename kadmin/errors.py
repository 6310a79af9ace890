"""The one exception family. Each error carries a stable code (for JSON) and an exit code."""

from __future__ import annotations

from kadmin.exit_codes import ExitCode


class KadminError(Exception):
    code = "error"
    exit_code = ExitCode.CONDITION_NOT_MET

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class UsageError(KadminError):
    code = "usage"
    exit_code = ExitCode.USAGE


class ConfigError(KadminError):
    code = "config"
    exit_code = ExitCode.CONFIG


class WrongChroot(ConfigError):
    code = "wrong_chroot"


class ClusterUnreachable(KadminError):
    code = "unreachable"
    exit_code = ExitCode.UNREACHABLE


class OutOfTime(ClusterUnreachable):
    """The command's deadline passed: no request is sent any more (exit 4; a check's UNKNOWN, a gate's not safe).
    Raised by the cluster layer (kadmin/cluster/deadlines.py)."""


class AuthFailed(KadminError):
    code = "auth_failed"
    exit_code = ExitCode.UNREACHABLE


class NotFound(KadminError):
    code = "not_found"
    exit_code = ExitCode.CONDITION_NOT_MET


class ConditionNotMet(KadminError):
    code = "condition_not_met"
    exit_code = ExitCode.CONDITION_NOT_MET


class Rejected(KadminError):
    code = "rejected"
    exit_code = ExitCode.REJECTED


class Unsafe(KadminError):
    code = "unsafe"
    exit_code = ExitCode.UNSAFE


class SandboxError(KadminError):
    code = "sandbox"
    exit_code = ExitCode.CONFIG


class InvalidData(KadminError):
    """What an operation depends on cannot be parsed (a garbage znode): nothing was written."""

    code = "invalid_znode"
    exit_code = ExitCode.PARTIAL


class Unsupported(KadminError):
    """The cluster does not serve the operation (a KRaft controller during migration, an API it lacks)."""

    code = "unsupported"
    exit_code = ExitCode.UNSUPPORTED


def in_words(e: BaseException) -> str:
    """One line saying what went wrong, in the exception's own words and never its class name: an OSError's
    strerror (`Connection refused`), else its text; an exception with no text (a bare `ConnectionLoss()`) is
    named by its class in plain words (`connection loss`)."""
    import re

    text = e.strerror if isinstance(e, OSError) and e.strerror else BaseException.__str__(e)
    text = " ".join(str(text).split())
    if text:
        return text
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", type(e).__name__).lower().split()
    if len(words) > 1 and words[0] in ("kafka", "kazoo"):
        words.pop(0)
    if len(words) > 2 and words[-1] in ("error", "exception"):
        words.pop()
    return " ".join(words) or "an unknown error"
