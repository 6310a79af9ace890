"""Faster Kafka JVM start-ups on one host: an AppCDS archive (class data sharing) per Kafka installation.

A Kafka broker or tool spends most of its start-up CPU loading and verifying the same ~5,000 classes from
`libs/*.jar`. A sandbox runs many such JVMs on one host (3 controllers, several brokers, the tools, every
restart of a roll), where they compete for the same cores. JDK's AppCDS maps those classes, already parsed,
from one archive file shared by every JVM: a broker then registers in about two thirds of the CPU time.

How the archive comes to be, with no step of its own:
- Until it exists, the JVMs `flags()` is asked for (up to MAX_RECORDS servers and as many tools) record the
  classes they load (`-XX:DumpLoadedClassList`) into the cache directory.
- Once a server's record has been quiet for a few seconds (its start-up is done), the next `flags()` call
  merges the records and starts, detached, `java -Xshare:dump` on the same classpath. It writes to a temporary
  file renamed into place, so a JVM sees either no archive or a whole one.
- Every later JVM of that installation gets `-XX:SharedArchiveFile=... -Xshare:auto`: the JVM checks the
  archive against its own classpath and JDK, and silently loads classes the usual way where they differ.

The archive is an optimisation only: anything unexpected here (no cache directory, no disk space, a JDK
that cannot dump) gives no flags, never an error. `KADMIN_SANDBOX_CDS=0` turns it off. The archive's name
holds a digest of the JDK and of the jars (names, sizes, modification times), so a changed installation or
JDK gets a new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
import uuid
from pathlib import Path

from kadmin.sandbox.zkserver import java_binary

QUIET_S = 3.0  # a record unchanged this long: its JVM's start-up is over
BUILD_STALE_S = 600.0  # a build lock older than this was left by a build that died
MAX_RECORDS = 8  # per kind (servers, tools): enough classes, and a bounded cache when no archive comes


def enabled() -> bool:
    return os.environ.get("KADMIN_SANDBOX_CDS", "1").strip().lower() not in ("0", "false", "no", "off")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kadmin" / "cds"


def classpath(home: str | Path) -> str:
    """The classpath every Kafka JVM here runs with: the archive is valid only for this exact one."""
    return f"{home}/libs/*"


def _dump_argv(home: str | Path, classlist: Path, out: Path) -> list[str]:
    return [java_binary(), "-Xshare:dump", f"-XX:SharedClassListFile={classlist}", f"-XX:SharedArchiveFile={out}",
            "-cp", classpath(home)]


def _key(home: str | Path) -> str:
    """A digest of the JDK and of the installation's jars: a new JDK or a changed jar is a new archive."""
    java = os.path.realpath(java_binary())
    st = os.stat(java)
    h = hashlib.sha256(f"{java}\0{st.st_size}\0{st.st_mtime_ns}\0{os.path.realpath(home)}\0".encode())
    for jar in sorted((Path(home) / "libs").glob("*.jar")):
        js = jar.stat()
        h.update(f"{jar.name}\0{js.st_size}\0{js.st_mtime_ns}\0".encode())
    return f"{Path(home).name}-{h.hexdigest()[:16]}"


def flags(home: str | Path, server: bool = True) -> list[str]:
    """The JVM flags for a JVM that runs with `-cp HOME/libs/*` (`server`: a broker or controller, else a tool):
    the archive's when it exists, else the recording of the classes this JVM loads (and, once a server's
    record is ready, the archive's build started). At most MAX_RECORDS records of each kind are taken."""
    if not enabled():
        return []
    try:
        d = cache_dir()
        key = _key(home)
        archive = d / f"{key}.jsa"
        if archive.is_file():
            _tidy(d, key)
            return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
        if (d / f"{key}.failed").exists():
            return []  # the JDK could not build one: the JVMs start as they always did
        d.mkdir(parents=True, exist_ok=True)
        _build_when_ready(home, d, key)
        kind = "server" if server else "tool"
        if len(_records(d, key, kind)) >= MAX_RECORDS:
            return []
        return [f"-XX:DumpLoadedClassList={d / f'{key}.{kind}.{uuid.uuid4().hex[:12]}.lst'}"]
    except (OSError, ValueError):
        return []


def _records(d: Path, key: str, kind: str = "*") -> list[Path]:
    return sorted(d.glob(f"{key}.{kind}.*.lst"))


def _tidy(d: Path, key: str) -> None:
    """Records left from before the archive was built (older than a minute: their JVMs are done loading)."""
    now = time.time()
    for f in _records(d, key):
        with contextlib.suppress(OSError):
            if now - f.stat().st_mtime > 60:
                f.unlink()


def _ready(d: Path, key: str) -> bool:
    """A server's record (a broker or controller) that has not grown for QUIET_S: its start-up is over."""
    now = time.time()
    for f in _records(d, key, "server"):
        with contextlib.suppress(OSError):
            if now - f.stat().st_mtime >= QUIET_S:
                return True
    return False


def merge(records: list[Path]) -> str:
    """Every record's classes once, in first-seen order; a last line still being written is left out."""
    seen: dict[str, None] = {}
    for f in records:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        lines = text.split("\n")
        for line in lines[:-1]:  # the piece after the last newline is incomplete (or empty)
            if line and not line.startswith("#"):
                seen.setdefault(line, None)
    return "".join(f"{line}\n" for line in seen)


def _build_when_ready(home: str | Path, d: Path, key: str) -> None:
    if not _ready(d, key):
        return
    records = _records(d, key)
    lock = d / f"{key}.building"
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        with contextlib.suppress(OSError):
            if time.time() - lock.stat().st_mtime > BUILD_STALE_S:
                lock.unlink()  # the next call builds
        return
    os.close(fd)
    merged = d / f"{key}.classlist"
    merged.write_text(merge(records))
    tmp = d / f"{key}.{uuid.uuid4().hex[:12]}.jsa.tmp"
    archive = d / f"{key}.jsa"
    # A detached builder: java dumps to a temporary file, renamed into place only when java succeeded; when it
    # did not, a `.failed` marker stops every later attempt (and recording) for this installation and JDK.
    script = ('tmp=$1 archive=$2 failed=$3 merged=$4 lock=$5; shift 5; '
              'if "$@"; then mv -f "$tmp" "$archive"; else : > "$failed"; fi; rm -f "$tmp" "$merged" "$lock"')
    with open(d / f"{key}.build.log", "wb") as log:
        subprocess.Popen(["sh", "-c", script, "cds-build", str(tmp), str(archive), str(d / f"{key}.failed"),
                          str(merged), str(lock), *_dump_argv(home, merged, tmp)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                         close_fds=True)


def build_now(home: str | Path, timeout: float = 300.0) -> Path | None:
    """Build the archive in the foreground from the records there are (for `bench/` and tests that want it
    there before they measure); the archive's path, or None when there is none to build from."""
    d = cache_dir()
    key = _key(home)
    archive = d / f"{key}.jsa"
    if archive.is_file():
        return archive
    records = _records(d, key)
    if not records:
        return None
    merged = d / f"{key}.{uuid.uuid4().hex[:12]}.classlist"
    tmp = d / f"{key}.{uuid.uuid4().hex[:12]}.jsa.tmp"
    merged.write_text(merge(records))
    try:
        subprocess.run(_dump_argv(home, merged, tmp), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout, check=True)
        os.replace(tmp, archive)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for f in (merged, tmp):
            with contextlib.suppress(OSError):
                f.unlink()
    return archive

