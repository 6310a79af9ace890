"""The shared result types, below the services, the renderers and the cluster layer (stdlib only).

`Problem`: something that could not be read or parsed (it makes a result partial). `Progress`: the
callback long scans report through. `Result`: what every service returns (added by the CLI/render work).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """Something that could not be read or parsed; makes a result partial."""

    code: str
    message: str
    topic: str | None = None  # what it is about, when it is about a topic (partition None: the whole topic)
    partition: int | None = None


Progress = Callable[[str, int | None, int], None]  # (phase, total or None, advance)
