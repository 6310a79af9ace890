"""`kadmin cluster id` and `kadmin cluster check-id` (a broker pointed at the wrong cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kadmin.errors import NotFound
from kadmin.exit_codes import ExitCode
from kadmin.formats.meta_properties import MetaPropertiesError, parse
from kadmin.results import Result


def cluster_id_result(cluster_id: str | None, source: str) -> Result:
    if cluster_id is None:
        raise NotFound("No cluster ID found. The Kafka version is probably too old.")
    return Result(data={"cluster_id": cluster_id, "source": source})


def check_ids(cluster_id: str | None, paths: list[Path]) -> Result:
    """Compare each meta.properties' cluster.id with the live cluster's. Exit 1 on any mismatch;
    exit 2 when a file cannot be read or parsed (named)."""
    if cluster_id is None:
        raise NotFound("the live cluster has no cluster id to compare with")
    rows: list[dict[str, Any]] = []
    mismatched, broken, warnings = [], [], []
    for path in paths:
        row: dict[str, Any] = {"path": str(path), "version": None, "node_id": None, "cluster_id": None,
                               "match": None, "error": None}
        try:
            meta = parse(path.read_text())
        except OSError as e:
            row["error"] = f"cannot read: {e.strerror}"
        except (MetaPropertiesError, UnicodeDecodeError) as e:
            row["error"] = f"not a valid meta.properties: {e}"
        else:
            row.update(version=meta.version, node_id=meta.node_id, cluster_id=meta.cluster_id)
            if meta.cluster_id is None:
                warnings.append(f"{path}: no cluster.id yet (a v0 broker adopts the cluster's on its next start)")
            else:
                row["match"] = meta.cluster_id == cluster_id
                if not row["match"]:
                    mismatched.append(f"{path} has cluster.id {meta.cluster_id}")
        if row["error"]:
            broken.append(f"{path}: {row['error']}")
        rows.append(row)
    data = {"cluster_id": cluster_id, "files": rows}
    if broken:
        return Result(data=data, warnings=warnings, exit_code=ExitCode.USAGE,
                      message="; ".join(broken))
    if mismatched:
        return Result(data=data, warnings=warnings,
                      exit_code=ExitCode.CONDITION_NOT_MET,
                      message=f"cluster id mismatch: the cluster is {cluster_id}, but " + "; ".join(mismatched))
    return Result(data=data, warnings=warnings,
                  message=f"all {len(paths)} files belong to cluster {cluster_id}")
