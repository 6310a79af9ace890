"""A Spark session for kadmin's jobs: local[2] by default, any master URL otherwise."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from kadmin.results import Progress

# local[N]: the whole job in one JVM of at most ~1 GiB (issue 13 §1): a 512 MiB heap, the serial collector
# (G1's remembered sets cost memory, and on a few cores its concurrency buys little) and a smaller JIT code
# cache (240 MiB reserved by default).
LOCAL_DRIVER_MEMORY = "512m"
LOCAL_JVM_OPTIONS = "-XX:+UseSerialGC -XX:ReservedCodeCacheSize=128m"


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
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", "8")
         .config("spark.sql.parquet.compression.codec", "snappy")
         .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
         .config("spark.driver.extraJavaOptions", java_options)
         .config("spark.executor.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}"))
    if local and "spark.driver.memory" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        # In local mode the executors live in the driver JVM, whose default heap is a quarter of the
        # machine's memory, and it grows far past what a history job needs (1.5 GiB for 1 GiB of logs).
        # Persisted frames that do not fit spill to local disk.
        b = b.config("spark.driver.memory", LOCAL_DRIVER_MEMORY)
    if local or master.startswith("spark://127.") or master.startswith("spark://localhost"):
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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
