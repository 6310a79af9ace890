"""What every service returns: data for the renderer, problems, and the exit code they imply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kadmin.cluster.base import Problem
from kadmin.exit_codes import ExitCode

Status = Literal["success", "partial", "error"]


@dataclass
class Result:
    command: str
    data: Any
    errors: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exit_code: ExitCode = ExitCode.OK
    message: str | None = None  # a one-line human summary for stderr (waits, diffs)
    plain: str | None = None  # exact text for -o plain (formats other tools parse, e.g. kafka-metadata-quorum)

    def __post_init__(self) -> None:
        if self.errors and self.exit_code == ExitCode.OK:
            self.exit_code = ExitCode.PARTIAL

    @property
    def status(self) -> Status:
        if self.exit_code == ExitCode.PARTIAL:
            return "partial"
        # INTERRUPTED: a stream that ended by Ctrl-C (`brokers watch -o json`) is a complete result
        if self.exit_code in (ExitCode.OK, ExitCode.CONDITION_NOT_MET, ExitCode.INTERRUPTED) and not self.errors:
            return "success"
        return "error"
