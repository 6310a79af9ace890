"""Every command keeps its deadlines (issue 22 §1), whatever the servers do, without real Kafka.

`--connect-timeout` bounds every wait for an answer (and reaching the cluster: every bootstrap address is tried
within it, not one after another for the whole of it each); `--timeout` bounds a command's wait; a command ends
within them plus GRACE (docs/connecting.md). The servers that stop answering are tests/support/hung.py's: `Hung`
accepts and never answers, `Proxy` forwards to the real server until it freezes at an exact request (as a
SIGSTOPped server: connections stay open, nothing more is answered), dies there (SIGKILL: reset, refused) or
answers slowly. ZooKeeper is the session's real one with emulated brokers (tests/conftest.py); the Kafka side is
the protocol-level KRaft server (tests/support/kraft_server.py).

Commands run in-process (CliRunner): no interpreter start-up in the times, so each bound is the deadline plus
GRACE. The old behaviour failed these: a ZooKeeper read blocked until ZooKeeper came back, and each request
waited the whole --connect-timeout on the first bootstrap address before trying the next.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kadmin.cluster.zookeeper.reads import SMALL_READS
from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from tests.support.hung import (
    Hung,
    Proxy,
    kafka_request_other_than_api_versions,
    signalled,
    thread_states,
    timed,
    zookeeper_request,
)
from tests.support.kraft_server import UNREGISTER_BROKER, KraftServer, Scenario

pytestmark = pytest.mark.integration

CONNECT = 2.0  # --connect-timeout of every case
CREATE = 1  # ZooKeeper's create request
GRACE = 2.0  # what docs/connecting.md allows past a deadline (closing, the last look, thread scheduling)


@pytest.fixture(autouse=True, scope="module")
def warm() -> None:
    """What a command imports on first use (kazoo, kafka-python, the cluster layer), imported before any time is
    taken: the bounds are the command's, not this process's first imports."""
    import kafka.protocol.admin.cluster  # noqa: F401

    import kadmin.cluster.connect
    import kadmin.cluster.kraft
    import kadmin.cluster.kraft_cluster
    import kadmin.cluster.zookeeper
    import kadmin.services.partitions
    import kadmin.services.shutdown  # noqa: F401


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kadmin: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# ------------------------------------------------------------------------------------------ ZooKeeper mode
@pytest.fixture
def brokers(fleet: ThreadedFleet, kz: Any) -> ThreadedFleet:
    """Brokers 1-3 (1 is the controller), topic t on all three, /admin as a broker creates it."""
    for b in (1, 2, 3):
        fleet.register(BrokerSpec(b))
    fleet.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    kz.ensure_path("/admin")
    return fleet


@pytest.fixture
def saved(tmp_path: Path) -> str:
    """A drain file for broker 1 (`brokers undrain 1 --from`)."""
    from kadmin.domain import drain as dom

    path = tmp_path / "drain.json"
    path.write_text(json.dumps({"version": dom.FILE_VERSION, "kind": dom.FILE_KIND, "broker_id": 1,
                                "created": "2025-01-01T00:00:00+00:00", "cluster": {},
                                "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}]}))
    return str(path)


# argv, the request ZooKeeper stops at, what the error line names, the command's deadline (None: none)
FROZEN = [
    (["brokers", "shutdown", "1", "--timeout", "15"], b"/controller", "(reading /controller)", 15),
    # --timeout shorter than --connect-timeout: the read gets what is left of it
    (["brokers", "shutdown", "1", "--timeout", "1"], b"/controller", "(reading /controller)", 1),
    (["brokers", "shutdown", "1", "--force", "--wait", "--timeout", "15"], b"/controller", "(reading /controller)", 15),
    # the pipelined reader (the state znodes of the scan, more than SMALL_READS), not kazoo
    (["brokers", "can-stop", "1"], b"/state", "(reading /brokers/topics/t/partitions/0/state)", None),
    (["brokers", "drain", "1", "--timeout", "10"], b"/admin/reassign_partitions",
     "(reading /admin/reassign_partitions)", 10),
    # the write: its outcome is unknown, and said so
    (["brokers", "drain", "1", "--timeout", "10"], zookeeper_request(CREATE, b"/admin/reassign_partitions"),
     "(creating /admin/reassign_partitions; whether it was applied is unknown)", 10),
    (["brokers", "undrain", "1", "--from", "SAVED", "--timeout", "10"], b"/brokers/topics",
     "(listing /brokers/topics)", 10),
    (["brokers", "wait", "1", "--in-sync", "--timeout", "5"], b"/brokers/ids", "(listing /brokers/ids)", 5),
    (["brokers", "wait", "1", "--registered", "--timeout", "5"], b"/brokers/ids", "(listing /brokers/ids)", 5),
]


@pytest.mark.parametrize("kill", [False, True], ids=["frozen", "killed"])
@pytest.mark.parametrize("argv, at, said, deadline", FROZEN, ids=[
    "shutdown", "shutdown-timeout-1", "shutdown-wait", "can-stop-pipelined", "drain-read", "drain-create",
    "undrain", "wait-in-sync", "wait-registered"])
def test_zookeeper_that_stops_answering_mid_command_is_exit_4_within_the_deadline(
        run_nozk: Any, zk_server: Any, chroot: str, brokers: ThreadedFleet, saved: str, kz: Any,
        argv: list[str], at: Any, said: str, deadline: float | None, kill: bool) -> None:
    argv = [saved if a == "SAVED" else a for a in argv]
    if argv[:2] == ["brokers", "can-stop"]:  # more state znodes than kazoo's session reads: the pipelined reader's
        brokers.create_topic("wide", {p: [2, 3, 1] for p in range(SMALL_READS)})
    with Proxy(zk_server.connect_string, freeze_on=at, kill_on_trigger=kill) as zk:
        r, elapsed = timed(run_nozk, *argv, "-z", zk.address + chroot, "--connect-timeout", str(CONNECT))
        assert (zk.killed if kill else zk.frozen).is_set(), "the command never sent the request"
    line = one_error_line(r.stderr)
    assert r.exit_code == 4, (r.exit_code, r.stderr)
    bound = min(CONNECT, deadline or CONNECT)
    if kill:  # the pipelined reader says how it failed to reconnect; every other read says it as a silence
        assert f"ZooKeeper {zk.address}" in line and said.split(";")[0].strip("()").split(" ")[-1] in line, line
        if "unknown" in said:  # the create's reply was lost and nothing answers the read back: said as the create's
            assert line.endswith(f" s {said}"), line
    else:  # within the bound, or a little less when the command's deadline had less left (and then says so)
        head = f"kadmin: error: ZooKeeper {zk.address} did not answer within "
        line, cut, _which = line.partition("; the command's deadline passed (")
        assert not cut or deadline == bound, line  # only a deadline shorter than --connect-timeout cuts a wait
        assert line.startswith(head) and line.endswith(f" s {said}"), line
        assert (0 if cut else bound - 0.5) <= float(line[len(head):-len(f" s {said}")]) <= bound, line
    assert elapsed <= bound + GRACE, f"{argv} took {elapsed:.1f}s: bound {bound:g}s + {GRACE:g}s grace"
    assert kz.exists("/admin/preferred_replica_election") is None  # nothing went further than the freeze


def test_a_frozen_zookeeper_fails_a_gate_as_unknown_within_the_connect_timeout(
        run_nozk: Any, zk_server: Any, chroot: str, brokers: ThreadedFleet) -> None:
    """A check verb's exit for "no verdict" is 3 (UNKNOWN); the line still names what did not answer."""
    with Proxy(zk_server.connect_string, freeze_on=b"/brokers/ids") as zk:
        r, elapsed = timed(run_nozk, "partitions", "check", "-z", zk.address + chroot, "--connect-timeout",
                           str(CONNECT))
    assert r.exit_code == 3, r.stderr
    assert f"ZooKeeper {zk.address} did not answer within 2 s (listing /brokers/ids)" in one_error_line(r.stderr)
    assert elapsed <= CONNECT + GRACE


