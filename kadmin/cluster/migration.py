"""What a ZooKeeper -> KRaft migration shows from outside (docs/migration-observed.md), read from every source given.

ZooKeeper (-z): /brokers/ids (and each registration), /controller, /migration. The controllers
(--bootstrap-controller): DescribeCluster (their ids and addresses), DescribeQuorum, and ApiVersions from each (v3's
tagged field ZkMigrationReady, which kafka-python 3.x's ApiVersionsResponse schema declares and decodes). The
brokers: ApiVersions from each, at the addresses DescribeCluster gives through --bootstrap-server, else at their
registrations' listener for our security protocol. Every read that fails becomes an `Unread` naming what would let
kadmin read it; nothing here decides the state (kadmin/domain/migration.py does).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kadmin.domain.addresses import host_port
from kadmin.domain.migration import MigrationZnode, NodeApis, Observation, QuorumView, Unread, ZkView
from kadmin.domain.znodes import ZnodeFormatError, parse_endpoint
from kadmin.errors import KadminError

if TYPE_CHECKING:
    from kadmin.cluster.kraft import KraftClient
    from kadmin.cluster.zookeeper import ZkCluster

CONTROLLED_SHUTDOWN = 7
NEEDS_ZK = ("a reachable --zookeeper (the brokers' zookeeper.connect, chroot included) and read access to "
            "/brokers/ids, /controller and /migration (ZooKeeper ACLs)")
NEEDS_QUORUM = ("--bootstrap-controller (the controllers' CONTROLLER listener) and DESCRIBE on the CLUSTER resource "
                "(DescribeQuorum, DescribeCluster)")
NEEDS_APIS = "a reachable address of the node (ApiVersions needs no ACL, only the listener's TLS/SASL)"


def _api_versions() -> Any:
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest

    return ApiVersionsRequest(client_software_name="kadmin", client_software_version="0")


def node_apis(node_id: int, role: Any, address: str, got: Any) -> NodeApis:
    """One node's ApiVersions answer (or the KadminError it failed with) as NodeApis."""
    if isinstance(got, KadminError):
        return NodeApis(node_id, role, address, error=got.message)
    if got is None or int(got.error_code):
        return NodeApis(node_id, role, address, error="no answer" if got is None else
                        f"ApiVersions error {got.error_code}")
    keys = {int(k.api_key) for k in got.api_keys or []}
    ready = bool(getattr(got, "zk_migration_ready", False)) if int(got.version) >= 3 else False
    return NodeApis(node_id, role, address, zk_migration_ready=ready, controlled_shutdown=CONTROLLED_SHUTDOWN in keys)


def decode_migration(data: bytes | None, ctime_ms: int, version: int) -> MigrationZnode:
    """/migration's JSON (ZkData.MigrationZNode v0)."""
    try:
        doc = json.loads(data or b"")
        return MigrationZnode(int(doc["kraft_controller_id"]), int(doc["kraft_controller_epoch"]),
                              int(doc["kraft_metadata_offset"]), int(doc["kraft_metadata_epoch"]), ctime_ms, version)
    except (ValueError, KeyError, TypeError) as e:
        raise ZnodeFormatError(f"/migration is not ZkMigrationLeadershipState JSON: {e}") from e


