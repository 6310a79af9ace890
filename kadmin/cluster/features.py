"""Feature flags of a KRaft cluster (KIP-584): ApiVersions v3+ for the finalized levels and every registered node's
supported ranges, UpdateFeatures (API key 57, v1+) to raise them. kafka-python 3.x ships both messages.

The nodes asked: with --bootstrap-server the brokers DescribeCluster lists (fenced ones too) and the voters
DescribeQuorum names with their endpoints (v2+); with --bootstrap-controller the controllers, and the brokers only by
id (DescribeQuorum's observers: the controllers do not give the brokers' addresses, KIP-919), so they cannot be
asked unless --bootstrap-server is given too. Both flags may be given: brokers through one, controllers the other.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kadmin.domain.features import FeatureState, NodeFeatures, Role
from kadmin.errors import ClusterUnreachable, KadminError, Rejected, Unsupported

if TYPE_CHECKING:
    from kadmin.cluster.kraft import KraftClient

UPGRADE = 1  # UpdateFeaturesRequest's UpgradeType: 1 upgrade, 2 safe downgrade, 3 unsafe downgrade
NOT_CONTROLLER = 41


def _api_versions() -> Any:
    """ApiVersions at the highest version both sides speak. No min_version=3: kafka-python would then refuse to send
    it to a node that tops out below v3 (IncompatibleBrokerVersion, which reads as a rejected request); the answer's
    version is checked instead (below v3: no feature flags, Unsupported)."""
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest

    return ApiVersionsRequest(client_software_name="kadmin", client_software_version="0")


def _supported(resp: Any) -> dict[str, tuple[int, int]]:
    return {str(f.name): (int(f.min_version), int(f.max_version)) for f in resp.supported_features or []}


def _endpoint_address(endpoint: str) -> str:
    """`CONTROLLER://127.0.0.1:9093` -> `127.0.0.1:9093` (IPv6 in brackets kept)."""
    return endpoint.split("://", 1)[-1]


class KraftFeatures:
    """FeatureFlags through the brokers (--bootstrap-server), the controllers (--bootstrap-controller), or both."""

    def __init__(self, brokers: KraftClient | None, controllers: KraftClient | None) -> None:
        assert brokers is not None or controllers is not None
        self.brokers = brokers
        self.controllers = controllers

    @property
    def _first(self) -> KraftClient:
        client = self.brokers or self.controllers
        assert client is not None
        return client

    def feature_state(self) -> FeatureState:
        client = self._first
        address, resp = client.send_any(_api_versions)
        who = f"{'controller' if client.controllers else 'broker'} at {address}"
        if resp.error_code:
            raise client.rejected(resp.error_code, None, address, "ApiVersions")
        if int(resp.version) < 3:
            raise Unsupported(f"{who} answered ApiVersions v{resp.version}: feature flags need v3+ (Kafka 2.7+)",
                              code="unsupported_version")
        epoch = int(resp.finalized_features_epoch)
        finalized = {str(f.name): int(f.max_version_level) for f in resp.finalized_features or []}
        nodes, problems = self._nodes()
        return FeatureState(who, None if epoch < 0 else epoch, finalized, _supported(resp), tuple(nodes),
                            tuple(problems))

    def _nodes(self) -> tuple[list[NodeFeatures], list[str]]:
        """Every registered node's supported ranges (ApiVersions to each, at once), and what kept a node from being
        known at all (the voters could not be listed)."""
        problems: list[str] = []
        # (id, role) -> (the client to ask it with, its address) or why it has none
        targets: dict[tuple[int, Role], tuple[KraftClient, str] | str] = {}
        if self.brokers is not None:
            for b in self.brokers.describe_brokers().brokers:
                from kadmin.domain.addresses import host_port

                targets[(b.id, "broker")] = (self.brokers, host_port(b.host, b.port))
        quorum_client = self.controllers or self.brokers
        assert quorum_client is not None
        try:
            quorum, _ = quorum_client.describe_quorum()
        except KadminError as e:
            problems.append(f"the controllers could not be listed (DescribeQuorum): {e.message}")
        else:
            for v in quorum.voters:
                if v.endpoints:
                    targets[(v.id, "controller")] = (quorum_client, _endpoint_address(v.endpoints[0]))
                else:
                    targets[(v.id, "controller")] = "DescribeQuorum (below v2) gives no endpoint for it"
            if self.brokers is None:
                for o in quorum.observers:
                    targets.setdefault((o.id, "broker"), "the controllers do not give the brokers' addresses "
                                       "(KIP-919): give --bootstrap-server too")
        by_client: dict[int, tuple[KraftClient, dict[str, Any]]] = {}
        for target in targets.values():
            if isinstance(target, tuple):
                c, address = target
                by_client.setdefault(id(c), (c, {}))[1][address] = _api_versions()
        answers: dict[str, Any] = {}
        for c, requests in by_client.values():
            answers.update(c.send_each(requests))
        nodes: list[NodeFeatures] = []
        for (node_id, role), target in sorted(targets.items(), key=lambda t: (t[0][1] != "controller", t[0][0])):
            if isinstance(target, str):
                nodes.append(NodeFeatures(node_id, role, None, None, target))
                continue
            address = target[1]
            got: Any = answers.get(address)
            if isinstance(got, KadminError):
                nodes.append(NodeFeatures(node_id, role, address, None, got.message))
            elif got is None or int(got.error_code):
                why = "no answer" if got is None else f"ApiVersions error {got.error_code}"
                nodes.append(NodeFeatures(node_id, role, address, None, why))
            elif int(got.version) < 3:
                nodes.append(NodeFeatures(node_id, role, address, None,
                                          f"it answered ApiVersions v{got.version}, which carries no features"))
            else:
                nodes.append(NodeFeatures(node_id, role, address, _supported(got)))
        return nodes, problems

    def update_features(self, levels: Mapping[str, int], validate_only: bool) -> None:
        """UpdateFeatures (v1+: UpgradeType, ValidateOnly) with an upgrade of each feature to its level; through a
        broker (which forwards it to the active controller), else to the active controller. Raises Rejected with
        Kafka's error when the controller refuses any of them."""
        from kafka.protocol.admin.cluster import UpdateFeaturesRequest

        def make() -> Any:
            key = UpdateFeaturesRequest.FeatureUpdateKey
            return UpdateFeaturesRequest(
                min_version=1, timeout_ms=max(int(self._first.bound() * 1000), 1), validate_only=validate_only,
                feature_updates=[key(feature=f, max_version_level=lv, upgrade_type=UPGRADE) for f, lv in
                                 levels.items()])

        if self.brokers is not None:
            address, resp = self.brokers.send_any(make)
        else:
            address, resp = self._to_active_controller(make)
        version = int(resp.version)
        errors = []
        if resp.error_code:
            errors.append((resp.error_code, resp.error_message))
        if version <= 1:
            errors += [(r.error_code, f"{r.feature}: {r.error_message or ''}".rstrip(": "))
                       for r in resp.results or [] if r.error_code]
        if errors:
            code, message = errors[0]
            more = "; ".join(m for _, m in errors[1:] if m)
            raise self._first.rejected(code, "; ".join(filter(None, [message, more])) or None, address,
                                       "UpdateFeatures")

    def _to_active_controller(self, make: Any) -> tuple[str, Any]:
        """Send to the active controller (only it takes UpdateFeatures): DescribeCluster through the controllers names
        it; a NOT_CONTROLLER answer (it moved) is asked again once, after a new DescribeCluster."""
        from kadmin.domain.addresses import host_port

        client = self.controllers
        assert client is not None
        end = time.monotonic() + client.bound()
        for _ in range(2):
            desc = client.describe_cluster()
            active = next((b for b in desc.brokers if b.id == desc.controller_id), None)
            if active is None:
                raise ClusterUnreachable("no active controller (DescribeCluster names none)")
            address = host_port(active.host, active.port)
            resp = client.send_to(address, make(), end)
            if resp.error_code != NOT_CONTROLLER:
                return address, resp
        raise Rejected(f"UpdateFeatures at {address}: NOT_CONTROLLER twice", code="not_controller")

    def close(self) -> None:
        for client in (self.controllers, self.brokers):
            if client is not None:
                client.close()
