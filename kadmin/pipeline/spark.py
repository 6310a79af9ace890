"""A Spark session for kadmin's jobs: local[2] by default, any master URL otherwise."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from kadmin.results import Progress

# local[N]: the whole job in one JVM of at most ~1 GiB (issue 13 §1): a 512 MiB heap, the serial collector
# (G1's remembered sets cost memory, and on a few cores its concurrency buys little) and a smaller JIT code
# cache (240 MiB reserved by default).
LOCAL_DRIVER_MEMORY = "512m"
LOCAL_JVM_OPTIONS = "-XX:+UseSerialGC -XX:ReservedCodeCacheSize=128m"

# Spark's shuffle partitions: kadmin's default (8), which each job may lower for a small input (`kadmin.pipeline.
# ingest`), unless the operator set them (`--conf spark.sql.shuffle.partitions=N` in PYSPARK_SUBMIT_ARGS): then
# that number holds for every shuffle. SIZED marks a session whose shuffles kadmin sizes.
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
DEFAULT_SHUFFLE_PARTITIONS = "8"
SIZED = "spark.kadmin.shuffle.sized"


# What Spark's launcher and its JVM print on stderr before any job, whatever log4j says: the JVM's notice of the
# incubator module the launcher always adds (--add-modules=jdk.incubator.vector, JavaModuleOptions), and the shell's
# log-level banner (log4j2.properties sets org.apache.spark.repl.Main's level, which keeps it quiet too).
LAUNCHER_LINES = re.compile(rb"WARNING: Using incubator modules: |Setting default log level to |"
                            rb"To adjust logging level use sc\.setLogLevel\(|.*NativeCodeLoader: Unable to load "
                            rb"native-hadoop library")


def _forward_stderr(fd: int) -> None:
    """Copy the JVM's stderr (the read end `fd`) to kadmin's, line by line, without the launcher's lines."""
    with os.fdopen(fd, "rb") as lines:
        for line in lines:
            if not LAUNCHER_LINES.match(line):
                os.write(2, line)


def _launch_jvm(conf: Mapping[str, str]) -> None:
    """Start Spark's JVM (PySpark's launch_gateway, with the session's configuration as spark-submit --conf) with its
    stderr through `_forward_stderr`, unless this process has one already. The pipe is read from before the JVM
    starts, so that a JVM that says much before it listens never blocks on a full pipe."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None:  # a JVM from an earlier session of this process: reused as it is
            return
        read, write = os.pipe()
        threading.Thread(target=_forward_stderr, args=(read,), name="kadmin-spark-stderr", daemon=True).start()
        try:
            SparkContext._gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(conf.items())),
                                                   popen_kwargs={"stderr": write})
            SparkContext._jvm = SparkContext._gateway.jvm
        finally:
            os.close(write)  # the JVM holds its own copy: the thread ends when the JVM does


def session(master: str = "local[2]", app: str = "kadmin-history") -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    java_options = f"-Dlog4j.configurationFile=file:{log4j}"
    local = master.startswith("local")
    if local:
        java_options += " " + LOCAL_JVM_OPTIONS
        # glibc gives each thread that allocates its own malloc arena (up to 8 per core, 64 MiB each): in a
        # JVM of many threads that is ~250 MiB of resident memory outside the JVM's own accounting
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = {"spark.master": master, "spark.app.name": app,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.parquet.compression.codec": "snappy",
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
            "spark.driver.extraJavaOptions": java_options,
            "spark.executor.extraJavaOptions": f"-Dlog4j.configurationFile=file:{log4j}"}
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if SHUFFLE_PARTITIONS not in submit_args:
        conf[SHUFFLE_PARTITIONS], conf[SIZED] = DEFAULT_SHUFFLE_PARTITIONS, "true"
    if local and "spark.driver.memory" not in submit_args:
        # In local mode the executors live in the driver JVM, whose default heap is a quarter of the
        # machine's memory, and it grows far past what a history job needs (1.5 GiB for 1 GiB of logs).
        # Persisted frames that do not fit spill to local disk.
        conf["spark.driver.memory"] = LOCAL_DRIVER_MEMORY
    if local or master.startswith("spark://127.") or master.startswith("spark://localhost"):
        conf["spark.driver.host"] = conf["spark.driver.bindAddress"] = "127.0.0.1"
    _launch_jvm(conf)
    b = SparkSession.builder
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def step(spark: Any, name: str) -> Iterator[None]:
    """The Spark jobs run inside carry `name` as their description (the Spark UI's and the event log's name of
    the job): which step of a kadmin pipeline they are. The description before is put back after."""
    sc = spark.sparkContext
    before = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(name)
    try:
        yield
    finally:
        sc.setJobDescription(before)  # None clears it


class StageProgress:
    """Reports Spark's active stages (completed/total tasks) to a callback while a job runs."""

    def __init__(self, spark: Any, report: Progress | None) -> None:
        self.spark, self.report = spark, report
        self._stop = threading.Event()
        self._seen: dict[int, int] = {}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StageProgress:
        if self.report is not None:
            self._thread.start()
        return self

    def _run(self) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        while not self._stop.wait(0.25):
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is None:
                    continue
                done = info.numCompletedTasks
                delta = done - self._seen.get(sid, 0)
                self._seen[sid] = done
                assert self.report is not None
                self.report(f"stage {sid} ({info.name.split(' at ')[0]})", info.numTasks, max(0, delta))

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(1)
