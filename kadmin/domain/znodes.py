"""Decoders for Kafka's znode JSON (kafka.zk.ZkData, 3.9). Pure: bytes in, models out."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kadmin.domain.models import Controller, Registration


class ZnodeFormatError(ValueError):
    """The znode's content is not what Kafka writes."""


SUPPORTED_BROKER_VERSIONS = range(1, 6)


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _non_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]}{'...' if len(text) > 20 else ''} is out of range")
    return value


_STRICT = json.JSONDecoder(parse_constant=_non_json_constant, parse_float=_finite_float)

MAX_JSON_DEPTH = 200  # Kafka's own JSON nests 4 deep; json's C parser recurses once per level
# Patterns of the rare deep-nesting check, compiled (and kept) by `re` when first used: not in every process
_STRING = rb'"(?:[^"\\]|\\.)*"?'  # a string literal with its escapes, or an unterminated one (re.DOTALL)
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")  # bytes.translate deletes these
_INNERMOST = rb"[\[{][\]}]"
_RUN_OF_OPENERS = rb"[\[{]{%d}" % (MAX_JSON_DEPTH + 1)


def json_too_deep(data: bytes) -> bool:
    """Whether JSON `data` nests arrays/objects deeper than MAX_JSON_DEPTH outside its strings, found without
    recursion. Parsing such input would take json's C parser down to the interpreter's recursion limit, and a
    finalizer the garbage collector ran down there would fail ("Exception ignored in ...")."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:  # the usual case, in two C scans
        return False
    brackets = re.sub(_STRING, b"", data, flags=re.DOTALL).translate(None, _NOT_BRACKET)  # in order, outside strings
    if re.search(_RUN_OF_OPENERS, brackets):
        return True
    levels = 0
    while levels <= MAX_JSON_DEPTH:  # each pass takes away one level: every opener followed at once by a closer
        brackets, n = re.subn(_INNERMOST, b"", brackets)
        if not n:  # what is left is closers then openers, the openers never closed
            return levels + brackets.count(b"[") + brackets.count(b"{") > MAX_JSON_DEPTH
        levels += 1
    return True


def loads_strict(text: str | bytes) -> Any:
    """json.loads for data kadmin did not write: raises ValueError (never RecursionError) for anything that
    is not standard JSON or is absurd: NaN/Infinity, numbers that overflow a double, integers beyond the
    4300-digit conversion limit, nesting deeper than MAX_JSON_DEPTH (refused before parsing: never parsed down
    to the interpreter's recursion limit)."""
    if (json_too_deep(text) if isinstance(text, bytes) else text.count("[") + text.count("{") > MAX_JSON_DEPTH
            and json_too_deep(text.encode("utf-8", "surrogatepass"))):
        raise ValueError(f"invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        if isinstance(text, str) and not text.startswith("\ufeff"):  # json.loads' own BOM error otherwise
            return _STRICT.decode(text)  # one decoder, not one per call (a million state znodes)
        return json.loads(text, parse_constant=_non_json_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    except RecursionError as e:
        raise ValueError("invalid JSON: nested too deeply") from e
    except ValueError as e:  # the int-conversion limit, NaN, 1e999
        raise ValueError(f"invalid JSON: {_short(str(e))}") from e


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def show_value(value: Any) -> str:
    """repr() for an error message about untrusted data: bounded, and never raising."""
    try:
        return _short(repr(value))
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} too large to show"


def _load_object(data: bytes | None) -> dict[str, Any]:
    if data is None or data == b"":
        raise ZnodeFormatError("empty data")
    try:
        doc = loads_strict(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ZnodeFormatError(f"not UTF-8: {e.reason} at byte {e.start}") from e
    except ValueError as e:
        raise ZnodeFormatError(str(e)) from e
    if not isinstance(doc, dict):
        raise ZnodeFormatError(f"expected a JSON object, found {type(doc).__name__}")
    return doc


def _int(doc: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """An int32 field (every integer in these znodes but the timestamps is a Java int)."""
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None and default is None and key not in doc:
            raise ZnodeFormatError(f"missing key {key!r}")
        raise ZnodeFormatError(f"{key!r} is {show_value(value)}, expected an integer")
    if not INT32_MIN <= value <= INT32_MAX:
        raise ZnodeFormatError(f"{key!r} is {show_value(value)}, out of range for a 32-bit integer")
    return value


def _decimal(text: str, lo: int, hi: int) -> int | None:
    """Java's Integer/Long.parseInt of `text` (ASCII digits, optional sign) within [lo, hi], else None."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if len(text) > 25 or not (digits.isascii() and digits.isdigit()):  # isdigit: 0-9 alone, in ASCII
        return None
    value = int(text)
    return value if lo <= value <= hi else None


def parse_min_isr(value: str) -> int:
    """A topic's min.insync.replicas as Kafka parses it (trimmed, an int of at least 1)."""
    n = _decimal(value.strip(), 1, INT32_MAX)
    if n is None:
        raise ZnodeFormatError(f"min.insync.replicas is {show_value(value)}, not an integer of at least 1")
    return n


def broker_id_from_name(name: str) -> int:
    """The broker id of a /brokers/ids child: canonical decimal (no sign, no leading zero), int32."""
    n = _decimal(name, 0, INT32_MAX)
    if n is None or str(n) != name:
        raise ZnodeFormatError(f"{show_value(name)} is not a broker id")
    return n


def _timestamp(value: Any) -> int | None:
    """Kafka writes timestamps as JSON strings of epoch milliseconds; accept a bare number too."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ZnodeFormatError(f"timestamp is {show_value(value)}")
    if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX:
        return value
    if isinstance(value, str):
        n = _decimal(value, INT64_MIN, INT64_MAX)
        if n is None:
            raise ZnodeFormatError(f"timestamp {show_value(value)} is not a number")
        return n
    raise ZnodeFormatError(f"timestamp is {show_value(value)}")


def parse_endpoint(ep: str) -> tuple[str, str | None, int]:
    """`LISTENER://host:port`, `LISTENER://[v6]:port` or `LISTENER://:port` (null host)."""
    if "://" not in ep:
        raise ZnodeFormatError(f"endpoint {show_value(ep)} is not LISTENER://host:port")
    name, rest = ep.split("://", 1)
    host, sep, port = rest.rpartition(":")
    if not sep:
        raise ZnodeFormatError(f"endpoint {show_value(ep)} has no port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    port_no = _decimal(port, 0, 65535)
    if port_no is None:
        raise ZnodeFormatError(f"endpoint {show_value(ep)} has a bad port")
    return name, (host or None), port_no


def decode_registration(data: bytes | None) -> Registration:
    """Decode /brokers/ids/<id>, every version Kafka ever wrote (1-5); raise ZnodeFormatError otherwise."""
    doc = _load_object(data)
    version = _int(doc, "version")
    if version < 1:
        raise ZnodeFormatError(f"unsupported broker registration version {version}")
    if version not in SUPPORTED_BROKER_VERSIONS:
        raise ZnodeFormatError(
            f"unknown broker registration version {version} (kadmin reads 1-{SUPPORTED_BROKER_VERSIONS[-1]})"
        )
    host = doc.get("host")
    if host is not None and not isinstance(host, str):
        raise ZnodeFormatError(f"host is {show_value(host)}")
    port = _int(doc, "port", -1)
    jmx_port = _int(doc, "jmx_port", -1)
    if version == 1:
        endpoints: tuple[str, ...] = (f"PLAINTEXT://{host or ''}:{port}",) if port >= 0 else ()
    else:
        raw_eps = doc.get("endpoints")
        if not isinstance(raw_eps, list) or not all(isinstance(e, str) for e in raw_eps):
            raise ZnodeFormatError(f"endpoints is {show_value(raw_eps)}, expected a list of strings")
        for ep in raw_eps:
            parse_endpoint(ep)
        endpoints = tuple(raw_eps)
    lspm = doc.get("listener_security_protocol_map")
    if lspm is None:
        # Kafka's default: each listener's security protocol is the listener name.
        lspm = {parse_endpoint(e)[0]: parse_endpoint(e)[0] for e in endpoints}
    elif not isinstance(lspm, dict) or not all(isinstance(v, str) for v in lspm.values()):
        raise ZnodeFormatError(f"listener_security_protocol_map is {show_value(lspm)}")
    rack = doc.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ZnodeFormatError(f"rack is {show_value(rack)}")
    features = doc.get("features") or {}
    if not isinstance(features, dict) or not all(
        isinstance(v, dict) and all(isinstance(n, int) and not isinstance(n, bool) and INT32_MIN <= n <= INT32_MAX
                                    for n in v.values())
        for v in features.values()
    ):
        raise ZnodeFormatError(f"features is {show_value(features)}, expected name -> {{min_version, max_version}}")
    return Registration(
        version=version,
        host=host,
        port=port,
        endpoints=endpoints,
        listener_security_protocol_map=dict(lspm),
        jmx_port=jmx_port,
        timestamp_ms=_timestamp(doc.get("timestamp")),
        rack=rack,
        features={k: dict(v) for k, v in features.items()},
    )


def encode_registration(
    *,
    host: str | None,
    port: int,
    endpoints: list[str],
    timestamp_ms: int,
    version: int = 5,
    jmx_port: int = -1,
    rack: str | None = None,
    listener_security_protocol_map: Mapping[str, str] | None = None,
    features: Mapping[str, Mapping[str, int]] | None = None,
) -> bytes:
    """Encode a registration exactly as kafka.zk.BrokerIdZNode.encode does (compact Jackson JSON)."""
    doc: dict[str, Any] = {
        "version": version,
        "host": host,
        "port": port,
        "jmx_port": jmx_port,
        "timestamp": str(timestamp_ms),
    }
    if version >= 2:
        doc["endpoints"] = list(endpoints)
    if version >= 3 and rack is not None:
        doc["rack"] = rack
    if version >= 4:
        names = [parse_endpoint(e)[0] for e in endpoints]
        doc["listener_security_protocol_map"] = dict(listener_security_protocol_map or {n: n for n in names})
    if version >= 5:
        doc["features"] = {k: dict(v) for k, v in (features or {}).items()}
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_controller(data: bytes | None) -> Controller:
    """Decode /controller (v1 before KIP-866, v2 with kraftControllerEpoch)."""
    doc = _load_object(data)
    return Controller(
        broker_id=_int(doc, "brokerid"),
        version=_int(doc, "version", 1),
        timestamp_ms=_timestamp(doc.get("timestamp")),
        kraft_controller_epoch=_int(doc, "kraftControllerEpoch", -1),
    )


def encode_controller(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
    return json.dumps(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": kraft_controller_epoch,
        },
        separators=(",", ":"),
    ).encode()


def decode_cluster_id(data: bytes | None) -> str:
    """Decode /cluster/id: {"version":"1","id":"..."} (version is a string)."""
    doc = _load_object(data)
    cid = doc.get("id")
    if not isinstance(cid, str):
        raise ZnodeFormatError(f"id is {show_value(cid)}")
    return cid


def encode_cluster_id(cluster_id: str) -> bytes:
    return json.dumps({"version": "1", "id": cluster_id}, separators=(",", ":")).encode()


def encode_topic(
    partitions: Mapping[int, list[int]], topic_id: str | None = None, version: int = 3
) -> bytes:
    """Encode /brokers/topics/<t> as TopicZNode.encode does (3.9 writes version 3)."""
    doc: dict[str, Any] = {"version": version, "partitions": {str(p): r for p, r in partitions.items()}}
    if version >= 2:
        doc["adding_replicas"] = {}
        doc["removing_replicas"] = {}
    if version >= 3 and topic_id is not None:
        doc["topic_id"] = topic_id
    return json.dumps(doc, separators=(",", ":")).encode()


def encode_partition_state(
    leader: int, leader_epoch: int, controller_epoch: int, isr: list[int], leader_recovery_state: int = 0
) -> bytes:
    doc: dict[str, Any] = {
        "version": 1,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "controller_epoch": controller_epoch,
        "isr": isr,
    }
    if leader_recovery_state != 0:
        doc["leader_recovery_state"] = leader_recovery_state
    return json.dumps(doc, separators=(",", ":")).encode()


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= INT32_MAX for x in value
    ):
        raise ZnodeFormatError(f"{what} is {show_value(value)}, expected a list of broker ids")
    return tuple(value)


if TYPE_CHECKING:  # the decoders' dicts, typed for mypy; at run time each is a plain dict, for no `TypedDict` class
    # is free: typing compiles each field's annotation when the class is created (~1.5 M instructions a process)
    from typing import TypedDict

    class TopicAssignment(TypedDict):
        partitions: dict[int, tuple[int, ...]]
        adding: dict[int, tuple[int, ...]]
        removing: dict[int, tuple[int, ...]]
        topic_id: str | None
        version: int

    class StateZnode(TypedDict):
        leader: int
        leader_epoch: int
        controller_epoch: int
        isr: tuple[int, ...]
        leader_recovery_state: int


def _partition_map(doc: dict[str, Any], key: str) -> dict[int, tuple[int, ...]]:
    """A topic znode's map of partition → broker ids (`key`: partitions, adding_replicas, removing_replicas)."""
    raw = doc.get(key) or {}
    if type(raw) is not dict:
        raise ZnodeFormatError(f"{key} is {show_value(raw)}, expected an object")
    out = {}
    for p, replicas in raw.items():
        # What Kafka writes, checked in one look (100,000 topic znodes in a scan): a partition number in
        # canonical decimal ("00" next to "0" would be one partition read twice), a list of int32 broker ids.
        if p.isdigit() and p.isascii() and (p[0] != "0" or len(p) == 1) and len(p) <= 10 \
                and type(replicas) is list:
            for x in replicas:
                if type(x) is not int or x < 0 or x > INT32_MAX:
                    break
            else:
                number = int(p)
                if number <= INT32_MAX:
                    out[number] = tuple(replicas)
                    continue
        # anything else: the full rules, which say what is wrong
        n = _decimal(p, 0, INT32_MAX)
        if n is None or str(n) != p:
            raise ZnodeFormatError(f"{key} has a non-numeric partition {show_value(p)}")
        out[n] = _int_list(replicas, f"{key}[{p}]")
    return out


def decode_topic(data: bytes | None) -> TopicAssignment:
    """Decode /brokers/topics/<t> (TopicZNode versions 1-3; a missing key means empty)."""
    doc = _load_object(data)
    version = _int(doc, "version", 1)
    if version not in (1, 2, 3):
        raise ZnodeFormatError(f"unknown topic znode version {version} (kadmin reads 1-3)")
    if "partitions" not in doc:
        raise ZnodeFormatError("missing key 'partitions'")
    topic_id = doc.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, str):
        raise ZnodeFormatError(f"topic_id is {show_value(topic_id)}")
    return {
        "partitions": _partition_map(doc, "partitions"),
        "adding": _partition_map(doc, "adding_replicas"),
        "removing": _partition_map(doc, "removing_replicas"),
        "topic_id": topic_id,
        "version": version,
    }


def decode_partition_state(data: bytes | None) -> StateZnode:
    """Decode /brokers/topics/<t>/partitions/<p>/state (TopicPartitionStateZNode)."""
    doc = _load_object(data)
    return {
        "leader": _int(doc, "leader"),
        "leader_epoch": _int(doc, "leader_epoch"),
        "controller_epoch": _int(doc, "controller_epoch", -1),
        "isr": _int_list(doc.get("isr"), "isr"),
        "leader_recovery_state": _int(doc, "leader_recovery_state", 0),
    }


def decode_config(data: bytes | None) -> dict[str, str]:
    """Decode /config/<type>/<entity>: {"version":1,"config":{"k":"v"}} (all values are strings)."""
    doc = _load_object(data)
    cfg = doc.get("config") or {}
    if not isinstance(cfg, dict):
        raise ZnodeFormatError(f"config is {show_value(cfg)}")
    out = {}
    for k, v in cfg.items():
        if isinstance(v, int) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str):
            raise ZnodeFormatError(f"config value of {show_value(k)} is {show_value(v)}, expected a string")
        out[str(k)] = v
    return out
