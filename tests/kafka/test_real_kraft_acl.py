"""Issue 20: KRaft gates that a restricted principal cannot fool into "safe", on real Kafka 4.3.1 with SASL/PLAIN,
the StandardAuthorizer (`allow.everyone.if.no.acl.found=false`) and `min.insync.replicas=2` in every broker's
server.properties (tests/support/secure_kraft.py).

Principals (ACLs made with Kafka's own AclCommand):
- admin: the super user. Its answer is the truth.
- alice: Describe and DescribeConfigs on the topics prefixed `vis-`, Describe on the Cluster (so DescribeLogDirs
  lists every partition a broker hosts), no DescribeConfigs on the Cluster (the brokers' min ISR is hidden).
- bob: Describe on every topic, no DescribeConfigs at all, nothing on the Cluster.
- carol: Describe and DescribeConfigs on every topic and on the Cluster: restricted, yet entitled to the truth.
- erin: alice's ACLs and Alter on the Cluster (she may reorder and elect), for drains that cannot see `hidden`.
- dave: Alter on the Cluster only (what a controller asks of DescribeCluster), no DescribeConfigs; for the quorum's
  controller.quorum.fetch.timeout.ms, which the controller (3000) and the brokers (2500) set apart from Kafka's
  default, read through the brokers and through the controller's SASL listener (--bootstrap-controller).

Topics: `vis-a` (RF 3), `vis-drain` (replicas [1,3,2]) and `hidden` (RF 1, on broker 3 only; hidden from alice).

For every gate (`brokers can-stop`, `partitions check`, `brokers wait --in-sync`) and each principal the rule is
checked: the super user's answer is the truth; a restricted principal's is the same, or not-safe/UNKNOWN naming
what it could not see, never "safe" where the truth is "not safe". The two cases of the issue are asserted
exactly (alice's `can-stop 3` with `hidden` on 3; alice's `can-stop 2` with 3 stopped and ISR [1,2]), and so is
the unreachable advertised address (broker 3 advertises a dead port on the FAR listener), and `drain 1` with
replicas [1,3,2] and broker 3 down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kadmin.cluster.base import QUORUM_FETCH_TIMEOUT, QuorumSetting
from kadmin.cluster.connect import open_backend
from kadmin.config import ConnectionSettings, Sourced
from tests.support.kafka import KAFKA_4, TOPIC_COMMAND, kafka_home, parse_partition_lines, tool, wait_for
from tests.support.secure_kraft import SecureKraft, secure_kraft

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

PRINCIPALS = ("admin", "alice", "bob", "carol")
RESTRICTED = PRINCIPALS[1:]
TOPICS = {"vis-a": "1:2:3,2:3:1", "vis-drain": "1:3:2", "hidden": "3"}
CONTROLLER_FETCH_TIMEOUT, BROKERS_FETCH_TIMEOUT = 3000, 2500  # controller.quorum.fetch.timeout.ms (default 2000)
FETCH_TIMEOUTS = {"controller": {QUORUM_FETCH_TIMEOUT: str(CONTROLLER_FETCH_TIMEOUT)},
                  "broker": {QUORUM_FETCH_TIMEOUT: str(BROKERS_FETCH_TIMEOUT)}}


@dataclass
class Answer:
    code: int
    data: Any
    stderr: str

    @property
    def text(self) -> str:
        return self.stderr + json.dumps(self.data)


class Acl:
    def __init__(self, k: SecureKraft) -> None:
        self.k = k
        self.down: set[int] = set()

    def kadmin(self, user: str, *args: str, listener: str = "CLIENT") -> Answer:
        r = subprocess.run([sys.executable, "-m", "kadmin", *args, "--bootstrap-server",
                            self.k.bootstrap(listener, skip=self.down), "--command-config",
                            str(self.k.client_config(user)), "-o", "json"],
                           capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        doc = json.loads(r.stdout) if r.stdout.strip() else {}
        return Answer(r.returncode, doc.get("data"), r.stderr)

    def topics(self) -> dict[tuple[str, int], dict[str, str]]:
        out = tool(self.k.home, TOPIC_COMMAND, "--bootstrap-server", self.k.bootstrap(skip=self.down),
                   "--command-config", str(self.k.client_config("admin")), "--describe").stdout
        return {key: f for key, f in parse_partition_lines(out).items() if key[0] in TOPICS}

    def topics_of(self, topic: str) -> dict[tuple[str, int], dict[str, str]]:
        out = tool(self.k.home, TOPIC_COMMAND, "--bootstrap-server", self.k.bootstrap(skip=self.down),
                   "--command-config", str(self.k.client_config("admin")), "--describe", "--topic", topic).stdout
        return parse_partition_lines(out)

    def wait(self, what: str, ok: Any) -> dict[tuple[str, int], dict[str, str]]:
        def attempt() -> dict[tuple[str, int], dict[str, str]] | None:
            got = self.topics()
            return got if len(got) == 4 and ok(got) else None
        return wait_for(attempt, 300, what, interval=0.5)


def isr(f: dict[str, str]) -> set[int]:
    return {int(x) for x in f["Isr"].split(",") if x}


@pytest.fixture(scope="module")
def acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acl]:
    home = kafka_home(KAFKA_4)
    with secure_kraft(home, KAFKA_4, tmp_path_factory.mktemp("kraft-acl"), far_dead=[3], extra=FETCH_TIMEOUTS) as k:
        for name, assignment in TOPICS.items():
            tool(home, TOPIC_COMMAND, "--bootstrap-server", k.bootstrap(), "--command-config",
                 str(k.client_config("admin")), "--create", "--topic", name, "--replica-assignment", assignment)
        k.acl("--add", "--allow-principal", "User:alice", "--operation", "Describe", "--operation", "DescribeConfigs",
              "--topic", "vis-", "--resource-pattern-type", "prefixed")
        k.acl("--add", "--allow-principal", "User:alice", "--operation", "Describe", "--cluster")
        k.acl("--add", "--allow-principal", "User:bob", "--operation", "Describe", "--topic", "*")
        k.acl("--add", "--allow-principal", "User:carol", "--operation", "Describe", "--operation", "DescribeConfigs",
              "--topic", "*")
        k.acl("--add", "--allow-principal", "User:carol", "--operation", "Describe", "--operation", "DescribeConfigs",
              "--cluster")
        k.acl("--add", "--allow-principal", "User:dave", "--operation", "Alter", "--cluster")
        k.acl("--add", "--allow-principal", "User:erin", "--operation", "Describe", "--operation", "DescribeConfigs",
              "--topic", "vis-", "--resource-pattern-type", "prefixed")
        k.acl("--add", "--allow-principal", "User:erin", "--operation", "Describe", "--operation", "Alter",
              "--cluster")
        a = Acl(k)
        a.wait("every partition fully in sync", lambda got: all(
            len(isr(f)) == len(f["Replicas"].split(",")) for f in got.values()))
        # the ACLs are in force on every broker: alice sees vis-* only, through any broker
        def alice_sees() -> set[str]:
            got = a.kadmin("alice", "partitions", "list", "--min-isr-default", "1")
            assert got.code in (0, 5), got.text  # 5: partial, the brokers' own DescribeConfigs refused
            return {r["topic"] for r in got.data} & set(TOPICS)
        wait_for(lambda: all(alice_sees() == {"vis-a", "vis-drain"} for _ in range(3)), 120, "alice's ACLs in force")
        yield a


def safe(a: Answer, gate: str) -> bool:
    """Did the gate say "safe"? can-stop and wait: exit 0; check: exit 0 (OK) or 1 (WARNING: nothing offline)."""
    assert a.code in ((0, 1, 2, 3) if gate == "check" else (0, 1)), a.stderr
    return a.code in ((0, 1) if gate == "check" else (0,))


def never_fooled(acl: Acl, gate: str, *args: str, listener: str = "CLIENT") -> dict[str, Answer]:
    """Each principal's answer against the super user's: the same, or not-safe naming what it could not see."""
    truth = acl.kadmin("admin", *args)
    answers = {"admin": truth}
    for user in RESTRICTED:
        got = acl.kadmin(user, *args, listener=listener)
        answers[user] = got
        if safe(got, gate):
            assert safe(truth, gate), f"{user} was told safe, the super user not: {args}\n{got.text}\n{truth.text}"
            assert got.code == truth.code, (user, args, got.text, truth.text)
        elif safe(truth, gate):  # more cautious than the truth: it must say what it could not see
            assert any(w in got.text for w in ("could not be read", "could not be listed", "not visible",
                                               "unknown", "AUTHORIZATION", "cannot")), (user, args, got.text)
    return answers


def test_all_up_a_hidden_topic_and_unreadable_min_isr_never_pass_as_safe(acl: Acl) -> None:
    # can-stop 3: hidden-0 lives on 3 alone, so the truth is "no"; alice cannot see it but broker 3's log dirs list it
    got = never_fooled(acl, "can-stop", "brokers", "can-stop", "3")
    assert got["admin"].code == 1 and ("hidden", 0) in {(b["topic"], b["partition"]) for b in got["admin"].data[
        "blocking"]}
    alice = got["alice"]
    assert alice.code == 1 and alice.data["safe"] is False
    hidden = [b for b in alice.data["blocking"] if b["topic"] == "hidden"]
    assert [b["partition"] for b in hidden] == [0] and "Describe on Topic:hidden" in hidden[0]["reason"]
    assert got["carol"].code == 1 and got["carol"].data["blocking"] == got["admin"].data["blocking"]
    assert "Describe on the Cluster" in got["bob"].text  # bob cannot list the log dirs: says what would let it
    # can-stop 1: the truth is "yes" (RF-3 partitions at ISR 3); carol, entitled to it, says so
    got = never_fooled(acl, "can-stop", "brokers", "can-stop", "1")
    assert got["admin"].code == 0 and got["carol"].code == 0
    assert got["alice"].code == 1 and "DescribeConfigs on the Cluster" in got["alice"].text
    # the operator who cares about vis-a only says so, and states min ISR: then alice's "yes" is honest
    scoped = acl.kadmin("alice", "brokers", "can-stop", "1", "--topic", "vis-a", "--min-isr-default", "2")
    assert scoped.code == 0, scoped.text
    # partitions check: healthy for the super user and carol; never OK for the others
    got = never_fooled(acl, "check", "partitions", "check")
    assert got["admin"].code == 0 and got["carol"].code == 0
    assert got["alice"].code == 2 and any(f["topic"] == "hidden" for f in got["alice"].data["findings"])
    assert got["bob"].code in (2, 3) and got["bob"].data["status"] != "ok"
    # min ISR as the super user reads it: 2, the cluster-wide default Kafka 4.x writes from the controller's
    # server.properties when ELR is on (or, without it, the brokers' static value)
    rows = acl.kadmin("admin", "partitions", "list", "--topic", "vis-a").data
    assert {r["min_isr"] for r in rows} == {2} and {r["min_isr_source"] for r in rows} <= {"cluster-default", "static"}
    rows = acl.kadmin("alice", "partitions", "list", "--topic", "vis-a", "--min-isr-default", "1").data
    assert {r["min_isr_source"] for r in rows} == {"default"}  # stated by the operator, never "static"


def test_wait_in_sync_all_up(acl: Acl) -> None:
    # every answer here comes at the first look (all in sync, or a partition that cannot be seen: not met at once);
    # the --timeout only bounds a slow machine's first look (3 s ran out at load 16: exit 4, suite run 56)
    got = never_fooled(acl, "wait", "brokers", "wait", "3", "--in-sync", "--timeout", "60")
    assert got["admin"].code == 0 and got["carol"].code == 0
    assert got["alice"].code == 1 and got["alice"].data["unseen"][0]["topic"] == "hidden"


def test_an_unreachable_advertised_address_is_never_safe(acl: Acl) -> None:
    """Through the FAR listener broker 3 advertises a port nothing listens on: its log dirs and its own min ISR
    cannot be read from where kadmin runs. The truth (super user through CLIENT) is "broker 1 can stop"."""
    truth = acl.kadmin("admin", "brokers", "can-stop", "1")
    assert truth.code == 0, truth.text
    far = acl.kadmin("admin", "brokers", "can-stop", "1", listener="FAR")
    assert far.code == 1 and "kadmin must reach its advertised address" in far.text, far.text
    far = acl.kadmin("admin", "brokers", "can-stop", "3", listener="FAR")
    assert far.code == 1 and far.data["unseen"] and far.data["unseen"][0]["broker_id"] == 3, far.text
    far = acl.kadmin("admin", "partitions", "check", listener="FAR")
    assert far.code in (2, 3) and far.data["status"] != "ok", far.text
    assert any(u["broker_id"] == 3 for u in far.data["unseen"]) or far.code == 2


def fetch_timeout(acl: Acl, user: str, via: str) -> QuorumSetting:
    """controller.quorum.fetch.timeout.ms as a roll reads it (the backend's quorum), as `user`: through the brokers'
    CLIENT listener (`via` "server") or the controller's CSASL listener ("controller")."""
    flag, address = (("bootstrap-controller", acl.k.bootstrap_controller()) if via == "controller"
                     else ("bootstrap-server", acl.k.bootstrap(skip=acl.down)))
    backend = open_backend(ConnectionSettings({flag: Sourced(address, "flag"), "command-config": Sourced(
        str(acl.k.client_config(user)), "flag")}), "roll")
    try:
        return backend.quorum.quorum_fetch_timeout()
    finally:
        backend.close()


def test_the_quorum_fetch_timeout_or_why_not_and_the_acl_that_reads_it(acl: Acl) -> None:
    """Through the brokers, the endpoint DescribeQuorum lists for the controller is its PLAINTEXT quorum listener,
    which a SASL client cannot use: a broker's own value is taken, saying so; a principal refused DescribeConfigs
    on the Cluster is told that ACL. Through the controller's SASL listener the controller answers for itself:
    its value, or its own refusal, and the ACL it names is the one that lets dave read it."""
    plaintext = r"the controllers could not be asked: controller 3001 at 127.0.0.1:\d+: .*; kadmin must reach a " \
                r"controller at an endpoint DescribeQuorum lists, with --command-config's security, or be given " \
                r"--bootstrap-controller"
    for user in ("admin", "carol"):  # entitled to the brokers' value
        got = fetch_timeout(acl, user, "server")
        assert got.value == BROKERS_FETCH_TIMEOUT, got
        assert re.fullmatch(r"broker [123] \(DescribeConfigs\): " + plaintext, got.source), got.source
    got = fetch_timeout(acl, "alice", "server")  # Describe on the Cluster, no DescribeConfigs
    assert got.value is None, got
    assert re.fullmatch(r"unknown: " + plaintext + r"; broker [123]: DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED "
                        r"\(Cluster authorization failed\.\); kadmin needs DescribeConfigs on the Cluster resource "
                        r"for User:alice \(kafka-acls --add --allow-principal User:alice --operation DescribeConfigs "
                        r"--cluster\)", got.source), got.source
    got = fetch_timeout(acl, "bob", "server")  # nothing on the Cluster: not even the voters can be listed
    assert got.value is None and "DescribeQuorum" in got.source, got
    assert "(kadmin needs Describe on the Cluster to list the voters)" in got.source
    assert got.source.endswith("for User:bob (kafka-acls --add --allow-principal User:bob --operation DescribeConfigs "
                               "--cluster)")

    assert fetch_timeout(acl, "admin", "controller") == QuorumSetting(
        QUORUM_FETCH_TIMEOUT, CONTROLLER_FETCH_TIMEOUT, "controller 3001 (DescribeConfigs)")
    got = fetch_timeout(acl, "alice", "controller")  # the controller answers DescribeCluster only to Alter
    assert got.value is None and "DescribeCluster" in got.source and "Alter on the Cluster" in got.source, got
    # dave may Alter the Cluster: the controller lists itself, then refuses DescribeConfigs, and says so
    denied = ("unknown: the controllers could not be asked: controller 3001: DescribeConfigs: "
              "CLUSTER_AUTHORIZATION_FAILED (Cluster authorization failed.); no broker to ask instead: the controllers "
              "(--bootstrap-controller) do not describe the brokers (KIP-919); give --bootstrap-server to read a "
              "broker's own value; kadmin needs DescribeConfigs on the Cluster resource for User:dave (kafka-acls "
              "--add --allow-principal User:dave --operation DescribeConfigs --cluster)")
    wait_for(lambda: fetch_timeout(acl, "dave", "controller").source == denied, 120,
             "the controller to apply dave's ACL (Alter on the Cluster)", interval=0.5)
    # the ACL named is the one that lets dave read it
    acl.k.acl("--add", "--allow-principal", "User:dave", "--operation", "DescribeConfigs", "--cluster")

    def read() -> QuorumSetting | None:
        got = fetch_timeout(acl, "dave", "controller")
        return got if got.source != denied else None

    got = wait_for(read, 120, "dave's DescribeConfigs on the Cluster in force at the controller", interval=0.5)
    assert got == QuorumSetting(QUORUM_FETCH_TIMEOUT, CONTROLLER_FETCH_TIMEOUT, "controller 3001 (DescribeConfigs)")


def test_broker_3_stopped_can_stop_2_and_drain(acl: Acl) -> None:
    acl.k.stop(3)
    acl.down.add(3)
    acl.wait("broker 3 out of every ISR", lambda got: all(3 not in isr(f) for f in got.values()
                                                           if f["Leader"] != "none"))
    # the case: ISR [1,2] everywhere RF-3; stopping 2 leaves 1 alone, below min.insync.replicas 2
    got = never_fooled(acl, "can-stop", "brokers", "can-stop", "2")
    assert got["admin"].code == 1
    assert got["alice"].code == 1 and "min.insync.replicas" in got["alice"].text
    got = never_fooled(acl, "check", "partitions", "check")
    assert got["admin"].code == 2  # hidden-0 is offline
    assert all(got[u].code in (2, 3) for u in RESTRICTED)
    # drain 1: replicas [1,3,2] with ISR [1,2]: the in-sync 2 goes first, so the election moves the leadership
    before = acl.topics()[("vis-drain", 0)]
    assert isr(before) == {1, 2} and before["Leader"] == "1", before
    saved = acl.k.base / "drain-1.json"
    r = acl.kadmin("admin", "brokers", "drain", "1", "--save", str(saved), "--timeout", "120")
    assert r.code == 0, r.text
    assert acl.topics()[("vis-drain", 0)]["Leader"] == "2"


def test_broker_3_back_wait_in_sync(acl: Acl) -> None:
    if 3 in acl.down:
        acl.k.start(3)
        acl.down.discard(3)
    got = never_fooled(acl, "wait", "brokers", "wait", "3", "--in-sync", "--timeout", "300")
    assert got["admin"].code == 0 and got["admin"].data["live"] is True
    # when it answered, Kafka shows 3 back in every ISR it belongs in
    for key, f in acl.topics().items():
        if "3" in f["Replicas"].split(","):
            assert 3 in isr(f), (key, f)
    assert got["carol"].code == 0
    assert got["alice"].code == 1


def test_a_named_topic_the_principal_may_not_describe_is_never_safe(acl: Acl) -> None:
    """Issue 34 §2: `brokers can-stop 3 --topic hidden` as alice, who may not Describe `hidden`: Kafka answers
    TOPIC_AUTHORIZATION_FAILED for the named topic, and the verdict was "safe (all 0 partitions)". It is not safe,
    naming what it could not read; `partitions check --topic hidden` agrees (CRITICAL), as it did."""
    for args in (("brokers", "can-stop", "3", "--topic", "hidden"),
                 ("brokers", "can-stop", "1", "--topic", "vis-a", "--topic", "hidden", "--min-isr-default", "2")):
        got = acl.kadmin("alice", *args)
        assert got.code == 1 and got.data["safe"] is False, got.text
        assert [(b["topic"], b["partition"]) for b in got.data["blocking"]] == [("hidden", None)], got.text
        assert "TOPIC_AUTHORIZATION_FAILED" in got.data["blocking"][0]["reason"], got.text
    assert acl.kadmin("admin", "brokers", "can-stop", "1", "--topic", "hidden").code == 0  # the truth: 1 hosts none
    got = acl.kadmin("alice", "partitions", "check", "--topic", "hidden")
    assert got.code == 2 and got.data["findings"][0]["topic"] == "hidden", got.text


def piped(acl: Acl, user: str, *args: str) -> tuple[int, str]:
    """`kadmin ARGS -o json | true` as `user`, in a real pipe: (kadmin's own exit code, its stderr)."""
    argv = [sys.executable, "-m", "kadmin", *args, "--bootstrap-server", acl.k.bootstrap(skip=acl.down),
            "--command-config", str(acl.k.client_config(user)), "-o", "json"]
    line = " ".join(f"'{a}'" for a in argv)
    r = subprocess.run(["bash", "-c", f"e=$(mktemp); {line} 2>$e | true; echo ${{PIPESTATUS[0]}}; cat $e; rm $e"],
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    code, _, err = r.stdout.partition("\n")
    return int(code), err


def test_a_verdict_survives_a_reader_that_closed_the_pipe(acl: Acl) -> None:
    """Issue 34 §1 on real Kafka with SASL and the StandardAuthorizer: `set -o pipefail; kadmin brokers can-stop 3
    -o json | true` exits the verdict (alice: 1, not 0), a check its verdict (not UNKNOWN), and a command that is
    no gate, whose output is what it is for, 74."""
    for user, args in [("alice", ("brokers", "can-stop", "3")), ("admin", ("brokers", "can-stop", "1")),
                       ("admin", ("partitions", "check")), ("alice", ("partitions", "check"))]:
        truth = acl.kadmin(user, *args).code
        code, err = piped(acl, user, *args)
        assert code == truth, (user, args, code, truth, err)
        assert "output lost" not in err and "Traceback" not in err, err
    code, err = piped(acl, "admin", "brokers", "list")
    assert code == 74 and "output lost" in err, err


def test_a_drain_never_says_leads_none_past_what_it_cannot_see(acl: Acl) -> None:
    """Issue 34 §2: a drain reads Metadata for every topic, which leaves out the topics the principal may not
    Describe. erin (alice's view, and Alter on the Cluster) drains broker 3, which leads `hidden` (its only replica):
    she cannot see it, so her drain must
    not say broker 3 leads nothing: exit 5 naming what it could not see (broker 3's log dirs list it). The super
    user's drain of 3 says what is true: it still leads hidden-0 (its only replica: nothing to move to)."""
    saved = acl.k.base / "erin-drain-3.json"
    got = acl.kadmin("erin", "brokers", "drain", "3", "--save", str(saved), "--timeout", "120")
    assert got.code == 5, got.text
    assert "could not read" in got.stderr and "hidden-0" in got.stderr, got.text
    assert "now leads none" not in got.stderr and "may lead them" in got.stderr, got.text
    # erin may not Create the lease topic (issue 34 §4): her drain goes on, saying what it could not serialize
    assert "no lease (CreateTopics __kadmin_leadership_lease: TOPIC_AUTHORIZATION_FAILED" in got.stderr, got.text
    back = acl.kadmin("admin", "brokers", "undrain", "3", "--from", str(saved), "--timeout", "120")
    assert back.code in (0, 5), back.text
    saved_admin = acl.k.base / "admin-drain-3.json"
    truth = acl.kadmin("admin", "brokers", "drain", "3", "--save", str(saved_admin), "--timeout", "120")
    assert truth.code == 1 and ("hidden", 0) in {(r["topic"], r["partition"]) for r in truth.data["remaining"]}, \
        truth.text
    assert "no lease" not in truth.stderr, truth.text  # the super user takes it
    assert acl.kadmin("admin", "brokers", "undrain", "3", "--from", str(saved_admin), "--timeout", "120").code == 0


def test_a_leader_that_is_registered_but_fenced_is_no_live_leader(acl: Acl, mocker: Any) -> None:
    """docs/kraft.md's fenced-leader rule, on real 4.3.1. Kafka moves a fenced broker's leadership in the same
    metadata batch as the fence, so one answer never shows a fenced leader; a broker whose metadata lags does,
    until it catches up. That lagging answer is real Kafka's, taken just before broker 3 was fenced (the one edge
    injected: when kadmin gets it); the live set is real Kafka's after the fence. kadmin must then call the
    partition offline and under min ISR (`check` CRITICAL, `--offline`, `--under-min-isr`), never healthy, while
    the stale answer names a leader."""
    from kadmin.cluster.kraft_cluster import KraftCluster
    from kadmin.domain import partitions as rules
    from kadmin.services import partitions as psvc

    tool(acl.k.home, TOPIC_COMMAND, "--bootstrap-server", acl.k.bootstrap(skip=acl.down), "--command-config",
         str(acl.k.client_config("admin")), "--create", "--topic", "vis-fence", "--replica-assignment", "3:1:2")

    def backend() -> Any:
        return open_backend(ConnectionSettings({"bootstrap-server": Sourced(acl.k.bootstrap(skip=acl.down), "flag"),
                                                "command-config": Sourced(str(acl.k.client_config("admin")), "flag")}),
                            "check")

    before = backend()
    try:
        def led_by_3_in_sync() -> Any:
            answers, _ = before.partitions.describe_partitions(["vis-fence"])
            p = answers[0][1] if answers else None
            return answers if p is not None and p.leader_id == 3 and len(p.isr_nodes) == 3 else None
        stale = wait_for(led_by_3_in_sync, 300, "vis-fence-0 led by 3, all in sync", interval=0.5)
    finally:
        before.close()
    acl.k.pause(3)  # no heartbeats: the controller fences broker 3, and moves its leadership in the same batch
    acl.down.add(3)
    try:
        def fenced() -> bool:
            got = acl.kadmin("admin", "brokers", "list")
            return got.code == 0 and any(b["id"] == 3 and b["state"] == "fenced" for b in got.data)
        wait_for(fenced, 300, "broker 3 fenced", interval=0.5)
        now = acl.topics_of("vis-fence")[("vis-fence", 0)]
        assert now["Leader"] != "3", now  # Kafka's own view: the leadership moved with the fence
        mocker.patch.object(KraftCluster, "_pages", return_value=(stale, []))  # the lagging answer (its pages)
        after = backend()
        try:
            s = after.partitions.scan_partitions(["vis-fence"])
            [p] = s.partitions
            assert p.leader == 3 and 3 not in s.live, (p, s.live)  # a registered leader, fenced
            assert rules.is_offline(p, s.live) and rules.is_under_min_isr(p, s.live)
            res = psvc.check(after.partitions, wanted=rules.TopicFilter(("vis-fence",)))
        finally:
            after.close()
        assert int(res.exit_code) == 2, res.message  # CRITICAL, never OK
        [finding] = [f for f in res.data.findings if (f.topic, f.partition) == ("vis-fence", 0)]
        assert finding.reasons == ("leader 3 is not live",), finding  # offline: its leader is not live
    finally:
        acl.k.resume(3)
        acl.down.discard(3)
        acl.k.wait_brokers([3])
