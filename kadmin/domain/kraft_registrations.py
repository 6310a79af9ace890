"""KRaft broker registrations, pure: replayed from metadata records, compared between two looks.

Two sources feed this module: the records of a controller's `__cluster_metadata-0` log and
snapshot (`brokers list --metadata-dir`, offline), and polled DescribeCluster answers (`brokers
wait` / `brokers watch` with --bootstrap-server). Nothing here does I/O.

A bounce is a new registration of a new process: a new incarnation id, or a larger broker epoch.
Kafka's amended registration (the same incarnation re-sending RegisterBrokerRequest, answered with
the same epoch) is not a bounce.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Registration:
    """A broker's registration as the controllers' metadata log has it."""

    id: int
    epoch: int
    incarnation_id: str | None
    fenced: bool
    in_controlled_shutdown: bool
    endpoints: tuple[str, ...]
    listener_security_protocol_map: Mapping[str, str]
    features: Mapping[str, Mapping[str, int]]
    rack: str | None
    offset: int | None  # the RegisterBrokerRecord's log offset; None when it came from a snapshot
    source: str  # "log" or "snapshot"
    log_dirs: tuple[str, ...] = field(default=())

    @property
    def state(self) -> str:
        """fenced, controlled_shutdown (unfenced, moving its leaderships away) or active. A fence keeps
        the in-controlled-shutdown flag (Kafka's BrokerRegistration.cloneWith): fenced wins."""
        if self.fenced:
            return "fenced"
        return "controlled_shutdown" if self.in_controlled_shutdown else "active"


# SecurityProtocol ids (org.apache.kafka.common.security.auth.SecurityProtocol)
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def _get(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, Mapping) else getattr(obj, key, default)


def endpoint_text(name: str, host: str, port: int) -> str:
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


def _endpoints(raw: Iterable[Any]) -> tuple[tuple[str, ...], dict[str, str]]:
    eps, protocols = [], {}
    for e in raw or ():
        name, host, port = str(_get(e, "name")), str(_get(e, "host")), int(_get(e, "port"))
        eps.append(endpoint_text(name, host, port))
        sp = _get(e, "security_protocol")
        protocols[name] = SECURITY_PROTOCOLS.get(sp, str(sp)) if isinstance(sp, int) else str(sp)
    return tuple(eps), protocols


def _features(raw: Iterable[Any]) -> dict[str, dict[str, int]]:
    found = {str(_get(f, "name")): {"min_version": int(_get(f, "min_supported_version")),
                                    "max_version": int(_get(f, "max_supported_version"))} for f in raw or ()}
    return dict(sorted(found.items()))


def apply(regs: dict[int, Registration], type_name: str, fields: Mapping[str, Any], offset: int | None,
          source: str = "log") -> None:
    """Replay one metadata record onto `regs` (broker id -> registration), as Kafka's
    ClusterControlManager replays it. Records about other things are ignored."""
    if type_name == "RegisterBrokerRecord":
        bid = int(fields["broker_id"])
        eps, protocols = _endpoints(fields.get("end_points") or ())
        regs[bid] = Registration(
            id=bid, epoch=int(fields["broker_epoch"]), incarnation_id=fields.get("incarnation_id"),
            fenced=bool(fields.get("fenced", True)), in_controlled_shutdown=bool(fields.get("in_controlled_shutdown")),
            endpoints=eps, listener_security_protocol_map=protocols, features=_features(fields.get("features") or ()),
            rack=fields.get("rack"), offset=offset, source=source,
            log_dirs=tuple(str(d) for d in fields.get("log_dirs") or ()))
    elif type_name == "UnregisterBrokerRecord":
        bid = int(fields["broker_id"])
        r = regs.get(bid)
        # Kafka removes the registration only when the epoch matches (replay of UnregisterBrokerRecord)
        if r is not None and r.epoch == int(fields.get("broker_epoch", r.epoch)):
            del regs[bid]
    elif type_name in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
        bid, epoch = int(fields["id"]), int(fields["epoch"])
        r = regs.get(bid)
        if r is not None and r.epoch == epoch:
            regs[bid] = replace(r, fenced=type_name == "FenceBrokerRecord")
    elif type_name == "BrokerRegistrationChangeRecord":
        bid, epoch = int(fields["broker_id"]), int(fields["broker_epoch"])
        r = regs.get(bid)
        if r is None or r.epoch != epoch:
            return
        fenced = {1: True, -1: False}.get(int(fields.get("fenced", 0)), r.fenced)
        cs = {1: True, -1: False}.get(int(fields.get("in_controlled_shutdown", 0)), r.in_controlled_shutdown)
        regs[bid] = replace(r, fenced=fenced, in_controlled_shutdown=cs)


def registration_json(r: Registration) -> dict[str, Any]:
    """A `brokers list --metadata-dir` row: the keys of `brokers list`, plus KRaft's own."""
    host, port = None, None
    if r.endpoints:
        hp = r.endpoints[0].split("://", 1)[1]
        h, _, p = hp.rpartition(":")
        host, port = h.strip("[]"), int(p)
    return {
        "id": r.id,
        "host": host,
        "port": port,
        "rack": r.rack,
        "endpoints": list(r.endpoints),
        "listener_security_protocol_map": dict(r.listener_security_protocol_map),
        "jmx_port": None,
        "version": None,
        "timestamp_ms": None,
        "features": {k: dict(v) for k, v in r.features.items()},
        "epoch": r.epoch,
        "session": None,
        "is_controller": None,
        "state": r.state,
        "incarnation_id": r.incarnation_id,
        "fenced": r.fenced,
        "in_controlled_shutdown": r.in_controlled_shutdown,
        "offset": r.offset,
        "source": r.source,
    }


# ---------------------------------------------------------------------------- diff
@dataclass(frozen=True)
class Saved:
    """What a saved listing says of one broker: its epoch and (KRaft) incarnation id."""

    epoch: int
    incarnation_id: str | None = None


@dataclass(frozen=True)
class Bounce:
    id: int
    old_epoch: int
    new_epoch: int
    old_incarnation_id: str | None
    new_incarnation_id: str | None


@dataclass(frozen=True)
class RegistrationDiff:
    new: tuple[int, ...]
    dead: tuple[int, ...]
    bounced: tuple[Bounce, ...]
    went_backwards: tuple[Bounce, ...]  # an epoch that shrank with the same incarnation: another cluster?
    unchanged: tuple[int, ...]

    @property
    def changed(self) -> bool:
        return bool(self.new or self.dead or self.bounced or self.went_backwards)


def classify(before: Mapping[int, Saved], after: Mapping[int, Saved]) -> RegistrationDiff:
    """Bounce = a new incarnation id (when both sides know it) or a larger epoch. The same incarnation
    with the same epoch (Kafka's amended registration) is unchanged."""
    new = tuple(sorted(set(after) - set(before)))
    dead = tuple(sorted(set(before) - set(after)))
    bounced, backwards, unchanged = [], [], []
    for bid in sorted(set(before) & set(after)):
        b, a = before[bid], after[bid]
        both_known = b.incarnation_id is not None and a.incarnation_id is not None
        new_process = both_known and a.incarnation_id != b.incarnation_id
        entry = Bounce(bid, b.epoch, a.epoch, b.incarnation_id, a.incarnation_id)
        if new_process or a.epoch > b.epoch:
            bounced.append(entry)
        elif a.epoch < b.epoch:
            backwards.append(entry)
        else:
            unchanged.append(bid)
    return RegistrationDiff(new, dead, tuple(bounced), tuple(backwards), tuple(unchanged))


# ---------------------------------------------------------------------------- polled DescribeCluster
@dataclass(frozen=True)
class Seen:
    """One broker in a DescribeCluster answer."""

    fenced: bool | None
    endpoint: str
    rack: str | None = None


def poll_events(before: Mapping[int, Seen], after: Mapping[int, Seen]) -> list[dict[str, Any]]:
    """Events between two DescribeCluster answers, by broker id: registered, unregistered, fenced,
    unfenced, endpoint_changed. A broker registered already fenced is reported registered then fenced."""
    out: list[dict[str, Any]] = []
    for bid in sorted(set(before) | set(after)):
        b, a = before.get(bid), after.get(bid)
        if b is None and a is not None:
            out.append({"event": "registered", "id": bid, "fenced": a.fenced, "endpoint": a.endpoint})
            if a.fenced:
                out.append({"event": "fenced", "id": bid, "fenced": True, "endpoint": a.endpoint})
        elif a is None and b is not None:
            out.append({"event": "unregistered", "id": bid, "fenced": None, "endpoint": b.endpoint})
        elif a is not None and b is not None:
            if a.endpoint != b.endpoint or a.rack != b.rack:
                out.append({"event": "endpoint_changed", "id": bid, "fenced": a.fenced, "endpoint": a.endpoint,
                            "old_endpoint": b.endpoint})
            if a.fenced is not None and b.fenced is not None and a.fenced != b.fenced:
                out.append({"event": "fenced" if a.fenced else "unfenced", "id": bid, "fenced": a.fenced,
                            "endpoint": a.endpoint})
    return out


def backoff(previous: float | None, first: float = 0.25, ceiling: float = 2.0) -> float:
    """The next polling interval: `first`, then ×1.5 up to `ceiling`."""
    return first if previous is None else min(previous * 1.5, ceiling)
