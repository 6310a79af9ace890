"""kadmin.cluster.ensemble: four-letter-word probes against real ZooKeeper 3.8 servers.

The session's 3-node `ensemble` is shared with other modules: a test that kills a member starts it
again and waits for the quorum in a `finally`.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kadmin.cluster.bulk import client_ssl_context
from kadmin.cluster.ensemble import (
    MemberProbe,
    member_addresses,
    parse_conf,
    parse_mntr,
    parse_srvr,
    probe_ensemble,
    probe_member,
    read_four_letter_word,
    whitelist_message,
    zxid_counter,
    zxid_epoch,
)
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble, ZkServer

pytestmark = pytest.mark.integration


# ---------------------------------------------------------------------------- helpers
def write_something(hosts: Sequence[tuple[str, int]]) -> None:
    """One create and one delete through kazoo (plus its session's own transactions)."""
    zk = KazooClient(hosts=",".join(f"{h}:{p}" for h, p in hosts))
    zk.start(timeout=15)
    try:
        path = f"/kadmin-ensemble-{uuid.uuid4().hex[:10]}"
        zk.create(path, b"x")
        zk.delete(path)
    finally:
        zk.stop()
        zk.close()


def wait_for(
    hosts: Sequence[tuple[str, int]], cond: Callable[[list[MemberProbe]], bool], timeout: float = 30.0
) -> list[MemberProbe]:
    deadline = time.monotonic() + timeout
    while True:
        probes = probe_ensemble(hosts, timeout=1.0)
        if cond(probes):
            return probes
        assert time.monotonic() < deadline, f"condition not met; last probes: {probes}"
        time.sleep(0.05)


def settled(probes: list[MemberProbe]) -> bool:
    """Every member serving, one leader, and every member at the same zxid."""
    return (
        all(p.serving for p in probes)
        and [p.mode for p in probes].count("leader") == 1
        and len({p.zxid for p in probes}) == 1
    )


@contextmanager
def restarting(ensemble: Ensemble, srv: ZkServer) -> Iterator[None]:
    """Start `srv` again (it was killed in the block) and wait for the whole quorum."""
    try:
        yield
    finally:
        if not srv.alive():
            srv.write_config()
            srv.start()
        ensemble.wait_ready(60)
        wait_for(ensemble.hosts, lambda ps: all(p.serving for p in ps), timeout=60)


def by_address(ensemble: Ensemble) -> dict[str, ZkServer]:
    return {s.address: s for s in ensemble.servers}


def wait_serving(
    host: str, port: int, cond: Callable[[MemberProbe], bool] = lambda q: q.serving, timeout: float = 30.0
) -> MemberProbe:
    deadline = time.monotonic() + timeout
    while True:
        p = probe_member(host, port, timeout=1.0)
        if cond(p):
            return p
        assert time.monotonic() < deadline, f"server never got there: {p}"
        time.sleep(0.05)


# ---------------------------------------------------------------------------- parsers (the notes' exact outputs)
LEADER_SRVR = """Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC
Latency min/avg/max: 5/8.0/11
Received: 15
Sent: 17
Connections: 1
Outstanding: 0
Zxid: 0x100000006
Mode: leader
Node count: 5
Proposal sizes last/min/max: 48/48/48
"""

CONF = """clientPort=52631
secureClientPort=-1
serverId=1
peerType=0
membership:\x20
server.1=127.0.0.1:46041:52689:participant
server.2=127.0.0.1:59017:33699:participant;127.0.0.1:2182
server.4=[::1]:1:2|10.0.0.4:1:2:observer;0.0.0.0:2181
version=0"""


def test_parsers_on_the_documented_formats() -> None:
    srvr = parse_srvr(LEADER_SRVR)
    assert srvr["Zxid"] == "0x100000006" and srvr["Mode"] == "leader" and srvr["Latency min/avg/max"] == "5/8.0/11"
    conf, members = parse_conf(CONF)
    assert conf["serverId"] == "1" and conf["version"] == "0" and "membership:" not in conf
    assert conf["server.2"] == "127.0.0.1:59017:33699:participant;127.0.0.1:2182"
    assert members == {1: "participant", 2: "participant", 4: "observer"}
    assert parse_conf("clientPort=1\nserverId=0") == ({"clientPort": "1", "serverId": "0"}, {})
    # no client port: the host only; a wildcard client host: each quorum host at the client port
    assert member_addresses(conf) == {1: ("127.0.0.1",), 2: ("127.0.0.1:2182",), 4: ("[::1]:2181", "10.0.0.4:2181")}
    assert member_addresses({"server.7": "ZK7.Example:1:2;2181", "server.8": "zk8:1:2:participant;10.1.1.8:2181",
                             "server.x": "zk9:1:2", "clientPort": "2181"}) == {
        7: ("zk7.example:2181",), 8: ("zk8:2181", "10.1.1.8:2181")}
    assert parse_mntr("zk_version\t3.8.0, built on x\nzk_server_state\tleader\n") == {
        "zk_version": "3.8.0, built on x",
        "zk_server_state": "leader",
    }
    assert zxid_epoch(0x100000006) == 1 and zxid_counter(0x100000006) == 6
    assert zxid_epoch(0x2FFFFFFFF) == 2 and zxid_counter(0x2FFFFFFFF) == 0xFFFFFFFF
    assert whitelist_message("h:1", []) is None
    assert whitelist_message("h:1", ["mntr", "conf"]) == (
        "h:1 does not allow the four-letter words conf, mntr: add them to 4lw.commands.whitelist in zoo.cfg "
        "(e.g. 4lw.commands.whitelist=srvr,conf,mntr)"
    )
    assert whitelist_message("h:1", ["mntr"]) == (
        "h:1 does not allow the four-letter word mntr: add it to 4lw.commands.whitelist in zoo.cfg "
        "(e.g. 4lw.commands.whitelist=srvr,conf,mntr)"
    )


# ---------------------------------------------------------------------------- a healthy ensemble
def test_roles_ids_members_and_equal_zxids(ensemble: Ensemble) -> None:
    write_something(ensemble.hosts)
    probes = wait_for(ensemble.hosts, settled)
    servers = by_address(ensemble)

    assert sorted(p.mode or "" for p in probes) == ["follower", "follower", "leader"]
    assert [p.address for p in probes] == [s.address for s in ensemble.servers]
    for p in probes:
        srv = servers[p.address]
        assert p.reachable and p.error is None and p.not_whitelisted == ()
        assert p.server_id == srv.myid
        assert p.members == {1: "participant", 2: "participant", 3: "participant"}
        # where clients reach each member, from the server.N lines (the sandbox writes their client addresses)
        assert p.member_addresses == {s.myid: (s.address,) for s in ensemble.servers}
        assert p.conf["clientPort"] == str(srv.client_port)
        assert p.mntr["zk_server_state"] == p.mode
        assert p.mntr["zk_quorum_size"] == "3"
        assert p.version is not None and p.version.startswith("3.8.")
        assert p.outstanding == 0 and p.node_count is not None and p.node_count >= 5
        assert p.latency_min_ms is not None and p.latency_avg_ms is not None and p.latency_max_ms is not None
        assert p.latency_min_ms <= p.latency_avg_ms <= p.latency_max_ms
    assert {p.server_id for p in probes} == {1, 2, 3}
    zxid = probes[0].zxid
    assert zxid is not None and zxid_epoch(zxid) >= 1 and zxid_counter(zxid) > 0
    leader = next(p for p in probes if p.mode == "leader")
    assert leader.mntr["zk_synced_followers"] == "2"


def test_standalone_and_whole_mntr(zk_server: Ensemble) -> None:
    host, port = zk_server.hosts[0]
    p = probe_member(host, port)
    assert p.reachable and p.error is None and p.mode == "standalone"
    assert p.server_id == 0 and p.members == {} and "membership:" not in p.conf
    assert p.zxid is not None and p.node_count is not None and p.node_count >= 5

    raw = read_four_letter_word(host, port, "mntr")
    assert len(raw.encode()) > 8192  # kazoo's command() would have stopped at 8192 bytes
    lines = raw.splitlines()
    assert len(p.mntr) == len(lines) > 400
    last_key = lines[-1].split("\t", 1)[0]
    assert last_key in p.mntr
    assert p.mntr["zk_server_state"] == "standalone"


# ---------------------------------------------------------------------------- dead, hung and lost members
def test_killed_follower_is_unreachable_at_once(ensemble: Ensemble) -> None:
    write_something(ensemble.hosts)  # a fresh ensemble's followers show zxid 0 until the first write
    probes = wait_for(ensemble.hosts, settled)
    victim = by_address(ensemble)[next(p.address for p in probes if p.mode == "follower")]
    with restarting(ensemble, victim):
        victim.kill()
        probes = probe_ensemble(ensemble.hosts, timeout=2.0)
        dead = next(p for p in probes if p.address == victim.address)
        # refused at once, not waited out: "timed out" would say the timeout was spent on it
        assert not dead.reachable and dead.error == "connection refused" and dead.mode is None
        assert dead.zxid is None and dead.mntr == {} and dead.conf == {}
        others = [p for p in probes if p is not dead]
        assert sorted(p.mode or "" for p in others) == ["follower", "leader"]
        assert all(p.error is None for p in others)


@pytest.fixture
def black_holes() -> Iterator[list[tuple[str, int]]]:
    """Two listening sockets that never accept: the kernel completes the TCP handshake, nobody answers
    (a frozen JVM looks the same)."""
    socks = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        socks.append(s)
    yield [("127.0.0.1", s.getsockname()[1]) for s in socks]
    for s in socks:
        s.close()


def test_hung_members_time_out(ensemble: Ensemble, black_holes: list[tuple[str, int]]) -> None:
    probes = probe_ensemble([*ensemble.hosts, *black_holes], timeout=1.0)
    assert [p.reachable for p in probes] == [True, True, True, False, False]
    assert all(p.error == "timed out" and p.mode is None for p in probes[3:])
    assert all(p.serving for p in probes[:3])


def test_hung_members_are_waited_for_at_once(ensemble: Ensemble) -> None:
    """Two hung members cost one timeout, not two: both are asked before either answers.

    Seen without a clock: two listeners that accept and never answer, until each holds an open
    connection at the same moment; then they hang up. A serial probe would sit out its whole timeout
    on the first before it connected to the second, and this test would fail."""
    listeners = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        listeners.append(s)
    both_open = threading.Event()

    def peer_open(c: socket.socket) -> bool:
        c.setblocking(False)
        try:
            while c.recv(4096):  # the request, then nothing more: EOF means the prober gave up
                pass
            return False
        except BlockingIOError:
            return True

    def hold() -> None:
        conns = [lst.accept()[0] for lst in listeners]  # in turn: a serial prober reaches the second late
        if all(peer_open(c) for c in conns):
            both_open.set()
        for c in conns:
            c.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        probes = probe_ensemble([*ensemble.hosts, *(lst.getsockname() for lst in listeners)], timeout=120.0)
        holder.join(120)
        assert both_open.is_set()
        assert all(p.serving for p in probes[:3]) and not any(p.serving for p in probes[3:])
    finally:
        for lst in listeners:
            lst.close()


def test_killed_leader_is_replaced_with_a_greater_epoch(ensemble: Ensemble) -> None:
    write_something(ensemble.hosts)
    before = wait_for(ensemble.hosts, settled)
    old = next(p for p in before if p.mode == "leader")
    assert old.zxid is not None
    victim = by_address(ensemble)[old.address]
    rest = [h for h, s in zip(ensemble.hosts, ensemble.servers, strict=True) if s is not victim]
    with restarting(ensemble, victim):
        victim.kill()
        wait_for(rest, lambda ps: sorted(p.mode or "" for p in ps) == ["follower", "leader"])
        write_something(rest)  # the new epoch shows in zxids once something is written
        after = wait_for(rest, settled)
        new = next(p for p in after if p.mode == "leader")
        assert new.address != old.address
        assert new.zxid is not None and zxid_epoch(new.zxid) > zxid_epoch(old.zxid)
        assert probe_member("127.0.0.1", victim.client_port, timeout=1.0).reachable is False


def test_member_without_quorum_is_reachable_but_not_serving(tmp_path: Path) -> None:
    """A member of a 3-server ensemble whose peers never start: up, answering, not serving."""
    peers = [(i, free_port(), free_port()) for i in (1, 2, 3)]
    srv = ZkServer(tmp_path / "lonely", free_port(), myid=1, peers=peers, tick_ms=250)
    srv.write_config()
    srv.start()
    try:
        p = wait_serving("127.0.0.1", srv.client_port, cond=lambda q: q.reachable)
        assert p.error == "not currently serving requests"
        assert p.mode is None and p.zxid is None and p.server_id is None and not p.serving
    finally:
        srv.stop()


# ---------------------------------------------------------------------------- whitelist and TLS
def test_srvr_only_whitelist(tmp_path: Path) -> None:
    srv = ZkServer(tmp_path / "wl", free_port(), tick_ms=250, extra_cfg={"4lw.commands.whitelist": "srvr"})
    srv.write_config()
    # write_config puts `4lw.commands.whitelist=*` first and extra_cfg after it: ZooKeeper loads zoo.cfg
    # with java.util.Properties, where the later duplicate key wins (checked below by the answers).
    cfg = srv.cfg_path.read_text().splitlines()
    assert [line for line in cfg if line.startswith("4lw.")][-1] == "4lw.commands.whitelist=srvr"
    srv.start()
    try:
        p = wait_serving("127.0.0.1", srv.client_port)
        assert p.not_whitelisted == ("conf", "mntr")
        assert p.mode == "standalone" and p.error is None
        assert p.zxid == 0 and p.outstanding == 0 and p.node_count == 5 and p.latency_avg_ms is not None
        assert p.mntr == {} and p.conf == {} and p.members == {} and p.server_id is None
        assert read_four_letter_word("127.0.0.1", srv.client_port, "conf") == (
            "conf is not executed because it is not in the whitelist.\n"
        )
        msg = whitelist_message(p.address, p.not_whitelisted)
        assert msg == (
            f"{p.address} does not allow the four-letter words conf, mntr: add them to 4lw.commands.whitelist "
            "in zoo.cfg (e.g. 4lw.commands.whitelist=srvr,conf,mntr)"
        )
    finally:
        srv.stop()


def test_tls_client_port(tls_zk: tuple[ZkServer, int], certs: Path) -> None:
    srv, secure = tls_zk
    p = probe_member("127.0.0.1", secure, tls=client_ssl_context(ca=str(certs / "ca.pem")))
    assert p.error is None and p.mode == "standalone" and p.server_id == 0
    assert p.conf["secureClientPort"] == str(secure) and "zk_server_state" in p.mntr

    wrong = probe_member("127.0.0.1", secure, timeout=2.0, tls=client_ssl_context(ca=str(certs / "other-ca.pem")))
    assert not wrong.reachable and wrong.error is not None and wrong.error.startswith("TLS: ")
