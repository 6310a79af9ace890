"""The metadata quorum's controller.quorum.fetch.timeout.ms, read from the nodes that hold it (KRaft).

A controller answers DescribeConfigs BROKER <its own id> (for any other id: INVALID_REQUEST). Which controllers
kadmin can ask: those given with --bootstrap-controller (DescribeCluster names each one's id and address,
KIP-919), else the voters' endpoints that DescribeQuorum v2 lists (Kafka 3.9+, KIP-853), connected to with the
client's own configuration (--command-config), as the brokers are. They are asked at once, all within one
--connect-timeout (KraftClient.send_each); the quorum leader's value is taken (its check-quorum window judges its
followers' fetches), and a controller that says otherwise is named. When no controller answers, a broker's own
value: brokers carry the same setting for their raft client. Nothing read: value None, saying why and what would let
kadmin read it (the ACL for the principal, or the address). Only a cluster that cannot be reached at all raises
(ClusterUnreachable, as every other read), and brokers that serve no KRaft quorum (a ZooKeeper-mode cluster's: the
ConfigError DescribeQuorum raises there).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kadmin.cluster.base import QUORUM_FETCH_TIMEOUT, QuorumSetting
from kadmin.cluster.kafka import error_name
from kadmin.cluster.min_isr import NEEDS, RESOURCE_BROKER, describe_configs_request
from kadmin.domain.addresses import host_port
from kadmin.errors import ClusterUnreachable, ConfigError, KadminError

if TYPE_CHECKING:
    from kadmin.cluster.kraft import KraftClient

AUTHORIZATION = "AUTHORIZATION_FAILED"  # in Kafka's name of every authorization error code
USER_PRINCIPALS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # the SASL mechanisms whose principal is User:<username>


@dataclass(frozen=True)
class Asked:
    """What one node said about the setting: its value, or why there is none (`denied`: an authorization error;
    `at`: the address that could not be reached)."""

    role: str  # "controller", "broker"
    id: int
    value: int | None
    why: str = ""
    denied: bool = False
    at: str | None = None

    @property
    def node(self) -> str:
        return f"{self.role} {self.id}"


def int_value(text: str | None) -> tuple[int | None, str]:
    """A DescribeConfigs value as a number of ms: (value, "") for a positive int string (as Kafka writes an INT
    config), else (None, why)."""
    if text is None:
        return None, "no value"
    if re.fullmatch(r"[0-9]+", text) is None or int(text) == 0:
        return None, f"value {text!r} is not a positive whole number of ms"
    return int(text), ""


def asked(role: str, node_id: int, result: Any, name: str = QUORUM_FETCH_TIMEOUT) -> Asked:
    """One DescribeConfigs result (kafka-python's: error_code, error_message, configs) as what the node said."""
    if result.error_code:
        err = error_name(int(result.error_code))
        message = f" ({result.error_message})" if getattr(result, "error_message", None) else ""
        return Asked(role, node_id, None, f"DescribeConfigs: {err}{message}", AUTHORIZATION in err)
    entries = [c for c in result.configs if c.name == name]
    if not entries:
        return Asked(role, node_id, None, f"DescribeConfigs did not list {name}")
    value, why = int_value(entries[0].value)
    return Asked(role, node_id, value, f"{name}: {why}" if why else "")


def told(said: Sequence[Asked]) -> str:
    """Why the nodes had no value, one clause per reason: `controllers 3001, 3002: DescribeConfigs: ...`."""
    groups: dict[tuple[str, str | None, str], list[int]] = {}
    for a in said:
        groups.setdefault((a.role, a.at, a.why), []).append(a.id)
    return "; ".join(f"{role}{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}"
                     + (f" at {at}" if at else "") + f": {why}" for (role, at, why), ids in groups.items())


def principal(config: Mapping[str, Any]) -> str | None:
    """The principal Kafka's default principal builder gives the client's SASL login (`User:alice`); None when the
    configuration does not say it (PLAINTEXT's ANONYMOUS, TLS's certificate name, GSSAPI's mapping rules)."""
    user = config.get("sasl_plain_username")
    if str(config.get("sasl_mechanism", "")).upper() in USER_PRINCIPALS and user:
        return f"User:{user}"
    return None


def acl_hint(who: str | None) -> str:
    """What lets a principal read a node's configuration: DescribeConfigs on the Cluster (Kafka authorizes
    DescribeConfigs of a BROKER resource there, on brokers and controllers alike)."""
    if who is None:
        return f"kadmin {NEEDS} for the principal it connects as"
    return (f"kadmin {NEEDS} for {who} (kafka-acls --add --allow-principal {who} --operation DescribeConfigs "
            "--cluster)")


def choose(name: str, controllers: Sequence[Asked], controllers_why: str, broker: Asked | None, broker_why: str,
           who: str | None) -> QuorumSetting:
    """The setting from what was asked: the first controller with a value (the quorum leader comes first), else
    the broker's own value saying why the controllers could not be asked, else None saying why neither could be
    read and (after an authorization error) the ACL that would let kadmin read it."""
    found = next((a for a in controllers if a.value is not None), None)
    if found is not None:
        others = [f"{a.node} has {a.value}" for a in controllers if a.value is not None and a.value != found.value]
        return QuorumSetting(name, found.value, f"{found.node} (DescribeConfigs)"
                             + (f"; the controllers disagree: {', '.join(others)}" if others else ""))
    said = "; ".join(w for w in (told(controllers), controllers_why) if w) or "none was found"
    not_controllers = f"the controllers could not be asked: {said}"
    if broker is not None and broker.value is not None:
        return QuorumSetting(name, broker.value, f"{broker.node} (DescribeConfigs): {not_controllers}")
    whys = [not_controllers, told([broker]) if broker is not None else broker_why]
    if any(a.denied for a in [*controllers, *([broker] if broker is not None else [])]):
        whys.append(acl_hint(who))
    return QuorumSetting(name, None, "unknown: " + "; ".join(w for w in whys if w))


# ------------------------------------------------------------------------------------------------ reading
def read_fetch_timeout(client: KraftClient) -> QuorumSetting:
    """controller.quorum.fetch.timeout.ms as the controllers (else a broker) report it; see the module's text."""
    name = QUORUM_FETCH_TIMEOUT
    controllers, controllers_why = ask_controllers(client, name)
    broker: Asked | None = None
    broker_why = ""
    if not any(a.value is not None for a in controllers):
        if client.controllers:
            broker_why = "no broker to ask instead: the controllers (--bootstrap-controller) do not describe the " \
                         "brokers (KIP-919); give --bootstrap-server to read a broker's own value"
        else:
            broker, broker_why = ask_a_broker(client, name)
    return choose(name, controllers, controllers_why, broker, broker_why, principal(client.config))


def voters(client: KraftClient) -> tuple[list[tuple[int, list[str]]], str]:
    """The controllers kadmin can ask, the quorum leader first: (node id, its addresses), or why there are none.
    Raises ClusterUnreachable when the cluster cannot be reached at all."""
    if client.controllers:  # the client talks to controllers: DescribeCluster lists them with their addresses
        try:
            d = client.describe_cluster()
        except ClusterUnreachable:
            raise
        except KadminError as e:  # a controller answers DescribeCluster only to Alter on the Cluster (Kafka's rule)
            hint = " (a controller answers DescribeCluster only to a principal with Alter on the Cluster; or give " \
                   "--bootstrap-server)" if AUTHORIZATION in e.message else ""
            return [], e.message + hint
        nodes = sorted(d.brokers, key=lambda b: b.id != d.controller_id)
        return [(b.id, [host_port(b.host, b.port)]) for b in nodes], ""
    try:
        q, _ = client.describe_quorum()
    except ClusterUnreachable as e:  # the brokers: asked again for their own value, which raises if none answers
        return [], e.message
    except ConfigError:  # no KRaft quorum there (a ZooKeeper-mode cluster's brokers), or a controller given as one
        raise
    except KadminError as e:
        hint = " (kadmin needs Describe on the Cluster to list the voters)" if AUTHORIZATION in e.message else ""
        return [], e.message + hint
    listed = [(v.id, [e.partition("://")[2] for e in v.endpoints if "://" in e])
              for v in sorted(q.voters, key=lambda v: v.id != q.leader_id)]
    if not any(addresses for _, addresses in listed):
        return [], ("DescribeQuorum lists no endpoints for the voters (Kafka 3.9+ lists them, KIP-853): give "
                    "--bootstrap-controller to ask the controllers")
    return listed, ""


def ask_controllers(client: KraftClient, name: str) -> tuple[list[Asked], str]:
    """Each controller's own value (asked at once, within one --connect-timeout), the quorum leader first; or why
    none could be asked."""
    nodes, why = voters(client)
    if not nodes:
        return [], why
    ids_at: dict[str, list[int]] = {}  # address -> the controllers listed there (one, unless misconfigured)
    for cid, addrs in nodes:
        for a in addrs:
            ids_at.setdefault(a, []).append(cid)
    requests = {a: describe_configs_request([(RESOURCE_BROKER, str(cid)) for cid in ids], (name,))
                for a, ids in ids_at.items()}
    if client.controllers:
        answers = client.send_each(requests)
    else:  # the voters' endpoints, each on a connection of its own with the brokers' configuration
        from kadmin.cluster.kraft import KraftClient

        at = KraftClient(",".join(requests), client.config, client.timeout, controllers=True, deadline=client.deadline)
        try:
            answers = at.send_each(requests)
        finally:
            at.close()
    out: list[Asked] = []
    for cid, addrs in nodes:
        said: list[Asked] = []
        for a in addrs:
            got = answers.get(a)
            if isinstance(got, KadminError):  # "controller ADDRESS did not answer ...": said of the node at `a`
                said.append(Asked("controller", cid, None, got.message.removeprefix(f"controller {a} "), at=a))
            elif got is not None:
                said.append(next((asked("controller", cid, r, name) for r in got.results
                                  if r.resource_name == str(cid)),
                                 Asked("controller", cid, None, "DescribeConfigs answered no result", at=a)))
        value = next((s for s in said if s.value is not None), None)
        if value is None and len(said) == 1:
            value = said[0]
        out.append(value or Asked("controller", cid, None, "; ".join(f"at {s.at}: {s.why}" if s.at else s.why
                                                                      for s in said)
                                  or "DescribeQuorum lists no endpoint for it", any(s.denied for s in said)))
    if any(a.value is not None or a.denied for a in out) or client.controllers:
        return out, ""
    return out, ("kadmin must reach a controller at an endpoint DescribeQuorum lists, with --command-config's "
                 "security, or be given --bootstrap-controller")


def ask_a_broker(client: KraftClient, name: str) -> tuple[Asked | None, str]:
    """One broker's own value (DescribeConfigs BROKER <id> at its advertised address): the brokers at a bootstrap
    address first, the next when one cannot be reached, all within one --connect-timeout; or why none was asked.
    Raises ClusterUnreachable when no bootstrap broker answers DescribeCluster."""
    try:
        d = client.describe_cluster()
    except ClusterUnreachable:
        raise
    except KadminError as e:
        return None, f"no broker could be listed: {e.message}"
    rank = {a: i for i, a in enumerate(client.preferred())}
    brokers = sorted(d.brokers, key=lambda b: (bool(b.fenced), rank.get(host_port(b.host, b.port), len(rank))))
    end = time.monotonic() + client.bound()
    unreachable: list[str] = []
    for b in brokers:
        if time.monotonic() >= end:
            break
        address = host_port(b.host, b.port)
        try:
            resp = client.send_to(address, describe_configs_request([(RESOURCE_BROKER, str(b.id))], (name,)), end)
        except ClusterUnreachable as e:  # its advertised address cannot be reached from here: the next broker
            unreachable.append(told([Asked("broker", b.id, None, e.message, at=address)]))
            continue
        except KadminError as e:
            return Asked("broker", b.id, None, e.message, at=address), ""
        return next((asked("broker", b.id, r, name) for r in resp.results),
                    Asked("broker", b.id, None, "DescribeConfigs answered no result", at=address)), ""
    if not brokers:
        return None, "no broker is registered"
    return None, "no broker could be asked: " + ("; ".join(unreachable) or "no time left") + \
        " (kadmin must reach a broker's advertised address)"
