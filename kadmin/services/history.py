"""`kadmin history ingest/report`: cluster history on Spark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kadmin.errors import ConfigError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.services.result import Result

Progress = Callable[[str, int | None, int], None]


class _Spark:
    """The Spark session for one command: an already active one (a notebook, the test suite) is used
    and left running; one kadmin started is stopped at the end."""

    def __init__(self, master: str) -> None:
        self.master = master
        self.owned = False
        self.spark: Any = None

    def __enter__(self) -> Any:
        try:
            from pyspark.sql import SparkSession

            from kadmin.pipeline.spark import session
        except ImportError as e:
            raise ConfigError("history needs PySpark: pip install 'kadmin[spark]'") from e
        active = SparkSession.getActiveSession()
        if active is not None:
            self.spark = active
        else:
            self.spark, self.owned = session(self.master), True
        return self.spark

    def __exit__(self, *exc: Any) -> None:
        if self.owned and self.spark is not None:
            self.spark.stop()


def ingest(paths: list[str], cluster: str, out: str, master: str, chroot: str | None,
           progress: Progress | None = None) -> Result:
    from kadmin.pipeline.ingest import ingest as run
    from kadmin.pipeline.spark import StageProgress

    with _Spark(master) as spark, StageProgress(spark, progress):
        try:
            s = run(spark, paths, cluster, out, chroot)
        except FileNotFoundError as e:
            raise UsageError(f"no such file or directory: {e}") from e
    data = {"cluster": cluster, "out": out, "files": s.files, "ranges": s.ranges, "bytes": s.bytes,
            "events_parsed": s.events_parsed, "events_added": s.events_added, "damage": s.damage,
            "skipped": s.skipped}
    warnings = [f"{d['file']}: damaged at offset {d['offset']}: {d['reason']} (records before it were kept)"
                for d in s.damage]
    warnings += [f"{p}: not a ZooKeeper txn log, KRaft metadata log or kadmin NDJSON file: skipped" for p in s.skipped]
    if s.files == 0:
        return Result(command="history ingest", data=data, warnings=warnings, exit_code=ExitCode.CONDITION_NOT_MET,
                      message="nothing to ingest: no ZooKeeper log.*, KRaft *.log/*.checkpoint or *.ndjson found")
    return Result(command="history ingest", data=data, warnings=warnings,
                  exit_code=ExitCode.PARTIAL if s.damage else ExitCode.OK,
                  message=f"{s.events_added} new events ({s.events_parsed} parsed) from {s.files} files "
                  f"({s.bytes / 1e6:.1f} MB in {s.ranges} ranges) into {out}")


def report(directory: str, kind: str, cluster: str | None, since_ms: int | None, until_ms: int | None,
           master: str, png: str | None) -> Result:
    from pathlib import Path

    from kadmin.pipeline import reports

    if not Path(directory).exists():
        raise UsageError(f"{directory}: no such directory (run `kadmin history ingest` first)")
    with _Spark(master) as spark:
        df = reports.load(spark, directory, cluster, since_ms, until_ms)
        rows = reports.report(spark, df, kind)
        if png:
            title = "broker generations" + (f" of {cluster}" if cluster else "")
            reports.timeline_png(reports._generations(df), png, title)
    return Result(command=f"history report {kind}", data=rows,
                  message=f"wrote {png}" if png else None)
