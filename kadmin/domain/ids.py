"""Broker-id assignment that survives lost disks: resolve an id for a host, find missing ids, find stale mappings.

Pure functions over what ZooKeeper holds: live registrations (id → host), the permanent host
mappings `/brokers/hosts/<host>` (host → id), the ids in topic replica assignments, and the
version of `/brokers/seqid`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kadmin.domain.text import plural
from kadmin.domain.znodes import INT32_MAX, loads_strict, show_value

Rule = Literal["config", "meta.properties", "host-mapping", "missing-id", "new-id"]
RESERVED_BROKER_MAX_ID = 1000


class IdConflict(ValueError):
    """The procedure cannot choose: human intervention is needed (the message says why)."""

    def __init__(self, message: str, missing_ids: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.missing_ids = missing_ids


@dataclass(frozen=True)
class IdInputs:
    host: str
    registered: Mapping[int, str | None]  # live broker id -> the host it registered from
    mappings: Mapping[str, int]  # /brokers/hosts: host -> broker id
    assigned: Mapping[int, int]  # broker id -> partitions whose replicas name it
    seqid_version: int  # /brokers/seqid's current data version (-1: the znode does not exist)
    config_id: int | None = None
    meta_id: int | None = None
    reserved_max: int = RESERVED_BROKER_MAX_ID


@dataclass(frozen=True)
class Decision:
    broker_id: int
    rule: Rule
    detail: str
    missing_ids: tuple[int, ...]
    seqid_steps: int = 0  # how many /brokers/seqid versions a claim consumes (new ids only)

    @property
    def consumes_seqid(self) -> bool:
        return self.seqid_steps > 0


def missing_ids(assigned: Mapping[int, int], registered: Mapping[int, Any]) -> list[int]:
    """Ids that appear in some topic's replica assignment but are not registered now."""
    return sorted(set(assigned) - set(registered))


def resolve(i: IdInputs) -> Decision:
    """The assignment procedure, rule by rule (docs/ids.md); raises IdConflict where it says a human must decide.

    3. A host mapping is used unless its id is registered now from another host.
    4. The missing ids are those assigned to replicas but not registered, less the ids another host
       is mapped to (they are spoken for): exactly one is reused, more than one is a conflict.
    5. Otherwise a new id: the next /brokers/seqid version plus reserved.broker.max.id, as Kafka's
       generateBrokerId does (so the first is 1001).
    """
    missing = tuple(missing_ids(i.assigned, i.registered))
    if i.config_id is not None:
        if i.meta_id is not None and i.meta_id != i.config_id:
            raise IdConflict(f"the configured broker.id {i.config_id} disagrees with meta.properties' id "
                             f"{i.meta_id}: fix one of them", missing)
        return Decision(i.config_id, "config", "broker.id is configured", missing)
    if i.meta_id is not None:
        return Decision(i.meta_id, "meta.properties", "the id stored with the data in meta.properties", missing)
    skipped = ""
    mapped = i.mappings.get(i.host)
    if mapped is not None:
        owner = i.registered.get(mapped, "")
        if mapped in i.registered and owner != i.host:
            skipped = (f"the mapping {i.host} -> {mapped} was skipped: broker {mapped} is registered from "
                       f"{owner or 'an unknown host'}; ")
        else:
            now = " and registered from this host now" if mapped in i.registered else ""
            return Decision(mapped, "host-mapping", f"/brokers/hosts/{i.host} maps this host to {mapped}{now}",
                            missing)
    spoken_for = {b for h, b in i.mappings.items() if h != i.host}
    candidates = [m for m in missing if m not in spoken_for]
    if len(candidates) == 1:
        return Decision(candidates[0], "missing-id",
                        skipped + f"broker {candidates[0]} is assigned replicas ("
                        f"{plural(i.assigned[candidates[0]], 'partition')}) but is not registered: the only missing id",
                        missing)
    if len(candidates) > 1:
        raise IdConflict(skipped + f"{len(candidates)} ids are missing ({', '.join(map(str, candidates))}): "
                         "human intervention needed (map this host with `kadmin ids map`)", missing)
    # Kafka takes the next sequence number blindly; an id that is registered or mapped already
    # (a hand-configured broker.id above reserved.broker.max.id) is skipped, consuming its version.
    taken = set(i.registered) | spoken_for
    steps = 1
    while i.seqid_version + steps + i.reserved_max in taken:
        steps += 1
    new = i.seqid_version + steps + i.reserved_max
    skipped_ids = f" (skipping {steps - 1} taken ids)" if steps > 1 else ""
    return Decision(new, "new-id", skipped + f"no mapping and no missing id: a new id from /brokers/seqid "
                    f"(version {i.seqid_version + steps}) + reserved.broker.max.id {i.reserved_max}{skipped_ids}",
                    missing, seqid_steps=steps)


@dataclass(frozen=True)
class Garbage:
    host: str
    broker_id: int
    registered_from: str


def garbage(mappings: Mapping[str, int], registered: Mapping[int, str | None]) -> list[Garbage]:
    """The stale-mapping rule: broker N registered from host h makes every mapping g -> N with g != h garbage."""
    out = []
    for host, bid in sorted(mappings.items()):
        h = registered.get(bid)
        if h is not None and h != host:
            out.append(Garbage(host, bid, h))
    return out


def encode_mapping(broker_id: int) -> bytes:
    """/brokers/hosts/<host>: {"version":0,"broker.id":N} (compact, as Kafka's Json would write it)."""
    return json.dumps({"version": 0, "broker.id": broker_id}, separators=(",", ":")).encode()


def decode_mapping(data: bytes | None) -> int:
    """/brokers/hosts/<host>'s broker id; ValueError (never anything else) for what Kafka would not write."""
    try:
        doc = loads_strict((data or b"").decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"invalid JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object, found {type(doc).__name__}")
    version = doc.get("version")
    if isinstance(version, bool) or version != 0:
        raise ValueError(f"unknown host mapping version {show_value(version)}")
    bid = doc.get("broker.id")
    if not isinstance(bid, int) or isinstance(bid, bool) or not 0 <= bid <= INT32_MAX:
        raise ValueError(f"broker.id is {show_value(bid)}")
    return bid


def valid_host(host: str) -> bool:
    return bool(host) and "/" not in host and host not in (".", "..") and not any(ord(c) < 32 for c in host)
