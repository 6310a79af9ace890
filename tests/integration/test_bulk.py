"""BulkReader (kadmin.cluster.bulk) and BulkWriter (kadmin.sandbox.bulk_writer), checked against kazoo."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.security import make_digest_acl

from kadmin.cluster.bulk import BulkReader, client_ssl_context, parse_hosts
from kadmin.domain.models import Stat
from kadmin.errors import AuthFailed, ClusterUnreachable, KadminError, NotFound
from kadmin.sandbox.bulk_writer import BulkWriter
from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble, ZkServer

pytestmark = pytest.mark.integration


# ---------------------------------------------------------------------------- helpers
def kazoo(connect_string: str, chroot: str = "", **kw) -> KazooClient:
    """A started kazoo client on `chroot` (created first when missing)."""
    if chroot:
        root = KazooClient(hosts=connect_string, **kw)
        root.start(timeout=15)
        root.ensure_path(chroot)
        root.stop()
        root.close()
    zk = KazooClient(hosts=connect_string + chroot, **kw)
    zk.start(timeout=15)
    return zk


def kazoo_read(zk: KazooClient, paths: list[str]) -> list[tuple[str, bytes | None, Stat | None]]:
    out: list[tuple[str, bytes | None, Stat | None]] = []
    for p, a in [(p, zk.get_async(p)) for p in paths]:
        try:
            data, stat = a.get(timeout=15)
        except NoNodeError:
            out.append((p, None, None))
        else:
            out.append((p, data, Stat(*stat)))
    return out


def payload(i: int) -> bytes | None:
    """Null, empty, short and multi-KiB data, binary included."""
    kind = i % 5
    if kind == 0:
        return None
    if kind == 1:
        return b""
    if kind == 2:
        return bytes(range(256)) * (1 + i % 9)
    return f'{{"n":{i},"pad":"{"x" * (i % 300)}"}}'.encode()


def tree(prefix: str, n: int, per_dir: int = 100) -> list[tuple[str, bytes | None]]:
    """`prefix`, then directories of `per_dir` leaves each: parents before children."""
    items: list[tuple[str, bytes | None]] = [(prefix, None)]
    for i in range(n):
        if i % per_dir == 0:
            items.append((f"{prefix}/d{i // per_dir}", b"dir"))
        items.append((f"{prefix}/d{i // per_dir}/n{i}", payload(i)))
    return items


@pytest.fixture
def hosts(zk_server: Ensemble) -> list[tuple[str, int]]:
    return zk_server.hosts


@pytest.fixture
def kz(zk_server: Ensemble, chroot: str) -> Iterator[KazooClient]:
    zk = kazoo(zk_server.connect_string, chroot)
    yield zk
    zk.stop()
    zk.close()


# ---------------------------------------------------------------------------- 1. same as kazoo
def test_get_many_matches_kazoo_in_order_under_a_chroot(fleet, zk_server, chroot, hosts):
    fleet.create_topic("orders", {p: [1, 2, 3] for p in range(20)})
    with BulkWriter(hosts, chroot=chroot) as w:
        items = tree("/bulk", 3000)
        assert w.create_many(items) == len(items)
    kz = kazoo(zk_server.connect_string, chroot)
    try:
        for i in range(0, 3000, 300):  # versions > 0, mzxid != czxid
            kz.set(f"/bulk/d{i // 100}/n{i}", b"v2-%d" % i)
        paths = [p for p, _ in items]
        paths.insert(1500, "/bulk/missing")
        paths += ["/brokers/topics/orders"] + [f"/brokers/topics/orders/partitions/{p}/state" for p in range(20)]
        paths += ["/", "/brokers/ids", "/nope/deeper"]
        expected = kazoo_read(kz, paths)
    finally:
        kz.stop()
        kz.close()

    with BulkReader(hosts, chroot=chroot, window=100) as r:
        got = list(r.get_many(paths))
        assert r.failovers == 0
    assert [p for p, _, _ in got] == paths
    assert got == expected
    assert got[1500] == ("/bulk/missing", None, None)
    by_path = {p: (d, s) for p, d, s in got}
    assert by_path["/bulk/d0/n0"][1].version == 1 and by_path["/bulk/d0/n0"][0] == b"v2-0"
    assert by_path["/bulk/d0/n1"][1].version == 0 and by_path["/bulk/d0/n1"][1].data_length == 0
    assert by_path["/"][1].num_children > 2  # "/" is the chroot itself
    state = by_path["/brokers/topics/orders/partitions/0/state"]
    assert b'"leader"' in state[0] and state[1].czxid > 0


def test_children_matches_kazoo_and_missing_is_not_found(kz, hosts, chroot):
    with BulkWriter(hosts, chroot=chroot) as w:
        w.create_many(tree("/c", 250, per_dir=250))
    with BulkReader(hosts, chroot=chroot) as r:
        assert sorted(r.children("/c/d0")) == sorted(kz.get_children("/c/d0"))
        assert len(r.children("/c/d0")) == 250
        assert sorted(r.children("/")) == sorted(kz.get_children("/"))
        with pytest.raises(NotFound, match="/c/nope"):
            r.children("/c/nope")


# ---------------------------------------------------------------------------- 2. streaming
def test_get_many_streams_a_lazy_input_with_a_bounded_window(kz, hosts, chroot):
    items = tree("/s", 2000)
    with BulkWriter(hosts, chroot=chroot) as w:
        w.create_many(items)
    paths = [p for p, _ in items]
    consumed = 0

    def lazy() -> Iterator[str]:
        nonlocal consumed
        for p in paths:
            consumed += 1
            yield p

    window = 50
    with BulkReader(hosts, chroot=chroot, window=window) as r:
        it = r.get_many(lazy())
        assert consumed == 0  # a generator: nothing is read before the first next()
        first = next(it)
        assert first[0] == paths[0] and first[2] is not None
        assert consumed <= 2 * window < len(paths)  # the first result came before the input ran out
        n, ahead = 1, consumed - 1
        for _ in it:
            n += 1
            ahead = max(ahead, consumed - n)
        assert n == len(paths) and consumed == len(paths)
        assert ahead <= 2 * window  # never more than the window (plus one decoded batch) buffered

        # An abandoned scan leaves replies in flight; the next one skips them.
        part = r.get_many(paths)
        assert [next(part)[0] for _ in range(10)] == paths[:10]
        part.close()
        assert [p for p, _, _ in r.get_many(paths[-300:])] == paths[-300:]


# ---------------------------------------------------------------------------- 3. digest auth
def test_digest_acl_needs_auth(zk_server, chroot, hosts):
    acl = make_digest_acl("alice", "s3cret", all=True)
    zk = kazoo(zk_server.connect_string, chroot, auth_data=[("digest", "alice:s3cret")])
    try:
        zk.create("/secret", b"top", acl=[acl])
        for i in range(300):
            zk.create_async(f"/secret/k{i}", b"v%d" % i, acl=[acl])
        zk.create("/open", b"anyone")
        paths = ["/open", "/secret"] + [f"/secret/k{i}" for i in range(300)]
        expected = kazoo_read(zk, paths)
    finally:
        zk.stop()
        zk.close()

    with BulkReader(hosts, chroot=chroot, auth=[("digest", "alice:s3cret")]) as r:
        assert list(r.get_many(paths)) == expected
        assert len(r.children("/secret")) == 300
    for auth in ([], [("digest", "alice:wrong")]):
        with BulkReader(hosts, chroot=chroot, auth=auth) as r:
            it = r.get_many(paths)
            assert next(it)[1] == b"anyone"
            with pytest.raises(AuthFailed, match="not authorized to read /secret "):
                next(it)
            with pytest.raises(AuthFailed):
                r.children("/secret")
            assert next(r.get_many(["/open"]))[1] == b"anyone"  # the session is still usable


# ---------------------------------------------------------------------------- 4. TLS
@pytest.fixture(scope="module")
def tls_server(tls_zk):
    return tls_zk


def test_tls(tls_server, certs, chroot):
    server, secure = tls_server
    plain = [("127.0.0.1", server.client_port)]
    items = tree("/tls", 1500)
    with BulkWriter(plain, chroot="") as w:
        w.create_many([(chroot, None)])
    with BulkWriter([("127.0.0.1", secure)], chroot=chroot, ssl_context=ssl.create_default_context(
            cafile=str(certs / "ca.pem"))) as w:
        assert w.create_many(items) == len(items)  # over TLS too
    zk = kazoo(server.address, chroot)
    try:
        paths = [p for p, _ in items] + ["/tls/none"]
        expected = kazoo_read(zk, paths)
    finally:
        zk.stop()
        zk.close()
    ctx = client_ssl_context(str(certs / "ca.pem"))  # what --zk-tls --zk-tls-ca would build
    with BulkReader([("127.0.0.1", secure)], chroot=chroot, ssl_context=ctx, window=500) as r:
        assert list(r.get_many(paths)) == expected
        assert sorted(r.children("/tls/d0")) == sorted(p.rsplit("/", 1)[1] for p, _ in items[2:102])

    wrong = client_ssl_context(str(certs / "other-ca.pem"))
    began = time.monotonic()
    with pytest.raises(ClusterUnreachable, match="TLS certificate refused .*certificate verify failed"):
        # A refused certificate is the answer at once, not retried until a handshake cut short by the deadline
        # says "timed out" instead (what a busy CI machine once showed).
        BulkReader([("127.0.0.1", secure)], ssl_context=wrong, timeout=60)
    assert time.monotonic() - began < 30
    with pytest.raises(ClusterUnreachable, match=r"no member answered within 1\.5s"):  # gave up at its deadline
        BulkReader([("127.0.0.1", secure)], timeout=1.5)  # plain ZooKeeper protocol to a TLS port


# ---------------------------------------------------------------------------- 5. failover
@pytest.mark.parametrize("role", ["follower", "leader"])
def test_failover_when_the_connected_member_dies(ensemble, chroot, role):
    n = 20_000
    items = [(chroot, None), (f"{chroot}/f", None)] + [(f"{chroot}/f/n{i:05d}", b"data-%d" % i) for i in range(n)]
    with BulkWriter(ensemble.hosts, timeout=20) as w:
        assert w.create_many(items) == len(items)
    paths = [f"/f/n{i:05d}" for i in range(n)]
    # The reader starts with the first member listed: put one in the role under test first.
    members = sorted(ensemble.servers, key=lambda s: (s.mode() == "leader") == (role == "follower"))
    assert members[0].mode() == role

    got: list[tuple[str, bytes | None]] = []
    killed: ZkServer | None = None
    with BulkReader([("127.0.0.1", s.client_port) for s in members], chroot=chroot, timeout=20) as r:
        for i, (p, data, stat) in enumerate(r.get_many(paths)):
            got.append((p, data))
            assert stat is not None
            if i == 5_000:
                port = r.connected_to[1]
                killed = next(s for s in ensemble.servers if s.client_port == port)
                assert killed is members[0]
                killed.kill()
        assert killed is not None and r.failovers >= 1
        assert r.connected_to[1] != killed.client_port
    try:
        assert len(got) == n
        assert [p for p, _ in got] == paths  # every path exactly once, in order
        assert all(d == b"data-%d" % i for i, (_, d) in enumerate(got))
    finally:
        killed.write_config()
        killed.start()
        ensemble.wait_ready(60)


# ---------------------------------------------------------------------------- 6. unreachable
def test_unreachable_hosts_fail_within_the_timeout():
    assert parse_hosts("127.0.0.1:1,zk2,[::1]:3") == [("127.0.0.1", 1), ("zk2", 2181), ("::1", 3)]
    backoffs: list[float] = []

    def sleep(s: float) -> None:
        backoffs.append(s)
        time.sleep(s)

    t0 = time.monotonic()
    with pytest.raises(ClusterUnreachable) as e:
        BulkReader([("127.0.0.1", free_port()), ("127.0.0.1", free_port())], timeout=1.5, sleep=sleep)
    assert time.monotonic() - t0 >= 1.5  # refused at once, tried again and again until the deadline
    assert all(0 < b <= 0.5 for b in backoffs)  # a short, capped backoff between rounds of refusals
    assert "cannot reach" in e.value.message and "\n" not in e.value.message

    # A member that accepts TCP connections but never answers (a listener that never accept()s).
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        with pytest.raises(ClusterUnreachable, match=r"no member answered within 1\.5s"):
            BulkWriter([silent.getsockname()], timeout=1.5)


# ---------------------------------------------------------------------------- 7. writer
def test_bulk_writer_creates_what_kazoo_reads_and_skips_existing(kz, hosts, chroot):
    items = tree("/w", 600)
    with BulkWriter(hosts, chroot=chroot, window=64) as w:
        assert w.create_many(items) == len(items)
        assert (w.created, w.skipped) == (len(items), 0)
        for p, data in items:
            got, _ = kz.get(p)
            assert got == data, p
        more = items[: len(items) // 2] + [("/w/extra", b"x"), ("/w/extra/y", None)]
        assert w.create_many(iter(more)) == 2
        assert w.skipped == len(items) // 2
        assert kz.get("/w/extra")[0] == b"x" and kz.exists("/w/extra/y") is not None
        with pytest.raises(KadminError, match=r"create /w/no/parent .*failed.*-101"):
            w.create_many([("/w/ok", None), ("/w/no/parent", b"")])
        assert kz.exists("/w/ok") is not None
