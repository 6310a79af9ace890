"""`kadmin sandbox`: start, inspect, bounce and stop a local ZooKeeper-mode playground.

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
import time
from pathlib import Path
from typing import Any

from kadmin.errors import ConditionNotMet, SandboxError
from kadmin.sandbox.zkserver import Ensemble, server_mode

STATE_VERSION = 1
CHROOT = "/kafka"


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def process_identity(pid: int) -> dict[str, Any] | None:
    """What tells this process apart from a later one with the same pid, or None when it is gone.

    On Linux: the boot id, the start time in clock ticks since boot (/proc/<pid>/stat field 22)
    and the command line (/proc/<pid>/cmdline). Elsewhere: `ps -o lstart=,args=`. A zombie is gone.
    """
    proc = Path(f"/proc/{pid}")
    if Path("/proc/self/stat").exists():
        stat, cmdline = _read(proc / "stat"), _read(proc / "cmdline")
        if stat is None or cmdline is None:
            return None
        fields = stat.rsplit(b")", 1)[-1].split()  # the command name may hold spaces and parentheses
        if len(fields) < 20 or fields[0] == b"Z":
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
        return st

    def _save(self, st: dict[str, Any]) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(st, indent=2))
        os.replace(tmp, self.state_file)

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
        return out

    def _alive(self, st: dict[str, Any], name: str, entry: dict[str, Any]) -> bool:
        return still_ours(entry, self._markers(st)[name])[0]

    def _daemon_alive(self, st: dict[str, Any]) -> bool:
        return self._alive(st, "brokers", st["daemon"])

    def running(self) -> bool:
        st = self.state()
        if not st:
            return False
        return self._daemon_alive(st) and any(
            self._alive(st, f"zookeeper{s['myid'] or ''}", s) for s in st["zookeeper"])

    # ------------------------------------------------------------------ up / down
    def up(self, brokers: int = 3, ensemble: int = 1, timeout: float = 120.0) -> dict[str, Any]:
        if brokers < 1:
            raise SandboxError("--brokers must be at least 1")
        if self.state() is not None:
            if self.running():
                return {**self.status(), "already_running": True}
            self.down()
        self.dir.mkdir(parents=True, exist_ok=True)
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
        proc = subprocess.Popen(
            [sys.executable, "-m", "kadmin.sandbox.daemon", "--dir", str(self.dir), "--hosts", ens.connect_string,
             "--chroot", CHROOT, "--brokers", str(brokers)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()
        st["daemon"]["pid"] = proc.pid
        st["daemon"]["identity"] = process_identity(proc.pid)  # Popen returns once the child has exec'd
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
        }

    def bounce(self, broker_id: int, down_seconds: float = 0.0) -> dict[str, Any]:
        return self._call({"op": "bounce", "id": broker_id, "down": down_seconds})

    def kill(self, broker_id: int, hard: bool = False) -> dict[str, Any]:
        return self._call({"op": "kill", "id": broker_id, "hard": hard})

    def start(self, broker_id: int) -> dict[str, Any]:
        return self._call({"op": "start", "id": broker_id})
