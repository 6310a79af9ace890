"""What kadmin says when it cannot reach a cluster through the Kafka protocol (issue 35 §5): the reason in words,
as the ZooKeeper path says it ("refused the connection", "does not resolve"), on one line of stderr with exit 4;
never a library's class name (`KafkaConnectionError`, `NodeNotReadyError`) or errno symbol (`ECONNREFUSED`).

Port 1 on loopback refuses connections; a `.invalid` name never resolves (RFC 6761); a loopback server that
accepts and never answers is a hung broker. No real Kafka is needed here.
"""

from __future__ import annotations

import json
import re

import pytest

from kadmin.exit_codes import ExitCode

REFUSING = "127.0.0.1:1"
UNRESOLVABLE = "no-such-broker.invalid:9092"
# a class name (`KafkaConnectionError`, `KazooTimeoutError`, `OSError`, `Exception`) or an errno symbol
LIBRARY_WORDS = re.compile(r"[A-Za-z]*(Error|Exception)\b|Kafka[A-Z]\w*|\bE[A-Z]{4,}\b")


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert not LIBRARY_WORDS.search(lines[0]), lines[0]
    return lines[0]


@pytest.mark.parametrize("argv", [
    ("brokers", "list", "--bootstrap-server", REFUSING),
    ("partitions", "list", "--bootstrap-server", REFUSING),
    ("quorum", "describe", "--status", "--bootstrap-controller", REFUSING),
])
def test_a_refused_connection_says_so_in_words(run_nozk, argv):  # type: ignore[no-untyped-def]
    r = run_nozk(*argv, "--connect-timeout", "5")
    assert r.exit_code == ExitCode.UNREACHABLE, r.stderr
    line = one_line(r.stderr)
    assert line.startswith("kadmin: error: no bootstrap "), line
    assert f"cannot reach {REFUSING}: it refused the connection" in line, line


def test_a_name_that_does_not_resolve_says_so_in_words(run_nozk):  # type: ignore[no-untyped-def]
    r = run_nozk("brokers", "list", "--bootstrap-server", UNRESOLVABLE, "--connect-timeout", "5")
    assert r.exit_code == ExitCode.UNREACHABLE, r.stderr
    line = one_line(r.stderr)
    assert f"cannot reach {UNRESOLVABLE}: the name no-such-broker.invalid does not resolve" in line, line


def test_each_bootstrap_address_gets_its_own_reason(run_nozk):  # type: ignore[no-untyped-def]
    r = run_nozk("brokers", "list", "--bootstrap-server", f"{REFUSING},{UNRESOLVABLE}", "--connect-timeout", "5")
    assert r.exit_code == ExitCode.UNREACHABLE, r.stderr
    line = one_line(r.stderr)
    assert "it refused the connection" in line and "does not resolve" in line, line


def test_the_json_error_says_the_same_words(run_nozk):  # type: ignore[no-untyped-def]
    r = run_nozk("brokers", "list", "--bootstrap-server", REFUSING, "--connect-timeout", "5", "-o", "json")
    assert r.exit_code == ExitCode.UNREACHABLE, r.stderr
    (err,) = json.loads(r.stdout)["errors"]
    assert err["code"] == "unreachable" and "it refused the connection" in err["message"], err
    assert not LIBRARY_WORDS.search(err["message"]), err


def test_a_broker_that_never_answers_is_named_with_the_time_waited(run_nozk, hung):  # type: ignore[no-untyped-def]
    r = run_nozk("brokers", "list", "--bootstrap-server", hung.address, "--connect-timeout", "1")
    assert r.exit_code == ExitCode.UNREACHABLE, r.stderr
    line = one_line(r.stderr)
    assert f"broker {hung.address} did not answer" in line, line


def test_zookeeper_says_the_same_words(run_nozk):  # type: ignore[no-untyped-def]
    """The wording the Kafka path matches: ZooKeeper's own (kadmin/cluster/zookeeper/session.py)."""
    r = run_nozk("brokers", "list", "--zookeeper", REFUSING, "--connect-timeout", "5")
    assert r.exit_code == ExitCode.UNREACHABLE and "refused the connection" in one_line(r.stderr), r.stderr
    r = run_nozk("brokers", "list", "--zookeeper", "no-such-zk.invalid:2181", "--connect-timeout", "5")
    assert r.exit_code == ExitCode.UNREACHABLE and "does not resolve" in one_line(r.stderr), r.stderr


def test_requests_made_at_once_each_say_the_refusal() -> None:
    """A scan reads the live brokers, its pages and the reassignments at once, on threads, over one connection per
    address. The first attempt's refusal puts the address in kafka-python's reconnect backoff, and the requests
    behind it were told "not ready" (13 of 30 `partitions list` runs beside a CPU hog said only that): each now
    tries again after the backoff and says why it could not connect."""
    from kafka.protocol.admin.cluster import DescribeClusterRequest

    from kadmin.cluster.kraft import KraftClient, all_at_once
    from kadmin.errors import ClusterUnreachable

    def ask(client: KraftClient) -> str:
        try:
            client.send_any(lambda: DescribeClusterRequest(include_cluster_authorized_operations=False))
        except ClusterUnreachable as e:
            return e.message
        return "answered"

    for _ in range(3):
        client = KraftClient(REFUSING, {}, 5.0, controllers=False)
        try:
            said = all_at_once([lambda c=client: ask(c) for _ in range(8)])
        finally:
            client.close()
        assert all(f"cannot reach {REFUSING}: it refused the connection" in s for s in said), said


def test_asking_a_refusing_address_again_and_again_does_not_wait_out_the_growing_backoff() -> None:
    """... but only kafka-python's first backoff is waited out (NOT_READY_RETRY): an address refused again and
    again (a broker down, polled by a gate or a roll) backs off for longer each time, up to 30 s, and waiting that
    out made eight requests in a row take 6.3 s instead of ~0.2 s. They fail as at once as before."""
    from kafka.protocol.admin.cluster import DescribeClusterRequest

    from kadmin.cluster.kraft import NOT_READY_RETRY, KraftClient
    from kadmin.errors import ClusterUnreachable
    from tests.support.hung import timed

    client = KraftClient(REFUSING, {}, 5.0, controllers=False)

    def ask() -> None:
        with pytest.raises(ClusterUnreachable):
            client.send_to(REFUSING, DescribeClusterRequest(include_cluster_authorized_operations=False))

    try:
        took = [timed(ask)[1] for _ in range(8)]
    finally:
        client.close()
    assert sum(took) < 8 * NOT_READY_RETRY + 1.0, took  # waited out in full: 6.3 s
