"""The event table stays exact whatever happens to an ingest: a SIGKILL during the Parquet write or
the commit, two ingests at once, foreign files, read-only or unreadable directories, logs ingested in
parts, bad cluster names. Real `python -m kadmin` processes wherever a process must die or race;
waits are on what the filesystem shows (the lock file, Spark's `_temporary`), never on the clock."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kadmin.pipeline.spark import SHUFFLE_PARTITIONS
from tests.conftest import Run
from tests.support import spark_jvm

pytestmark = pytest.mark.integration

TIMEOUT = 300  # generous: a busy 2-core machine runs other suites at the same time


# ---------------------------------------------------------------------------- helpers
def rows(spark: Any, out: Path) -> list[dict[str, Any]]:
    """The table as kadmin's readers see it, one dict per event, in event_id order."""
    from kadmin.pipeline.table import Table

    return sorted((r.asDict() for r in Table(out).read(spark).collect()), key=lambda d: d["event_id"])


def plain_rows(spark: Any, out: Path) -> list[dict[str, Any]]:
    """The table as a plain Spark reader of the directory sees it (nothing left over may show there either)."""
    df = spark.read.parquet(str(out))
    return sorted((r.asDict() for r in df.collect()), key=lambda d: d["event_id"])


def ingest(run_nozk: Run, paths: list[Path], out: Path, *extra: str, cluster: str = "prod") -> tuple[int, Any, str]:
    r = run_nozk("history", "ingest", *map(str, paths), "--cluster", cluster, "--out", str(out), *extra, "-o", "json")
    return r.exit_code, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "KADMIN_"))}
    env.update(spark_jvm.ENV, **extra)
    return env


def unprivileged() -> list[str]:
    """Run a child as nobody when the tests run as root (root reads and writes through any mode bits)."""
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []


def spawn(*args: str, env: dict[str, str] | None = None, stderr: Any = subprocess.PIPE,
          prefix: list[str] | None = None) -> subprocess.Popen[str]:
    """`python -m kadmin ARGS -o json` in a session of its own (so it and its JVM can be killed as a group)."""
    return subprocess.Popen([*(prefix or []), sys.executable, "-m", "kadmin", *args, "-o", "json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
                            env=env or _env(), start_new_session=True)


def finish(p: subprocess.Popen[str]) -> tuple[int, Any, str]:
    out, err = p.communicate(timeout=TIMEOUT)
    return p.returncode, json.loads(out) if out.strip() else None, err or ""


def kadmin(*args: str, env: dict[str, str] | None = None, prefix: list[str] | None = None) -> tuple[int, Any, str]:
    return finish(spawn(*args, env=env, prefix=prefix))


def until(what: str, cond: Callable[[], Any], proc: subprocess.Popen[str] | None = None,
          timeout: float = TIMEOUT) -> Any:
    """Poll an observable fact; fail when a watched process exits first or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            pytest.fail(f"{what}: the process exited first with {proc.returncode}: {err}")
        time.sleep(0.005)
    pytest.fail(f"{what}: not within {timeout:.0f}s")


def kill_group(p: subprocess.Popen[str]) -> None:
    """SIGKILL the ingest with everything it started (its JVM, Python workers); wait until all are gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=TIMEOUT)
    until("the killed ingest's processes to be gone", lambda: not _group_alive(p.pid))
    for f in (p.stdout, p.stderr):
        if f is not None:
            f.close()


def _group_alive(pgid: int) -> bool:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def committed_task_under(out: Path) -> bool:
    """A task of the Parquet write has committed its file under some `_temporary` (Hadoop's committer:
    `_temporary/0/task_*/...`), so the write is under way and a job commit would take that file."""
    for root, _dirs, files in os.walk(out):
        parts = Path(root).parts
        if "_temporary" in parts and any(p.startswith("task_") for p in parts) and any(
                f.endswith(".parquet") for f in files):
            return True
    return False


