"""`kadmin features describe` and `kadmin features upgrade --release-version X.Y` (KRaft feature flags, KIP-584)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kadmin import interrupts
from kadmin.domain.features import FeatureState, level_text, plan_upgrade, release_levels, supported_by_all
from kadmin.errors import Rejected, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.payloads.features import (
    FeatureChange,
    FeatureRefusal,
    FeatureRow,
    FeaturesDescription,
    FeaturesUpgrade,
    LevelRange,
    NodeSupport,
)
from kadmin.results import Problem, Result

if TYPE_CHECKING:
    from kadmin.cluster.base import FeatureFlags


def _ranges(supported: Mapping[str, tuple[int, int]]) -> dict[str, LevelRange]:
    return {name: LevelRange(lo, hi) for name, (lo, hi) in sorted(supported.items())}


def _nodes(state: FeatureState) -> tuple[NodeSupport, ...]:
    return tuple(NodeSupport(n.id, n.role, n.address, None if n.supported is None else _ranges(n.supported), n.error)
                 for n in state.nodes)


def _not_asked(state: FeatureState) -> list[Problem]:
    problems = [Problem("nodes_unknown", p) for p in state.problems]
    problems += [Problem("node_not_asked", f"{n.role} {n.id}" + (f" at {n.address}" if n.address else "")
                         + f" could not be asked which feature levels it supports: {n.error or 'no answer'}")
                 for n in state.nodes if n.supported is None]
    return problems


def describe(flags: FeatureFlags) -> Result[FeaturesDescription]:
    """The finalized levels and the answering node's supported ranges (as kafka-features describe prints them), with
    every registered node's; a node that could not be asked makes the result partial (exit 5), named."""
    state = flags.feature_state()
    rows = []
    for name in sorted(state.supported):
        lo, hi = state.supported[name]
        level = state.finalized.get(name, 0)
        every = supported_by_all(state.nodes, name)
        rows.append(FeatureRow(name, level, level_text(name, level), LevelRange(lo, hi),
                               None if every is None else LevelRange(*every)))
    return Result(data=FeaturesDescription(state.source, state.epoch, tuple(rows), _nodes(state)),
                  errors=_not_asked(state))


def target_levels(release: str) -> dict[str, int]:
    """Every production feature's level for --release-version (exit 2 for a release kadmin does not know)."""
    try:
        return release_levels(release)
    except ValueError as e:
        raise UsageError(f"--release-version: {e}") from None


# Kafka's refusal of kraft.version 1 while the quorum leader has not heard every voter's supported kraft.version
# (KafkaRaftClient.upgradeKRaftVersion: "Invalid upgrade of kraft.version to 1 because not all of the voters
# support it"). A voter reports it itself, after it starts (KIP-853), so the refusal also follows a controller's
# restart or a new quorum leader by a few seconds, when every voter does support it.
_VOTERS_NOT_HEARD = "because not all of the voters support it"
_VOTERS_HINT = ("; a controller restarted or a quorum leader elected moments ago may not have reported the "
                "kraft.version it supports yet (KIP-853): with every controller on binaries that support it "
                "(kadmin features describe), try again in a few seconds")


def _update(flags: FeatureFlags, levels: Mapping[str, int], validate_only: bool) -> None:
    """flags.update_features(), with what may be a passing refusal said so."""
    try:
        flags.update_features(levels, validate_only=validate_only)
    except Rejected as e:
        if _VOTERS_NOT_HEARD not in e.message:
            raise
        raise Rejected(e.message + _VOTERS_HINT, code=e.code) from None


def upgrade(flags: FeatureFlags, release: str, dry_run: bool) -> Result[FeaturesUpgrade]:
    """Raise the finalized features to the levels `release` sets (kafka-features upgrade --release-version): refused
    (exit 7, nothing sent) when a level would go down, a registered node does not support its new level, or a node
    could not be asked. `dry_run` sends UpdateFeatures with ValidateOnly: the controller checks, nothing changes."""
    target = target_levels(release)
    state = flags.feature_state()
    plan = plan_upgrade(target, state)
    changes = tuple(FeatureChange(c.feature, c.current, c.target, level_text(c.feature, c.current),
                                  level_text(c.feature, c.target)) for c in plan.changes)
    refusals = tuple(FeatureRefusal(r.reason, r.feature, r.node, r.message) for r in plan.refusals)

    def data(upgraded: bool = False, validated: bool = False) -> FeaturesUpgrade:
        finalized = {name: state.finalized.get(name, 0) for name in target}
        return FeaturesUpgrade(release, finalized, target, dry_run, upgraded, validated, changes, plan.unchanged,
                               refusals, _nodes(state))

    if refusals:
        return Result(data=data(), exit_code=ExitCode.UNSAFE,
                      message=f"refused: release version {release}: " + "; ".join(r.message for r in refusals)
                      + " (nothing sent)")
    if not changes:
        return Result(data=data(), message=f"every feature is already at release version {release}'s level: "
                      "nothing to do")
    levels = {c.feature: c.to_level for c in changes}
    said = ", ".join(f"{c.feature} {c.from_version} -> {c.to_version}" for c in changes)
    if dry_run:
        _update(flags, levels, validate_only=True)
        return Result(data=data(validated=True), message=f"the controller accepts {said} (ValidateOnly); nothing "
                      "changed")
    interrupts.arm()  # the request may take effect once sent: a Ctrl-C waits until the outcome is reported
    try:
        _update(flags, levels, validate_only=False)
    except BaseException:
        interrupts.disarm()
        raise
    return Result(data=data(upgraded=True), message=f"finalized {said}")
