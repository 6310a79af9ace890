"""The JVM options of every Spark JVM the suite starts (tests/conftest.py puts them in the environment).

C1 only: a test's job of a few thousand rows ends before C2's compiles pay, and a session starts on a third less
CPU (11 against 15 CPU-s, measured on the suite's busy cores). The same Spark and the same results; kadmin's own
default (C2) is for GiBs of logs. Spark's launcher passes SPARK_SUBMIT_OPTS to the driver JVM (in local mode, the
executors too) and SPARK_LAUNCHER_OPTS to its own short JVM.

And a class-data archive (AppCDS, JDK 13+'s dynamic archive) of the classes a `kadmin history ingest` loads: a
driver JVM that maps it starts on half the CPU (4.2-5.1 against 8.6-10.5 CPU-s, measured beside the suite at load
13-21). `python -m tests.support.spark_jvm` builds it once per pyspark installation and JDK build, from one real
ingest of a small KRaft log run with `-XX:ArchiveClassesAtExit`, into a temporary file renamed into place (a JVM
sees no archive or a whole one). A run of the suite that includes Spark's tests starts that build beside itself when
the archive is missing (`Builder`, from the pytest process that runs or hands out the tests; a few minutes on a busy
machine, most of it the dump) and stops it at its end; every Spark JVM names the archive, and uses it from the
moment it is there. Until then, and wherever it does not match (another classpath or JDK), the JVMs start as before:
`-Xlog:cds=off` keeps the JDK's notice of a missing or mismatched archive off stderr, which
tests/pipeline/test_spark_stderr.py holds to kadmin's own lines.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from importlib import metadata
from pathlib import Path

C1 = "-XX:TieredStopAtLevel=1"
QUIET_LOG = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # no notice of a missing or mismatched archive on stderr
QUIET_CDS = f"-Xshare:auto {QUIET_LOG}"


def _java() -> Path | None:
    """The java Spark's launcher runs (bin/spark-class: JAVA_HOME's, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive() -> Path | None:
    """Where the archive of this pyspark installation and this JDK build is (None: no java or no pyspark). An
    archive holds only for the classpath it was made with (this installation's jars: another virtualenv needs its
    own) and the JDK build (keyed on the libjvm's size and time: a JDK updated in place gets a new one)."""
    java = _java()
    if java is None:
        return None
    try:
        dist = metadata.distribution("pyspark")
    except metadata.PackageNotFoundError:
        return None
    version, jars = dist.version, Path(str(dist.locate_file("pyspark"))).resolve() / "jars"
    libjvm = next(iter(sorted(java.parent.parent.glob("lib/*/libjvm.so"))), java)
    st = libjvm.stat()
    key = hashlib.sha1(f"{version}|{jars}|{java}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    cache = Path(os.environ.get("KADMIN_SPARK_CDS_CACHE", Path.home() / ".cache" / "kadmin" / "spark-cds"))
    return cache / f"spark-{version}-{key}.jsa"


def _submit_opts() -> str:
    a = archive()
    return f"{C1} {QUIET_CDS} -XX:SharedArchiveFile={a}" if a is not None else C1


ENV = {"SPARK_SUBMIT_OPTS": _submit_opts(),
       "SPARK_LAUNCHER_OPTS": f"{C1} -XX:+UseSerialGC"}


class Builder:
    """The archive's build, started beside a run of the suite when it is missing, and stopped at the run's end
    (it leaves no process behind, nor a partial file: the JVM writes to a temporary name)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        target = archive()
        if target is None or target.is_file():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / "build.log", "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.spark_jvm"], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, start_new_session=True,
                                         cwd=Path(__file__).resolve().parents[2])

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the ingest with its JVM: their session
        self.proc.wait()


def build() -> int:
    """Build the archive if it is missing: one `kadmin history ingest` of a small KRaft log, its JVM dumping the
    classes it loaded when it exits. 0 when the archive is there (or cannot be: no java, no pyspark), else 1."""
    import tests.support.kraft_log_writer as W

    target = archive()
    if target is None or target.is_file():
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    for old in target.parent.glob(f".{target.name}.*"):  # a killed build's
        old.unlink(missing_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}")
    tid, t0 = uuid.UUID(int=7), 1_700_000_000_000
    batches = [
        W.batch(0, 1, t0, [W.leader_change(3000, [3000], [3000])], control_type=W.LEADER_CHANGE),
        W.batch(1, 1, t0 + 1000, [W.register_broker(2, b, uuid.UUID(int=b), b, [("PLAINTEXT", f"b{b}", 9092, 0)],
                                                    [], None) for b in (1, 2)]),
        W.batch(3, 1, t0 + 2000, [W.topic("t", tid), W.partition(0, 0, tid, [1, 2], [1, 2], [], [], 1, 0, 0)]),
        W.batch(5, 1, t0 + 3000, [W.partition_change(0, 0, tid, isr=[1]), W.partition_change(0, 0, tid, leader=2)]),
    ]
    with tempfile.TemporaryDirectory(prefix="kadmin-spark-cds-") as d:
        logs = Path(d) / "__cluster_metadata-0"
        W.write_file(logs / f"{0:020d}.log", batches)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "KADMIN_"))}
        env.update(SPARK_SUBMIT_OPTS=f"{C1} {QUIET_LOG} -XX:ArchiveClassesAtExit={tmp}",
                   SPARK_LAUNCHER_OPTS=ENV["SPARK_LAUNCHER_OPTS"])
        r = subprocess.run([sys.executable, "-m", "kadmin", "history", "ingest", str(logs), "--cluster", "cds",
                            "--out", str(Path(d) / "events"), "-o", "json"], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        print(f"spark_jvm: no class-data archive for Spark (the ingest exited {r.returncode}): the Spark JVMs start "
              f"without one. {r.stderr.strip()[-500:]}", file=sys.stderr)
        return 1
    os.replace(tmp, target)
    print(f"spark_jvm: Spark's class-data archive: {target} ({target.stat().st_size // 2**20} MiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(build())
