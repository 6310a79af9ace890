"""`kadmin history ingest/report`: cluster history on Spark.

Spark and table failures stop here: each becomes one line and an exit code (never a Java stack).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kadmin.domain.text import plural
from kadmin.errors import ConditionNotMet, ConfigError, KadminError, Unsafe, UsageError, in_words
from kadmin.exit_codes import ExitCode
from kadmin.payloads_ops import IngestDamage, Ingested, NothingIngested, ReportRow, report_row
from kadmin.results import Progress, Result

if TYPE_CHECKING:  # annotations only: pyspark loads when a history command runs
    from pyspark.sql import SparkSession


def spark_missing() -> str:
    """How to get PySpark, as it can be done: kadmin is not on PyPI, so the extra comes from a clone or a wheel."""
    from kadmin import __version__

    return (f"history needs PySpark, which is not installed: pip install '.[spark]' in a clone of kadmin, or "
            f"pip install 'kadmin_kafka-{__version__}-py3-none-any.whl[spark]' from a wheel (make dist builds it)")


class _Spark:
    """The Spark session for one command: an already active one (a notebook, the test suite) is used
    and left running; one kadmin started is stopped at the end."""

    def __init__(self, master: str) -> None:
        self.master = master
        self.owned = False
        self.spark: SparkSession | None = None

    def __enter__(self) -> SparkSession:
        try:
            from pyspark.sql import SparkSession

            from kadmin.pipeline.spark import session
        except ImportError as e:
            raise ConfigError(spark_missing()) from e
        active = SparkSession.getActiveSession()
        if active is not None:
            self.spark = active
        else:
            self.spark, self.owned = session(self.master), True
        assert self.spark is not None
        return self.spark

    def __exit__(self, *exc: Any) -> None:
        if self.owned and self.spark is not None:
            self.spark.stop()


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("at ") and line not in ("JVM stacktrace:",):
            return line[:400]
    return ""


def spark_message(e: BaseException) -> str:
    """One line for a Spark failure: the JVM exception (and its root cause) without the stack."""
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            top = _first_line(str(java.toString()))
            root = java
            while root.getCause() is not None:
                root = root.getCause()
            cause = _first_line(str(root.toString()))
            return top if cause in ("", top) or cause in top else f"{top} (caused by {cause})"
        except Exception:  # noqa: BLE001 - the gateway may be gone: fall back to the Python text
            pass
    return _first_line(str(e)) or in_words(e)


@contextlib.contextmanager
def _edge(directory: str) -> Iterator[None]:
    """Table and Spark failures as KadminErrors with one-line messages."""
    from kadmin.pipeline.table import Locked, NotATable, NotWritable

    try:
        yield
    except KadminError:
        raise
    except Locked as e:
        raise Unsafe(str(e), code="locked") from e
    except (NotWritable, NotATable) as e:
        raise UsageError(str(e)) from e
    except OSError as e:
        where = e.filename or directory
        raise KadminError(f"{where}: {e.strerror or e}", code="io") from e
    except Exception as e:
        if type(e).__module__.split(".")[0] not in ("py4j", "pyspark"):
            raise
        raise KadminError(f"Spark failed: {spark_message(e)}", code="spark") from e


CLUSTER_RULE = "give a name of letters, digits, '.', '_' and '-' that starts with a letter or digit"


def _check_cluster(cluster: str) -> None:
    from kadmin.pipeline.table import cluster_name_ok

    if not cluster_name_ok(cluster):
        raise UsageError(f"--cluster {cluster!r}: {CLUSTER_RULE} (it names the table's partition directory)")


def ingest(paths: list[str], cluster: str, out: str, master: str, chroot: str | None,
           progress: Progress | None = None, wait_lock: float = 0.0,
           note: Callable[[str], None] | None = None,
           log: Callable[[str], None] | None = None) -> Result[Ingested | NothingIngested]:
    """`log` (-v): one line saying which CRC-32C implementation checks KRaft batches."""
    from kadmin.pipeline.ingest import crc32c_impl, discover
    from kadmin.pipeline.ingest import ingest as run
    from kadmin.pipeline.spark import StageProgress
    from kadmin.pipeline.table import Holder, Table, fault, new_run_id

    _check_cluster(cluster)
    if log is not None:
        log(f"CRC-32C (KRaft batches): {crc32c_impl()[0]}")
    try:
        found = discover(paths)
    except FileNotFoundError as e:
        raise UsageError(f"no such file or directory: {e}") from e
    warnings = [f"{d}: cannot read this directory: skipped" for d in found.unreadable]
    if not found.sources:
        nothing = NothingIngested(cluster, out, files=0, events_parsed=0, events_added=0,
                                  skipped=tuple(found.skipped), unreadable=tuple(found.unreadable))
        return Result(data=nothing, warnings=warnings,
                      exit_code=ExitCode.PARTIAL if found.unreadable else ExitCode.CONDITION_NOT_MET,
                      message="nothing to ingest: no ZooKeeper log.*, KRaft *.log/*.checkpoint or *.ndjson found")

    def waiting(holder: Holder) -> None:
        if note is not None:
            note(f"{out} is being written by another ingest ({holder.describe()}): waiting up to {wait_lock:g}s")

    table = Table(out)
    run_id = new_run_id()
    with _edge(out):
        table.prepare()
        warnings += [f"{p}: not part of the event table: left alone" for p in table.foreign()]
        with table.lock(run_id, wait=wait_lock, on_wait=waiting) as dead:
            fault("locked")
            if dead is not None:
                warnings.append(f"the previous ingest into {out} did not finish ({dead.describe()}): "
                                "what it left is removed")
            table.recover()
            with _Spark(master) as spark, StageProgress(spark, progress):
                s = run(spark, found, cluster, table, run_id, chroot)
    damage = tuple(IngestDamage(d["file"], d["offset"], d["reason"]) for d in s.damage)
    data = Ingested(cluster, out, files=s.files, ranges=s.ranges, bytes=s.bytes, events_parsed=s.events_parsed,
                    events_added=s.events_added, damage=damage, skipped=tuple(s.skipped),
                    unreadable=tuple(s.unreadable), run_id=run_id if s.committed_files else None)
    warnings += [f"{d.file}: damaged at offset {d.offset}: {d.reason} (records before it were kept)" for d in damage]
    warnings += [f"{p}: not a ZooKeeper txn log, KRaft metadata log or kadmin NDJSON file: skipped" for p in s.skipped]
    return Result(data=data, warnings=warnings,
                  exit_code=ExitCode.PARTIAL if s.damage or s.unreadable else ExitCode.OK,
                  message=f"{plural(s.events_added, 'new event')} ({s.events_parsed} parsed) from "
                  f"{plural(s.files, 'file')} ({s.bytes / 1e6:.1f} MB in {plural(s.ranges, 'range')}) into {out}")


def report(directory: str, kind: str, cluster: str | None, since_ms: int | None, until_ms: int | None,
           master: str, png: str | None) -> Result[list[ReportRow]]:
    from kadmin.pipeline import reports
    from kadmin.pipeline.table import Table

    path = Path(directory)
    if not path.exists():
        raise UsageError(f"{directory}: no such directory (run `kadmin history ingest` first)")
    if not path.is_dir():
        raise UsageError(f"{directory}: not a directory (give the --out directory of `kadmin history ingest`)")
    with _edge(directory):
        if not Table(directory).exists():
            raise UsageError(f"{directory}: no kadmin event table here (run `kadmin history ingest --out "
                             f"{directory}` first)")
        with _Spark(master) as spark:
            df = reports.load(spark, directory, cluster, since_ms, until_ms)
            raw = reports.report(spark, df, kind)
            rows = [report_row(kind, r) for r in raw]
            if png:
                title = reports.TITLES[kind] + (f" of {cluster}" if cluster else "")
                try:
                    hist = reports.broker_history(df) if kind == "generations" else None
                    fig = reports.chart(kind, raw, title, hist)
                except ValueError as e:
                    raise ConditionNotMet(f"--png {png}: {e}") from None
                reports.save_png(fig, png, kind)
    return Result(data=rows,
                  message=f"wrote {png}" if png else None)
