"""Each command's typed payload: the command's JSON contract in one place (issue 21).

A payload is a frozen dataclass whose fields are the keys of the command's JSON object, in order
(kadmin.results.Payload: `to_json()` is the JSON form; a key that is there only sometimes is said in the
payload's own `to_json()`). Services build them, views read their fields, the renderer prints their JSON
form. Here, below both services and render (which may not import each other), for `brokers`, `partitions`,
`quorum`, `cluster`, `ids`, `features` and `migration`, with the pieces they share; the other command groups (`history`,
`sandbox`) have theirs in kadmin/payloads_ops.py.

One module a command group (common, brokers, gates, can_stop, partitions, moves, quorum, cluster, ids, features), each
loaded when one of its classes is first named: `from kadmin.payloads import MaxEpoch` builds the gates' two
classes only.
A frozen dataclass costs 0.5-1.5 ms to create on Python 3.11 (an `exec` per generated method); a gate that
built all 48 spent a third of its start-up here (issue 24 §2). HOME says where each class lives;
tests/unit/test_payloads.py holds it to the modules.
"""

# ruff: noqa: F401 - the names under TYPE_CHECKING are for the type checker; at run time __getattr__ loads them
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kadmin.payloads.brokers import (
        Bounced,
        BrokerEvent,
        BrokerRow,
        BrokersDiff,
        BrokerShow,
        FencingEvent,
        LoggedBrokerRow,
        Reincarnated,
        Unregistered,
    )
    from kadmin.payloads.can_stop import CanStop
    from kadmin.payloads.cluster import ClusterId, ClusterIdCheck, MetaPropertiesFile
    from kadmin.payloads.common import TopicPartition, UnseenBroker, UnseenPartition
    from kadmin.payloads.features import (
        FeatureChange,
        FeatureRefusal,
        FeatureRow,
        FeaturesDescription,
        FeaturesUpgrade,
        LevelRange,
        NodeSupport,
    )
    from kadmin.payloads.gates import BrokerWait, MaxEpoch
    from kadmin.payloads.ids import HostMapping, IdClaim, IdDecision, Mapped, MissingId, StaleMapping, Unmapped
    from kadmin.payloads.migration import (
        MigrationBroker,
        MigrationControllerNode,
        MigrationControllers,
        MigrationFinding,
        MigrationStatus,
        MigrationUnread,
    )
    from kadmin.payloads.moves import (
        Drain,
        MoveRefused,
        NotPreferred,
        Reorder,
        Shutdown,
        ShutdownDryRun,
        ShutdownRefused,
        ShutdownRequest,
        ShutdownSent,
        Undrain,
    )
    from kadmin.payloads.partitions import Blocked, CheckFinding, InSync, PartitionRow, PartitionsCheck
    from kadmin.payloads.quorum import (
        EnsembleMember,
        Latency,
        QuorumCheck,
        QuorumClock,
        QuorumDescription,
        QuorumFinding,
        QuorumReplica,
        ServingMember,
    )

# class name -> the module of kadmin.payloads that defines it
HOME: dict[str, str] = {
    **dict.fromkeys(("TopicPartition", "UnseenBroker", "UnseenPartition"), "common"),
    **dict.fromkeys(("BrokerRow", "LoggedBrokerRow", "BrokerShow", "Bounced", "Reincarnated", "BrokersDiff",
                     "BrokerEvent", "FencingEvent", "Unregistered"), "brokers"),
    **dict.fromkeys(("MaxEpoch", "BrokerWait"), "gates"),
    "CanStop": "can_stop",
    **dict.fromkeys(("PartitionRow", "CheckFinding", "PartitionsCheck", "Blocked", "InSync"), "partitions"),
    **dict.fromkeys(("ShutdownRequest", "Shutdown", "ShutdownRefused", "ShutdownDryRun", "ShutdownSent", "Reorder",
                     "MoveRefused", "NotPreferred", "Drain", "Undrain"), "moves"),
    **dict.fromkeys(("Latency", "EnsembleMember", "ServingMember", "QuorumReplica", "QuorumDescription",
                     "QuorumFinding", "QuorumClock", "QuorumCheck"), "quorum"),
    **dict.fromkeys(("ClusterId", "MetaPropertiesFile", "ClusterIdCheck"), "cluster"),
    **dict.fromkeys(("LevelRange", "FeatureRow", "NodeSupport", "FeaturesDescription", "FeatureChange",
                     "FeatureRefusal", "FeaturesUpgrade"), "features"),
    **dict.fromkeys(("MigrationBroker", "MigrationControllerNode", "MigrationControllers", "MigrationFinding",
                     "MigrationUnread", "MigrationStatus"), "migration"),
    **dict.fromkeys(("IdDecision", "IdClaim", "MissingId", "HostMapping", "Mapped", "Unmapped", "StaleMapping"), "ids"),
}
__all__ = sorted(HOME)

if not TYPE_CHECKING:
    def __getattr__(name: str) -> type:
        module = HOME.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        cls = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = cls
        return cls

    def __dir__() -> list[str]:
        return sorted({*globals(), *HOME})
