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
