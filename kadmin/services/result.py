"""What every service returns: data for the renderer, problems, and the exit code they imply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kadmin import exit_codes
from kadmin.exit_codes import ExitCode, Verdict
from kadmin.results import Problem


@dataclass
class Result:
    command: str
    data: Any
    errors: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exit_code: ExitCode | Verdict = ExitCode.OK  # a Verdict for the check verbs (kadmin/exit_codes.py)
    message: str | None = None  # a one-line human summary for stderr (waits, diffs)
    plain: str | None = None  # exact text for -o plain (formats other tools parse, e.g. kafka-metadata-quorum)

    def __post_init__(self) -> None:
        # errors make a result partial; a check's verdict stands (it says itself what they mean)
        if self.errors and self.exit_code == ExitCode.OK and not isinstance(self.exit_code, Verdict):
            self.exit_code = ExitCode.PARTIAL

    @property
    def status(self) -> str:
        """The envelope's status: a function of the exit code alone (kadmin/exit_codes.py)."""
        return exit_codes.status(self.exit_code, check=isinstance(self.exit_code, Verdict))
