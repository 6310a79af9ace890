"""`kadmin features`: KRaft feature flags (KIP-584): finalized levels, each node's supported ranges, upgrades."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kadmin.cli.options import Invocation, command
from kadmin.render import views

app = typer.Typer(name="features", help="KRaft feature flags: finalized levels, each node's support, upgrades.",
                  no_args_is_help=True)

ToolFormat = Enum("ToolFormat", {"v" + f.replace(".", "_"): f for f in views.FEATURE_TOOL_FORMATS},  # type: ignore[misc]
                  type=str)


def _release(value: str | None) -> str | None:
    """--release-version: a release kadmin knows (exit 2 otherwise, naming them)."""
    if value is not None:
        from kadmin.domain.features import metadata_level

        try:
            metadata_level(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    return value


@command(app, "describe")
def describe(
    inv: Invocation,
    tool_format: Annotated[ToolFormat, typer.Option(
        "--tool-format", help="Print -o plain as this version of kafka-features describe does: 4.3 (padded "
        "columns), 3.9 (3.9 and 4.0: TABs).")] = ToolFormat(views.FEATURE_TOOL_FORMATS[0]),
) -> int:
    """Describe the feature flags: each finalized level and every registered node's supported range.

    `-o plain` is what `kafka-features describe` prints (the finalized levels and supported ranges of the node
    that answered); the table and -o json add the range every registered node supports, each asked with
    ApiVersions: the brokers (DescribeCluster) and the controllers (DescribeQuorum's voters, at their
    endpoints). Give --bootstrap-server, --bootstrap-controller, or both (the controllers do not give the
    brokers' addresses, KIP-919: with --bootstrap-controller alone the brokers cannot be asked).

    Exit 0; 5 when a node could not be asked (named on stderr); 4 unreachable.
    """
    from kadmin.services.features import describe as run

    return inv.emit(run(inv.backend().features), views.features_describe(tool_format.value))


@command(app, "upgrade")
def upgrade(
    inv: Invocation,
    release_version: Annotated[str, typer.Option(
        "--release-version", metavar="X.Y", callback=_release, show_default=False,
        help="Raise every feature to the level this Kafka release sets (3.3 to 4.3, or a metadata version such as "
        "3.9-IV0), as kafka-features upgrade --release-version does: metadata.version and kraft.version, "
        "transaction.version, group.version, eligible.leader.replicas.version, share.version, streams.version.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check it, and have the controller validate it "
                                          "(UpdateFeatures ValidateOnly); change nothing.")] = False,
) -> int:
    """Finalize the feature levels of a Kafka release (UpdateFeatures), e.g. metadata.version after a roll to 4.x.

    Refused (exit 7, nothing sent) unless every registered node, broker and controller, supports each new
    level: a node that cannot be asked, or a level below the finalized one (a downgrade, which kadmin does
    not do: use kafka-features downgrade), refuses it too. A feature already at its level is left out, as is
    one the release sets to 0. Run it once every node runs the new release's binaries (`kadmin roll run`).

    Exit 0 done (or nothing to do); 7 refused; 6 the controller rejected it; 2 an unknown release version;
    4 unreachable.
    """
    from kadmin.services.features import upgrade as run

    return inv.emit(run(inv.backend().features, release_version, dry_run), views.features_upgrade)
