"""Typed payloads of `kadmin cluster` (kadmin/payloads/__init__.py says what a payload is)."""

from __future__ import annotations

from dataclasses import dataclass

from kadmin.results import Payload


@dataclass(frozen=True)
class ClusterId(Payload):
    cluster_id: str
    source: str  # where it was read: ZooKeeper's /cluster/id, or DescribeCluster


@dataclass(frozen=True)
class MetaPropertiesFile(Payload):
    """A `cluster check-id` file: what its meta.properties says; `match` None when it names no cluster id (or
    could not be read: then `error` says why, and the file's keys are None)."""

    path: str
    version: int | None
    node_id: int | None
    cluster_id: str | None
    match: bool | None
    error: str | None


@dataclass(frozen=True)
class ClusterIdCheck(Payload):
    cluster_id: str
    files: tuple[MetaPropertiesFile, ...]
