"""`kadmin sandbox`: start, inspect, bounce and stop a local playground.

Two engines: `emulated` (the default: a real ZooKeeper and emulated brokers in one daemon process)
and `kafka` (`--kafka-home DIR`: real Apache Kafka JVMs, ZooKeeper mode or KRaft; see realkafka.py).

State lives in one directory (default `$XDG_STATE_HOME/kadmin/sandbox`): `state.json` names every
process this sandbox started, by pid and identity (its start time and command line, and the boot it
started in), so `down` stops exactly those. A pid is signalled only while it is still the process
that was started: after a reboot, or once the pid was reused, it is reported as already gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kadmin.domain.text import plural
from kadmin.errors import ConditionNotMet, KadminError, SandboxError, in_words
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble, server_mode

STATE_VERSION = 1
CHROOT = "/kafka"
DEFAULT_BROKERS = 3
DEFAULT_ENSEMBLE = 1


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
PF_EXITING = 0x4  # linux/sched.h: the process is exiting


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def process_identity(pid: int) -> dict[str, Any] | None:
    """What tells this process apart from a later one with the same pid, or None when it is gone.

    On Linux: the boot id, the start time in clock ticks since boot (/proc/<pid>/stat field 22)
    and the command line (/proc/<pid>/cmdline). Elsewhere: `ps -o lstart=,args=`. A zombie, or a process
    already exiting, is gone.
    """
    proc = Path(f"/proc/{pid}")
    if Path("/proc/self/stat").exists():
        stat, cmdline = _read(proc / "stat"), _read(proc / "cmdline")
        if stat is None or cmdline is None:
            return None
        fields = stat.rsplit(b")", 1)[-1].split()  # the command name may hold spaces and parentheses
        if len(fields) < 20 or fields[0] == b"Z":
            return None
        if int(fields[6]) & PF_EXITING:  # field 9, the flags: exiting (its command line already reads empty)
            return None
        boot = _read(BOOT_ID)
        return {
            "boot_id": boot.decode().strip() if boot else None,
            "start": fields[19].decode(),  # field 22; fields[0] is field 3 (the state)
            "cmdline": [a.decode("utf-8", "replace") for a in cmdline.split(b"\0")[:-1]],
        }
    try:  # no /proc (macOS, BSD)
        out = subprocess.run(["ps", "-o", "stat=", "-o", "lstart=", "-o", "args=", "-p", str(pid)],
                             capture_output=True, text=True, timeout=10).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(out) < 7 or out[0].startswith("Z"):
        return None
    return {"boot_id": None, "start": " ".join(out[1:6]), "cmdline": out[6:]}


def identity_after_exec(pid: int, argv: list[str] | None = None, timeout: float = 10.0) -> dict[str, Any] | None:
    """The identity of a process just started with Popen, once its exec has completed.

    Popen (vfork) returns as soon as the child has released the parent's memory, which is during its
    execve and before the new command line is readable: /proc/<pid>/cmdline can still be empty then.
    Recording that would make the process look like another one later ("pid reused"), and `down` would
    leave it running. So wait (briefly) until the command line is the one exec'd (`argv`, when given).
    """
    deadline = time.monotonic() + timeout
    while True:
        ident = process_identity(pid)
        if ident is None or (ident["cmdline"] and (argv is None or ident["cmdline"] == argv)):
            return ident
        if time.monotonic() > deadline:
            return ident
        time.sleep(0.005)


def still_ours(entry: dict[str, Any], marker: list[str]) -> tuple[bool, str]:
    """Whether the process a state entry names is still running as the process the sandbox started.

    An entry from an older kadmin has no identity: it counts as ours only when the pid's command
    line still holds every `marker` argument (the sandbox's own config path or directory).
    """
    pid = entry.get("pid")
    if not pid:
        return False, "never started"
    now = process_identity(int(pid))
    if now is None:
        return False, "not running"
    was = entry.get("identity")
    if was is None:
        if all(m in now["cmdline"] for m in marker):
            return True, "command line matches (no recorded start time)"
        return False, "pid now runs another program (no recorded start time)"
    if was.get("boot_id") != now["boot_id"]:
        return False, "started before the last reboot"
    if was.get("start") != now["start"] or was.get("cmdline") != now["cmdline"]:
        return False, "pid reused by another process"
    return True, "start time and command line match"


def default_dir(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(base) / "kadmin" / "sandbox"


class Sandbox:
    def __init__(self, directory: Path | None = None) -> None:
        self.dir = Path(directory) if directory else default_dir()
        self.state_file = self.dir / "state.json"

    # ------------------------------------------------------------------ state
    def state(self) -> dict[str, Any] | None:
        if not self.state_file.exists():
            return None
        try:
            st = json.loads(self.state_file.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise SandboxError(f"{self.state_file}: unreadable sandbox state ({e}); remove the directory") from e
        if st.get("version") != STATE_VERSION:
            raise SandboxError(f"{self.state_file}: unknown state version {st.get('version')!r}")
        self._loaded = json.loads(json.dumps(st))  # what this command read, to merge its own changes (_save)
        return st

    def _save(self, st: dict[str, Any]) -> None:
        """Write the state, merged with what other commands saved meanwhile: `sandbox start 1` and `sandbox
        start 2` run at once (a parallel roll's hooks) each change their own node only, and neither may undo
        the other's (a lost pid would leave a JVM behind at `sandbox down`). Under a lock, each node this command
        changed replaces that node on disk; a file of its own for the write, renamed over the state."""
        import fcntl

        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / "state.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = self._merged(st)
            tmp = self.state_file.with_name(f"state.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(merged, indent=2))
            os.replace(tmp, self.state_file)
        # what this command has saved is now its baseline: a later save carries only what it changes after this
        self._loaded = json.loads(json.dumps(st))

    def _merged(self, st: dict[str, Any]) -> dict[str, Any]:
        loaded = getattr(self, "_loaded", None)
        try:
            disk = json.loads(self.state_file.read_text()) if self.state_file.exists() else None
        except (OSError, json.JSONDecodeError):
            disk = None
        if loaded is None or disk is None or loaded.get("nodes") is None or disk.get("nodes") is None:
            return st
        out = dict(disk)
        for key, value in st.items():  # the top-level values this command changed
            if key != "nodes" and loaded.get(key) != value:
                out[key] = value
        before = {(n["role"], n["id"]): n for n in loaded["nodes"]}
        mine = {(n["role"], n["id"]): n for n in st.get("nodes", [])}
        nodes = []
        for n in disk["nodes"]:
            k = (n["role"], n["id"])
            nodes.append(mine[k] if k in mine and mine[k] != before.get(k) else n)
        known = {(n["role"], n["id"]) for n in disk["nodes"]}
        nodes += [n for k, n in mine.items() if k not in known and k not in before]  # nodes this command added
        out["nodes"] = nodes
        return out

    def _require(self) -> dict[str, Any]:
        st = self.state()
        if st is None:
            raise SandboxError(f"no sandbox in {self.dir}: run `kadmin sandbox up` first")
        return st

    def _markers(self, st: dict[str, Any]) -> dict[str, list[str]]:
        """Per process: arguments its command line must hold (for entries recorded without an identity)."""
        out = {"brokers": ["kadmin.sandbox.daemon", st.get("dir", str(self.dir))]}
        for s in st["zookeeper"]:
            out[f"zookeeper{s['myid'] or ''}"] = [str(Path(s["data_dir"]) / "zoo.cfg")]
        for n in st.get("nodes", []):
            out[_node_name(n)] = [str(Path(n["dir"]) / "server.properties")]
        return out

    def _alive(self, st: dict[str, Any], name: str, entry: dict[str, Any]) -> bool:
        return still_ours(entry, self._markers(st)[name])[0]

    def _daemon_alive(self, st: dict[str, Any]) -> bool:
        return self._alive(st, "brokers", st["daemon"])

    def running(self) -> bool:
        st = self.state()
        if not st:
            return False
        if _engine(st) == "kafka":  # any process still up: `up` reports it rather than starting over
            return any(self._alive(st, _node_name(n), n) for n in st["nodes"]) or any(
                self._alive(st, f"zookeeper{s['myid'] or ''}", s) for s in st["zookeeper"])
        return self._daemon_alive(st) and any(
            self._alive(st, f"zookeeper{s['myid'] or ''}", s) for s in st["zookeeper"])

    # ------------------------------------------------------------------ up / down
    def up(self, brokers: int | None = None, ensemble: int | None = None, timeout: float = 120.0,
           kafka_home: Path | str | None = None, mode: str = "zk",
           release_version: str | None = None, controllers: int | None = None) -> dict[str, Any]:
        """Start a fresh sandbox (or report the running one). With `kafka_home`, real Kafka (`mode` zk or
        kraft) instead of emulated brokers; it returns once every broker is registered (see realkafka.py).
        `release_version` (KRaft): the storage is formatted at that release's feature levels (kafka-storage
        format --release-version), not the binaries' newest. `controllers` (KRaft): 1 or 3 (the default).

        `brokers` (default 3), `ensemble` (default 1) and `controllers` given for a running sandbox must be what
        it runs:
        a sandbox is not resized in place (SandboxError naming the running size otherwise).
        """
        if brokers is not None and brokers < 1:
            raise SandboxError("--brokers must be at least 1")
        version = None
        if kafka_home is not None:
            from kadmin.sandbox import realkafka as rk

            kafka_home = Path(kafka_home).expanduser().resolve()
            version = rk.check(kafka_home, mode)  # refuse before anything starts or stops
        prev = self.state()
        if prev is not None:
            if self.running():
                want = ("kafka", mode) if kafka_home is not None else ("emulated", "zk")
                have = (_engine(prev), prev.get("mode", "zk"))
                if have != want:
                    raise SandboxError(f"a sandbox of another kind ({have[0]}, {have[1]} mode) is running in "
                                       f"{self.dir}: `kadmin sandbox down` first")
                self._same_size(prev, brokers, ensemble, controllers)
                return {**self.status(), "already_running": True}
            self.down()
        brokers = DEFAULT_BROKERS if brokers is None else brokers
        ensemble = DEFAULT_ENSEMBLE if ensemble is None else ensemble
        self.dir.mkdir(parents=True, exist_ok=True)
        if kafka_home is not None and version is not None:
            return self._up_kafka(kafka_home, version, mode, brokers, ensemble, max(timeout, 300.0), release_version,
                                  len(rk.CONTROLLERS) if controllers is None else controllers)
        for old in self.dir.glob("zk[0-9]*"):  # every `up` is a fresh playground
            shutil.rmtree(old, ignore_errors=True)
        ens = Ensemble(self.dir, ensemble)
        ens.start(timeout=min(timeout, 90.0))
        connect = ens.connect_string + CHROOT
        st: dict[str, Any] = {
            "version": STATE_VERSION,
            "dir": str(self.dir),
            "connect": connect,
            "chroot": CHROOT,
            "brokers": brokers,
            "zookeeper": [
                {"myid": s.myid, "port": s.client_port, "pid": s.pid, "data_dir": str(s.data_dir),
                 "identity": process_identity(s.pid) if s.pid else None}
                for s in ens.servers
            ],
            "daemon": {"pid": None, "port": None, "identity": None},
        }
        self._save(st)
        (self.dir / "daemon.json").unlink(missing_ok=True)
        log = open(self.dir / "daemon.log", "ab")  # noqa: SIM115 - handed to the child
        argv = [sys.executable, "-m", "kadmin.sandbox.daemon", "--dir", str(self.dir), "--hosts", ens.connect_string,
                "--chroot", CHROOT, "--brokers", str(brokers)]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()
        st["daemon"]["pid"] = proc.pid
        st["daemon"]["identity"] = identity_after_exec(proc.pid, argv)
        self._save(st)
        deadline = time.monotonic() + timeout
        ready = self.dir / "daemon.json"
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.dir / "daemon.log").read_text(errors="replace").strip().splitlines()[-1:] or [""]
                self.down()
                raise SandboxError(f"the sandbox brokers did not start: {tail[0]}")
            time.sleep(0.05)
        st["daemon"]["port"] = json.loads(ready.read_text())["port"]
        self._save(st)
        return {**self.status(), "already_running": False}

    def _same_size(self, st: dict[str, Any], brokers: int | None, ensemble: int | None,
                   controllers: int | None = None) -> None:
        """Refuse another --brokers/--ensemble/--controllers than the running sandbox's (`up` would silently keep
        its own)."""
        running = [("--brokers", brokers, st.get("brokers"), plural(st.get("brokers") or 0, "broker"))]
        if st.get("zookeeper"):  # KRaft sandboxes have no ZooKeeper ensemble
            running.append(("--ensemble", ensemble, len(st["zookeeper"]),
                            plural(len(st["zookeeper"]), "ZooKeeper server")))
        if st.get("mode") == "kraft":
            ctrls = sum(1 for n in st.get("nodes", []) if n.get("role") == "controller")
            running.append(("--controllers", controllers, ctrls, plural(ctrls, "controller")))
        for flag, asked, have, said in running:
            if asked is not None and have is not None and asked != have:
                raise SandboxError(f"{flag} {asked}: the sandbox running in {self.dir} has {said}; "
                                   f"`kadmin sandbox down` first to start one of another size")

    def down(self, wait: float = 10.0) -> dict[str, Any]:
        """Stop the processes the state file names that are still the ones `up` started.

        `stopped` lists those signalled; `already_gone` the others (exited, or their pid now belongs
        to an unrelated process, which is left alone), each with the reason.
        """
        st = self.state()
        if st is None:
            return {"dir": str(self.dir), "stopped": [], "already_gone": []}
        stopped: list[dict[str, Any]] = []
        gone: list[dict[str, Any]] = []
        markers = self._markers(st)
        if _engine(st) == "kafka":
            # brokers together (each runs its controlled shutdown), then the controllers, then ZooKeeper
            zk = [(f"zookeeper{s['myid'] or ''}", s) for s in st["zookeeper"]]
            for role, group, grace in (("broker", None, 90.0), ("controller", None, 30.0), ("zookeeper", zk, wait)):
                group = group if group is not None else [(_node_name(n), n) for n in st["nodes"] if n["role"] == role]
                s_rows, g_rows = self._stop_group(group, markers, grace)
                stopped += s_rows
                gone += g_rows
            entries: list[tuple[str, dict[str, Any]]] = []
        else:
            entries = [("brokers", st["daemon"])] + [(f"zookeeper{s['myid'] or ''}", s) for s in st["zookeeper"]]
        for name, entry in entries:
            if not entry.get("pid"):
                continue
            ours, why = still_ours(entry, markers[name])
            row = {"process": name, "pid": entry["pid"], "reason": why}
            if ours and self._stop(entry, markers[name], wait):
                stopped.append(row)
            else:
                gone.append(row if ours is False else {**row, "reason": "exited before it was signalled"})
        self.state_file.unlink(missing_ok=True)
        (self.dir / "daemon.json").unlink(missing_ok=True)
        return {"dir": str(self.dir), "stopped": stopped, "already_gone": gone}

    @staticmethod
    def _stop_group(group: list[tuple[str, dict[str, Any]]], markers: dict[str, list[str]],
                    wait: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """SIGTERM every process of the group that is still ours, wait up to `wait` seconds for all of them
        to exit, SIGKILL (while still ours) those that did not. Returns (stopped rows, already-gone rows)."""
        stopped, gone, signalled = [], [], []
        for name, entry in group:
            if not entry.get("pid"):
                continue
            ours, why = still_ours(entry, markers[name])
            row = {"process": name, "pid": entry["pid"], "reason": why}
            if not ours:
                gone.append(row)
                continue
            try:
                os.kill(int(entry["pid"]), signal.SIGTERM)
            except ProcessLookupError:
                gone.append({**row, "reason": "exited before it was signalled"})
                continue
            stopped.append(row)
            signalled.append((name, entry))
        deadline, killed = time.monotonic() + wait, False
        while signalled:
            for _, e in signalled:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(int(e["pid"]), os.WNOHANG)  # reap it when it is this process's child
            signalled = [(n, e) for n, e in signalled if still_ours(e, markers[n])[0]]
            if not signalled:
                break
            if time.monotonic() > deadline:
                if killed:
                    break
                for _, e in signalled:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(e["pid"]), signal.SIGKILL)
                deadline, killed = time.monotonic() + 10.0, True
            time.sleep(0.05)
        return stopped, gone

    @staticmethod
    def _stop(entry: dict[str, Any], marker: list[str], wait: float) -> bool:
        """SIGTERM, then SIGKILL after `wait` seconds, each only while the pid is still ours.

        False when the process was gone before the first signal reached it.
        """
        pid = int(entry["pid"])
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + wait
        while still_ours(entry, marker)[0]:
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.02)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # reap it when `up` ran in this process
        return True

    # ------------------------------------------------------------------ control
    def _call(self, req: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        st = self._require()
        port = st["daemon"].get("port")
        if not port or not self._daemon_alive(st):
            raise SandboxError(f"the sandbox broker process in {self.dir} is not running: `kadmin sandbox up` again")
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(json.dumps(req).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                d = s.recv(65536)
                if not d:
                    break
                buf += d
        reply: dict[str, Any] = json.loads(buf or b"{}")
        if not reply.get("ok"):
            raise ConditionNotMet(reply.get("error", "the sandbox refused"))
        reply.pop("ok")
        return reply

    def status(self) -> dict[str, Any]:
        st = self._require()
        if _engine(st) == "kafka":
            return self._status_kafka(st)
        members = []
        for s in st["zookeeper"]:
            alive = self._alive(st, f"zookeeper{s['myid'] or ''}", s)
            members.append({"myid": s["myid"], "address": f"127.0.0.1:{s['port']}", "pid": s["pid"],
                            "alive": alive, "mode": server_mode("127.0.0.1", s["port"]) if alive else None})
        brokers: dict[str, Any] = {}
        daemon_alive = self._daemon_alive(st)
        if daemon_alive:
            try:
                brokers = self._call({"op": "status"})
            except (OSError, ConditionNotMet):
                brokers = {}
        return {
            "dir": st["dir"],
            "zookeeper": st["connect"],
            "ensemble": members,
            "daemon": {"pid": st["daemon"]["pid"], "alive": daemon_alive},
            "brokers": {int(k): v for k, v in brokers.get("brokers", {}).items()},
            "stopped_brokers": brokers.get("stopped", []),
            "controller": brokers.get("controller"),
            "engine": "emulated",
            "mode": "zk",
            "kafka_version": None,
            "kafka_home": None,
            "processes": [*({"role": "zookeeper", "id": m["myid"], "pid": m["pid"], "port": int(m["address"].rsplit(
                ":", 1)[1]), "alive": m["alive"], "registered": None, "phase": None} for m in members),
                {"role": "emulated-brokers", "id": None, "pid": st["daemon"]["pid"], "port": st["daemon"].get("port"),
                 "alive": daemon_alive, "registered": None, "phase": None}],
        }

    def bounce(self, broker_id: int, down_seconds: float = 0.0) -> dict[str, Any]:
        st = self._require()
        if _engine(st) == "kafka":
            return self._bounce_kafka(st, broker_id, down_seconds)
        return self._call({"op": "bounce", "id": broker_id, "down": down_seconds})

    def kill(self, broker_id: int, hard: bool = False) -> dict[str, Any]:
        st = self._require()
        if _engine(st) == "kafka":
            return self._kill_kafka(st, broker_id, hard)
        return self._call({"op": "kill", "id": broker_id, "hard": hard})

    def start(self, broker_id: int, kafka_home: Path | str | None = None) -> dict[str, Any]:
        st = self._require()
        if _engine(st) == "kafka":
            if kafka_home is not None:
                self._move_home(st, broker_id, Path(kafka_home).expanduser().resolve())
            return self._start_kafka(st, broker_id)
        if kafka_home is not None:
            raise SandboxError("--kafka-home: the sandbox's brokers are emulated ones (`sandbox up --kafka-home DIR` "
                               "runs real Kafka)")
        return self._call({"op": "start", "id": broker_id})

    def _move_home(self, st: dict[str, Any], node_id: int, home: Path) -> None:
        """Run a stopped node from another Kafka installation from now on (an upgrade rehearsed node by node):
        refused for a node that runs in ZooKeeper mode on a Kafka without it (4.0 and newer), and for a running
        node (the start that follows would refuse it anyway)."""
        from kadmin.sandbox import realkafka as rk

        node = self._controller_node(st, node_id) or self._broker(st, node_id)
        version = rk.detect_version(home)
        rk.java_binary()
        zk_mode = node["role"] == "broker" and (st["mode"] == "zk" or node.get("phase") in ("zk", "migrating"))
        if zk_mode and rk.major(version) >= 4:
            raise SandboxError(f"--kafka-home {home} is Kafka {version}, which has no ZooKeeper mode: broker "
                               f"{node_id} runs in ZooKeeper mode (migrate it to KRaft first)")
        if node.get("phase") == "migrating" and rk.major(version) >= 4:
            raise SandboxError(f"--kafka-home {home} is Kafka {version}: controller {node_id} still has migration "
                               "enabled (finalize the migration first)")
        if self._alive(st, _node_name(node), node):
            raise ConditionNotMet(f"{node['role']} {node_id} is running (pid {node['pid']}): stop it first "
                                  "(`sandbox kill`)")
        node["kafka_home"], node["kafka_version"] = str(home), version
        self._update(st, node)

    # ------------------------------------------------------------------ the real-Kafka engine
    def _up_kafka(self, home: Path, version: str, mode: str, brokers: int, ensemble: int,
                  timeout: float, release_version: str | None = None, controllers: int = 3) -> dict[str, Any]:
        from kadmin.sandbox import realkafka as rk

        for old in [*self.dir.glob("zk[0-9]*"), *self.dir.glob("broker-*"), *self.dir.glob("controller-*")]:
            shutil.rmtree(old, ignore_errors=True)  # every `up` is a fresh cluster
        rk.write_logging(self.dir)
        deadline = time.monotonic() + timeout
        nodes: list[dict[str, Any]] = [_new_node(self.dir, "broker", i) for i in range(1, brokers + 1)]
        st: dict[str, Any] = {
            "version": STATE_VERSION, "dir": str(self.dir), "engine": "kafka", "mode": mode,
            "kafka_version": version, "kafka_home": str(home), "connect": None, "chroot": None, "brokers": brokers,
            "zookeeper": [], "daemon": {"pid": None, "port": None, "identity": None}, "nodes": [],
            "cluster_id": None, "bootstrap_servers": ",".join(f"127.0.0.1:{n['port']}" for n in nodes),
            "bootstrap_controllers": None,
        }
        try:
            if mode in ("zk", "migration"):
                ens = Ensemble(self.dir, ensemble)
                ens.start(timeout=min(timeout, 90.0))
                st["connect"], st["chroot"] = ens.connect_string + CHROOT, CHROOT
                st["zookeeper"] = [{"myid": s.myid, "port": s.client_port, "pid": s.pid, "data_dir": str(s.data_dir),
                                    "identity": process_identity(s.pid) if s.pid else None} for s in ens.servers]
                self._save(st)
                for n in nodes:
                    rk.write_config(n, rk.zk_broker_properties(n, st["connect"], brokers, version))
                if mode == "migration":
                    return self._up_migration(st, nodes, deadline)
            else:
                ctrls = [_new_node(self.dir, "controller", c) for c in rk.CONTROLLERS[:controllers]]
                for n in ctrls + nodes:
                    rk.write_config(n, rk.kraft_properties(n, ctrls, brokers, version))
                st["cluster_id"] = rk.new_cluster_id()
                st["bootstrap_controllers"] = ",".join(f"127.0.0.1:{c['port']}" for c in ctrls)
                rk.format_storage(str(home), version, self.dir, ctrls + nodes, st["cluster_id"],
                                  release_version=release_version)
                nodes = ctrls + nodes
            st["nodes"] = nodes
            self._save(st)
            for n in nodes:
                self._launch(st, n)
            self._wait_registered(st, [int(n["id"]) for n in nodes if n["role"] == "broker"], deadline)
        except BaseException:
            if self.state() is not None:
                self.down()
            raise
        return {**self.status(), "already_running": False}

    def _up_migration(self, st: dict[str, Any], brokers: list[dict[str, Any]], deadline: float) -> dict[str, Any]:
        """The ZooKeeper-mode cluster first (its brokers write /cluster/id), then 3 controllers formatted with
        that cluster id, configured for the migration; returns once every broker is registered and the
        controllers' quorum has a leader. The KRaft controller then waits in PRE_MIGRATION for the brokers to
        come in migration mode (`sandbox phase ID migrating`)."""
        from kadmin.sandbox import realkafka as rk

        for n in brokers:
            n["phase"] = "zk"
        st["nodes"] = brokers
        self._save(st)
        for n in brokers:
            self._launch(st, n)
        self._wait_registered(st, [int(n["id"]) for n in brokers], deadline)
        hosts = [("127.0.0.1", z["port"]) for z in st["zookeeper"]]
        st["cluster_id"] = rk.zk_cluster_id(hosts, st["chroot"])
        if not st["cluster_id"]:
            raise SandboxError("the ZooKeeper-mode brokers registered but wrote no /cluster/id")
        ctrls = [{**_new_node(self.dir, "controller", c), "phase": "migrating"} for c in rk.CONTROLLERS]
        for c in ctrls:
            rk.write_config(c, rk.phase_properties(c, "migrating", st["connect"], ctrls, st["brokers"],
                                                   st["kafka_version"]))
        st["bootstrap_controllers"] = ",".join(f"127.0.0.1:{c['port']}" for c in ctrls)
        rk.format_storage(st["kafka_home"], st["kafka_version"], self.dir, ctrls, st["cluster_id"])
        st["nodes"] = ctrls + brokers
        self._save(st)
        for c in ctrls:
            self._launch(st, c)
        self._wait_quorum_leader(st, ctrls, deadline)
        return {**self.status(), "already_running": False}

    def _wait_quorum_leader(self, st: dict[str, Any], ctrls: list[dict[str, Any]], deadline: float) -> int:
        """Until the controllers' DescribeQuorum names a leader among them; its id."""
        from kadmin.sandbox import realkafka as rk

        def leader() -> tuple[int]:
            return (int(rk.quorum_view(st["bootstrap_controllers"]).leader_id),)

        found: int = self._poll(st, "the controllers' quorum leader", deadline, ctrls,
                                lambda i: i if i in rk.CONTROLLERS else None, read=leader)
        return found

    def phase(self, node_id: int, phase: str) -> dict[str, Any]:
        """Rewrite a migration sandbox node's server.properties for `phase` (realkafka.PHASES); the node runs
        with it from its next start. The node may be running (its config changes under it, not its process)."""
        from kadmin.sandbox import realkafka as rk

        st = self._require()
        if st.get("mode") != "migration":
            raise SandboxError(f"sandbox phase needs a migration sandbox, and the sandbox in {self.dir} is "
                               f"{st.get('mode') or 'zk'} mode: `kadmin sandbox up --kafka-home DIR --mode migration` "
                               "runs one")
        node = self._controller_node(st, node_id) or self._broker(st, node_id)
        if phase not in rk.PHASES[node["role"]]:
            from kadmin.errors import UsageError

            raise UsageError(f"{node['role']} {node_id}: no phase {phase!r}; a {node['role']}'s phases are "
                             + ", ".join(rk.PHASES[node["role"]]))
        ctrls = [n for n in st["nodes"] if n["role"] == "controller"]
        old = node.get("phase")
        cfg = rk.write_config(node, rk.phase_properties(node, phase, st["connect"], ctrls, st["brokers"],
                                                        st["kafka_version"]))
        node["phase"] = phase
        self._update(st, node)
        return {"id": node_id, "role": node["role"], "phase": phase, "old_phase": old,
                "running": self._alive(st, _node_name(node), node), "config": str(cfg)}

    def _launch(self, st: dict[str, Any], node: dict[str, Any]) -> None:
        from kadmin.sandbox import realkafka as rk

        node["pid"], argv = rk.launch(node.get("kafka_home") or st["kafka_home"],
                                      node.get("kafka_version") or st["kafka_version"], Path(st["dir"]), node)
        node["identity"] = identity_after_exec(node["pid"], argv)
        self._save(st)

    def _broker(self, st: dict[str, Any], broker_id: int) -> dict[str, Any]:
        for n in st["nodes"]:
            if n["role"] == "broker" and n["id"] == broker_id:
                return dict(n)
        ids = ", ".join(str(n["id"]) for n in st["nodes"] if n["role"] == "broker")
        controllers = ", ".join(str(n["id"]) for n in st["nodes"] if n["role"] == "controller")
        raise ConditionNotMet(f"broker {broker_id} is not a sandbox broker (brokers: {ids}"
                              + (f"; controllers: {controllers}" if controllers else "") + ")")

    @staticmethod
    def _controller_node(st: dict[str, Any], node_id: int) -> dict[str, Any] | None:
        """The KRaft controller with this node id (3001...), None when `node_id` names no controller."""
        return next((dict(n) for n in st["nodes"] if n["role"] == "controller" and n["id"] == node_id), None)

    def _kill_controller(self, st: dict[str, Any], node: dict[str, Any], hard: bool) -> dict[str, Any]:
        if not self._alive(st, _node_name(node), node):
            raise ConditionNotMet(f"controller {node['id']} is not running")
        took = self._terminate(st, node, hard=hard)
        leader = None
        with contextlib.suppress(Exception):
            leader = self._view(st, [])[1]
        return {"id": node["id"], "role": "controller", "controller": leader, "pid": node["pid"], "hard": hard,
                "stop_seconds": took}

    def _start_controller(self, st: dict[str, Any], node: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Start a stopped controller (same config, directory and port) and return once it has caught up:
        the quorum leader reports it caught up to the leader's log end at a time after it was started."""
        from kadmin.sandbox import realkafka as rk

        if self._alive(st, _node_name(node), node):
            raise ConditionNotMet(f"controller {node['id']} is already running (pid {node['pid']})")
        deadline = time.monotonic() + timeout
        started_ms = int(time.time() * 1000)
        self._launch(st, node)
        self._update(st, node)
        marker = self._markers(st)[_node_name(node)]
        last: Any = None
        while True:
            ours, why = still_ours(node, marker)
            if not ours:
                raise SandboxError(f"controller {node['id']} (pid {node['pid']}: {why}) while waiting for it to "
                                   f"catch up: {rk.log_problem(node)}")
            try:
                q = rk.quorum_view(st["bootstrap_controllers"])
                row = next((v for v in q.voters if v.id == node["id"]), None)
                if q.leader_id == node["id"] or (q.leader_id >= 0 and row is not None
                                                 and (row.last_caught_up_timestamp or -1) >= started_ms):
                    return {"id": node["id"], "role": "controller", "controller": q.leader_id, "pid": node["pid"],
                            "log_end_offset": row.log_end_offset if row else None}
                last = f"leader {q.leader_id}, node {node['id']}: {row}"
            except Exception as e:  # noqa: BLE001 - the quorum re-forming: poll again
                last = in_words(e)
            if time.monotonic() > deadline:
                raise SandboxError(f"timed out waiting for controller {node['id']} to catch up (last seen: {last})")
            time.sleep(0.25)

    @staticmethod
    def _kind(st: dict[str, Any], broker_id: int) -> str:
        """How a broker registers now: zk (a /brokers/ids znode) or kraft (DescribeCluster, unfenced). In a
        migration sandbox a broker is kraft from its kraft phase on."""
        if st["mode"] != "migration":
            return str(st["mode"])
        node: dict[str, Any] = next((n for n in st["nodes"] if n["role"] == "broker" and n["id"] == broker_id), {})
        return "kraft" if node.get("phase") == "kraft" else "zk"

    def _update(self, st: dict[str, Any], node: dict[str, Any]) -> None:
        st["nodes"] = [node if (n["role"], n["id"]) == (node["role"], node["id"]) else n for n in st["nodes"]]
        self._save(st)

    def _view(self, st: dict[str, Any], ids: list[int]) -> tuple[dict[int, Any], int | None]:
        """What the cluster shows now: zk mode ({id: (port, czxid)}, controller) from ZooKeeper; kraft mode
        ({id: fenced}, controller) from DescribeCluster through the brokers."""
        from kadmin.sandbox import realkafka as rk

        if st["mode"] == "zk":
            regs, controller = rk.zk_view([("127.0.0.1", s["port"]) for s in st["zookeeper"]], st["chroot"], ids)
            return dict(regs), controller
        if st["mode"] == "migration":
            # {id: (port, czxid)} for the brokers registered in ZooKeeper; {id: fenced} for the kraft-phase ones
            # as DescribeCluster through the running kraft-phase brokers shows them; the controller of /controller
            # (a KRaft controller's id once it has taken over)
            regs, controller = rk.zk_view([("127.0.0.1", s["port"]) for s in st["zookeeper"]], st["chroot"], ids)
            view: dict[int, Any] = dict(regs)
            kraft = [n for n in st["nodes"] if n["role"] == "broker" and n.get("phase") == "kraft"
                     and self._alive(st, _node_name(n), n)]
            if kraft:
                with contextlib.suppress(Exception):  # none answering yet: they show as not registered
                    fenced = rk.kraft_view(",".join(f"127.0.0.1:{n['port']}" for n in kraft))[0]
                    view.update({i: f for i, f in fenced.items() if i in ids and self._kind(st, i) == "kraft"
                                 and i not in regs})
            return view, controller
        fenced, _ = rk.kraft_view(st["bootstrap_servers"])  # a broker names a random broker as "controller"
        controller = None
        with contextlib.suppress(Exception):
            controller = rk.kraft_view(st["bootstrap_controllers"], controllers=True)[1]  # the active controller
        return {i: f for i, f in fenced.items() if i in ids}, controller

    def _poll(self, st: dict[str, Any], what: str, deadline: float, watch: list[dict[str, Any]],
              check: Any, read: Callable[[], tuple[Any, ...]] | None = None) -> Any:
        """Poll what `read()` returns (default: the brokers' view and the active controller) until `check(*it)`
        returns something other than None. Fails at once when a process in `watch` exits, and at the deadline,
        saying why and what it saw last."""
        from kadmin.sandbox import realkafka as rk

        brokers = [n["id"] for n in st["nodes"] if n["role"] == "broker"]
        read = read or (lambda: self._view(st, brokers))

        markers = self._markers(st)
        last: Any = None
        while True:
            for n in watch:
                ours, why = still_ours(n, markers[_node_name(n)])
                if not ours:
                    raise SandboxError(f"{n['role']} {n['id']} (pid {n['pid']}: {why}) while waiting for {what}: "
                                       f"{rk.log_problem(n)}")
            try:
                seen = read()
                got = check(*seen)
                if got is not None:
                    return got
                last = seen
            except (TimeoutError, KadminError, OSError) as e:
                last = in_words(e)
            except Exception as e:  # noqa: BLE001 - a ZooKeeper wire error while it starts: poll again
                last = in_words(e)
            if time.monotonic() > deadline:
                raise SandboxError(f"timed out waiting for {what} (last seen: {last})")
            time.sleep(0.25)

    def _wait_registered(self, st: dict[str, Any], ids: list[int], deadline: float,
                         after: dict[int, int] | None = None) -> tuple[dict[int, int | None], int | None]:
        """Until every broker in `ids` is registered (zk: its znode holds its port, with a czxid above
        `after`'s, and a controller is elected; kraft: DescribeCluster lists it unfenced). ({id: epoch},
        controller); KRaft epochs are None (DescribeCluster does not carry them)."""
        ports = {n["id"]: n["port"] for n in st["nodes"]}
        after = after or {}

        kinds = {i: self._kind(st, i) for i in ids}

        def check(view: dict[int, Any], controller: int | None) -> Any:
            zk = [i for i in ids if kinds[i] == "zk"]
            if zk and (controller is None or not all(isinstance(view.get(i), tuple) and view[i][0] == ports[i]
                                                     and view[i][1] > after.get(i, 0) for i in zk)):
                return None
            if not all(view.get(i) is False for i in ids if kinds[i] == "kraft"):
                return None
            return {i: view[i][1] if kinds[i] == "zk" else None for i in ids}, controller

        watch = [n for n in st["nodes"] if n["id"] in ids or n["role"] == "controller"]
        if st["mode"] == "migration":  # controllers may be stopped on purpose (a rollback): watch the running ones
            watch = [n for n in watch if n["role"] == "broker" or self._alive(st, _node_name(n), n)]
        what = f"broker{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} to register"
        result: tuple[dict[int, int | None], int | None] = self._poll(st, what, deadline, watch, check)
        return result

    def _wait_deregistered(self, st: dict[str, Any], broker_id: int, deadline: float) -> None:
        """Until the cluster no longer counts a stopped broker as live: zk, its znode is gone (a crashed
        broker's session must expire first: a new process cannot register over it); kraft, it is fenced."""
        def check(view: dict[int, Any], controller: int | None) -> Any:
            if st["mode"] == "zk":
                return True if broker_id not in view else None
            if st["mode"] == "migration":  # no znode (a broker that was zk or migrating), not unfenced (kraft)
                got = view.get(broker_id)
                return True if not isinstance(got, tuple) and got is not False else None
            return True if view.get(broker_id) is not False else None

        if st["mode"] == "kraft" and not any(
                n["role"] == "broker" and n["id"] != broker_id and self._alive(st, _node_name(n), n)
                for n in st["nodes"]):
            # KRaft with no broker running: none can describe the cluster. Nothing to wait for here: a new
            # incarnation that registers while the old session lives is refused (DUPLICATE_BROKER_REGISTRATION)
            # and the broker retries until that session expires; _wait_registered waits for the outcome
            return
        self._poll(st, f"broker {broker_id} to be deregistered", deadline, [], check)

    def _terminate(self, st: dict[str, Any], node: dict[str, Any], hard: bool, grace: float = 180.0) -> float:
        """SIGTERM (Kafka's shutdown hook runs a controlled shutdown) or SIGKILL, and wait for the exit;
        SIGKILL when SIGTERM did not end it within `grace` seconds. Returns the seconds it took."""
        marker = self._markers(st)[_node_name(node)]
        t0 = time.monotonic()
        sig: int = signal.SIGKILL if hard else signal.SIGTERM
        deadline = t0 + grace
        while still_ours(node, marker)[0]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(node["pid"]), sig)
            sig = 0  # signal once; then only probe
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(node["pid"]), signal.SIGKILL)
                deadline = time.monotonic() + 30.0
            time.sleep(0.05)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(int(node["pid"]), os.WNOHANG)
        # An exiting process no longer counts as ours but may still hold its files and listening port until
        # it is a zombie; its pid cannot be reused before that, so this waits on the same process.
        stat = Path(f"/proc/{node['pid']}/stat")
        end = time.monotonic() + 30.0
        while time.monotonic() < end:
            raw = _read(stat)
            if raw is None or raw.rsplit(b")", 1)[-1].split()[:1] == [b"Z"]:
                break
            time.sleep(0.02)
        return round(time.monotonic() - t0, 3)

    def _alive_broker(self, st: dict[str, Any], broker_id: int) -> tuple[dict[str, Any], bool]:
        n = self._broker(st, broker_id)
        return n, self._alive(st, _node_name(n), n)

    def _bounce_kafka(self, st: dict[str, Any], broker_id: int, down_seconds: float,
                      timeout: float = 300.0) -> dict[str, Any]:
        c = self._controller_node(st, broker_id)
        if c is not None:
            stopped = self._kill_controller(st, c, hard=False)
            if down_seconds:
                time.sleep(down_seconds)  # asked for: stay down this long
            started = self._start_controller(st, c, timeout)
            return {**started, "old_pid": stopped["pid"], "stop_seconds": stopped["stop_seconds"]}
        n, alive = self._alive_broker(st, broker_id)
        if not alive:
            raise ConditionNotMet(f"broker {broker_id} is not running: `kadmin sandbox start {broker_id}`")
        deadline = time.monotonic() + timeout
        old = self._epoch(st, broker_id)
        old_pid = n["pid"]
        took = self._terminate(st, n, hard=False)
        if down_seconds:
            time.sleep(down_seconds)  # asked for: stay down this long
        self._wait_deregistered(st, broker_id, deadline)
        self._launch(st, n)
        self._update(st, n)
        epochs, controller = self._wait_registered(st, [broker_id], deadline, {broker_id: old} if old else None)
        return {"id": broker_id, "old_epoch": old, "new_epoch": epochs[broker_id], "controller": controller,
                "old_pid": old_pid, "pid": n["pid"], "stop_seconds": took}

    def _kill_kafka(self, st: dict[str, Any], broker_id: int, hard: bool) -> dict[str, Any]:
        c = self._controller_node(st, broker_id)
        if c is not None:
            return self._kill_controller(st, c, hard)
        n, alive = self._alive_broker(st, broker_id)
        if not alive:
            raise ConditionNotMet(f"broker {broker_id} is not running")
        old = self._epoch(st, broker_id)
        took = self._terminate(st, n, hard=hard)
        controller = None
        with contextlib.suppress(Exception):
            controller = self._view(st, [])[1]
        return {"id": broker_id, "old_epoch": old, "controller": controller, "pid": n["pid"], "hard": hard,
                "stop_seconds": took}

    def _start_kafka(self, st: dict[str, Any], broker_id: int, timeout: float = 300.0) -> dict[str, Any]:
        c = self._controller_node(st, broker_id)
        if c is not None:
            return self._start_controller(st, c, timeout)
        n, alive = self._alive_broker(st, broker_id)
        if alive:
            raise ConditionNotMet(f"broker {broker_id} is already running (pid {n['pid']})")
        deadline = time.monotonic() + timeout
        self._wait_deregistered(st, broker_id, deadline)
        self._launch(st, n)
        self._update(st, n)
        epochs, controller = self._wait_registered(st, [broker_id], deadline)
        return {"id": broker_id, "new_epoch": epochs[broker_id], "controller": controller, "pid": n["pid"]}

    def _epoch(self, st: dict[str, Any], broker_id: int) -> int | None:
        """The broker's registration epoch (zk: the czxid of /brokers/ids/ID), None when unknown."""
        if self._kind(st, broker_id) != "zk":
            return None
        try:
            view, _ = self._view(st, [broker_id])
        except Exception:  # noqa: BLE001 - unknown is an answer here
            return None
        got = view.get(broker_id)
        return int(got[1]) if isinstance(got, tuple) else None

    def _status_kafka(self, st: dict[str, Any]) -> dict[str, Any]:
        from kadmin.sandbox import realkafka as rk

        members, rows = [], []
        for s in st["zookeeper"]:
            alive = self._alive(st, f"zookeeper{s['myid'] or ''}", s)
            members.append({"myid": s["myid"], "address": f"127.0.0.1:{s['port']}", "pid": s["pid"],
                            "alive": alive, "mode": server_mode("127.0.0.1", s["port"]) if alive else None})
            rows.append({"role": "zookeeper", "id": s["myid"], "pid": s["pid"], "port": s["port"], "alive": alive,
                         "registered": None, "phase": None})
        broker_ids = [n["id"] for n in st["nodes"] if n["role"] == "broker"]
        view: dict[int, Any] = {}
        controller: int | None = None
        voters: dict[int, Any] = {}
        with contextlib.suppress(Exception):  # a cluster that does not answer shows nothing registered
            view, controller = self._view(st, broker_ids)
        if st["mode"] in ("kraft", "migration"):
            with contextlib.suppress(Exception):
                voters = rk.kraft_view(st["bootstrap_controllers"], controllers=True)[0]
        brokers: dict[int, Any] = {}
        for n in st["nodes"]:
            alive = self._alive(st, _node_name(n), n)
            if n["role"] == "controller":
                registered = (n["id"] in voters) if voters else None
            elif self._kind(st, n["id"]) == "zk":
                got = view.get(n["id"])
                registered = isinstance(got, tuple) and got[0] == n["port"]
                if isinstance(got, tuple) and registered:
                    brokers[n["id"]] = got[1]
            else:
                registered = view.get(n["id"]) is False  # listed and unfenced
                if registered:
                    brokers[n["id"]] = None
            rows.append({"role": n["role"], "id": n["id"], "pid": n["pid"], "port": n["port"], "alive": alive,
                         "registered": registered, "phase": n.get("phase")})
        return {
            "dir": st["dir"],
            "zookeeper": st["connect"],
            "ensemble": members,
            "daemon": {"pid": None, "alive": False},
            "brokers": brokers,
            "stopped_brokers": [r["id"] for r in rows if r["role"] == "broker" and not r["alive"]],
            "controller": controller,
            "engine": "kafka",
            "mode": st["mode"],
            "kafka_version": st["kafka_version"],
            "kafka_home": st["kafka_home"],
            "cluster_id": st.get("cluster_id"),
            "bootstrap_servers": st["bootstrap_servers"],
            "bootstrap_controllers": st.get("bootstrap_controllers"),
            "processes": rows,
        }


def _engine(st: dict[str, Any]) -> str:
    return str(st.get("engine", "emulated"))


def _new_node(directory: Path, role: str, node_id: int) -> dict[str, Any]:
    """A real-Kafka node's state entry: its port is chosen once, so a restart registers the same endpoint."""
    return {"role": role, "id": node_id, "port": free_port(), "dir": str(directory / f"{role}-{node_id}"),
            "pid": None, "identity": None}


def _node_name(node: dict[str, Any]) -> str:
    return f"{node['role']}-{node['id']}"
