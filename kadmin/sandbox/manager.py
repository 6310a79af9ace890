"""`kadmin sandbox`: start, inspect, bounce and stop a local ZooKeeper-mode playground.

State lives in one directory (default `$XDG_STATE_HOME/kadmin/sandbox`): `state.json` names every
process this sandbox started, by pid, so `down` stops exactly those.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kadmin.errors import ConditionNotMet, SandboxError
from kadmin.sandbox.zkserver import Ensemble, pid_alive, server_mode, stop_pid

STATE_VERSION = 1
CHROOT = "/kafka"


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

    def running(self) -> bool:
        st = self.state()
        if not st:
            return False
        return pid_alive(st["daemon"]["pid"]) and any(pid_alive(s["pid"]) for s in st["zookeeper"])

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
                {"myid": s.myid, "port": s.client_port, "pid": s.pid, "data_dir": str(s.data_dir)}
                for s in ens.servers
            ],
            "daemon": {"pid": None, "port": None},
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

    def down(self) -> dict[str, Any]:
        st = self.state()
        if st is None:
            return {"dir": str(self.dir), "stopped": []}
        stopped = []
        if st["daemon"].get("pid"):
            stop_pid(st["daemon"]["pid"])
            stopped.append({"process": "brokers", "pid": st["daemon"]["pid"]})
        for s in st["zookeeper"]:
            if s.get("pid"):
                stop_pid(s["pid"])
                stopped.append({"process": f"zookeeper{s['myid'] or ''}", "pid": s["pid"]})
        self.state_file.unlink(missing_ok=True)
        (self.dir / "daemon.json").unlink(missing_ok=True)
        return {"dir": str(self.dir), "stopped": stopped}

    # ------------------------------------------------------------------ control
    def _call(self, req: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        st = self._require()
        port = st["daemon"].get("port")
        if not port or not pid_alive(st["daemon"]["pid"]):
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
            alive = pid_alive(s["pid"])
            members.append({"myid": s["myid"], "address": f"127.0.0.1:{s['port']}", "pid": s["pid"],
                            "alive": alive, "mode": server_mode("127.0.0.1", s["port"]) if alive else None})
        brokers: dict[str, Any] = {}
        if pid_alive(st["daemon"]["pid"]):
            try:
                brokers = self._call({"op": "status"})
            except (OSError, ConditionNotMet):
                brokers = {}
        return {
            "dir": st["dir"],
            "zookeeper": st["connect"],
            "ensemble": members,
            "daemon": {"pid": st["daemon"]["pid"], "alive": pid_alive(st["daemon"]["pid"])},
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