class MigrationReads:
    """The migration's sources, each optional: `zk` (opened on use), the controllers' and the brokers' clients;
    `client_for(addresses)` makes a client for brokers known only from their registrations."""

    def __init__(self, zk: Callable[[], ZkCluster] | None, controllers: KraftClient | None,
                 brokers: KraftClient | None, client_for: Callable[[str], KraftClient], security_protocol: str,
                 clock: Callable[[], float] = time.time) -> None:
        self._zk, self.controllers, self.brokers = zk, controllers, brokers
        self._client_for = client_for
        self.security_protocol = security_protocol
        self.clock = clock
        self._made: list[KraftClient] = []
        self._failures: list[KadminError] = []  # why each source given could not be read at all

    def observe(self) -> Observation:
        given = frozenset(n for n, v in (("zookeeper", self._zk), ("controllers", self.controllers),
                                         ("brokers", self.brokers)) if v is not None)
        unread: list[Unread] = []
        zk, addresses = self._read_zookeeper(unread)
        listed: dict[int, str] = {}
        if self.brokers is not None:
            try:
                desc = self.brokers.describe_cluster()
                listed = {b.id: host_port(b.host, b.port) for b in desc.brokers}
            except KadminError as e:
                self._failures.append(e)
                unread.append(Unread("DescribeCluster through --bootstrap-server", e.message,
                                     "reachable brokers at --bootstrap-server"))
        needs_quorum = not (zk is not None and zk.cluster and (zk.migration is None or
                                                               zk.migration.kraft_controller_id < 0))
        quorum, controller_addresses = self._read_quorum(unread, needs_quorum)
        nodes = self._ask(controller_addresses, "controller", self.controllers or self.brokers)
        broker_addresses = {**addresses, **listed}
        if quorum is not None:
            broker_addresses = {i: a for i, a in broker_addresses.items() if i not in quorum.voters}
        nodes += self._ask(broker_addresses, "broker", self.brokers)
        for n in nodes:
            if n.error is not None:
                unread.append(Unread(f"ApiVersions of {n.role} {n.id} at {n.address}", n.error, NEEDS_APIS))
        if self._failures and zk is None and quorum is None and not listed and all(n.error for n in nodes):
            raise self._failures[0]  # nothing given answered: unreachable (a check verb's UNKNOWN), not a state
        return Observation(given, zk, quorum, tuple(nodes), tuple(sorted(listed)), tuple(unread),
                           int(self.clock() * 1000))

    def _read_zookeeper(self, unread: list[Unread]) -> tuple[ZkView | None, dict[int, str]]:
        if self._zk is None:
            return None, {}
        try:
            zk = self._zk()
            if not zk.znode_exists("/brokers/ids"):
                m = zk.get("/migration")
                mig = decode_migration(m.data, m.stat.ctime, m.stat.version) if m is not None else None
                return ZkView(False, None, mig, ()), {}
            listing = zk.list_brokers()
            m = zk.get("/migration")
            mig = decode_migration(m.data, m.stat.ctime, m.stat.version) if m is not None else None
        except (KadminError, ZnodeFormatError) as e:
            if isinstance(e, KadminError):
                self._failures.append(e)
            unread.append(Unread("ZooKeeper", getattr(e, "message", None) or str(e), NEEDS_ZK))
            return None, {}
        for p in listing.problems:
            unread.append(Unread("ZooKeeper", p.message, NEEDS_ZK))
        addresses: dict[int, str] = {}
        for b in listing.brokers:
            r = b.registration
            for ep in r.endpoints if r is not None else ():
                try:
                    name, host, port = parse_endpoint(ep)
                except ZnodeFormatError:
                    continue
                if host and r is not None and r.listener_security_protocol_map.get(name, name) == \
                        self.security_protocol:
                    addresses[b.id] = host_port(host, port)
                    break
        return ZkView(True, listing.controller, mig, tuple(sorted(b.id for b in listing.brokers))), addresses

    def _read_quorum(self, unread: list[Unread], needed: bool) -> tuple[QuorumView | None, dict[int, str]]:
        client = self.controllers or self.brokers
        if client is None:
            if needed:
                unread.append(Unread("DescribeQuorum", "no --bootstrap-controller given", NEEDS_QUORUM))
            return None, {}
        try:
            q, _ = client.describe_quorum()
        except KadminError as e:
            if self.controllers is not None:
                self._failures.append(e)
            if needed or self.controllers is not None:
                unread.append(Unread("DescribeQuorum", e.message, NEEDS_QUORUM))
            return None, {}
        view = QuorumView(q.leader_id if q.leader_id >= 0 else None, q.leader_epoch, tuple(v.id for v in q.voters),
                          tuple(o.id for o in q.observers))
        addresses = {v.id: v.endpoints[0].split("://", 1)[-1] for v in q.voters if v.endpoints}
        if self.controllers is not None and len(addresses) < len(view.voters):
            try:  # DescribeQuorum below v2 gives no endpoints: DescribeCluster through the controllers does
                desc = self.controllers.describe_cluster()
                addresses.update({b.id: host_port(b.host, b.port) for b in desc.brokers if b.id not in addresses})
            except KadminError as e:
                unread.append(Unread("DescribeCluster through --bootstrap-controller", e.message, NEEDS_QUORUM))
        for v in view.voters:
            if v not in addresses:
                unread.append(Unread(f"ApiVersions of controller {v}", "no address for it", NEEDS_QUORUM))
        return view, addresses

    def _ask(self, addresses: dict[int, str], role: Any, client: KraftClient | None) -> list[NodeApis]:
        if not addresses:
            return []
        if client is None:
            client = self._client_for(",".join(addresses.values()))
            self._made.append(client)
        answers = client.send_each({a: _api_versions() for a in addresses.values()})
        return [node_apis(i, role, a, answers.get(a)) for i, a in sorted(addresses.items())]

    def close(self) -> None:
        for c in [*self._made, self.controllers, self.brokers]:
            if c is not None:
                c.close()
