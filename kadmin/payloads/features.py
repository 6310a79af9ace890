"""Typed payloads of `kadmin features` (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kadmin.results import Payload


@dataclass(frozen=True)
class LevelRange(Payload):
    min: int
    max: int


@dataclass(frozen=True)
class FeatureRow(Payload):
    """One feature the answering node supports: its finalized level (0: not finalized), as FeatureCommand prints it
    too (`finalized`: metadata.version by name), that node's supported range, and the range every node that answered
    supports (None: no node answered)."""

    name: str
    finalized_level: int
    finalized: str
    supported: LevelRange
    every_node: LevelRange | None


@dataclass(frozen=True)
class NodeSupport(Payload):
    """A registered node and its supported ranges (ApiVersions); `supported` None when it could not be asked
    (`error` says why; `address` None when kadmin has none for it)."""

    id: int
    role: str  # broker | controller
    address: str | None
    supported: Mapping[str, LevelRange] | None
    error: str | None


@dataclass(frozen=True)
class FeaturesDescription(Payload):
    source: str  # whose ApiVersions gave the finalized levels ("broker at 127.0.0.1:9092")
    epoch: int | None  # FinalizedFeaturesEpoch (null: unknown)
    features: tuple[FeatureRow, ...]
    nodes: tuple[NodeSupport, ...]


@dataclass(frozen=True)
class FeatureChange(Payload):
    feature: str
    from_level: int
    to_level: int
    from_version: str  # as FeatureCommand prints the level (metadata.version by name)
    to_version: str


@dataclass(frozen=True)
class FeatureRefusal(Payload):
    reason: str  # downgrade | unsupported | not_asked
    feature: str | None
    node: int | None
    message: str


@dataclass(frozen=True)
class FeaturesUpgrade(Payload):
    """`features upgrade`: the levels the release version sets (`target`), what changes, what stays, and why it was
    refused (exit 7). `upgraded`: UpdateFeatures was sent and the controller took it (never with --dry-run, whose
    `validated` says the controller accepted it with ValidateOnly)."""

    release_version: str
    finalized: Mapping[str, int]  # each feature's finalized level before (0: not finalized)
    target: Mapping[str, int]
    dry_run: bool
    upgraded: bool
    validated: bool
    changes: tuple[FeatureChange, ...]
    unchanged: tuple[str, ...]
    refusals: tuple[FeatureRefusal, ...]
    nodes: tuple[NodeSupport, ...]
