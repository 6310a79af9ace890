"""Kafka's own command-line tools run in one warm JVM per Kafka installation (per test process), for the tests.

A tool's JVM start costs ~2.5 CPU-s on a small machine, more than most calls' own work, and the real-Kafka tests
call TopicCommand hundreds of times as their referee (64 % of test_real_kraft_partitions.py's CPU was its JVM
starts). ToolServer.java (launched from its source, on the installation's classpath with the tools' own flags and
logging) runs the tool's own `main` for each call and answers with its exit code (Kafka's tools end through
`org.apache.kafka.common.utils.Exit`, whose procedure it replaces), stdout and stderr: what a fresh JVM gives
(tests/kafka/test_real_tool_server.py), but for the frames below the tool's `main` in a stack trace and the
number in a log line's `adminclient-N` (the JVM's nth admin client).

Only the tools in SERVED go there: tools that end through Kafka's `Exit` or by returning from `main`, and keep no
state between runs. One that calls System.exit itself (argparse4j's parseArgsOrFail, on a usage error or
`--help`) ends the server as it would end its own JVM: the server's shutdown hook answers with EXITED and the
output so far, the exit code is the process's, and the next call starts another server. A call made while the
server is busy (another thread) runs in a fresh JVM, as every other tool does; so do all calls for an
installation whose server does not start (said once on stderr). A call that overruns its timeout kills the server
(the next call starts another) and raises subprocess.TimeoutExpired, as subprocess.run would; a server that dies
during a call otherwise is an error, never a silent second run of the call.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SOURCE = Path(__file__).with_name("ToolServer.java")

# The tools the tests call more than once or twice, in 3.9.1 and 4.x; none keeps state between runs.
# FeatureCommand, ClusterTool and LeaderElectionCommand call System.exit on a usage error (argparse4j): EXITED.
SERVED = frozenset({
    "org.apache.kafka.tools.TopicCommand", "org.apache.kafka.tools.MetadataQuorumCommand",
    "org.apache.kafka.tools.FeatureCommand", "org.apache.kafka.tools.ClusterTool",
    "org.apache.kafka.tools.LeaderElectionCommand", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand", "kafka.admin.ConfigCommand",
    "org.apache.kafka.tools.GetOffsetShell",
})


class ToolServerDied(RuntimeError):
    pass


def _text(b: bytes) -> str:
    """As subprocess.run(text=True) decodes: UTF-8, universal newlines."""
    return b.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


READY = 0x4B41444D
EXITED = 0x45584954  # the tool called System.exit: the server has ended, its exit code is the tool's
START_TIMEOUT = 120.0  # s: a JVM that compiles the server's source, on two cores other tests load


class Server:
    def __init__(self, argv: list[str]) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - the JVM's own stderr (not a tool's), for a death
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.lock = threading.Lock()

    def ready(self) -> bool:
        """Whether the server started (its READY came): a JVM that cannot compile or run it has taken no call."""
        try:
            return self._int(time.monotonic() + START_TIMEOUT) == READY
        except (TimeoutError, ToolServerDied):
            return False

    def _read(self, n: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        got = bytearray()
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, n - len(got))
            if not chunk:
                raise ToolServerDied(self.said)
            got += chunk
        return bytes(got)

    def _int(self, deadline: float) -> int:
        return int(struct.unpack(">i", self._read(4, deadline))[0])

    @property
    def said(self) -> str:
        """The JVM's own stderr (what it said before it died)."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def call(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        assert self.proc.stdin is not None
        frame = bytearray(struct.pack(">i", len(argv)))
        for a in argv:
            b = a.encode()
            frame += struct.pack(">i", len(b)) + b
        deadline = time.monotonic() + timeout
        try:
            self.proc.stdin.write(frame)
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise ToolServerDied(self.said) from None
        code = self._int(deadline)
        out = self._read(self._int(deadline), deadline)
        err = self._read(self._int(deadline), deadline)
        if code == EXITED:  # System.exit(N): the process ends with N once its shutdown hooks have run
            try:
                code = self.proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                raise TimeoutError from None
        return code, _text(out), _text(err)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.log):
            if f is not None:
                f.close()


_servers: dict[str, Server] = {}
_unserved: dict[str, str] = {}  # installations whose server did not start: why (their tools run in fresh JVMs)
_guard = threading.Lock()


def _server(home: Path, argv: list[str]) -> Server | None:
    """This process's server for `home` (started with `argv` when there is none, or it has exited); None when it
    cannot start here (e.g. a JRE without the compiler the source launcher needs), said once on stderr."""
    with _guard:
        if str(home) in _unserved:
            return None
        s = _servers.get(str(home))
        if s is None or s.proc.poll() is not None:
            if s is not None:  # ended by a tool's System.exit (or killed): its pipes closed, a new one started
                s.close()
            s = Server(argv)
            if not s.ready():
                s.kill()
                why = _unserved[str(home)] = s.said.strip()[-500:]
                s.close()
                sys.stderr.write(f"tests: Kafka's tools for {home} run in fresh JVMs: the tool server did not "
                                 f"start: {why}\n")
                return None
            _servers[str(home)] = s
        return s


def _drop(home: Path, s: Server) -> None:
    with _guard:
        if _servers.get(str(home)) is s:
            del _servers[str(home)]
    s.kill()
    s.close()


def run(home: Path, main_class: str, args: list[str], timeout: float,
        argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The tool's run, as subprocess.run(argv, capture_output=True, text=True, stdin=DEVNULL) would give it (argv:
    the fresh JVM's command line, `tool_argv`)."""
    if main_class in SERVED:
        jvm = argv[:argv.index(main_class)]  # java, its flags, -cp CLASSPATH
        s = _server(home, [*jvm, str(SOURCE)])
        if s is not None and s.lock.acquire(blocking=False):
            try:
                code, out, err = s.call([main_class, *args], timeout)
            except TimeoutError:
                _drop(home, s)
                raise subprocess.TimeoutExpired(argv, timeout) from None
            except ToolServerDied as e:
                _drop(home, s)
                raise ToolServerDied(f"the tool server for {home} died during {main_class} {' '.join(args)}: "
                                     f"{e}") from None
            finally:
                s.lock.release()
            return subprocess.CompletedProcess(argv, code, out, err)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@atexit.register
def _close_all() -> None:
    for s in list(_servers.values()):
        s.close()
    _servers.clear()
