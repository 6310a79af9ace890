"""The shared result types, below the services, the renderers and the cluster layer (stdlib and
kadmin.exit_codes only).

`Problem`: something that could not be read or parsed (it makes a result partial). `Progress`: the
callback long scans report through. `Result`: what every service returns and the renderer prints.
`Payload`: a command's data, typed; its `to_json()` is the command's JSON contract (each command's payload
is in kadmin/payloads.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

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


D = TypeVar("D")  # a result's data: a Payload, a list of them, or (commands not typed yet) plain JSON values


@dataclass
class Result(Generic[D]):
    """What every service returns: data for the renderer, problems, and the exit code they imply.

    How it looks (table, plain text) is the renderer's business: the command names its view when it emits
    the result (kadmin/render/views.py). `command`, the JSON envelope's full command name, is stamped by the
    CLI (`Invocation.emit`), which knows it; services leave it unset.
    """

    data: D  # a Payload (or a list of them): the renderer prints its to_json() as JSON, the view reads it
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


# ============================================================================ typed payloads
@dataclass(frozen=True)
class Payload:
    """A command's data as a service hands it to the renderer: a frozen dataclass whose fields are the keys
    of its JSON object, in their order. `to_json()` is its JSON form, the command's contract (the envelope's
    `data`, an NDJSON line): by default every field under its name, tuples as lists, mappings as dicts and
    payloads as their own JSON form. A payload with a key that is there only sometimes says so in its own
    `to_json()`. Views read the fields; only the renderer reads the JSON form."""

    def to_json(self) -> Any:
        return {f.name: json_form(getattr(self, f.name)) for f in dataclasses.fields(self)}


def json_form(value: Any) -> Any:
    """`value` as JSON values: a payload as its to_json(), a tuple or a list as a list, a mapping as a dict
    (its keys as they are: json writes an int key as a string, as it always did)."""
    if isinstance(value, Payload):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [json_form(v) for v in value]
    if isinstance(value, Mapping):
        return {k: json_form(v) for k, v in value.items()}
    return value
