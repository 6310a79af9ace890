"""Real clusters the roll tests need and kadmin's sandbox does not start, and the commands their hooks run.

Run as a script (by path: it imports only kadmin, so a hook needs no PYTHONPATH):

- `roll_clusters.py rack-up DIR HOME BROKERS RACKS`: `kadmin sandbox up --kafka-home HOME --brokers BROKERS`
  (ZooKeeper mode) whose broker N has `broker.rack=RACK_NAMES[(N-1) % RACKS]` in its server.properties (the
  sandbox writes the configs once, at `up`: `kadmin sandbox kill/start` keep the rack). The rack names are
  hostile on purpose: shell metacharacters (`;`, `$(...)`, backquotes, quotes, `&`, `#`) and a placeholder's
  name, which a roll's hooks must receive as data. The sandbox's own code, with its server.properties writer
  wrapped; everything after `up` is the ordinary sandbox.
- `roll_clusters.py combined-up DIR HOME [N]`: N (default 3) KRaft nodes of Kafka 4.x with
  process.roles=broker,controller (node ids 1..N, a static quorum of all of them) on loopback, formatted and
  started; returns once every node is a registered, unfenced broker. DIR/state.json names each node's pid and
  identity (kadmin.sandbox.manager.process_identity), so only those processes are ever signalled.
- `roll_clusters.py combined-up DIR HOME N dynamic`: the same with a dynamic quorum (KIP-853: kraft.version 1,
  `controller.quorum.bootstrap.servers`, formatted with `--initial-controllers`, each node's directory id chosen
  here and kept in DIR/state.json as `directory_id`).
- `roll_clusters.py combined-stop DIR ID` / `combined-start DIR ID`: a hook's work: SIGTERM the node and return
  once its process is gone (Kafka's shutdown hook runs the broker's controlled shutdown); start it again with
  the same config, directory and ports (returns once the JVM runs: the roll waits for the receipt).
- `roll_clusters.py combined-reformat DIR ID`: a start hook that replaces the node's disk first: its log
  directory deleted and formatted again with the cluster's id (`--no-initial-controllers`: a new directory id,
  as after a disk replacement), then started.
- `roll_clusters.py combined-down DIR`: SIGKILL every node still running (a test's teardown).

Run it with the repository on PYTHONPATH (`python -m tests.support.roll_clusters`; by path, this directory's
kafka.py would shadow kafka-python). For the tests: `rack_sandbox(...)` and `combined_cluster(...)`, context
managers that start one (in a subprocess: the JVMs are not the test process's children) and stop it at the end.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kadmin.sandbox import cds
from kadmin.sandbox import realkafka as rk
from kadmin.sandbox.manager import Sandbox, identity_after_exec, process_identity, still_ours
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import java_binary
from tests.support.sandbox import IDLE_CONTROLLER

HEAP = "-Xmx384m"
REPO = Path(__file__).resolve().parents[2]


def _module(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.support.roll_clusters", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}


def hook_command(op: str, directory: Path) -> list[str]:
    """The argv prefix a hook runs to stop or start a combined node (the node id is appended)."""
    return ["env", f"PYTHONPATH={REPO}", *_module(f"combined-{op}", str(directory))]


# ------------------------------------------------------------------------------------------------ racks
# Kafka takes any string as broker.rack; a java.util.Properties value keeps all of these but a backslash
RACK_NAMES = ("r0;touch PWNED0;#", "r1$(touch PWNED1)|x", "r2`touch PWNED2`'\"{host} &", "r3 && touch PWNED3")


def rack_of(node_id: int, racks: int) -> str:
    return RACK_NAMES[(node_id - 1) % racks]


def rack_up(directory: Path, home: Path, brokers: int, racks: int) -> dict[str, Any]:
    """The sandbox's `up` (real Kafka, ZooKeeper mode) with broker.rack in each broker's server.properties."""
    plain = rk.zk_broker_properties

    def with_rack(node: dict[str, Any], zk_connect: str, n: int, version: str) -> dict[str, str]:
        return {**plain(node, zk_connect, n, version), "broker.rack": rack_of(int(node["id"]), racks)}

    rk.zk_broker_properties = with_rack  # type: ignore[assignment]
    try:
        return Sandbox(directory).up(brokers=brokers, kafka_home=home, mode="zk")
    finally:
        rk.zk_broker_properties = plain  # type: ignore[assignment]


# ------------------------------------------------------------------------------------------------ combined
def _state_file(directory: Path) -> Path:
    return directory / "state.json"


@contextlib.contextmanager
def _locked_state(directory: Path) -> Iterator[dict[str, Any]]:
    """The state, read under an exclusive lock and written back on exit (hooks may run at once)."""
    with open(directory / "state.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        st = json.loads(_state_file(directory).read_text())
        yield st
        tmp = directory / "state.json.tmp"
        tmp.write_text(json.dumps(st, indent=1))
        os.replace(tmp, _state_file(directory))


def read_state(directory: Path) -> dict[str, Any]:
    return dict(json.loads(_state_file(directory).read_text()))


def _properties(node: dict[str, Any], nodes: list[dict[str, Any]], version: str,
                dynamic: bool = False) -> dict[str, str]:
    voters = ",".join(f"{n['id']}@127.0.0.1:{n['cport']}" for n in nodes)
    quorum = {"controller.quorum.bootstrap.servers": ",".join(f"127.0.0.1:{n['cport']}" for n in nodes)} if dynamic \
        else {"controller.quorum.voters": voters}
    return {
        "process.roles": "broker,controller",
        "node.id": str(node["id"]),
        **quorum,
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://127.0.0.1:{node['port']},CONTROLLER://127.0.0.1:{node['cport']}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node['port']}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(Path(node["dir"]) / "data"),
        **rk._internal_topics(len(nodes), version),
        **IDLE_CONTROLLER,
    }


def _command(st: dict[str, Any], node: dict[str, Any]) -> list[str]:
    return [java_binary(), HEAP, *rk.JVM, *cds.flags(st["home"]),
            f"-Dlog4j2.configurationFile={Path(st['dir']) / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={Path(node['dir']) / 'logs'}", "-cp", f"{st['home']}/libs/*", "kafka.Kafka",
            str(Path(node["dir"]) / "server.properties")]


def _launch(st: dict[str, Any], node: dict[str, Any]) -> None:
    logs = Path(node["dir"]) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    argv = _command(st, node)
    with open(logs / "stdout.log", "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    node["pid"] = proc.pid
    node["identity"] = identity_after_exec(proc.pid, argv)


def _marker(node: dict[str, Any]) -> list[str]:
    return [str(Path(node["dir"]) / "server.properties")]


def _node(st: dict[str, Any], node_id: int) -> dict[str, Any]:
    for n in st["nodes"]:
        if n["id"] == node_id:
            return dict(n)
    raise SystemExit(f"node {node_id} is not one of {[n['id'] for n in st['nodes']]}")


def bootstrap(st: dict[str, Any]) -> str:
    return ",".join(f"127.0.0.1:{n['port']}" for n in st["nodes"])


def bootstrap_controllers(st: dict[str, Any]) -> str:
    return ",".join(f"127.0.0.1:{n['cport']}" for n in st["nodes"])


def _format(st: dict[str, Any], node: dict[str, Any], *extra: str) -> None:
    """`kafka-storage format` of one node with `extra` arguments (a dynamic quorum's)."""
    cmd = [java_binary(), rk.HEAP["tool"], *rk.JVM, *cds.flags(st["home"], server=False),
           *rk._logging_flags(Path(st["dir"]), st["version"], tools=True), "-cp", f"{st['home']}/libs/*",
           "kafka.tools.StorageTool", "format", f"--cluster-id={st['cluster_id']}",
           "-c", str(Path(node["dir"]) / "server.properties"), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise SystemExit(f"kafka-storage format of node {node['id']} exited {out.returncode}: {out.stderr[-2000:]}")


def combined_up(directory: Path, home: Path, count: int = 3, timeout: float = 300.0,
                dynamic: bool = False) -> dict[str, Any]:
    directory.mkdir(parents=True, exist_ok=True)
    version = rk.check(home, "kraft")
    rk.write_logging(directory)
    nodes = [{"id": i, "port": free_port(), "cport": free_port(), "dir": str(directory / f"node-{i}"), "pid": None,
              "identity": None, "directory_id": rk.new_cluster_id() if dynamic else None}
             for i in range(1, count + 1)]  # a Kafka Uuid's text, as a cluster id's
    st = {"dir": str(directory), "home": str(home), "version": version, "cluster_id": rk.new_cluster_id(),
          "nodes": nodes, "dynamic": dynamic}
    for n in nodes:
        rk.write_config(n, _properties(n, nodes, version, dynamic))
    _state_file(directory).write_text(json.dumps(st, indent=1))
    if dynamic:
        initial = ",".join(f"{n['id']}@127.0.0.1:{n['cport']}:{n['directory_id']}" for n in nodes)
        with ThreadPoolExecutor(len(nodes)) as pool:
            list(pool.map(lambda n: _format(st, n, "--initial-controllers", initial), nodes))
    else:
        rk.format_storage(str(home), version, directory, nodes, st["cluster_id"])
    with _locked_state(directory) as locked:
        for n in locked["nodes"]:
            _launch(locked, n)
    st = read_state(directory)
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        for n in st["nodes"]:
            if not still_ours(n, _marker(n))[0]:
                raise SystemExit(f"node {n['id']} exited: {rk.log_problem(n)}")
        try:
            fenced, _ = rk.kraft_view(bootstrap(st))
            if all(fenced.get(n["id"]) is False for n in st["nodes"]):
                return st
            last = fenced
        except Exception as e:  # noqa: BLE001 - not answering yet
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            raise SystemExit(f"the combined nodes did not all register unfenced within {timeout:g}s: {last}")
        time.sleep(0.25)


def _gone(pid: int) -> bool:
    return process_identity(pid) is None


def combined_stop(directory: Path, node_id: int, grace: float = 180.0) -> None:
    """SIGTERM the node (its controlled shutdown) and return once the process is gone (SIGKILL after `grace`)."""
    st = read_state(directory)
    node = _node(st, node_id)
    if not still_ours(node, _marker(node))[0]:
        raise SystemExit(f"node {node_id} is not running")
    pid = int(node["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while not _gone(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
        time.sleep(0.05)


def combined_start(directory: Path, node_id: int) -> None:
    with _locked_state(directory) as st:
        node = next(n for n in st["nodes"] if n["id"] == node_id)
        if node.get("pid") and still_ours(node, _marker(node))[0]:
            raise SystemExit(f"node {node_id} is already running (pid {node['pid']})")
        _launch(st, node)


def combined_reformat(directory: Path, node_id: int) -> None:
    """A replaced disk: the node's log directory deleted, formatted again (a new directory id), then started."""
    st = read_state(directory)
    node = _node(st, node_id)
    if node.get("pid") and still_ours(node, _marker(node))[0]:
        raise SystemExit(f"node {node_id} is running (pid {node['pid']}): stop it first")
    shutil.rmtree(Path(node["dir"]) / "data", ignore_errors=True)
    _format(st, node, "--no-initial-controllers")
    combined_start(directory, node_id)


def combined_down(directory: Path) -> None:
    if _state_file(directory).exists():
        st = read_state(directory)
        for n in st["nodes"]:
            if n.get("pid") and still_ours(n, _marker(n))[0]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(n["pid"]), signal.SIGKILL)
    kill_jvms_of(directory)


def kill_jvms_of(directory: Path) -> list[int]:
    """SIGKILL every Kafka JVM whose command line runs a server.properties under `directory` (a test's own
    temporary directory: processes that test started, whatever a state file says); the pids killed."""
    prefix = str(Path(directory).resolve()) + os.sep
    killed = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        if "kafka.Kafka" in args and any(a.startswith(prefix) and a.endswith("server.properties") for a in args):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    return killed


# ------------------------------------------------------------------------------------------------ for the tests
@contextlib.contextmanager
def rack_sandbox(directory: Path, home: Path, brokers: int, racks: int) -> Iterator[Any]:
    """A racked ZooKeeper-mode sandbox (`rack-up`), as tests.support.sandbox.sandbox yields one: stopped at the
    end (`sandbox down`, then SIGKILL for anything left)."""
    from tests.support.sandbox import Sandbox as TestSandbox

    sb = TestSandbox(directory)
    up = subprocess.run(_module("rack-up", str(directory), str(home), str(brokers), str(racks)), capture_output=True,
                        text=True, env={**sb.env, "PYTHONPATH": _env()["PYTHONPATH"]}, timeout=900,
                        stdin=subprocess.DEVNULL)
    started: list[int] = []
    try:
        assert up.returncode == 0, f"rack-up exited {up.returncode}:\n{up.stderr[-3000:]}"
        started = sb.pids()
        yield sb
    finally:
        if (directory / "state.json").exists():
            started = started or sb.pids()
            sb.run("sandbox", "down")
        sb.kill_leftovers(started)


@contextlib.contextmanager
def combined_cluster(directory: Path, home: Path, count: int = 3, dynamic: bool = False) -> Iterator[dict[str, Any]]:
    """`combined-up` in a subprocess; its state; every node SIGKILLed at the end."""
    try:
        up = subprocess.run(_module("combined-up", str(directory), str(home), str(count),
                                    *(["dynamic"] if dynamic else [])), capture_output=True,
                            text=True, env=_env(), timeout=900, stdin=subprocess.DEVNULL)
        assert up.returncode == 0, f"combined-up exited {up.returncode}:\n{up.stderr[-3000:]}"
        yield read_state(directory)
    finally:
        combined_down(directory)


def alive(st: dict[str, Any]) -> dict[int, bool]:
    """Per node: is the process the state names still the one it started?"""
    return {int(n["id"]): bool(n.get("pid")) and still_ours(n, _marker(n))[0] for n in st["nodes"]}


def main(argv: list[str]) -> int:
    op, directory = argv[0], Path(argv[1])
    if op == "rack-up":
        st = rack_up(directory, Path(argv[2]), int(argv[3]), int(argv[4]))
        print(json.dumps(st))
    elif op == "combined-up":
        print(json.dumps(combined_up(directory, Path(argv[2]), int(argv[3]) if len(argv) > 3 else 3,
                                     dynamic=argv[4:5] == ["dynamic"])))
    elif op == "combined-stop":
        combined_stop(directory, int(argv[2]))
    elif op == "combined-start":
        combined_start(directory, int(argv[2]))
    elif op == "combined-reformat":
        combined_reformat(directory, int(argv[2]))
    elif op == "combined-down":
        combined_down(directory)
    else:
        raise SystemExit(f"unknown operation {op!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
