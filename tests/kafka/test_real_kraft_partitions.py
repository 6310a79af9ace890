"""Partition health, can-stop and wait --in-sync on a real KRaft cluster (1 controller + 3 brokers: the quorum is
not under test here), once on the newest 4.x (4.3.1) and once on 3.9.1 in KRaft mode (the module's fixture is
parametrized by version).

kadmin reads over --bootstrap-server (DescribeTopicPartitions, ListPartitionReassignments, DescribeConfigs,
DescribeCluster). In each state (healthy; one broker stopped; two brokers stopped) kadmin's `partitions list`
filters and `partitions check` must agree, as sets of (topic, partition), with Kafka's own TopicCommand
`--describe --under-replicated-partitions | --under-min-isr-partitions | --at-min-isr-partitions |
--unavailable-partitions`, min.insync.replicas coming per topic and from a dynamic cluster-wide default
(ConfigCommand --entity-default). The documented exception (KAFKA-15583: a replica count below the
configured min ISR; see tests/kafka/test_real_zk_partitions.py) is checked as there.

`can-stop` says yes exactly when stopping the broker for real leaves nothing offline or under min ISR
(TopicCommand after the stop); `brokers wait --in-sync` times out naming what TopicCommand shows
missing, and returns once the broker is back in every ISR.

Nothing waits on time: each state is waited for on TopicCommand's own answer, and a comparison is
repeated (until a deadline) only while the cluster's state moved during it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka import (
    CONFIG_COMMAND,
    KAFKA_3_9,
    KAFKA_4,
    REASSIGN_COMMAND,
    TOPIC_COMMAND,
    broker_view,
    kafka_home,
    parse_partition_lines,
    settle,
    tool,
    wait_for,
    wait_seen,
)
from tests.support.sandbox import KraftBrokers, sandbox

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

Key = tuple[str, int]
IDS = (1, 2, 3)
# name: ({partition: replicas}, topic configs). The cluster default min ISR is 2. Broker 1 hosts only
# RF-3 partitions (it can stop); brokers 2 and 3 host the RF-1 and RF-2 ones.
TOPICS: dict[str, tuple[dict[int, list[int]], dict[str, str]]] = {
    "k-rf1": ({0: [2], 1: [3]}, {}),  # RF 1 < cluster default 2: the exception
    "k-rf2": ({0: [2, 3], 1: [3, 2]}, {}),
    "k-rf3": ({0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, {}),
    "k-rf3-min1": ({0: [1, 2, 3]}, {"min.insync.replicas": "1"}),
    "k-rf2-min3": ({0: [2, 3]}, {"min.insync.replicas": "3"}),  # the exception
}
FILTERS = {"--under-replicated": "--under-replicated-partitions", "--under-min-isr": "--under-min-isr-partitions",
           "--at-min-isr": "--at-min-isr-partitions", "--offline": "--unavailable-partitions"}


class Kraft(KraftBrokers):
    version = KAFKA_4

    def kadmin(self, *args: str) -> tuple[int, Any, str]:
        r = self.sb.run(*args, "--bootstrap-server", self.live_bootstrap(), "-o", "json")
        doc = json.loads(r.stdout) if r.stdout.strip() else {}
        return r.returncode, doc.get("data"), r.stderr

    def topic_command(self, *flags: str) -> dict[Key, dict[str, str]]:
        out = tool(self.home, TOPIC_COMMAND, "--bootstrap-server", self.live_bootstrap(), "--describe", *flags).stdout
        return {k: v for k, v in parse_partition_lines(out).items() if k[0] in TOPICS}

    def stop(self, bid: int) -> None:
        r = self.sb.run("sandbox", "kill", str(bid))
        assert r.returncode == 0, r.stderr
        self.down.add(bid)
        self.wait_settled()

    def start(self, bid: int) -> None:
        r = self.sb.run("sandbox", "start", str(bid))
        assert r.returncode == 0, r.stderr
        self.down.discard(bid)

    def cheap(self) -> dict[Key, dict[str, str]] | None:
        return broker_view(self.live_bootstrap(), TOPICS)

    def wait_settled(self, timeout: float = 240.0) -> None:
        """TopicCommand shows the controller acted on the stopped brokers: none leads, and none is in
        the ISR of a partition that has a leader."""
        def ok(got: dict[Key, dict[str, str]]) -> bool:
            for f in got.values():
                isr = {int(x) for x in f["Isr"].split(",") if x}
                leader = -1 if f["Leader"] == "none" else int(f["Leader"])
                if leader in self.down or (leader >= 0 and isr & self.down):
                    return False
            return True
        wait_seen(ok, self.topic_command, self.cheap, timeout,
                  f"the controller to act on brokers {sorted(self.down)} stopped")

    def wait_in_sync(self, timeout: float = 300.0) -> None:
        def ok(got: dict[Key, dict[str, str]]) -> bool:
            return len(got) == sum(len(a) for a, _ in TOPICS.values()) and all(
                f["Leader"] != "none" and len(f["Isr"].split(",")) == len(f["Replicas"].split(","))
                for f in got.values())
        wait_seen(ok, self.topic_command, self.cheap, timeout, "every partition fully in sync")


@pytest.fixture(scope="module", params=[KAFKA_4, KAFKA_3_9])
def kraft(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kraft]:
    version = str(request.param)
    home = kafka_home(version)
    with sandbox(tmp_path_factory.mktemp(f"kraft-partitions-{version}") / "sb", "--kafka-home", str(home),
                 "--mode", "kraft", "--brokers", "3", "--controllers", "1") as sb:
        assert sb.status()["kafka_version"] == version
        k = Kraft(sb, home)
        k.version = version
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=k.bootstrap, request_timeout_ms=60000)
        try:
            admin.create_topics([NewTopic(name, replica_assignments=a, topic_configs=c)
                                 for name, (a, c) in TOPICS.items()], timeout_ms=60000)
        finally:
            admin.close()
        tool(home, CONFIG_COMMAND, "--bootstrap-server", k.bootstrap, "--entity-type", "brokers", "--entity-default",
             "--alter", "--add-config", "min.insync.replicas=2")
        yield k


def kadmin_views(k: Kraft) -> tuple[dict[Key, dict[str, Any]], dict[str, set[Key]]]:
    code, data, err = k.kadmin("partitions", "list")
    assert code == 0, err
    rows = {(r["topic"], r["partition"]): r for r in data if r["topic"] in TOPICS}
    views = {}
    for flag in FILTERS:
        code, data, err = k.kadmin("partitions", "list", flag)
        assert code == 0, err
        views[flag] = {(r["topic"], r["partition"]) for r in data if r["topic"] in TOPICS}
    return rows, views


def exceptions(rows: dict[Key, dict[str, Any]]) -> set[Key]:
    return {key for key, r in rows.items() if len(r["replicas"]) < r["min_isr"]}


def disagreements(rows: dict[Key, dict[str, Any]], kad: dict[str, set[Key]], tc: dict[str, set[Key]]) -> list[str]:
    exc = exceptions(rows)
    out = []
    for flag in FILTERS:
        mine, theirs = kad[flag] - exc, tc[flag] - exc
        if mine != theirs:
            out.append(f"{flag}: kadmin only {sorted(mine - theirs)}, TopicCommand only {sorted(theirs - mine)}")
    for key in sorted(exc):
        r = rows[key]
        leader = r["leader"] is not None and r["leader"] >= 0
        expect = {"--under-min-isr": (True, not leader or len(r["isr"]) < len(r["replicas"])),
                  # the count alone, as for every partition (TopicCommand has no leader test either): an offline
                  # partition whose last ISR member is kept (3.9; 4.x with ELR empties the ISR) is at it too
                  "--at-min-isr": (False, len(r["isr"]) == len(r["replicas"]))}
        for flag, (in_tc, in_kadmin) in expect.items():
            if (key in tc[flag], key in kad[flag]) != (in_tc, in_kadmin):
                out.append(f"{flag} {key}: TopicCommand {key in tc[flag]} (expected {in_tc}), kadmin "
                           f"{key in kad[flag]} (expected {in_kadmin})")
    return out


def agree(k: Kraft, timeout: float = 240.0) -> tuple[dict[Key, dict[str, Any]], dict[str, set[Key]],
                                                     dict[str, set[Key]]]:
    """kadmin and TopicCommand on one settled state; repeated only while the state moved meanwhile."""
    Views = tuple[dict[Key, dict[str, Any]], dict[str, set[Key]], dict[str, set[Key]]]

    def attempt() -> tuple[Views | None, str]:
        before = k.topic_command()
        rows, kad = kadmin_views(k)
        with ThreadPoolExecutor(len(FILTERS)) as pool:
            futs = {flag: pool.submit(k.topic_command, tc_flag) for flag, tc_flag in FILTERS.items()}
            tc = {flag: set(f.result()) for flag, f in futs.items()}
        moved = k.topic_command() != before
        diffs = disagreements(rows, kad, tc)
        if not moved and not diffs:
            return (rows, kad, tc), ""
        return None, ("the state kept moving" if moved else "kadmin and TopicCommand disagree:\n" + "\n".join(diffs))

    rows, kad, tc = settle(attempt, timeout)
    check_agrees(k, kad)
    return rows, kad, tc


def check_agrees(k: Kraft, kad: dict[str, set[Key]]) -> None:
    critical = kad["--under-min-isr"] | kad["--offline"]
    warning = kad["--under-replicated"]
    code, data, err = k.kadmin("partitions", "check")
    found = {(f["topic"], f["partition"]) for f in data["findings"] if f["topic"] in TOPICS}
    assert found == critical | warning, err
    if k.down:
        # issue 20: a stopped broker's log dirs cannot be listed, so partitions only it hosts (of a topic this
        # principal may not Describe) could not be seen: never OK or WARNING then, but UNKNOWN unless CRITICAL
        assert {u["broker_id"] for u in data["unseen"]} >= k.down, data["unseen"]
        assert code == (2 if critical else 3), err
    else:
        assert data["unseen"] == [] and code == (2 if critical else 1 if warning else 0), err


def hosted(rows: dict[Key, dict[str, Any]], bid: int) -> set[Key]:
    return {key for key, r in rows.items() if bid in r["replicas"]}


def can_stop(k: Kraft, bid: int) -> tuple[int, set[Key]]:
    code, data, err = k.kadmin("brokers", "can-stop", str(bid))
    assert code in (0, 1), err
    assert data["safe"] is (code == 0)
    return code, {(b["topic"], b["partition"]) for b in data["blocking"] if b["topic"] in TOPICS}


def test_healthy_with_topic_and_cluster_default_min_isr(kraft: Kraft) -> None:
    kraft.wait_in_sync()
    rows, kad, tc = agree(kraft)
    assert kad["--under-replicated"] == kad["--offline"] == set()
    assert exceptions(rows) == {("k-rf1", 0), ("k-rf1", 1), ("k-rf2-min3", 0)}
    assert kad["--under-min-isr"] == set()
    # the exception as Kafka shows it (3.9.1 and 4.3.1 alike): TopicCommand under min ISR, the leader (and kadmin)
    # at min ISR
    assert tc["--under-min-isr"] == exceptions(rows)
    assert kad["--at-min-isr"] == {("k-rf1", 0), ("k-rf1", 1), ("k-rf2", 0), ("k-rf2", 1), ("k-rf2-min3", 0)}
    assert {rows[("k-rf3", p)]["min_isr_source"] for p in range(3)} == {"cluster-default"}
    assert rows[("k-rf3", 0)]["min_isr"] == 2 and rows[("k-rf3-min1", 0)]["min_isr_source"] == "topic"
    assert rows[("k-rf3-min1", 0)]["min_isr"] == 1
    assert all(r["topic_id"] and r["leader_epoch"] is not None for r in rows.values())
    if kraft.version == KAFKA_3_9:  # ELR is off on 3.9 (no eligible.leader.replicas.version feature): none listed
        assert all(not r["elr"] and not r["last_known_elr"] for r in rows.values()), rows


def test_a_leader_missing_from_a_stale_live_read_is_read_again_not_called_offline(kraft: Kraft) -> None:
    """The live set is read at once with the partition pages. A broker unfenced between the two (back from a restart,
    then given its leadership back: the moment of a rolling restart) leads partitions the first read did not
    count live. One metadata image never has a fenced leader, so the check reads the live set again rather
    than calling them offline (and asks that broker its min ISR): the answer is the same as a check whose first
    read was current. The stale first read is made by hiding one leader from it."""
    from kadmin.cluster import kraft_cluster
    from kadmin.cluster.connect import open_cluster
    from kadmin.config import ConnectionSettings, Sourced
    from kadmin.services import partitions as service

    kraft.wait_in_sync()
    leaders = {int(f["Leader"]) for f in kraft.topic_command().values()}
    victim = min(leaders)

    def check(stale: bool) -> tuple[int, list[Any], list[frozenset[int]]]:
        c = open_cluster(ConnectionSettings({"bootstrap-server": Sourced(kraft.live_bootstrap(), "flag")}))
        reads: list[frozenset[int]] = []
        try:
            assert isinstance(c, kraft_cluster.KraftCluster)
            current = c.live_brokers

            def live_brokers(fresh: bool = False) -> frozenset[int]:
                got = current(fresh)
                reads.append(got)
                return got - {victim} if stale and len(reads) == 1 else got

            c.live_brokers = live_brokers  # type: ignore[method-assign]
            r = service.check(c)
        finally:
            c.close()
        return int(r.exit_code), sorted(r.data.findings, key=repr), reads

    def attempt() -> tuple[tuple[int, list[Any], int] | None, str]:
        (code, found, reads), (stale_code, stale_found, stale_reads) = check(False), check(True)
        assert victim in stale_reads[0], stale_reads
        why = f"current read: {code} {found}; stale read: {stale_code} {stale_found}"
        same = (code, found) == (stale_code, stale_found)
        return ((code, found, len(stale_reads) - len(reads)) if same else None), why

    code, found, more_reads = settle(attempt, 120, interval=1.0)
    assert code == 0, found
    assert more_reads == 1  # the stale read was read again, once; the current one was not


def test_can_stop_matches_a_real_stop_and_one_broker_stopped(kraft: Kraft) -> None:
    kraft.wait_in_sync()
    rows, _, _ = agree(kraft)
    code, blocking = can_stop(kraft, 1)
    assert code == 0 and blocking == set()  # broker 1 hosts RF-3 partitions only
    code, blocking = can_stop(kraft, 2)
    assert code == 1 and ("k-rf1", 0) in blocking  # its RF-1 partition would go offline
    kraft.stop(1)
    rows, kad, tc = agree(kraft)
    # can-stop said yes: nothing offline or under min ISR now (beyond the exception, which always is for TopicCommand)
    assert tc["--offline"] == set() and tc["--under-min-isr"] - exceptions(rows) == set()
    assert kad["--under-replicated"] == hosted(rows, 1)
    # wait --in-sync for the stopped broker times out naming exactly what TopicCommand shows without it (a --timeout
    # long enough for a loaded machine's brokers to answer at all: 2 s ended in exit 4 beside a CPU hog)
    r = kraft.sb.run("brokers", "wait", "1", "--in-sync", "--timeout", "10", "--bootstrap-server",
                     kraft.live_bootstrap(), "-o", "json")
    assert r.returncode == 1, r.stderr
    waiting = {(w["topic"], w["partition"]) for w in json.loads(r.stdout)["data"]["waiting"] if w["topic"] in TOPICS}
    missing = {key for key, f in kraft.topic_command().items() if "1" not in f["Isr"].split(",")
               and "1" in f["Replicas"].split(",")}
    assert waiting == missing == hosted(rows, 1)


def test_can_stop_with_one_down_then_two_brokers_stopped(kraft: Kraft) -> None:
    if 1 not in kraft.down:
        kraft.stop(1)
    rows, _, _ = agree(kraft)
    code, blocking = can_stop(kraft, 2)
    assert code == 1
    kraft.stop(2)
    rows, kad, tc = agree(kraft)
    # what can-stop named is exactly what the real stop left offline or under min ISR among broker 2's partitions
    hit = (tc["--offline"] | tc["--under-min-isr"]) & hosted(rows, 2)
    assert blocking == hit and blocking
    assert ("k-rf1", 0) in kad["--offline"] and ("k-rf1", 1) not in kad["--offline"]


def test_wait_in_sync_returns_once_the_broker_is_back(kraft: Kraft) -> None:
    for bid in sorted(kraft.down):
        kraft.start(bid)
    r = kraft.sb.run("brokers", "wait", "2", "--in-sync", "--timeout", "300", "--bootstrap-server",
                     kraft.live_bootstrap(), "-o", "json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["in_sync"] is True and data["waiting"] == []
    # at the moment it answered TopicCommand shows 2 in every ISR it belongs in (ISRs only grow while all run)
    for f in kraft.topic_command().values():
        if "2" in f["Replicas"].split(","):
            assert "2" in f["Isr"].split(","), f
    kraft.wait_in_sync()
    agree(kraft)
    code, _, err = kraft.kadmin("partitions", "check")
    assert code == 0, err


def test_reassignment_in_flight(kraft: Kraft, tmp_path: Path) -> None:
    """A reassignment held in flight by a 1 B/s throttle: ListPartitionReassignments' adding/removing replicas
    are what TopicCommand shows, and replicas being added are not missing ones (kadmin and TopicCommand agree)."""
    from kafka import KafkaProducer

    kraft.wait_in_sync()
    producer = KafkaProducer(bootstrap_servers=kraft.bootstrap, acks=1, linger_ms=20, batch_size=256 * 1024)
    try:
        for _ in range(4000):  # ~4 MB: more than a follower throttled to 1 B/s can fetch
            producer.send("k-rf2", value=b"x" * 1000, partition=0)
        producer.flush(timeout=300)
    finally:
        producer.close(timeout=30)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "k-rf2", "partition": 0, "replicas": [1], "log_dirs": ["any"]}]}))
    tool(kraft.home, REASSIGN_COMMAND, "--bootstrap-server", kraft.bootstrap, "--reassignment-json-file", str(plan),
         "--execute", "--throttle", "1")
    try:
        def in_flight() -> bool:
            f = kraft.topic_command("--topic", "k-rf2").get(("k-rf2", 0), {})
            return f.get("Adding Replicas") == "1" and f.get("Isr") in ("2,3", "3,2")
        wait_for(in_flight, 300, "the reassignment of k-rf2-0 to start", interval=1.0)
        rows, kad, tc = agree(kraft)
        assert in_flight(), "the reassignment completed during the comparison: the throttle did not hold it"
        r = rows[("k-rf2", 0)]
        assert (sorted(r["replicas"]), r["adding_replicas"], sorted(r["removing_replicas"])) == ([1, 2, 3], [1], [2, 3])
        assert ("k-rf2", 0) not in kad["--under-replicated"]  # ISR 2 of RF 3 - 1 adding
        assert ("k-rf2", 0) not in tc["--under-replicated"]
    finally:
        tool(kraft.home, REASSIGN_COMMAND, "--bootstrap-server", kraft.bootstrap, "--reassignment-json-file",
             str(plan), "--cancel")


def test_cluster_id_and_active_controller_match_kafkas_tools(kraft: Kraft) -> None:
    """The seam's cluster id and active controller (the quorum leader, not DescribeCluster's random broker)
    equal what ClusterTool and MetadataQuorumCommand print (compared again if a re-election happened meanwhile)."""
    from kadmin.cluster.connect import open_cluster
    from kadmin.config import ConnectionSettings, Sourced

    def leader() -> tuple[int, int]:
        status = tool(kraft.home, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server",
                      kraft.live_bootstrap(), "describe", "--status").stdout
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return int(fields["LeaderId"]), int(fields["LeaderEpoch"])

    deadline = time.monotonic() + 300
    while True:
        before = leader()
        c = open_cluster(ConnectionSettings({"bootstrap-server": Sourced(kraft.live_bootstrap(), "flag")}))
        try:
            cluster_id = c.cluster_id()
            controller, problems = c.controller()
        finally:
            c.close()
        if leader() == before:
            break
        assert time.monotonic() < deadline, "the quorum kept re-electing"
    out = tool(kraft.home, "org.apache.kafka.tools.ClusterTool", "cluster-id", "--bootstrap-server",
               kraft.live_bootstrap()).stdout
    assert out.strip() == f"Cluster ID: {cluster_id}"
    assert controller is not None and problems == []
    assert (controller.broker_id, controller.kraft_controller_epoch) == before and controller.broker_id >= 3001


def test_describe_topic_partitions_pages_with_kafkas_cursor(kraft: Kraft, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 2 partitions (Kafka's cursor, NextCursor) give exactly the partitions one page gives."""
    from kadmin.cluster import kraft_cluster
    from kadmin.cluster.connect import open_cluster
    from kadmin.config import ConnectionSettings, Sourced

    def keys() -> list[Key]:
        c = open_cluster(ConnectionSettings({"bootstrap-server": Sourced(kraft.live_bootstrap(), "flag")}))
        try:
            assert isinstance(c, kraft_cluster.KraftCluster)
            rows, problems = c.describe_partitions(None)
        finally:
            c.close()
        assert problems == []
        return [(t.name, int(p.partition_index)) for t, p in rows]

    whole = keys()
    monkeypatch.setattr(kraft_cluster, "PAGE_PARTITIONS", 2)
    paged = keys()
    assert paged == whole and len(set(paged)) == len(paged)
    assert {k for k in paged if k[0] in TOPICS} == {(t, p) for t, (a, _) in TOPICS.items() for p in a}