@pytest.fixture(scope="module")
def oneshot(spark: Any, split_logs: Any, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Parts A and B ingested at once: what any sequence of ingests of A and B must end up equal to."""
    out = tmp_path_factory.mktemp("oneshot") / "events"
    code, doc, err = ingest(Run(None), [split_logs.both], out)
    assert code == 0, err
    got = rows(spark, out)
    assert len(got) == doc["data"]["events_added"] > 0
    return got


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory an unprivileged child can reach (pytest's own tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="kadmin-test-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in [d, *d.rglob("*")]:
            with contextlib.suppress(OSError):
                p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------- ingests in parts
def test_ingesting_a_then_b_equals_ingesting_both_at_once(spark, split_logs, oneshot, run_nozk, tmp_path):
    out = tmp_path / "events"
    assert ingest(run_nozk, [split_logs.a], out)[0] == 0
    code, doc, err = ingest(run_nozk, [split_logs.b], out)
    assert code == 0, err
    got = rows(spark, out)
    count = {e: sum(1 for r in got if r["event"] == e) for e in ("isr_changed", "leader_changed")}
    want = {e: sum(1 for r in oneshot if r["event"] == e) for e in ("isr_changed", "leader_changed")}
    assert count == want
    assert got == oneshot
    # and B's first state of orders-0 (the shrink) is an ISR change, not a new leader
    shrink = [r for r in got if r["position"] == split_logs.cut_zxid]
    assert [(r["event"], r["isr"]) for r in shrink] == [("isr_changed", [1, 2])]
    # re-ingesting either part, or both, adds nothing
    for part in (split_logs.a, split_logs.b, split_logs.both):
        code, doc, _ = ingest(run_nozk, [part], out)
        assert code == 0 and doc["data"]["events_added"] == 0
    assert rows(spark, out) == oneshot


def test_kraft_segments_ingested_one_after_the_other_equal_one_ingest(spark, run_nozk, tmp_path):
    """The second segment's PartitionChangeRecords name a topic id whose TopicRecord is in the first,
    and carry only what changed: both come from the table."""
    import tests.support.kraft_log_writer as W

    tid = uuid.UUID(int=78)
    t0 = 1_700_000_000_000
    first = [
        W.batch(0, 1, t0, [W.leader_change(3000, [3000, 3001], [3000, 3001])], control_type=W.LEADER_CHANGE),
        W.batch(1, 1, t0 + 1000, [W.register_broker(2, b, uuid.UUID(int=b), b, [("PLAINTEXT", f"b{b}", 9092, 0)],
                                                    [], None) for b in (1, 2, 3)]),
        W.batch(4, 1, t0 + 3000, [W.topic("orders", tid),
                                  W.partition(0, 0, tid, [1, 2, 3], [1, 2, 3], [], [], 1, 0, 0)]),
    ]
    second = [
        W.batch(6, 1, t0 + 4000, [W.partition_change(0, 0, tid, isr=[1, 3]), W.partition_change(0, 0, tid, leader=3)]),
        W.batch(8, 1, t0 + 5000, [W.partition_change(0, 0, tid, isr=[1, 3, 2])]),
    ]
    a, b, both = tmp_path / "a", tmp_path / "b", tmp_path / "both"
    for d, segments in ((a, [first]), (b, [second]), (both, [first, second])):
        for batches in segments:
            W.write_file(d / f"{0 if batches is first else 6:020d}.log", batches)
    assert ingest(run_nozk, [both], tmp_path / "oneshot", cluster="kraft")[0] == 0
    assert ingest(run_nozk, [a], tmp_path / "parts", cluster="kraft")[0] == 0
    assert ingest(run_nozk, [b], tmp_path / "parts", cluster="kraft")[0] == 0
    got = rows(spark, tmp_path / "parts")
    assert got == rows(spark, tmp_path / "oneshot")
    changes = [(r["event"], r["topic"], r["leader"], r["isr"]) for r in sorted(got, key=lambda r: r["position"])
               if r["event"] in ("leader_changed", "isr_changed")]
    assert changes == [("leader_changed", "orders", 1, [1, 2, 3]), ("isr_changed", "orders", 1, [1, 3]),
                       ("leader_changed", "orders", 3, [1, 3]), ("isr_changed", "orders", 3, [1, 3, 2])]


def test_a_small_ingest_writes_one_file_per_partition_unless_the_operator_set_the_shuffles(spark, split_logs, oneshot,
                                                                                          tmp_path):
    """kadmin sizes a small ingest's shuffles (one per 32 MiB of logs): one Parquet file per cluster and date, not
    one per default shuffle partition; the session's setting is back after. `--conf spark.sql.shuffle.partitions`
    in PYSPARK_SUBMIT_ARGS holds as set, and the table is the same."""
    from kadmin.pipeline.table import Table

    def files(out: Path) -> Counter[str]:
        return Counter(str(Path(f).parent) for f in Table(out).committed())

    sized = tmp_path / "sized"
    code, _, err = ingest(Run(None), [split_logs.both], sized)
    assert code == 0, err
    assert files(sized) and set(files(sized).values()) == {1}, files(sized)
    assert spark.conf.get(SHUFFLE_PARTITIONS) == "8"
    assert rows(spark, sized) == oneshot

    as_set = tmp_path / "as-set"
    code, _, err = kadmin("history", "ingest", str(split_logs.both), "--cluster", "prod", "--out", str(as_set),
                          env=_env(PYSPARK_SUBMIT_ARGS=f"--conf {SHUFFLE_PARTITIONS}=3 pyspark-shell"))
    assert code == 0, err
    assert max(files(as_set).values()) > 1, files(as_set)
    assert rows(spark, as_set) == oneshot


# ---------------------------------------------------------------------------- SIGKILL
@pytest.mark.parametrize("before", ["empty", "with-data"])
def test_sigkill_during_the_parquet_write_leaves_the_table_as_it_was(spark, split_logs, oneshot, tmp_path, before):
    out = tmp_path / "events"
    if before == "with-data":
        code, _, err = ingest(Run(None), [split_logs.a], out)
        assert code == 0, err
    was = rows(spark, out) if before == "with-data" else None

    # the operator's 8 shuffle partitions (kadmin's own sizing gives these few logs one): a write of 8 tasks on
    # local[2] has moments with a task committed and the job not yet
    p = spawn("history", "ingest", str(split_logs.both), "--cluster", "prod", "--out", str(out),
              env=_env(PYSPARK_SUBMIT_ARGS=f"--conf {SHUFFLE_PARTITIONS}=8 pyspark-shell"))
    until("a task's committed Parquet file under _temporary", lambda: committed_task_under(out), p)
    kill_group(p)
    assert p.returncode == -signal.SIGKILL

    if was is None:  # there was no table: there is none now either
        r = Run(None)("history", "report", str(out), "generations")
        assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    else:
        assert rows(spark, out) == was
        assert plain_rows(spark, out) == was  # a plain Spark reader sees no leftover either

    code, doc, err = ingest(Run(None), [split_logs.both], out)  # the next ingest (in this process's Spark)
    assert code == 0, err
    assert doc["data"]["events_added"] == len(oneshot) - len(was or [])
    assert rows(spark, out) == oneshot
    assert plain_rows(spark, out) == oneshot
    assert not (out / "_staging").exists() or not any((out / "_staging").iterdir())


def test_sigkill_during_the_commit_leaves_the_table_as_it_was(spark, split_logs, oneshot, tmp_path):
    """Killed (by the fault-injection hook) after the first finished file was moved into its partition."""
    out = tmp_path / "events"
    code, _, err = ingest(Run(None), [split_logs.a], out)
    assert code == 0, err
    was = rows(spark, out)

    code, _, err = kadmin("history", "ingest", str(split_logs.both), "--cluster", "prod", "--out", str(out),
                          env=_env(KADMIN_FAULT="kill@commit"))
    assert code == -signal.SIGKILL, err
    assert rows(spark, out) == was
    # the killed holder's lock is stale: the next ingest takes it over, removes the moved file and commits
    assert json.loads((out / "_kadmin.lock").read_text())["pid"] > 0
    code, doc, err = ingest(Run(None), [split_logs.both], out)
    assert code == 0, err
    assert "did not finish" in err
    assert doc["data"]["events_added"] == len(oneshot) - len(was)
    assert rows(spark, out) == oneshot
    assert plain_rows(spark, out) == oneshot


# ---------------------------------------------------------------------------- two at once
def test_two_ingests_at_once_take_turns(spark, split_logs, oneshot, tmp_path):
    out = tmp_path / "events"
    go = tmp_path / "go"
    os.mkfifo(go)
    lock = out / "_kadmin.lock"

    def holder() -> int | None:
        try:
            return int(json.loads(lock.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # the first holds the lock until the test writes to the FIFO (fault-injection hook: pause when locked)
    first = spawn("history", "ingest", str(split_logs.a), "--cluster", "prod", "--out", str(out),
                  env=_env(KADMIN_FAULT=f"pause@locked:{go}"))
    until("the first ingest's lock", lambda: holder() == first.pid, first)

    code, doc, err = kadmin("history", "ingest", str(split_logs.b), "--cluster", "prod", "--out", str(out))
    assert code == 7, err
    assert err.strip().count("\n") == 0 and f"pid {first.pid} on {socket.gethostname()}" in err, err
    assert doc["status"] == "error" and doc["errors"][0]["code"] == "locked"

    log = tmp_path / "second.err"
    with open(log, "w") as fh:
        second = spawn("history", "ingest", str(split_logs.b), "--cluster", "prod", "--out", str(out),
                       "--wait-lock", str(TIMEOUT), stderr=fh)
    until("the second ingest to wait for the lock", lambda: "waiting" in log.read_text(), second)

    with open(go, "w") as fifo:
        fifo.write("go\n")
    assert finish(first)[0] == 0
    code, doc, _ = finish(second)
    assert code == 0, log.read_text()
    assert rows(spark, out) == oneshot


# ---------------------------------------------------------------------------- foreign files, odd directories
def test_foreign_files_in_out_are_left_alone(spark, split_logs, oneshot, run_nozk, tmp_path):
    out = tmp_path / "events"
    out.mkdir()
    (out / "README").write_text("the history of prod\n")
    other = tmp_path / "other"
    spark.range(3).coalesce(1).write.parquet(str(other))
    shutil.copy(next(other.glob("*.parquet")), out / "unrelated.parquet")

    code, doc, err = ingest(run_nozk, [split_logs.a], out)
    assert code == 0, err
    assert "README" in err and "unrelated.parquet" in err and "internal error" not in err
    code, doc, err = ingest(run_nozk, [split_logs.both], out)
    assert code == 0, err
    assert rows(spark, out) == oneshot
    (out / "cluster=prod" / "README").write_text("a note\n")
    r = run_nozk("history", "report", str(out), "generations", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert (out / "README").exists() and (out / "unrelated.parquet").exists()


@pytest.mark.parametrize("what", ["empty", "readme-only", "plain-file"])
def test_report_on_what_is_no_table_is_one_line_and_exit_2(run_nozk, tmp_path, what):
    d = tmp_path / "d"
    if what == "plain-file":
        d.write_text("not a table\n")
    else:
        d.mkdir()
        if what == "readme-only":
            (d / "README").write_text("nothing yet\n")
    r = run_nozk("history", "report", str(d), "bounces")
    assert r.exit_code == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "internal error" not in r.stderr, r.stderr
    assert str(d) in r.stderr


def test_a_read_only_out_is_one_line_and_exit_2(spark, split_logs, shared_tmp):
    logs = shared_tmp / "logs"
    shutil.copytree(split_logs.a, logs)
    out = shared_tmp / "events"
    code, _, err = ingest(Run(None), [logs], out)
    assert code == 0, err
    for p in [out, *out.rglob("*")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    as_nobody = unprivileged()
    env = _env(HOME=str(shared_tmp))
    code, _, err = kadmin("history", "ingest", str(logs), "--cluster", "prod", "--out", str(out), env=env,
                          prefix=as_nobody)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and str(out) in err and "internal error" not in err, err
    # reading needs no write access
    code, doc, err = kadmin("history", "report", str(out), "generations", env=env, prefix=as_nobody)
    assert code == 0, err
    assert doc["data"]


def test_unreadable_input_directories_are_named_and_exit_5(spark, split_logs, run_nozk, tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    shutil.copytree(split_logs.a, logs)
    hidden = logs / "locked"
    shutil.copytree(split_logs.b, hidden)
    hidden.chmod(0o000)
    if os.geteuid() == 0:  # root lists any directory: make this one fail as it fails for anyone else
        scandir = os.scandir

        def denied(path: Any = ".") -> Any:
            if isinstance(path, (str, os.PathLike)) and os.fspath(path) == str(hidden):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return scandir(path)

        monkeypatch.setattr(os, "scandir", denied)
    try:
        code, doc, err = ingest(run_nozk, [logs], tmp_path / "events")
        assert code == 5, err
        assert str(hidden) in err and "internal error" not in err, err
        assert doc["data"]["events_added"] > 0 and doc["data"]["unreadable"] == [str(hidden)]
        # nothing else to read: still exit 5, and nothing written
        code, doc, err = ingest(run_nozk, [hidden], tmp_path / "none")
        assert code == 5 and str(hidden) in err and doc["data"]["unreadable"] == [str(hidden)]
        assert not (tmp_path / "none").exists()
    finally:
        hidden.chmod(0o755)


# ---------------------------------------------------------------------------- cluster names
@pytest.mark.parametrize("name", ["", " ", "a/b", "..", ".", "_hidden", ".hidden", "x=y", "../../etc"])
def test_empty_or_path_like_cluster_names_are_rejected(run_nozk, split_logs, tmp_path, name):
    out = tmp_path / "events"
    r = run_nozk("history", "ingest", str(split_logs.a), "--cluster", name, "--out", str(out))
    assert r.exit_code == 2, r.stderr
    assert "--cluster" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


# ---------------------------------------------------------------------------- Spark failures
def test_a_spark_failure_is_one_line_without_a_java_stack(spark, split_logs, run_nozk, tmp_path):
    out = tmp_path / "events"
    assert ingest(run_nozk, [split_logs.a], out)[0] == 0
    from kadmin.pipeline.table import Table

    victim = out / Table(out).committed()[0]
    victim.write_bytes(b"PAR1 this is not Parquet PAR1")
    code, doc, err = kadmin("history", "report", str(out), "generations")
    assert code == 1, err
    assert doc["errors"][0]["code"] == "spark"
    errors = [line for line in err.splitlines() if line.startswith("kadmin: error:")]
    assert len(errors) == 1 and str(victim.name) in errors[0] or "Parquet" in errors[0], err
    assert not [line for line in err.splitlines() if line.strip().startswith("at ")], err
    assert "internal error" not in err
