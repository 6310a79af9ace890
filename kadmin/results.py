"""The shared result types, below the services, the renderers and the cluster layer (stdlib and
kadmin.exit_codes only).

`Problem`: something that could not be read or parsed (it makes a result partial). `Progress`: the
callback long scans report through. `Result`: what every service returns and the renderer prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kadmin import exit_codes
from kadmin.exit_codes import ExitCode, Verdict


@dataclass(frozen=True)
class Problem:
    """Something that could not be read or parsed; makes a result partial."""

    code: str
    message: str
    topic: str | None = None  # what it is about, when it is about a topic (partition None: the whole topic)
    partition: int | None = None


Progress = Callable[[str, int | None, int], None]  # (phase, total or None, advance)


@dataclass
class Result:
    """What every service returns: data for the renderer, problems, and the exit code they imply.

    How it looks (table, plain text) is the renderer's business: the command names its view when it emits
    the result (kadmin/render/views.py). `command`, the JSON envelope's full command name, is stamped by the
    CLI (`Invocation.emit`), which knows it; services leave it unset.
    """

    data: Any
    errors: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exit_code: ExitCode | Verdict = ExitCode.OK  # a Verdict for the check verbs (kadmin/exit_codes.py)
    message: str | None = None  # a one-line human summary for stderr (waits, diffs)
    command: str | None = None  # e.g. "brokers list", "history report bounces": set by the CLI

    def __post_init__(self) -> None:
        # errors make a result partial; a check's verdict stands (it says itself what they mean)
        if self.errors and self.exit_code == ExitCode.OK and not isinstance(self.exit_code, Verdict):
            self.exit_code = ExitCode.PARTIAL

    @property
    def status(self) -> str:
        """The envelope's status: a function of the exit code alone (kadmin/exit_codes.py)."""
        return exit_codes.status(self.exit_code, check=isinstance(self.exit_code, Verdict))
