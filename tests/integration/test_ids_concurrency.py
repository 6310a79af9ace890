"""`kadmin ids claim` under real concurrency: separate processes racing on one ZooKeeper, and SIGKILLs.

A claim reads the state, decides, and writes ONE multi: setData(/brokers/hosts, version-checked),
setData(/brokers/seqid, version-checked) for a new id, and create/setData /brokers/hosts/<host>.
Every multi bumps /brokers/hosts, so committed claims are totally ordered and each one decided on
the complete state left by the previous one. From that, with nothing else writing these znodes:

- distinct hosts get distinct ids, and the new ids are exactly 1001..1000+V where V is the number
  of /brokers/seqid versions consumed (each bump is paired, in the same multi, with the mapping of
  the id it produced; a mapping is never rewritten here because no mapped id is registered from
  another host);
- claims for one host agree;
- a SIGKILLed claim leaves nothing or its complete multi, never a mapping without its seqid bump
  or the reverse, so the invariants above hold after every kill.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from kadmin.sandbox.fleet import BrokerSpec, ThreadedFleet
from kadmin.sandbox.zkserver import Ensemble

pytestmark = pytest.mark.integration

HOSTS = "/brokers/hosts"
SEQID = "/brokers/seqid"
RESERVED = 1000
TIMEOUT = 120


# ---------------------------------------------------------------------------- helpers
def kadmin(zk: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "kadmin", *args, "-z", zk]


def spawn(zk: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(kadmin(zk, *args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@dataclass
class Outcome:
    host: str
    rc: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict[str, Any]:
        doc = json.loads(self.stdout)
        assert doc["command"] == "ids claim" and doc["status"] == "success" and doc["exit_code"] == 0, doc
        return doc["data"]

    def why(self) -> str:
        return f"{self.host}: exit {self.rc}\nstdout: {self.stdout[-800:]}\nstderr: {self.stderr[-800:]}"


def race(zk: str, hosts: list[str], output: list[str] | None = None) -> list[Outcome]:
    """Start one `ids claim` process per entry of `hosts` (all at once), then wait for every one."""
    output = output or ["json"] * len(hosts)
    procs = [(h, spawn(zk, "ids", "claim", "--host", h, "-o", o)) for h, o in zip(hosts, output, strict=True)]
    out = []
    try:
        for h, p in procs:
            stdout, stderr = p.communicate(timeout=TIMEOUT)
            out.append(Outcome(h, p.returncode, stdout, stderr))
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    return out


def claim(zk: str, host: str) -> Outcome:
    p = subprocess.run(kadmin(zk, "ids", "claim", "--host", host, "-o", "json"), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=TIMEOUT)
    return Outcome(host, p.returncode, p.stdout, p.stderr)


@dataclass(frozen=True)
class Snapshot:
    raw: dict[str, bytes]  # host -> /brokers/hosts/<host> data, exactly as stored
    seqid_version: int
    hosts_version: int  # -1: /brokers/hosts does not exist (yet)

    def ids(self) -> dict[str, int]:
        return {h: mapping_id(h, data) for h, data in self.raw.items()}


def mapping_id(host: str, data: bytes) -> int:
    """The id in a host mapping, asserting it is exactly {"version":0,"broker.id":N}."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise AssertionError(f"{HOSTS}/{host} holds invalid JSON {data!r}: {e}") from e
    assert isinstance(doc, dict) and set(doc) == {"version", "broker.id"} and doc["version"] == 0, (host, doc)
    bid = doc["broker.id"]
    assert isinstance(bid, int) and not isinstance(bid, bool) and bid >= 0, (host, doc)
    return bid


def snapshot(kz: KazooClient) -> Snapshot:
    """A consistent view: /brokers/hosts' version is the same before and after reading everything.

    Every claim's multi bumps that version, so equality means no claim committed in between (a
    killed claim's multi may still be in flight to the server when the test looks).
    """
    for _ in range(50):
        st = kz.exists(HOSTS)
        before = st.version if st else -1
        raw: dict[str, bytes] = {}
        if st is not None:
            for h in kz.get_children(HOSTS):
                try:
                    raw[h] = kz.get(f"{HOSTS}/{h}")[0]
                except NoNodeError:
                    continue
        seq = kz.exists(SEQID).version
        st = kz.exists(HOSTS)
        if before == (st.version if st else -1):
            return Snapshot(raw, seq, before)
        time.sleep(0.05)
    raise AssertionError(f"{HOSTS} kept changing while the test read it")


