"""`kadmin cluster id` and `kadmin cluster check-id` (a broker pointed at the wrong cluster)."""

from __future__ import annotations

from pathlib import Path

from kadmin.errors import NotFound
from kadmin.exit_codes import ExitCode
from kadmin.formats.meta_properties import MetaPropertiesError, parse
from kadmin.inputs import InputRefused, read_input
from kadmin.payloads import ClusterId, ClusterIdCheck, MetaPropertiesFile
from kadmin.results import Result


def cluster_id_result(cluster_id: str | None, source: str) -> Result[ClusterId]:
    if cluster_id is None:
        raise NotFound("No cluster ID found. The Kafka version is probably too old.")
    return Result(data=ClusterId(cluster_id, source))


def read_meta(path: Path, cluster_id: str) -> MetaPropertiesFile:
    """What `path` says against the live cluster's id; `error` when it cannot be read or parsed."""
    try:
        meta = parse(read_input(path, "").decode("utf-8"))
    except InputRefused as e:  # not a regular file, or too large: the row says why, the file names itself
        return MetaPropertiesFile(str(path), None, None, None, None, error=e.reason)
    except OSError as e:
        return MetaPropertiesFile(str(path), None, None, None, None, error=f"cannot read: {e.strerror}")
    except (MetaPropertiesError, UnicodeDecodeError) as e:
        return MetaPropertiesFile(str(path), None, None, None, None, error=f"not a valid meta.properties: {e}")
    match = None if meta.cluster_id is None else meta.cluster_id == cluster_id
    return MetaPropertiesFile(str(path), meta.version, meta.node_id, meta.cluster_id, match, error=None)


def check_ids(cluster_id: str | None, paths: list[Path]) -> Result[ClusterIdCheck]:
    """Compare each meta.properties' cluster.id with the live cluster's. Exit 1 on any mismatch;
    exit 2 when a file cannot be read or parsed (named)."""
    if cluster_id is None:
        raise NotFound("the live cluster has no cluster id to compare with")
    rows = [read_meta(path, cluster_id) for path in paths]
    broken = [f"{f.path}: {f.error}" for f in rows if f.error]
    warnings = [f"{f.path}: no cluster.id yet (a v0 broker adopts the cluster's on its next start)"
                for f in rows if not f.error and f.cluster_id is None]
    mismatched = [f"{f.path} has cluster.id {f.cluster_id}" for f in rows if f.match is False]
    data = ClusterIdCheck(cluster_id, tuple(rows))
    if broken:
        return Result(data=data, warnings=warnings, exit_code=ExitCode.USAGE,
                      message="; ".join(broken))
    if mismatched:
        return Result(data=data, warnings=warnings,
                      exit_code=ExitCode.CONDITION_NOT_MET,
                      message=f"cluster id mismatch: the cluster is {cluster_id}, but " + "; ".join(mismatched))
    return Result(data=data, warnings=warnings,
                  message=f"all {len(paths)} files belong to cluster {cluster_id}")
