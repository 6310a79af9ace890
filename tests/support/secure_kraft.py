"""A real KRaft cluster with SASL/PLAIN and Kafka's StandardAuthorizer, for tests where permissions matter.

One controller (node 3001) and brokers 1..N on loopback, each broker with three listeners:

- INTERNAL (PLAINTEXT): between brokers, and to the controller (as User:ANONYMOUS, a super user);
- CLIENT (SASL_PLAINTEXT, PLAIN): what a test's principals use; `allow.everyone.if.no.acl.found=false`, so a
  principal sees only what its ACLs allow;
- FAR (SASL_PLAINTEXT, PLAIN): the same, except that `far_dead` brokers advertise on it a loopback port nothing
  listens on (held bound, never listening): through FAR, their advertised address cannot be reached, as when
  kadmin runs where one broker's advertised listener does not resolve.

The controller has two listeners: CONTROLLER (PLAINTEXT: the quorum's, the one DescribeQuorum lists and the brokers
use) and CSASL (SASL_PLAINTEXT, PLAIN, the principals' users: `bootstrap_controller()`, for --bootstrap-controller).
`extra` ({role: {key: value}}, role "controller" or "broker") adds properties to the nodes of a role.

`min.insync.replicas` is set in every node's server.properties: the brokers' static level, and the controller's,
which Kafka 4.x with ELR on writes as the cluster-wide dynamic default (KIP-966). Users and passwords are
`USERS`; `User:admin` is the super user. `client_config(user)` writes a --command-config file for kadmin and
Kafka's tools. Nothing here sleeps on time: `wait_brokers` waits on DescribeCluster's answer.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kadmin.sandbox import realkafka
from kadmin.sandbox.ports import free_port
from tests.support.hung import signalled
from tests.support.kafka import tool, wait_for
from tests.support.sandbox import IDLE_CONTROLLER

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret",
         "dave": "dave-secret", "erin": "erin-secret"}
CONTROLLER = 3001
ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
ACL_COMMAND_3 = "kafka.admin.AclCommand"  # Kafka 3.x: the Scala one
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _jaas() -> str:
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    return f'org.apache.kafka.common.security.plain.PlainLoginModule required {users};'


@dataclass
class Node:
    node_id: int
    role: str
    dir: Path
    ports: dict[str, int]
    proc: subprocess.Popen[bytes] | None = None

    @property
    def as_dict(self) -> dict[str, object]:
        return {"id": self.node_id, "role": self.role, "dir": str(self.dir), "port": self.ports["CONTROLLER"]
                if self.role == "controller" else self.ports["INTERNAL"]}


@dataclass
class SecureKraft:
    home: Path
    version: str
    base: Path
    brokers: dict[int, Node] = field(default_factory=dict)
    controller: Node | None = None
    dead: socket.socket | None = None  # holds the port far_dead brokers advertise on FAR: bound, never listening

    # ------------------------------------------------------------------ addresses and client configs
    def bootstrap(self, listener: str = "CLIENT", skip: Iterable[int] = ()) -> str:
        return ",".join(f"127.0.0.1:{n.ports[listener]}" for bid, n in sorted(self.brokers.items()) if bid not in skip)

    def bootstrap_controller(self) -> str:
        """The controller's SASL listener (CSASL), for --bootstrap-controller with a principal's --command-config."""
        assert self.controller is not None
        return f"127.0.0.1:{self.controller.ports['CSASL']}"

    def client_config(self, user: str) -> Path:
        f = self.base / f"{user}.properties"
        if not f.exists():
            f.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                         "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                         f'username="{user}" password="{USERS[user]}";\n')
        return f

    def acl(self, *args: str) -> None:
        """kafka-acls as the super user (Kafka's AclCommand)."""
        command = ACL_COMMAND_3 if self.version.startswith("3.") else ACL_COMMAND
        tool(self.home, command, "--bootstrap-server", self.bootstrap(), "--command-config",
             str(self.client_config("admin")), *args)

    # ------------------------------------------------------------------ processes
    def _props(self, n: Node, far_dead: bool, min_isr: int, brokers: int) -> dict[str, str]:
        voters = f"{CONTROLLER}@127.0.0.1:{self.controller.ports['CONTROLLER']}" if self.controller else ""
        common = {
            "process.roles": n.role, "node.id": str(n.node_id), "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER", "log.dirs": str(n.dir / "data"),
            "authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "false",
            "super.users": "User:admin;User:ANONYMOUS",
            "num.io.threads": "2", "num.network.threads": "2", "background.threads": "2",
        }
        if n.role == "controller":
            # Kafka 4.x with ELR on writes the controller's min.insync.replicas as the cluster-wide dynamic default
            # (KIP-966's safety record), which then overrides the brokers' static value: the same value here
            return {**common, "listeners": f"CONTROLLER://127.0.0.1:{n.ports['CONTROLLER']},"
                                           f"CSASL://127.0.0.1:{n.ports['CSASL']}",
                    "controller.listener.names": "CONTROLLER,CSASL",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,CSASL:SASL_PLAINTEXT",
                    "sasl.enabled.mechanisms": "PLAIN", "listener.name.csasl.sasl.enabled.mechanisms": "PLAIN",
                    "listener.name.csasl.plain.sasl.jaas.config": _jaas(), "min.insync.replicas": str(min_isr),
                    **IDLE_CONTROLLER}
        far = self.dead.getsockname()[1] if far_dead and self.dead else n.ports["FAR"]
        listeners = ",".join(f"{name}://127.0.0.1:{n.ports[name]}" for name in ("INTERNAL", "CLIENT", "FAR"))
        return {
            **common, **realkafka._internal_topics(brokers, self.version),
            "listeners": listeners,
            "advertised.listeners": f"INTERNAL://127.0.0.1:{n.ports['INTERNAL']},"
                                    f"CLIENT://127.0.0.1:{n.ports['CLIENT']},FAR://127.0.0.1:{far}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,CLIENT:SASL_PLAINTEXT,"
                                              "FAR:SASL_PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.client.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.far.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.client.plain.sasl.jaas.config": _jaas(),
            "listener.name.far.plain.sasl.jaas.config": _jaas(),
            "min.insync.replicas": str(min_isr),
            "offsets.topic.replication.factor": str(min(3, brokers)),
            "transaction.state.log.min.isr": "1",
        }

    def start(self, bid: int | None = None) -> None:
        """Start a broker (or the controller: None) that is not running."""
        n = self.controller if bid is None else self.brokers[bid]
        assert n is not None and (n.proc is None or n.proc.poll() is not None)
        (n.dir / "logs").mkdir(parents=True, exist_ok=True)
        argv = realkafka.command(str(self.home), self.version, self.base, n.as_dict)
        with open(n.dir / "logs" / "stdout.log", "ab") as out:
            n.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def stop(self, bid: int, timeout: float = 180.0) -> None:
        """SIGTERM (Kafka's own controlled shutdown), then wait for the JVM to exit."""
        n = self.brokers[bid]
        assert n.proc is not None
        n.proc.terminate()
        try:
            n.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            n.proc.kill()
            n.proc.wait(30)

    def pause(self, bid: int) -> None:
        assert self.brokers[bid].proc is not None
        signalled(self.brokers[bid].proc.pid, signal.SIGSTOP)

    def resume(self, bid: int) -> None:
        assert self.brokers[bid].proc is not None
        os.kill(self.brokers[bid].proc.pid, signal.SIGCONT)  # type: ignore[union-attr]

    def fenced(self) -> dict[int, bool | None]:
        """DescribeCluster v2 through INTERNAL (PLAINTEXT, User:ANONYMOUS): {broker id: fenced}."""
        live = [b for b, n in self.brokers.items() if n.proc is not None and n.proc.poll() is None]
        view, _ = realkafka.kraft_view(",".join(f"127.0.0.1:{self.brokers[b].ports['INTERNAL']}" for b in live))
        return view

    def wait_brokers(self, unfenced: Iterable[int], timeout: float = 300.0) -> None:
        want = set(unfenced)

        def ok() -> bool:
            try:
                view = self.fenced()
            except Exception:  # not answering yet
                return False
            return all(view.get(b) is False for b in want)
        wait_for(ok, timeout, f"brokers {sorted(want)} registered and unfenced", interval=0.5)

    def close(self) -> None:
        for n in [*self.brokers.values(), self.controller]:
            if n is not None and n.proc is not None and n.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(n.proc.pid, signal.SIGCONT)
                    os.killpg(n.proc.pid, signal.SIGKILL)
                n.proc.wait(30)
        if self.dead is not None:
            self.dead.close()


@contextlib.contextmanager
def secure_kraft(home: Path, version: str, base: Path, brokers: int = 3, min_isr: int = 2,
                 far_dead: Iterable[int] = (), extra: Mapping[str, Mapping[str, str]] | None = None,
                 ) -> Iterator[SecureKraft]:
    """Format, start and wait for a SASL + StandardAuthorizer KRaft cluster; killed on exit."""
    base.mkdir(parents=True, exist_ok=True)
    k = SecureKraft(home, version, base)
    k.dead = socket.socket()
    k.dead.bind(("127.0.0.1", 0))  # bound, never listening: a connection to it is refused
    realkafka.write_logging(base)
    k.controller = Node(CONTROLLER, "controller", base / "controller",
                        {"CONTROLLER": free_port(), "CSASL": free_port()})
    for b in range(1, brokers + 1):
        k.brokers[b] = Node(b, "broker", base / f"broker-{b}",
                            {name: free_port() for name in ("INTERNAL", "CLIENT", "FAR")})
    dead = set(far_dead)
    try:
        for n in [k.controller, *k.brokers.values()]:
            realkafka.write_config(n.as_dict, {**k._props(n, n.node_id in dead, min_isr, brokers),
                                               **(extra or {}).get(n.role, {})})
        realkafka.format_storage(str(home), version, base, [n.as_dict for n in [k.controller, *k.brokers.values()]],
                                 realkafka.new_cluster_id())
        k.start(None)
        for b in k.brokers:
            k.start(b)
        k.wait_brokers(k.brokers)
        yield k
    finally:
        k.close()
