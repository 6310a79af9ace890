"""The sandbox's class-data archive on a real Kafka 3.9.1 installation: recorded from a real JVM, built by the
JDK, and mapped by the next JVM, which then loads Kafka's classes from it and behaves as before.

The cache is a fresh XDG_CACHE_HOME of this test's, so what the suite's own cache holds does not matter.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kadmin.sandbox import cds
from kadmin.sandbox.zkserver import java_binary
from tests.support.kafka import KAFKA_3_9, KAFKA_4, TOOL_JVM, kafka_home

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

MAIN = "org.apache.kafka.tools.TopicCommand"


def topic_command(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([java_binary(), *TOOL_JVM, *flags, "-cp", f"{home}/libs/*", MAIN, "--version"],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


def test_a_recorded_jvm_gives_an_archive_the_next_jvm_loads_kafka_classes_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = kafka_home(KAFKA_3_9)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KADMIN_SANDBOX_CDS", raising=False)
    plain = topic_command(home)
    assert plain.returncode == 0, plain.stderr
    assert "3.9.1" in plain.stdout

    recording = cds.flags(home, server=False)
    assert recording[0].startswith("-XX:DumpLoadedClassList=")
    recorded = topic_command(home, *recording)
    assert (recorded.returncode, recorded.stdout) == (0, plain.stdout)
    assert f"{MAIN.replace('.', '/')}\n" in Path(recording[0].split("=", 1)[1]).read_text()

    archive = cds.build_now(home)
    assert archive is not None and archive.is_file()
    mapped = cds.flags(home)
    assert mapped == [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
    # -Xshare:on: the JVM fails rather than fall back when it cannot use the archive
    shared = topic_command(home, *mapped[:1], "-Xshare:on", "-Xlog:class+load=info:file=" + str(tmp_path / "cl"))
    assert (shared.returncode, shared.stdout) == (0, plain.stdout), shared.stderr
    loads = (tmp_path / "cl").read_text()
    assert f"{MAIN} source: shared objects file" in loads
    assert "org.apache.kafka.common.utils.AppInfoParser source: shared objects file" in loads

    # Another installation's jars against this archive (a stale archive): the JVM loads classes as usual,
    # and the tool's stdout, which scripts and these tests parse, shows nothing of it.
    other = kafka_home(KAFKA_4)
    alone = topic_command(other)
    stale = topic_command(other, *mapped)
    assert (stale.returncode, stale.stdout) == (0, alone.stdout) and alone.returncode == 0, stale.stderr
