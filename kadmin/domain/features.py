"""Feature flags (KIP-584, KIP-778): finalized levels, each node's supported ranges, and what an upgrade to a
release version asks for and whether every node can take it.

The tables are Kafka 4.3.1's own: MetadataVersion (level -> name, e.g. 21 -> 3.9-IV0) and Feature's
defaultLevel(metadataVersion) for the production features, as `kafka-features version-mapping
--release-version X.Y` prints them. A release version X.Y stands for its latest metadata version (4.0 ->
4.0-IV3, level 25), as FeatureCommand's MetadataVersion.fromVersionString reads it. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

METADATA_VERSION = "metadata.version"
# Feature.PRODUCTION_FEATURES in Kafka 4.3.1, in its order (metadata.version is set first, as FeatureCommand does)
FEATURES = ("kraft.version", "transaction.version", "group.version", "eligible.leader.replicas.version",
            "share.version", "streams.version")

# MetadataVersion in Kafka 4.3.1 (levels 1-6 from 3.9.1: below 4.x's minimum, still named in a 3.x cluster's
# supported range). Level 31 (4.4-IV0) is not a production version: no release version names it.
MV_NAMES: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3", 8: "3.4-IV0",
    9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0",
    16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0",
    23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1",
    30: "4.3-IV0", 31: "4.4-IV0",
}
MIN_LEVEL, LATEST_PRODUCTION = 7, 30  # MetadataVersion.MINIMUM_VERSION (3.3-IV3), LATEST_PRODUCTION (4.3-IV0)


def _defaults(level: int) -> dict[str, int]:
    """Feature.defaultLevel(metadata version `level`) of each production feature (Kafka 4.3.1)."""
    return {
        "kraft.version": 1 if level >= 21 else 0,
        "transaction.version": 2 if level >= 24 else 0,
        "group.version": 1 if level >= 22 else 0,
        "eligible.leader.replicas.version": 1 if level >= 26 else 0,
        "share.version": 1 if level >= 28 else 0,
        "streams.version": 1 if level >= 29 else 0,
    }


def releases() -> list[str]:
    """The release versions an upgrade can name (3.3 to 4.3), oldest first."""
    return list(dict.fromkeys(MV_NAMES[lv].split("-")[0] for lv in range(MIN_LEVEL, LATEST_PRODUCTION + 1)))


def metadata_level(release: str) -> int:
    """metadata.version's level for a release version: `X.Y` (its latest metadata version) or `X.Y-IVn`;
    ValueError naming the known ones."""
    text = release.strip()
    for lv in range(LATEST_PRODUCTION, MIN_LEVEL - 1, -1):
        name = MV_NAMES[lv]
        if text in (name, name.split("-")[0]):
            return lv
    known = releases()
    raise ValueError(f"unknown release version {release!r}: kadmin knows {known[0]} to {known[-1]} (X.Y, or a "
                     f"metadata version X.Y-IVn from {MV_NAMES[MIN_LEVEL]} to {MV_NAMES[LATEST_PRODUCTION]})")


def release_levels(release: str) -> dict[str, int]:
    """Every production feature's level for a release version, metadata.version first (as `kafka-features
    version-mapping --release-version X.Y` prints them)."""
    level = metadata_level(release)
    return {METADATA_VERSION: level, **_defaults(level)}


def level_text(feature: str, level: int) -> str:
    """A level as FeatureCommand prints it: metadata.version by name (`4.3-IV0`, `UNKNOWN 99`), else the number."""
    if feature == METADATA_VERSION:
        return MV_NAMES.get(level, f"UNKNOWN {level}")
    return str(level)


# ---------------------------------------------------------------------------------------------- state
Role = Literal["broker", "controller"]


@dataclass(frozen=True)
class NodeFeatures:
    """What one registered node said in ApiVersions (v3+): its supported range of each feature. `supported` None:
    the node could not be asked (`error` says why). A feature a node does not list, it supports at level 0 only."""

    id: int
    role: Role
    address: str | None
    supported: Mapping[str, tuple[int, int]] | None
    error: str | None = None


@dataclass(frozen=True)
class FeatureState:
    """The finalized features as one node reports them (`source`), with its epoch, its own supported ranges, and
    every registered node's."""

    source: str  # "broker 1 at 127.0.0.1:9092" (whose ApiVersions gave the finalized levels)
    epoch: int | None  # FinalizedFeaturesEpoch; None when the node said -1 (unknown)
    finalized: Mapping[str, int]  # feature -> finalized max level (a feature at level 0 is not listed)
    supported: Mapping[str, tuple[int, int]]  # the source node's supported ranges
    nodes: Sequence[NodeFeatures]
    problems: Sequence[str] = ()  # what kept nodes from being known at all ("the controllers could not be listed")


def supported_by_all(nodes: Sequence[NodeFeatures], feature: str) -> tuple[int, int] | None:
    """The range every node that answered supports (their intersection); None when no node answered, and (0, 0) for
    a feature some node does not know. An empty intersection is (min, max) with min > max."""
    answered = [n.supported for n in nodes if n.supported is not None]
    if not answered:
        return None
    ranges = [s.get(feature, (0, 0)) for s in answered]
    return max(r[0] for r in ranges), min(r[1] for r in ranges)


@dataclass(frozen=True)
class Change:
    feature: str
    current: int
    target: int


@dataclass(frozen=True)
class Refusal:
    """Why an upgrade cannot be sent: `node` None for a downgrade (no node's fault)."""

    reason: Literal["downgrade", "unsupported", "not_asked"]
    feature: str | None
    node: int | None
    message: str


@dataclass(frozen=True)
class UpgradePlan:
    changes: tuple[Change, ...]  # what UpdateFeatures would ask for (levels that go up)
    unchanged: tuple[str, ...]  # features left as they are: already at the target level, or a target of 0
    refusals: tuple[Refusal, ...]


def plan_upgrade(target: Mapping[str, int], state: FeatureState) -> UpgradePlan:
    """What an upgrade to `target` (feature -> level) asks for, and why it is refused: a level below the finalized
    one (a downgrade: out of scope), a node that does not support a target level, or a node that could not be
    asked (a gate never takes the unknown as yes). A feature already at its level is left out, as is one whose
    target is 0 (FeatureCommand never sends an upgrade to 0: a feature finalized above it stays)."""
    changes: list[Change] = []
    unchanged: list[str] = []
    refusals: list[Refusal] = []
    for feature, level in target.items():
        current = state.finalized.get(feature, 0)
        if level == current or level == 0:  # an upgrade to 0 is never sent (FeatureCommand skips it too)
            unchanged.append(feature)
            continue
        if level < current:
            refusals.append(Refusal("downgrade", feature, None,
                                    f"{feature} is finalized at {level_text(feature, current)}: "
                                    f"{level_text(feature, level)} would be a downgrade"))
            continue
        changes.append(Change(feature, current, level))
        for n in state.nodes:
            if n.supported is None:
                continue
            lo, hi = n.supported.get(feature, (0, 0))
            if not lo <= level <= hi:
                have = f"{level_text(feature, lo)} to {level_text(feature, hi)}" if feature in n.supported \
                    else "only level 0 (it does not know the feature)"
                refusals.append(Refusal("unsupported", feature, n.id,
                                        f"{n.role} {n.id} does not support {feature} "
                                        f"{level_text(feature, level)}: it supports {have}"))
    if changes:
        refusals += [Refusal("not_asked", None, None, p) for p in state.problems]
        for n in state.nodes:
            if n.supported is None:
                refusals.append(Refusal("not_asked", None, n.id, f"{n.role} {n.id} could not be asked which levels "
                                        f"it supports: {n.error or 'no answer'}"))
    return UpgradePlan(tuple(changes), tuple(unchanged), tuple(refusals))
