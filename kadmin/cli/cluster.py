"""`kadmin cluster`: the cluster id, and whether log directories belong to this cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kadmin.cli.options import Invocation, command, views
from kadmin.services import cluster as svc

app = typer.Typer(name="cluster", help="Cluster identity: the cluster id and meta.properties checks.",
                  no_args_is_help=True)


def live_id(inv: Invocation) -> tuple[str | None, str]:
    """The live cluster's id and where it was read (ZooKeeper's /cluster/id, or DescribeCluster)."""
    identity = inv.backend().identity
    return identity.cluster_id(), identity.source


@command(app, "id")
def id_(inv: Invocation) -> int:
    """Print the cluster id (ZooKeeper /cluster/id, or DescribeCluster in KRaft mode)."""
    cid, source = live_id(inv)
    return inv.emit(svc.cluster_id_result(cid, source), views.cluster_id)


@command(app, "check-id")
def check_id(
    inv: Invocation,
    files: Annotated[list[Path], typer.Argument(help="meta.properties files (v0 or v1).",
                                                metavar="META_PROPERTIES...")],
) -> int:
    """Compare each meta.properties' cluster.id with the live cluster's: exit 1 naming a mismatch.

    A broker whose log directories carry another cluster's id was pointed at the wrong cluster.
    An unreadable or invalid file exits 2, named.
    """
    cid, _ = live_id(inv)
    return inv.emit(svc.check_ids(cid, files), views.check_id)