@pytest.mark.parametrize("argv, code", [
    (["brokers", "shutdown", "1", "--timeout", "15"], 4),
    (["brokers", "can-stop", "1"], 4),
    (["brokers", "drain", "1", "--timeout", "10"], 4),
    (["brokers", "wait", "1", "--in-sync", "--timeout", "5"], 4),
    (["partitions", "check"], 3),
    (["quorum", "check"], 3),
])
def test_a_hung_zookeeper_costs_the_connect_timeout(run_nozk: Any, hung: Hung, argv: list[str], code: int) -> None:
    r, elapsed = timed(run_nozk, *argv, "-z", hung.address, "--connect-timeout", str(CONNECT))
    assert r.exit_code == code, r.stderr
    line = one_error_line(r.stderr)
    assert hung.address in line and "ZooKeeper" in line, line
    assert elapsed <= CONNECT + GRACE, f"{argv} took {elapsed:.1f}s"


@pytest.mark.parametrize("wait", [False, True], ids=["once", "wait"])
def test_a_black_holed_controller_costs_the_connect_timeout_and_the_deadline(
        run_nozk: Any, fleet: ThreadedFleet, zk: str, hung: Hung, wait: bool) -> None:
    """ZooKeeper answers; the controller's Kafka listener accepts and never answers. Once: one
    ControlledShutdown that gets no answer within --connect-timeout. --wait: asked again until --timeout."""
    fleet.register(BrokerSpec(1, port=hung.port))  # the first registered is the controller
    fleet.register(BrokerSpec(2))
    timeout = 4.0
    r, elapsed = timed(run_nozk, "brokers", "shutdown", "2", "--force", *(["--wait"] if wait else []),
                       "--timeout", str(timeout), "-z", zk, "--connect-timeout", str(CONNECT))
    assert r.exit_code == 4, r.stderr
    line = one_error_line(r.stderr)
    assert f"the controller at {hung.address} did not answer ControlledShutdown within" in line, line
    assert elapsed <= (timeout if wait else CONNECT) + GRACE, f"took {elapsed:.1f}s"
    if wait:
        assert f"no reachable controller within {timeout:g}s" in line, line


