"""The feature-flag rules (kadmin/domain/features.py): release versions as Kafka 4.3.1's FeatureCommand maps them
(`kafka-features version-mapping --release-version X.Y`), and when an upgrade is refused."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kadmin.domain.features import (
    FeatureState,
    NodeFeatures,
    level_text,
    metadata_level,
    plan_upgrade,
    release_levels,
    releases,
    supported_by_all,
)
from kadmin.exit_codes import ExitCode
from kadmin.payloads.features import LevelRange

# `kafka-features version-mapping --release-version X.Y`, Kafka 4.3.1
MAPPING = {
    "3.9": [21, 1, 0, 0, 0, 0, 0],
    "4.0": [25, 1, 2, 1, 0, 0, 0],
    "4.1": [27, 1, 2, 1, 1, 0, 0],
    "4.2": [29, 1, 2, 1, 1, 1, 1],
    "4.3": [30, 1, 2, 1, 1, 1, 1],
    "3.3": [7, 0, 0, 0, 0, 0, 0],
}


@pytest.mark.parametrize("release", sorted(MAPPING))
def test_release_levels_are_kafkas(release: str) -> None:
    assert list(release_levels(release).values()) == MAPPING[release]
    assert list(release_levels(release)) == ["metadata.version", "kraft.version", "transaction.version",
                                             "group.version", "eligible.leader.replicas.version", "share.version",
                                             "streams.version"]


def test_release_names() -> None:
    assert releases()[0] == "3.3" and releases()[-1] == "4.3"
    assert metadata_level("4.0-IV1") == 23 and metadata_level("4.0") == 25
    assert level_text("metadata.version", 21) == "3.9-IV0"
    assert level_text("metadata.version", 99) == "UNKNOWN 99"
    assert level_text("group.version", 1) == "1"
    for bad in ("4.4", "4.4-IV0", "3.2", "x", ""):
        with pytest.raises(ValueError, match="unknown release version"):
            metadata_level(bad)


NEW = {"metadata.version": (7, 30), "kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
       "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1), "streams.version": (0, 1)}
OLD = {"metadata.version": (1, 21), "kraft.version": (0, 1)}  # a 3.9 node


def state(*nodes: NodeFeatures, finalized: dict[str, int] | None = None, problems: tuple[str, ...] = ()
          ) -> FeatureState:
    return FeatureState("broker at b:1", 5, finalized if finalized is not None else {"metadata.version": 21},
                        NEW, nodes, problems)


def test_an_upgrade_every_node_supports() -> None:
    plan = plan_upgrade(release_levels("4.3"), state(NodeFeatures(1, "broker", "b:1", NEW),
                                                     NodeFeatures(3001, "controller", "c:1", NEW)))
    assert not plan.refusals
    assert [(c.feature, c.current, c.target) for c in plan.changes] == [
        ("metadata.version", 21, 30), ("kraft.version", 0, 1), ("transaction.version", 0, 2),
        ("group.version", 0, 1), ("eligible.leader.replicas.version", 0, 1), ("share.version", 0, 1),
        ("streams.version", 0, 1)]


def test_a_node_on_older_binaries_refuses_it() -> None:
    plan = plan_upgrade(release_levels("4.0"), state(NodeFeatures(1, "broker", "b:1", NEW),
                                                     NodeFeatures(2, "broker", "b:2", OLD)))
    reasons = {(r.reason, r.feature, r.node) for r in plan.refusals}
    assert ("unsupported", "metadata.version", 2) in reasons
    assert ("unsupported", "group.version", 2) in reasons  # a feature it does not know: level 0 only
    assert all(r.node == 2 for r in plan.refusals)
    assert "broker 2 does not support metadata.version 4.0-IV3: it supports 3.0-IV1 to 3.9-IV0" in \
        [r.message for r in plan.refusals]


def test_a_node_not_asked_refuses_it_and_so_do_unlisted_nodes() -> None:
    plan = plan_upgrade(release_levels("4.3"), state(NodeFeatures(1, "broker", "b:1", NEW),
                                                     NodeFeatures(2, "broker", None, None, "no address")))
    assert [(r.reason, r.node) for r in plan.refusals] == [("not_asked", 2)]
    plan = plan_upgrade(release_levels("4.3"), state(NodeFeatures(1, "broker", "b:1", NEW), problems=("no quorum",)))
    assert [(r.reason, r.node, r.message) for r in plan.refusals] == [("not_asked", None, "no quorum")]


def test_downgrades_are_refused_and_zero_targets_kept() -> None:
    at_43 = release_levels("4.3")
    plan = plan_upgrade(release_levels("4.0"), state(NodeFeatures(1, "broker", "b:1", NEW), finalized=at_43))
    assert [(r.reason, r.feature) for r in plan.refusals] == [("downgrade", "metadata.version")]
    assert "share.version" in plan.unchanged  # 4.0 sets it to 0: never sent, never lowered


def test_nothing_to_do_asks_no_node() -> None:
    at_43 = release_levels("4.3")
    plan = plan_upgrade(at_43, state(NodeFeatures(2, "broker", None, None, "down"), finalized=at_43))
    assert not plan.changes and not plan.refusals


def test_supported_by_all() -> None:
    nodes = [NodeFeatures(1, "broker", "b:1", NEW), NodeFeatures(2, "broker", "b:2", OLD),
             NodeFeatures(3, "broker", None, None, "down")]
    assert supported_by_all(nodes, "metadata.version") == (7, 21)
    assert supported_by_all(nodes, "group.version") == (0, 0)
    assert supported_by_all(nodes[2:], "group.version") is None


# ------------------------------------------------------------------------------ the service, over a fake capability
class Flags:
    """A FeatureFlags whose state is given and whose UpdateFeatures calls are recorded."""

    def __init__(self, s: FeatureState) -> None:
        self.s = s
        self.sent: list[tuple[dict[str, int], bool]] = []

    def feature_state(self) -> FeatureState:
        return self.s

    def update_features(self, levels: Mapping[str, int], validate_only: bool) -> None:
        self.sent.append((dict(levels), validate_only))


def test_describe_is_partial_when_a_node_was_not_asked() -> None:
    from kadmin.services.features import describe

    r = describe(Flags(state(NodeFeatures(1, "broker", "b:1", NEW), NodeFeatures(2, "broker", None, None, "no way"))))
    assert r.exit_code == ExitCode.PARTIAL
    assert [e.message for e in r.errors] == ["broker 2 could not be asked which feature levels it supports: no way"]
    mv = next(f for f in r.data.features if f.name == "metadata.version")
    assert (mv.finalized, mv.finalized_level, mv.every_node) == ("3.9-IV0", 21, LevelRange(7, 30))


def test_upgrade_refused_sends_nothing_and_a_dry_run_validates() -> None:
    from kadmin.services.features import upgrade

    flags = Flags(state(NodeFeatures(1, "broker", "b:1", NEW), NodeFeatures(2, "broker", "b:2", OLD)))
    r = upgrade(flags, "4.3", dry_run=False)
    assert r.exit_code == ExitCode.UNSAFE and not flags.sent and r.message and "nothing sent" in r.message
    assert r.data.upgraded is False and {x.reason for x in r.data.refusals} == {"unsupported"}
    flags = Flags(state(NodeFeatures(1, "broker", "b:1", NEW)))
    r = upgrade(flags, "4.3", dry_run=True)
    assert r.exit_code == ExitCode.OK and r.data.validated and not r.data.upgraded
    assert flags.sent == [(dict(list(release_levels("4.3").items())), True)]
    r = upgrade(flags, "4.3", dry_run=False)
    assert r.data.upgraded and flags.sent[-1][1] is False


def test_upgrade_with_nothing_to_do_sends_nothing() -> None:
    from kadmin.services.features import upgrade

    flags = Flags(state(NodeFeatures(1, "broker", None, None, "down"), finalized=release_levels("4.3")))
    r = upgrade(flags, "4.3", dry_run=False)
    assert r.exit_code == ExitCode.OK and not flags.sent and not r.data.changes


class Refusing(Flags):
    """A FeatureFlags whose controller refuses UpdateFeatures with `message` (INVALID_UPDATE_VERSION)."""

    def __init__(self, s: FeatureState, message: str) -> None:
        super().__init__(s)
        self.message = message

    def update_features(self, levels: Mapping[str, int], validate_only: bool) -> None:
        from kadmin.errors import Rejected

        super().update_features(levels, validate_only)
        raise Rejected(f"UpdateFeatures at c:1: INVALID_UPDATE_VERSION ({self.message})",
                       code="invalid_update_version")


# KafkaRaftClient.upgradeKRaftVersion's refusal (Kafka 4.x) and FeatureControlManager's for a node's range
VOTERS = "Invalid upgrade of kraft.version to 1 because not all of the voters support it"
RANGE = "Invalid update version 25 for feature metadata.version. Broker 4 only supports versions 1-21"


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_quorum_leader_that_has_not_heard_every_voter_is_said_to_be_worth_another_try(dry_run: bool) -> None:
    from kadmin.errors import Rejected
    from kadmin.services.features import upgrade

    flags = Refusing(state(NodeFeatures(1, "broker", "b:1", NEW)), VOTERS)
    with pytest.raises(Rejected) as e:
        upgrade(flags, "4.3", dry_run=dry_run)
    assert e.value.exit_code == ExitCode.REJECTED and e.value.code == "invalid_update_version"
    assert e.value.message.startswith(f"UpdateFeatures at c:1: INVALID_UPDATE_VERSION ({VOTERS}); a controller ")
    assert "try again in a few seconds" in e.value.message and len(flags.sent) == 1
    flags = Refusing(state(NodeFeatures(1, "broker", "b:1", NEW)), RANGE)  # a node that will not: no such hint
    with pytest.raises(Rejected) as e:
        upgrade(flags, "4.3", dry_run=dry_run)
    assert e.value.message == f"UpdateFeatures at c:1: INVALID_UPDATE_VERSION ({RANGE})"
