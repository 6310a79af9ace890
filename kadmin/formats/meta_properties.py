"""meta.properties (Kafka's log directory identity): version 0 (ZooKeeper mode) and 1 (KRaft).

v0: `version=0`, optional `broker.id` (the node id) and `cluster.id`. v1: `version=1` with required
`node.id` and `cluster.id`. A missing version reads as 0. `directory.id` (3.7+) is a base64 Uuid.
"""

from __future__ import annotations

from dataclasses import dataclass


class MetaPropertiesError(ValueError):
    pass


@dataclass(frozen=True)
class MetaProperties:
    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None


def parse_properties_text(text: str) -> dict[str, str]:
    """java.util.Properties as Kafka writes it: `#` comments, `key=value` lines."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def parse(text: str) -> MetaProperties:
    props = parse_properties_text(text)
    raw_version = props.get("version", "0")
    try:
        version = int(raw_version)
    except ValueError as e:
        raise MetaPropertiesError(f"version {raw_version!r} is not a number") from e
    if version not in (0, 1):
        raise MetaPropertiesError(f"Unknown meta.properties version number {version}")
    id_key = "broker.id" if version == 0 else "node.id"
    node_id: int | None = None
    if id_key in props:
        try:
            node_id = int(props[id_key])
        except ValueError as e:
            raise MetaPropertiesError(f"{id_key} {props[id_key]!r} is not a number") from e
    cluster_id = props.get("cluster.id") or None
    if version == 1:
        if node_id is None:
            raise MetaPropertiesError("version 1 requires node.id")
        if cluster_id is None:
            raise MetaPropertiesError("version 1 requires cluster.id")
    return MetaProperties(version, cluster_id, node_id, props.get("directory.id") or None)