# ------------------------------------------------------------------------------------------ KRaft
@pytest.fixture
def kraft() -> Iterator[KraftServer]:
    with KraftServer(Scenario.cluster(brokers=3, controllers=3)) as server:
        yield server


GATES = [
    (["partitions", "check"], 0, None),
    (["brokers", "can-stop", "2"], 0, None),
    (["brokers", "wait", "2", "--in-sync", "--timeout", "5"], 0, 5.0),
    (["brokers", "wait", "2", "--unfenced", "--timeout", "5"], 0, 5.0),
    (["quorum", "check"], 0, None),
    (["brokers", "list"], 0, None),
]


@pytest.mark.parametrize("argv, code, deadline", GATES, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_hung_first_bootstrap_address_is_left_for_the_others(
        run_nozk: Any, kraft: KraftServer, hung: Hung, argv: list[str], code: int, deadline: float | None) -> None:
    """The hung address is tried, the next one too once it is slow to answer, and the ones that answer get every
    later request: the verdict is the cluster's (the others answer), within one --connect-timeout."""
    bootstrap = f"{hung.address},{kraft.bootstrap('broker')}"
    r, elapsed = timed(run_nozk, *argv, "-b", bootstrap, "--connect-timeout", str(CONNECT))
    assert r.exit_code == code, r.stderr
    assert hung.accepted.is_set()  # it was tried first
    assert elapsed <= min(CONNECT, deadline or CONNECT) + GRACE, f"{argv} took {elapsed:.1f}s"


@pytest.fixture
def frozen_broker(kraft: KraftServer) -> Iterator[Proxy]:
    """Broker 1 advertised behind a proxy that black-holes it once a client has connected (after ApiVersions)."""
    with Proxy(kraft.address(1), freeze_on=kafka_request_other_than_api_versions) as proxy:
        kraft.update(lambda s: setattr(s.brokers[0], "port", proxy.port))
        yield proxy


@pytest.mark.parametrize("argv, code", [
    (["partitions", "check"], 3),  # broker 1's log dirs could not be listed: not every partition was seen
    (["brokers", "can-stop", "2"], 0),  # broker 2's own log dirs, from the others: broker 1 plays no part
    (["brokers", "wait", "2", "--in-sync", "--timeout", "5"], 0),
    (["quorum", "check"], 0),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_broker_black_holed_after_connecting(run_nozk: Any, kraft: KraftServer, frozen_broker: Proxy,
                                                argv: list[str], code: int) -> None:
    """Broker 1, first in --bootstrap-server and registered at the same address, accepts, answers ApiVersions,
    then nothing: it costs one --connect-timeout at most, however many requests the command would send it."""
    bootstrap = f"{frozen_broker.address},{kraft.address(2)},{kraft.address(3)}"
    r, elapsed = timed(run_nozk, *argv, "-b", bootstrap, "--connect-timeout", str(CONNECT))
    assert frozen_broker.frozen.is_set()
    assert r.exit_code == code, r.stderr
    assert elapsed <= CONNECT + GRACE, f"{argv} took {elapsed:.1f}s"
    if code == 3:
        assert "partitions only broker 1 host could not be seen" in r.stderr, r.stderr


def test_brokers_black_holed_together_cost_one_connect_timeout(run_nozk: Any, kraft: KraftServer) -> None:
    """Brokers 1 and 3 (not bootstrap addresses) accept, answer ApiVersions, then nothing: their log dirs and
    configs are asked for at once, so the two cost one --connect-timeout, not one each."""
    with Proxy(kraft.address(1), freeze_on=kafka_request_other_than_api_versions) as one, \
            Proxy(kraft.address(3), freeze_on=kafka_request_other_than_api_versions) as three:
        kraft.update(lambda s: (setattr(s.brokers[0], "port", one.port), setattr(s.brokers[2], "port", three.port)))
        r, elapsed = timed(run_nozk, "partitions", "check", "-b", kraft.address(2), "--connect-timeout",
                           str(CONNECT))
        assert one.frozen.is_set() and three.frozen.is_set()
    assert r.exit_code == 3, r.stderr
    assert "partitions only brokers 1, 3 host could not be seen" in r.stderr, r.stderr
    assert elapsed <= CONNECT + GRACE, f"took {elapsed:.1f}s"


@pytest.mark.parametrize("delay, code", [(0.3, 0), (CONNECT + 1, 0)], ids=["slow", "slower-than-the-timeout"])
def test_a_slow_first_bootstrap_address(run_nozk: Any, kraft: KraftServer, delay: float, code: int) -> None:
    """Slow answers are answers (slow but within --connect-timeout); slower than that is no answer, and the next
    address answers instead."""
    with Proxy(kraft.address(1), delay=delay) as slow:
        bootstrap = f"{slow.address},{kraft.address(2)}"
        r, elapsed = timed(run_nozk, "brokers", "list", "-b", bootstrap, "--connect-timeout", str(CONNECT))
    assert r.exit_code == code, r.stderr
    assert elapsed <= CONNECT + GRACE, f"took {elapsed:.1f}s"


def test_no_bootstrap_address_answering_is_one_line_naming_each(run_nozk: Any, hung: Hung) -> None:
    with Hung() as other:
        r, elapsed = timed(run_nozk, "brokers", "can-stop", "1", "-b", f"{hung.address},{other.address}",
                           "--connect-timeout", str(CONNECT))
    assert r.exit_code == 4, r.stderr
    line = one_error_line(r.stderr)
    assert f"no bootstrap server answered ({hung.address}, {other.address})" in line, line
    for address in (hung.address, other.address):
        assert f"broker {address} did not answer DescribeCluster within" in line, line
    assert elapsed <= CONNECT + GRACE, f"took {elapsed:.1f}s: every address within one --connect-timeout"


def test_a_write_goes_to_one_address_at_a_time(run_nozk: Any, hung: Hung) -> None:
    """UnregisterBroker is sent once, to the address that answered (DescribeCluster raced past the hung one):
    never to two addresses at once."""
    sc = Scenario.cluster(brokers=3)
    sc.brokers[2].fenced = True
    with KraftServer(sc) as server:
        bootstrap = f"{hung.address},{server.bootstrap('broker')}"
        r, elapsed = timed(run_nozk, "brokers", "unregister", "3", "-b", bootstrap, "--connect-timeout",
                           str(CONNECT))
        assert r.exit_code == 0, r.stderr
        assert [q.body.broker_id for q in server.requests_for(UNREGISTER_BROKER)] == [3]
    assert elapsed <= CONNECT + GRACE


# ------------------------------------------------------------------------------------ TLS handshakes left hanging
@pytest.mark.parametrize("argv, code", [
    (["brokers", "can-stop", "1", "--zk-tls"], 4),
    (["partitions", "check", "--zk-tls"], 3),
    (["brokers", "shutdown", "1", "--timeout", "15", "--zk-tls"], 4),
], ids=["can-stop", "partitions check", "shutdown"])
def test_a_zookeeper_tls_handshake_left_unanswered_costs_the_connect_timeout(
        run_nozk: Any, hung: Hung, argv: list[str], code: int) -> None:
    """The server accepts and never answers the ClientHello: the handshake is bounded like any other wait."""
    r, elapsed = timed(run_nozk, *argv, "-z", hung.address, "--connect-timeout", str(CONNECT))
    assert r.exit_code == code, r.stderr
    line = one_error_line(r.stderr)
    assert hung.address in line and "ZooKeeper" in line, line
    assert hung.accepted.is_set()
    assert elapsed <= CONNECT + GRACE, f"{argv} took {elapsed:.1f}s"


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL", "SASL_PLAINTEXT"])
@pytest.mark.parametrize("argv, code", [
    (["brokers", "can-stop", "1"], 4),
    (["partitions", "check"], 3),
    (["brokers", "drain", "1", "--timeout", "10"], 4),
], ids=["can-stop", "partitions check", "drain"])
def test_a_kafka_tls_or_sasl_handshake_left_unanswered_costs_the_connect_timeout(
        run_nozk: Any, hung: Hung, tmp_path: Path, protocol: str, argv: list[str], code: int) -> None:
    """A broker that accepts and never answers the TLS ClientHello (SSL) or the ApiVersions before the SASL
    handshake: one line naming the address, within --connect-timeout."""
    config = tmp_path / "client.properties"
    sasl = "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule " \
           'required username="u" password="p";\n' if protocol.startswith("SASL") else ""
    config.write_text(f"security.protocol={protocol}\n{sasl}")
    r, elapsed = timed(run_nozk, *argv, "-b", hung.address, "--command-config", str(config),
                       "--connect-timeout", str(CONNECT))
    assert r.exit_code == code, r.stderr
    line = one_error_line(r.stderr)
    assert hung.address in line, line
    assert hung.accepted.is_set()
    assert elapsed <= CONNECT + GRACE, f"{argv} took {elapsed:.1f}s"


# ------------------------------------------------------------------------------------ slow servers (issue 34 §3)
SLOW = CONNECT * 0.4  # every answer this late: connecting (two round trips) and each request within --connect-timeout
TOPICS = 30  # rounds of reads: the old code waited SLOW for each (9-11 s here; at 9 s a request, minutes)


@pytest.mark.parametrize("argv, codes", [
    (["partitions", "check"], {0, 3}),
    (["brokers", "can-stop", "2"], {0, 4}),
    (["brokers", "list"], {0, 4}),
], ids=["partitions check", "can-stop", "list"])
def test_zookeeper_answering_every_request_slowly_cannot_stretch_a_command(
        run_nozk: Any, zk_server: Any, chroot: str, brokers: ThreadedFleet, argv: list[str], codes: set[int]) -> None:
    """A proxy on loopback holds every ZooKeeper answer SLOW seconds, just under --connect-timeout: no wait for an
    answer times out, and the old code ran for as many waits as the command made (a minute and more). Now a
    command without --timeout ends within OVERALL × --connect-timeout plus GRACE: its verdict if it got there,
    else the one line saying its time ran out (exit 4; the check UNKNOWN)."""
    from kadmin.cluster.deadlines import OVERALL

    for n in range(TOPICS):
        brokers.create_topic(f"s{n}", {p: [1, 2, 3] for p in range(3)})
    with Proxy(zk_server.connect_string, delay=SLOW) as slow:
        r, elapsed = timed(run_nozk, *argv, "-z", slow.address + chroot, "--connect-timeout", str(CONNECT))
    assert r.exit_code in codes, r.stderr
    print(f"{argv}: exit {r.exit_code} after {elapsed:.1f} s")
    if r.exit_code:
        # its time ran out; or, on a loaded machine, connecting and checking the chroot (both within one
        # --connect-timeout) outlasted it first: "did not answer within 0.8 s (checking the chroot ...)", the same
        # exit 4, and no later
        assert "the command's deadline passed" in r.stderr or "did not answer within" in r.stderr, r.stderr
    assert elapsed <= OVERALL * CONNECT + GRACE, f"took {elapsed:.1f}s"


@pytest.mark.parametrize("argv", [["partitions", "check"], ["brokers", "can-stop", "2"], ["brokers", "list"],
                                  ["quorum", "check"]], ids=["partitions check", "can-stop", "list", "quorum check"])
def test_a_bootstrap_server_answering_every_request_slowly_cannot_stretch_a_command(
        run_nozk: Any, kraft: KraftServer, argv: list[str]) -> None:
    """The same with the only bootstrap address behind the slow proxy (KRaft): within OVERALL × --connect-timeout
    plus GRACE, whatever the number of requests."""
    from kadmin.cluster.deadlines import OVERALL

    with Proxy(kraft.address(1), delay=CONNECT / 4) as slow:  # connecting takes three round trips
        r, elapsed = timed(run_nozk, *argv, "-b", slow.address, "--connect-timeout", str(CONNECT))
    print(f"{argv}: exit {r.exit_code} after {elapsed:.1f} s")
    if r.exit_code:
        # its time ran out; or, on a loaded machine, the first request (connecting and its answer, each round trip
        # held CONNECT / 4 by the proxy, all within its own bound, --connect-timeout) outlasted that bound first:
        # "did not answer DescribeCluster within 2 s", the same exit 4, and no later (run 32 of the suite); the
        # ZooKeeper case above allows the same
        assert r.exit_code == 4, r.stderr
        assert "the command's deadline passed" in r.stderr or "did not answer" in r.stderr, r.stderr
    assert elapsed <= OVERALL * CONNECT + GRACE, f"took {elapsed:.1f}s ({r.exit_code}: {r.stderr})"


SPINNER = """
import threading
def spin():
    while True:
        pass
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
print("spinning", flush=True)
spin()
"""


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL], ids=["stop", "kill"])
def test_a_signal_to_a_real_server_has_taken_hold_of_every_thread_when_signalled_returns(sig: int) -> None:
    """tests/support/hung.py's `signalled`, which the real-Kafka freezes rely on: five threads busy on the CPU are
    each stopped (or gone) by the time it returns, not only sent the signal (a running thread ran on for a while
    after kill() returned, and answered a request, in CI's run of stop 46)."""
    proc = subprocess.Popen([sys.executable, "-c", SPINNER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "spinning\n"
        signalled(proc.pid, sig)
        states = thread_states(proc.pid)
        if sig == signal.SIGSTOP:
            assert states is not None and len(states) == 5 and set(states) <= {"T", "t"}, states
        else:
            assert states is None or set(states) <= {"Z", "X"}, states
    finally:
        proc.kill()  # a SIGKILL ends a stopped process too
        proc.wait(30)
