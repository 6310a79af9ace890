"""Kadmin's own sandbox driven as a user drives it (the CLI in a subprocess), for the real-Kafka tests.

`sandbox(DIR, *up_args)` starts one (`kadmin sandbox up`), yields a `Sandbox` to run kadmin against it, and
stops it at the end (`sandbox down`, then SIGKILL for anything left). With `properties` ({role: {key: value}},
role "controller" or "broker") each real Kafka node of that role has them in its server.properties too: `up` is
then run as `python -m tests.support.sandbox PROPERTIES sandbox up ...`, kadmin's own CLI with the sandbox's
server.properties writers wrapped (the sandbox writes the configs once, at `up`: `sandbox kill/start` keep them).
`KraftBrokers` is a KRaft sandbox's brokers with the ones a test stopped left out of the bootstrap list.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kadmin.sandbox.manager import process_identity

REPO = Path(__file__).resolve().parents[2]

# Every test cluster's KRaft controllers write a NoOpRecord to an idle metadata log every 5 s, not Kafka's 0.5 s:
# each one is an fsync on every controller and a fetch answered and applied on every node, about 40 % of an idle
# KRaft cluster's CPU (0.08 against 0.048 of a core for 3 controllers and 3 brokers). No test depends on it: the
# records still come, and kadmin and Kafka's tools read the same log.
IDLE_CONTROLLER = {"metadata.max.idle.interval.ms": "5000"}


class Sandbox:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.env = {**os.environ, "KADMIN_SANDBOX_DIR": str(directory)}
        for var in ("KADMIN_ZOOKEEPER", "KADMIN_BOOTSTRAP_SERVER", "KADMIN_BOOTSTRAP_CONTROLLER", "KADMIN_CONTEXT",
                    "KADMIN_KAFKA_HOME"):
            self.env.pop(var, None)
        self.up_stdout = ""

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kadmin", *args], capture_output=True, text=True,
                              env=self.env, timeout=timeout, stdin=subprocess.DEVNULL)

    def json(self, *args: str) -> tuple[int, Any, str]:
        r = self.run(*args, "-o", "json")
        return r.returncode, json.loads(r.stdout)["data"] if r.stdout.strip() else None, r.stderr

    def status(self) -> dict[str, Any]:
        code, data, err = self.json("sandbox", "status")
        assert data is not None, err
        return dict(data)

    def pids(self) -> list[int]:
        """Every pid the state file names (processes the sandbox started), read without kadmin."""
        st = json.loads((self.dir / "state.json").read_text())
        return [int(e["pid"]) for e in [*st["zookeeper"], *st.get("nodes", [])] if e.get("pid")]

    def kill_leftovers(self, pids: list[int]) -> None:
        for pid in pids:
            if process_identity(pid) is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    return process_identity(pid) is not None


@contextlib.contextmanager
def sandbox(directory: Path, *up_args: str, properties: Mapping[str, Mapping[str, str]] | None = None,
            plain: bool = False) -> Iterator[Sandbox]:
    """`properties` on top of the tests' own (IDLE_CONTROLLER for each controller); `plain`: exactly the
    product's server.properties, for the tests of `kadmin sandbox` itself."""
    sb = Sandbox(directory)
    if not plain:
        given = dict(properties or {})
        properties = {**given, "controller": {**IDLE_CONTROLLER, **given.get("controller", {})}}
    if properties:
        env = {**sb.env, "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [sb.env.get("PYTHONPATH")])])}
        up = subprocess.run([sys.executable, "-m", "tests.support.sandbox", json.dumps(properties), "sandbox", "up",
                             *up_args, "-o", "plain"], capture_output=True, text=True, env=env, timeout=600,
                            stdin=subprocess.DEVNULL)
    else:
        up = sb.run("sandbox", "up", *up_args, "-o", "plain")
    started: list[int] = []
    try:
        assert up.returncode == 0, up.stderr
        sb.up_stdout = up.stdout
        started = sb.pids()
        yield sb
    finally:
        if (directory / "state.json").exists():
            started = started or sb.pids()
            sb.run("sandbox", "down")
        sb.kill_leftovers(started)


class KraftBrokers:
    """A KRaft sandbox's brokers; `down` holds those a test stopped (left out of `live_bootstrap`)."""

    def __init__(self, sb: Sandbox, home: Path) -> None:
        self.sb, self.home = sb, home
        st = sb.status()
        self.bootstrap = str(st["bootstrap_servers"])
        self.ports = {int(p["id"]): int(p["port"]) for p in st["processes"] if p.get("role") == "broker"}
        self.down: set[int] = set()

    def live_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for bid, port in sorted(self.ports.items()) if bid not in self.down)


def with_properties(extra: Mapping[str, Mapping[str, str]]) -> None:
    """Wrap the sandbox's server.properties writers: each node of a role in `extra` gets those properties too."""
    from kadmin.sandbox import realkafka

    for name in ("kraft_properties", "zk_broker_properties"):
        plain = getattr(realkafka, name)

        def wrapped(node: dict[str, Any], *args: Any, _plain: Any = plain) -> dict[str, str]:
            return {**_plain(node, *args), **extra.get(str(node.get("role", "broker")), {})}

        setattr(realkafka, name, wrapped)


if __name__ == "__main__":  # PROPERTIES kadmin-args...: kadmin's CLI with the writers wrapped (see the module's text)
    with_properties(json.loads(sys.argv[1]))
    sys.argv = ["kadmin", *sys.argv[2:]]
    from kadmin.cli.main import main

    main()
