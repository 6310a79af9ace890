"""The sandbox's class-data archive (kadmin/sandbox/cds.py): which flags a Kafka JVM gets, and when.

No JVM here: a fake installation (libs/*.jar) in tmp_path and the cache under a tmp XDG_CACHE_HOME. That the
archive really loads Kafka's classes is tests/kafka/test_real_cds.py's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kadmin.sandbox import cds, realkafka


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KADMIN_SANDBOX_CDS", raising=False)
    h = tmp_path / "kafka_2.13-3.9.1"
    (h / "libs").mkdir(parents=True)
    (h / "libs" / "kafka_2.13-3.9.1.jar").write_bytes(b"jar")
    (h / "libs" / "kafka-clients-3.9.1.jar").write_bytes(b"jar")
    return h


def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "kadmin" / "cds"


def record(d: Path, key: str, kind: str, age: float, text: str = "java/lang/Object\n") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{key}.{kind}.{os.urandom(6).hex()}.lst"
    f.write_text(text)
    t = time.time() - age
    os.utime(f, (t, t))
    return f


def test_without_an_archive_a_jvm_records_its_classes_in_the_cache(home: Path, tmp_path: Path) -> None:
    f = cds.flags(home)
    assert len(f) == 1 and f[0].startswith("-XX:DumpLoadedClassList=") and ".server." in f[0]
    path = Path(f[0].split("=", 1)[1])
    assert path.parent == cache(tmp_path) and path.name.startswith(home.name) and path.suffix == ".lst"
    assert cds.flags(home) != f  # each JVM its own record: two JVMs never write one file


def test_with_an_archive_every_jvm_maps_it_and_the_jvm_checks_it(home: Path, tmp_path: Path) -> None:
    key = cds._key(home)
    cache(tmp_path).mkdir(parents=True)
    (cache(tmp_path) / f"{key}.jsa").write_bytes(b"archive")
    assert cds.flags(home) == [f"-XX:SharedArchiveFile={cache(tmp_path) / f'{key}.jsa'}", "-Xshare:auto"]
    node = {"role": "broker", "id": 1, "dir": str(tmp_path / "b1")}
    argv = realkafka.command(str(home), "3.9.1", tmp_path, node)
    assert f"-XX:SharedArchiveFile={cache(tmp_path) / f'{key}.jsa'}" in argv
    assert argv.index("-Xshare:auto") < argv.index("kafka.Kafka")


def test_a_changed_jar_or_installation_is_a_new_archive(home: Path) -> None:
    key = cds._key(home)
    jar = home / "libs" / "kafka-clients-3.9.1.jar"
    jar.write_bytes(b"another jar")
    assert cds._key(home) != key
    assert cds._key(home) == cds._key(home)


def test_turned_off_or_an_unwritable_cache_gives_no_flags(home: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KADMIN_SANDBOX_CDS", "0")
    assert cds.flags(home) == []
    monkeypatch.delenv("KADMIN_SANDBOX_CDS")
    (tmp_path / "blocked").write_text("a file where the cache directory would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "blocked"))
    assert cds.flags(home) == []  # an optimisation only: the JVM starts as before


def test_the_archive_is_built_only_once_a_server_record_has_gone_quiet(home: Path, tmp_path: Path) -> None:
    d, key = cache(tmp_path), cds._key(home)
    record(d, key, "tool", age=60)
    assert not cds._ready(d, key)  # a tool's classes only: a broker's start-up would miss from the archive
    record(d, key, "server", age=0.1)
    assert not cds._ready(d, key)  # still loading classes
    record(d, key, "server", age=cds.QUIET_S + 1)
    assert cds._ready(d, key)


def test_records_are_bounded_per_kind_when_no_archive_comes(home: Path, tmp_path: Path) -> None:
    d, key = cache(tmp_path), cds._key(home)
    for _ in range(cds.MAX_RECORDS):
        record(d, key, "tool", age=0)
    assert cds.flags(home, server=False) == []  # enough tools recorded: this one starts as before
    f = cds.flags(home, server=True)
    assert len(f) == 1 and ".server." in f[0]  # a server still records: the archive needs one


def test_a_build_the_jdk_refused_stops_recording_and_building(home: Path, tmp_path: Path) -> None:
    d, key = cache(tmp_path), cds._key(home)
    record(d, key, "server", age=60)
    (d / f"{key}.failed").write_text("")
    assert cds.flags(home) == [] and cds.flags(home, server=False) == []
    assert not (d / f"{key}.building").exists()  # and no build started again


def test_records_merge_once_each_without_a_line_still_being_written(tmp_path: Path) -> None:
    a = tmp_path / "a.lst"
    b = tmp_path / "b.lst"
    a.write_text("# NOTE: Do not modify this file.\njava/lang/Object\nkafka/Kafka\n")
    b.write_text("java/lang/Object\nkafka/server/KafkaServer\nkafka/server/Kaf")
    assert cds.merge([a, b]) == "java/lang/Object\nkafka/Kafka\nkafka/server/KafkaServer\n"


def test_a_build_lock_left_by_a_dead_build_is_cleared(home: Path, tmp_path: Path) -> None:
    d, key = cache(tmp_path), cds._key(home)
    record(d, key, "server", age=60)
    lock = d / f"{key}.building"
    lock.write_text("")
    cds._build_when_ready(home, d, key)  # a live build: left alone
    assert lock.exists()
    t = time.time() - cds.BUILD_STALE_S - 1
    os.utime(lock, (t, t))
    cds._build_when_ready(home, d, key)
    assert not lock.exists()  # the next flags() call builds again