def check_invariants(snap: Snapshot, base_seqid: int, reusable: frozenset[int] = frozenset()) -> dict[str, int]:
    """What must hold whenever no claim is mid-air (and after any kill): returns host -> id.

    - every mapping is valid JSON {"version":0,"broker.id":N};
    - no two hosts map to one id;
    - no new id is ahead of the sequence: N - 1000 <= seqid version for N > 1000;
    - stronger (nothing else consumes seqid versions here, and no mapping is ever rewritten): the new
      ids mapped are exactly base+1001 .. seqid version+1000, one mapping per consumed version;
    - every other mapped id is one of `reusable` (the ids the missing-id rule may hand out).
    """
    ids = snap.ids()
    by_id: dict[int, list[str]] = {}
    for h, b in ids.items():
        by_id.setdefault(b, []).append(h)
    dup = {b: hs for b, hs in by_id.items() if len(hs) > 1}
    assert not dup, f"one id mapped to several hosts: {dup}"
    new = sorted(b for b in ids.values() if b > RESERVED)
    ahead = [b for b in new if b - RESERVED > snap.seqid_version]
    assert not ahead, f"mappings ahead of {SEQID} (version {snap.seqid_version}): {ahead}"
    assert new == list(range(base_seqid + 1 + RESERVED, snap.seqid_version + 1 + RESERVED)), (
        f"new ids {new} are not one per consumed {SEQID} version ({base_seqid} -> {snap.seqid_version})")
    others = sorted(b for b in ids.values() if b <= RESERVED)
    assert set(others) <= reusable, f"ids {others} mapped that are neither new nor missing ({sorted(reusable)})"
    return ids


@pytest.fixture
def kz(zk: str, fleet: ThreadedFleet) -> Any:
    c = KazooClient(hosts=zk, timeout=15)
    c.start(timeout=15)
    yield c
    c.stop()
    c.close()


def make_cluster(fleet: ThreadedFleet, missing: int | None = None) -> None:
    """Brokers 1-3 registered, two topics over them, and optionally a topic naming `missing` too."""
    for b in (1, 2, 3):
        fleet.register(BrokerSpec(b, port=9090 + b))
    fleet.create_topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    fleet.create_topic("audit-log", {0: [1, 2], 1: [2, 3]})
    if missing is not None:
        fleet.create_topic("legacy", {0: [1, missing], 1: [missing, 2], 2: [3, 1]})


def assert_all_ok(outs: list[Outcome]) -> None:
    bad = [o.why() for o in outs if o.rc != 0]
    assert not bad, "\n\n".join(bad)


# ---------------------------------------------------------------------------- races between hosts
def test_twenty_concurrent_claims_get_distinct_new_ids(zk: str, fleet: ThreadedFleet, kz: KazooClient) -> None:
    make_cluster(fleet)
    base = snapshot(kz)
    assert base.raw == {} and base.hosts_version == -1

    hosts = [f"host-{i}" for i in range(20)]
    outs = race(zk, hosts)
    assert_all_ok(outs)
    printed = {o.host: o.data["broker_id"] for o in outs}
    for o in outs:
        d = o.data
        assert d["host"] == o.host and d["rule"] == "new-id" and d["missing_ids"] == [], d
        assert d["attempts"] >= 1 and len(d["writes"]) == 3, d  # guard, seqid, create
    assert len(set(printed.values())) == 20, printed
    assert sorted(printed.values()) == list(range(1001, 1021))

    after = snapshot(kz)
    assert sorted(after.raw) == sorted(hosts)
    assert check_invariants(after, base.seqid_version) == printed  # no lost mapping
    new_claims = sum(o.data["rule"] == "new-id" for o in outs)
    assert after.seqid_version - base.seqid_version == new_claims == 20
    # every committed claim bumped the guard once (its creation is version 0)
    assert after.hosts_version == 20


