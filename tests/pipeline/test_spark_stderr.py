"""What a `kadmin history` run prints on stderr: kadmin's own lines, not the banner of Spark's launcher and JVM
("WARNING: Using incubator modules: jdk.incubator.vector", "Setting default log level to "WARN".", "To adjust
logging level use sc.setLogLevel(newLevel). ...")."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kadmin.pipeline.spark import _forward_stderr

pytestmark = pytest.mark.integration


def test_a_real_history_run_writes_only_kadmin_lines_on_stderr(tmp_path: Path) -> None:
    """A fresh process (its own JVM, started by kadmin's session): every stderr line is kadmin's."""
    f = tmp_path / "watch.ndjson"
    f.write_text('{"event": "registered", "id": 4, "epoch": 100, "old_epoch": null, "at": "2026-11-22T01:00:00.000Z"}\n'
                 '{"event": "bounced", "id": 4, "epoch": 140, "old_epoch": 100, "at": "2026-11-22T01:05:00.000Z"}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")}
    p = subprocess.run([sys.executable, "-m", "kadmin", "history", "ingest", str(f), "--cluster", "nd", "--out",
                        str(tmp_path / "events")], capture_output=True, text=True, timeout=540, env=env,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert lines and all(line.startswith("kadmin: ") for line in lines), lines
    assert "kadmin: 2 new events" in p.stderr


def test_the_jvm_stderr_keeps_every_line_but_the_launchers(capfd: pytest.CaptureFixture[str]) -> None:
    """The JVM's other lines (Spark's own errors, through kadmin's log4j pattern) still reach stderr, in order."""
    read, write = os.pipe()
    t = threading.Thread(target=_forward_stderr, args=(read,))
    t.start()
    os.write(write, b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                    b'Setting default log level to "WARN".\n'
                    b"spark: ERROR Executor: Exception in task 0.0\n"
                    b"To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).\n"
                    b"Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n")
    os.close(write)
    t.join(60)
    assert not t.is_alive()
    assert capfd.readouterr().err.splitlines() == ["spark: ERROR Executor: Exception in task 0.0",
                                                   'Exception in thread "main" java.lang.OutOfMemoryError: Java heap '
                                                   "space"]