def test_watch_states_polls_only_the_topics_with_unsettled_keys(kraft: Kraft) -> None:
    """Issue 13 §5: on the real cluster, once a key's ISR is settled the later DescribeTopicPartitions polls no longer
    ask for its topic. Broker 3 never stops in this module: it stays in the ISRs of k-rf2 and k-rf3 (settled at
    once); k-rf1-0 lives on broker 2 alone, so 3 is never in its ISR and only k-rf1 is polled on."""
    from kadmin.cluster import kraft_cluster
    from kadmin.cluster.connect import open_cluster
    from kadmin.config import ConnectionSettings, Sourced

    keys = [("k-rf1", 0), ("k-rf2", 0), ("k-rf3", 1)]
    wait_seen(lambda got: all(k in got and "3" in got[k]["Isr"].split(",") for k in keys[1:]), kraft.topic_command,
              kraft.cheap, 240, "broker 3 in the ISRs of k-rf2-0 and k-rf3-1")
    c = open_cluster(ConnectionSettings({"bootstrap-server": Sourced(kraft.live_bootstrap(), "flag")}))
    asked: list[list[str]] = []
    try:
        assert isinstance(c, kraft_cluster.KraftCluster)
        describe = c.describe_partitions

        def recorded(topics: Any, progress: Any = None) -> Any:  # the requests as sent, answered by Kafka
            asked.append(sorted(topics))
            return describe(topics, progress)

        c.describe_partitions = recorded  # type: ignore[method-assign]
        seen = list(c.watch_states(keys, timeout=2.0, settled=lambda isr: 3 in isr))
    finally:
        c.close()
    assert len(asked) >= 2  # polls at 0, 0.5 and 1.5 s within the 2 s (fewer on a very busy machine)
    assert asked[0] == ["k-rf1", "k-rf2", "k-rf3"] and all(a == ["k-rf1"] for a in asked[1:])
    assert [k for k, _ in seen[0]] == keys and all(3 in isr for k, isr in seen[0] if k != ("k-rf1", 0))
    assert all([k for k, _ in s] == [("k-rf1", 0)] for s in seen[1:])