def test_one_missing_id_goes_to_exactly_one_of_ten_concurrent_claims(
        zk: str, fleet: ThreadedFleet, kz: KazooClient) -> None:
    make_cluster(fleet, missing=9)
    base = snapshot(kz)

    outs = race(zk, [f"host-{i}" for i in range(10)])
    assert_all_ok(outs)
    data = {o.host: o.data for o in outs}
    printed = {h: d["broker_id"] for h, d in data.items()}
    got_nine = [h for h, d in data.items() if d["broker_id"] == 9]
    assert len(got_nine) == 1, printed
    assert data[got_nine[0]]["rule"] == "missing-id", data[got_nine[0]]
    rest = {h: d for h, d in data.items() if h != got_nine[0]}
    assert all(d["rule"] == "new-id" and d["missing_ids"] == [9] for d in rest.values()), rest
    assert sorted(d["broker_id"] for d in rest.values()) == list(range(1001, 1010))

    after = snapshot(kz)
    assert check_invariants(after, base.seqid_version, reusable=frozenset({9})) == printed
    assert after.seqid_version - base.seqid_version == sum(d["rule"] == "new-id" for d in data.values()) == 9

    # 9 is still missing (not registered), now spoken for by the winner
    p = subprocess.run(kadmin(zk, "ids", "missing", "-o", "json"), capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["data"]
    assert [(r["broker_id"], r["partitions"], r["mapped_host"]) for r in rows] == [(9, 2, got_nine[0])]


# ---------------------------------------------------------------------------- races for one host
@pytest.mark.parametrize(("missing", "expected", "rule"), [(None, 1001, "new-id"), (9, 9, "missing-id")])
def test_concurrent_claims_for_one_host_agree(zk: str, fleet: ThreadedFleet, kz: KazooClient,
                                              missing: int | None, expected: int, rule: str) -> None:
    make_cluster(fleet, missing=missing)
    base = snapshot(kz)
    outs = race(zk, ["same-host"] * 8, output=["json", "plain"] * 4)
    assert_all_ok(outs)
    plain = [o.stdout for i, o in enumerate(outs) if i % 2]
    assert plain == [f"{expected}\n"] * 4, plain
    data = [o.data for i, o in enumerate(outs) if i % 2 == 0]
    assert {d["broker_id"] for d in data} == {expected}, data
    # the one that wrote says how; every other one found the mapping (or lost the race, then found it)
    assert {d["rule"] for d in data} <= {rule, "host-mapping"}, data
    assert all(d["writes"] == [] for d in data if d["rule"] == "host-mapping"), data

    after = snapshot(kz)
    assert after.raw.keys() == {"same-host"}
    assert check_invariants(after, base.seqid_version, frozenset({9})) == {"same-host": expected}
    assert after.seqid_version - base.seqid_version == (1 if rule == "new-id" else 0)
    assert after.hosts_version == 1  # exactly one multi committed


# ---------------------------------------------------------------------------- SIGKILL midway
def zk_connected(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds a TCP connection to ZooKeeper's client port now (None: cannot tell)."""
    try:
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
                if m:
                    inodes.add(m.group(1))
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    cols = line.split()
                    if int(cols[2].rsplit(":", 1)[1], 16) == port and cols[3] == "01" and cols[9] in inodes:
                        return True  # state 01: ESTABLISHED
    except OSError:
        return None
    return False


def profile(cmd: list[str], port: int) -> tuple[float | None, float]:
    """Run `cmd` to completion: (seconds until it first held a ZooKeeper connection, or None, its wall time)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = None
    while p.poll() is None and time.monotonic() - t0 < TIMEOUT:
        if first is None and zk_connected(p.pid, port):
            first = time.monotonic() - t0
        time.sleep(0.002)
    _, stderr = p.communicate(timeout=TIMEOUT)
    end = time.monotonic() - t0
    assert p.returncode == 0, stderr
    return first, end


@pytest.mark.slow
def test_sigkilled_claims_leave_nothing_or_the_whole_multi(zk_server: Ensemble, zk: str, fleet: ThreadedFleet,
                                                         kz: KazooClient) -> None:
    """30 claims, each SIGKILLed at a random moment over its lifetime; invariants checked after each.

    Most of a claim's life is Python start-up; it talks to ZooKeeper for a few tens of ms near the
    end. So a read-only `ids resolve` (same start-up and reads, no write) is profiled first: when
    it connects (from /proc) and when it exits. Half the kill delays are stratified over
    [0, max(300 ms, its wall time)), the other half over its connected window (widened by 10 ms
    before and 20 ms after: a claim also writes). Just before each kill the test notes whether the
    process holds a connection to ZooKeeper, to count the kills that landed mid-claim.
    A killed host is then claimed normally: it must succeed and keep its mapping.
    The seed comes from KADMIN_TEST_SEED when set (printed on failure).
    """
    make_cluster(fleet, missing=9)  # the first claim that gets through takes 9 (missing-id)
    base = snapshot(kz)
    seed = int(os.environ.get("KADMIN_TEST_SEED") or time.time_ns() % 2**32)
    rng = random.Random(seed)
    n = 30
    port = zk_server.hosts[0][1]
    t_connect, t_exit = profile(kadmin(zk, "ids", "resolve", "--host", "probe", "-o", "json"), port)
    hi = max(0.3, min(1.0, t_exit))
    lo2 = max(0.0, (t_connect if t_connect is not None else t_exit * 0.7) - 0.01)
    hi2 = min(1.5, t_exit + 0.02)
    delays = [hi * (i + rng.random()) / (n // 2) for i in range(n // 2)]
    delays += [lo2 + (hi2 - lo2) * (i + rng.random()) / (n - n // 2) for i in range(n - n // 2)]
    rng.shuffle(delays)
    assert snapshot(kz) == base  # resolve wrote nothing

    log: list[str] = []
    counts = {"exited": 0, "killed_nothing": 0, "killed_complete": 0, "killed_while_connected": 0}
    for i, delay in enumerate(delays):
        host = f"kill-{i}"
        ctx = f"seed {seed}, iteration {i}, delay {delay * 1000:.0f} ms; so far: {log}"
        p = spawn(zk, "ids", "claim", "--host", host, "-o", "json")
        time.sleep(delay)
        connected = zk_connected(p.pid, port)
        exited = p.poll() is not None
        if not exited:
            p.send_signal(signal.SIGKILL)
            counts["killed_while_connected"] += bool(connected)
        stdout, stderr = p.communicate(timeout=TIMEOUT)
        if exited:
            assert p.returncode == 0, f"{ctx}: {stderr}"
        else:
            assert p.returncode in (-signal.SIGKILL, 0), f"{ctx}: exit {p.returncode}: {stderr}"

        snap = snapshot(kz)
        ids = check_invariants(snap, base.seqid_version, frozenset({9}))
        left = ids.get(host)
        if p.returncode == 0:
            counts["exited"] += 1
            assert left == json.loads(stdout)["data"]["broker_id"], ctx
        else:
            counts["killed_complete" if left is not None else "killed_nothing"] += 1
        how = "exit" if p.returncode == 0 else "kill+zk" if connected else "kill"
        log.append(f"{i}:{delay * 1000:.0f}ms:{how}:{left}")

        again = claim(zk, host)
        assert again.rc == 0, f"{ctx}\n{again.why()}"
        d = again.data
        if left is not None:
            assert (d["broker_id"], d["rule"], d["writes"]) == (left, "host-mapping", []), f"{ctx}: {d}"
        final = check_invariants(snapshot(kz), base.seqid_version, frozenset({9}))
        assert final.get(host) == d["broker_id"], f"{ctx}: printed {d}, mapped {final.get(host)}"
        assert {h: b for h, b in final.items() if h != host} == {h: b for h, b in ids.items() if h != host}, ctx

    end = snapshot(kz)
    ids = check_invariants(end, base.seqid_version, frozenset({9}))
    assert sorted(ids) == sorted(f"kill-{i}" for i in range(n))
    assert list(ids.values()).count(9) == 1  # the missing id went to exactly one host
    assert end.seqid_version - base.seqid_version == n - 1 == sum(b > RESERVED for b in ids.values())
    print(f"\nSIGKILL test: seed {seed}; resolve connected at {t_connect}, exited at {t_exit:.3f} s; {counts}\n"
          f"  {' '.join(log)}")
    # The kills must really have interrupted claims (timing varies with load: at least a few of 30;
    # how many landed while connected to ZooKeeper is printed above, not asserted, for the same reason).
    assert counts["killed_nothing"] + counts["killed_complete"] >= 3, (counts, log)
