"""Issue 9 §1: verdicts that cannot be wrong in the dangerous direction, and absurd values that are
malformed data (never an internal error). Pure domain functions and the JSON renderer."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kadmin.domain import partitions as rules
from kadmin.domain import znodes
from kadmin.domain.ids import decode_mapping
from kadmin.domain.models import PartitionState
from kadmin.errors import UsageError
from kadmin.render import views
from kadmin.render.renderer import Renderer, dumps
from kadmin.results import Result
from kadmin.services.brokers import parse_saved_epochs

HUGE = "9" * 5000  # beyond Python's 4300-digit int-conversion limit
DEEP = "[" * 200_000 + "]" * 200_000
LIVE = frozenset({1, 2, 3})


def ps(replicas, isr, leader, min_isr=2, topic="t", partition=0, problem=None):
    return PartitionState(topic=topic, partition=partition, replicas=tuple(replicas), isr=tuple(isr), leader=leader,
                          leader_epoch=0, partition_epoch=0, min_isr=min_isr, problem=problem)


# ------------------------------------------------------------------ absurd znode content
REG = '{"version":5,"host":"h","port":PORT,"jmx_port":-1,"timestamp":"1","endpoints":["PLAINTEXT://h:9092"]}'


def reg(port: str = "9092", old: str = "", new: str = "") -> str:
    return REG.replace("PORT", port).replace(old, new) if old else REG.replace("PORT", port)


@pytest.mark.parametrize("decode, raw", [
    (znodes.decode_registration, reg(HUGE)),
    (znodes.decode_registration, reg(DEEP)),
    (znodes.decode_registration, reg("NaN")),
    (znodes.decode_registration, reg("Infinity")),
    (znodes.decode_registration, reg("1e999")),
    (znodes.decode_registration, reg(str(2**31))),
    (znodes.decode_registration, reg(old='"1"', new=f'"{HUGE}"')),
    (znodes.decode_registration, reg(old='"timestamp":"1"', new='"timestamp":"1_0"')),
    (znodes.decode_registration, reg(old="h:9092", new="h:٩٠٩٢")),
    (znodes.decode_registration, reg(old="h:9092", new=f"h:{HUGE}")),
    (znodes.decode_registration, reg(old='"port"', new='"features":{"f":{"max_version":NaN}},"port"')),
    (znodes.decode_partition_state, f'{{"version":1,"leader":{HUGE},"leader_epoch":0,"isr":[1]}}'),
    (znodes.decode_partition_state, f'{{"version":1,"leader":1,"leader_epoch":0,"isr":{DEEP}}}'),
    (znodes.decode_partition_state, '{"version":1,"leader":1,"leader_epoch":0,"isr":[1, -3]}'),
    (znodes.decode_topic, f'{{"version":3,"partitions":{{"{HUGE}":[1]}}}}'),
    (znodes.decode_topic, '{"version":3,"partitions":{"٣":[1]}}'),
    (znodes.decode_topic, '{"version":3,"partitions":{"0":[1],"00":[2]}}'),
    (znodes.decode_topic, f'{{"version":3,"partitions":{{"0":[{HUGE}]}}}}'),
    (znodes.decode_config, f'{{"version":1,"config":{{"min.insync.replicas":{DEEP}}}}}'),
    (znodes.decode_controller, f'{{"version":2,"brokerid":{HUGE},"timestamp":"1"}}'),
])
def test_absurd_values_are_format_errors(decode, raw):
    with pytest.raises(znodes.ZnodeFormatError):
        decode(raw.encode())


@pytest.mark.parametrize("raw", [f'{{"version":0,"broker.id":{HUGE}}}', f'{{"version":0,"broker.id":{DEEP}}}',
                                 '{"version":0,"broker.id":NaN}', f'{{"version":0,"broker.id":{2**31}}}'])
def test_absurd_host_mappings_are_value_errors(raw):
    with pytest.raises(ValueError):
        decode_mapping(raw.encode())


@pytest.mark.parametrize("value, expected", [("2", 2), (" 3 ", 3), ("+1", 1), ("2147483647", 2147483647)])
def test_min_isr_values_kafka_accepts(value, expected):
    assert znodes.parse_min_isr(value) == expected


@pytest.mark.parametrize("value", ["two", "1e999", "nan", "inf", "2.0", "0", "-1", "1_0", "٢", "", HUGE,
                                   "2147483648"])
def test_min_isr_values_kafka_refuses(value):
    with pytest.raises(znodes.ZnodeFormatError, match="min.insync.replicas"):
        znodes.parse_min_isr(value)


@pytest.mark.parametrize("name, expected", [("0", 0), ("7", 7), ("1001", 1001), ("2147483647", 2147483647)])
def test_canonical_broker_id_children(name, expected):
    assert znodes.broker_id_from_name(name) == expected


@pytest.mark.parametrize("name", ["02", "00", "-1", "+1", "1_0", "٣", " 1", "1 ", "", "x", HUGE, "2147483648"])
def test_non_canonical_broker_id_children(name):
    with pytest.raises(znodes.ZnodeFormatError, match="not a broker id"):
        znodes.broker_id_from_name(name)


@pytest.mark.parametrize("text", [f'[{{"id":1,"epoch":{HUGE}}}]', DEEP, f'{{"data":{DEEP}}}',
                                  '[{"id":1,"epoch":NaN}]', f'{{"id":1,"epoch":{HUGE}}}\n{{"id":2,"epoch":3}}',
                                  '[{"id":-1,"epoch":3}]', f'[{{"id":{2**40},"epoch":3}}]'])
def test_absurd_since_files_are_usage_errors(text):
    with pytest.raises(UsageError, match="--since"):
        parse_saved_epochs(text, "saved.json")


# ------------------------------------------------------------------ nesting refused before it is parsed
def reference_depth(data: bytes) -> tuple[int, bool]:
    """The deepest array/object nesting outside string literals, one character at a time (a stray closer
    closes nothing), and whether every bracket closes one that is open and every opened one closes."""
    depth = deepest = 0
    in_string = escaped = stray = False
    for c in data.decode("latin-1"):
        if in_string:
            escaped, in_string = (False, True) if escaped else (c == "\\", c != '"')
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            stray = stray or depth == 0
            depth = max(depth - 1, 0)
    return deepest, not stray and depth == 0


TOKENS = ['[', ']', '{', '}', '"', '\\', 'a', ',', '""', '"["', '"\\""', '"\\\\"', '"]"', '"\\["']
BALANCED = ['[]', '{}', '[[]]', '{"a":[]}', 'a', ',', '""', '"["', '"\\""', '"\\\\"', '"]"', '"\\["', '"}{"']


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.lists(st.sampled_from(TOKENS), max_size=40),
       st.integers(0, 250), st.integers(0, 250))
def test_json_too_deep_never_misses_deep_nesting(before, after, opened, closed):
    text = ("".join(before) + "[" * opened + "".join(after) + "]" * closed).encode()
    if reference_depth(text)[0] > znodes.MAX_JSON_DEPTH:
        assert znodes.json_too_deep(text), text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(BALANCED), max_size=30), st.lists(st.sampled_from(BALANCED), max_size=30),
       st.integers(0, 100), st.integers(150, 210), st.sampled_from("[{"))
def test_json_too_deep_is_exact_on_balanced_input(outside, inside, spread, opened, kind):
    close = "]" if kind == "[" else "}"
    body = "".join(outside[:spread % (len(outside) + 1)]) + kind * opened + "".join(inside) + close * opened
    text = (body + "".join(outside[spread % (len(outside) + 1):])).encode()
    depth, balanced = reference_depth(text)
    assert balanced, text
    assert znodes.json_too_deep(text) == (depth > znodes.MAX_JSON_DEPTH), (depth, text)


def test_deep_nesting_is_refused_before_the_parser_recurses(monkeypatch):
    """Issue 24 CI: a finalizer the garbage collector ran deep inside json's C parser failed with
    RecursionError ("Exception ignored in ..."). The depth is judged first, so a collection at any point of
    the call finds the stack shallow."""
    import gc
    import sys

    failed: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: failed.append(u.exc_type))

    class Finalized:
        def __del__(self) -> None:
            def down(n: int) -> int:
                return 0 if n == 0 else down(n - 1)
            down(40)  # what a close() a few calls deep needs

    threshold = gc.get_threshold()
    try:
        for allocations in range(0, 1000, 10):  # a collection after this many more allocations
            gc.collect(0)  # the youngest generation only: a full collection of the suite's heap takes ~0.3 s
            cycles = [Finalized() for _ in range(3)]
            for c in cycles:
                c.me = c  # type: ignore[attr-defined]
            del cycles, c
            gc.set_threshold(gc.get_count()[0] + allocations + 1)
            with pytest.raises(ValueError, match="nested deeper than 200 levels"):
                znodes.loads_strict(DEEP)
    finally:
        gc.set_threshold(*threshold)
        gc.collect()
    assert failed == []


# ------------------------------------------------------------------ JSON never has NaN/Infinity
def test_json_output_never_contains_non_finite_numbers():
    data = {"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], "c": {"d": (float("nan"),)}}
    text = dumps(data)
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5], "c": {"d": [None]}}
    out = io.StringIO()
    Renderer("json", out=out, err=io.StringIO()).emit(Result(data=data), views.key_values)
    doc = json.loads(out.getvalue(), parse_constant=lambda c: pytest.fail(f"bare {c} in JSON output"))
    assert doc["data"]["b"] == [None, None, 1.5]
    out = io.StringIO()
    Renderer("ndjson", out=out, err=io.StringIO()).emit(Result(data=[data]), views.records)
    assert "NaN" not in out.getvalue() and "Infinity" not in out.getvalue()


# ------------------------------------------------------------------ verdicts with read problems
def test_a_partition_with_a_read_problem_blocks_and_is_critical():
    # the state reads fine, but min.insync.replicas could not be read: the default 1 must not pass
    p = ps([1, 2, 3], [1, 2, 3], 1, min_isr=1, problem="unreadable min.insync.replicas")
    v = rules.can_stop([p], 1, LIVE)
    assert not v.safe and v.blocking[0].reason == "unreadable min.insync.replicas"
    assert rules.health([p], LIVE) == rules.Health.CRITICAL
    assert rules.findings([p], LIVE)[0].reasons == ("unreadable min.insync.replicas",)
    assert rules.can_stop([p], 4, LIVE).safe  # not hosted by 4: no bearing on its verdict


def test_an_unreadable_topic_blocks_every_broker_and_is_critical():
    fine = ps([1, 2, 3], [1, 2, 3], 1)
    unreadable = {"x": "/brokers/topics/x: invalid JSON"}
    v = rules.can_stop([fine], 3, LIVE, unreadable)
    assert not v.safe and v.hosted == 1
    assert [(b.topic, b.partition, b.reason) for b in v.blocking] == [("x", None, "/brokers/topics/x: invalid JSON")]
    assert rules.health([fine], LIVE, unreadable) == rules.Health.CRITICAL
    f = rules.findings([fine], LIVE, unreadable)
    assert [(x.topic, x.partition, x.reasons) for x in f] == [("x", None, ("/brokers/topics/x: invalid JSON",))]
    assert rules.health([fine], LIVE) == rules.Health.OK


def test_names_broker():
    parts = [ps([1, 2], [1, 2], 1), PartitionState("m", 0, (1, 2), adding_replicas=(5,))]
    assert rules.names_broker(parts, 2) and rules.names_broker(parts, 5) and not rules.names_broker(parts, 9)


# ------------------------------------------------------------------ issue 20: KRaft verdicts a principal cannot fool
def cov(hosted, unread=None):
    from kadmin.domain.models import Coverage

    return Coverage({b: frozenset(k) for b, k in hosted.items()}, unread or {}, frozenset(hosted) | set(unread or {}))


def test_a_partition_in_the_brokers_log_dirs_but_not_seen_blocks_can_stop():
    """Kafka's DescribeTopicPartitions leaves out the topics the principal may not Describe: the broker's log dirs
    (DescribeLogDirs, every topic) show `hidden-0` there, so broker 3 cannot be said to stop safely."""
    parts = [ps([1, 2, 3], [1, 2, 3], 1, min_isr=2)]
    seen_only = rules.can_stop(parts, 3, LIVE)
    assert seen_only.safe  # what a scan alone says
    v = rules.can_stop(parts, 3, LIVE, coverage=cov({3: {("t", 0), ("hidden", 0)}}))
    assert not v.safe and [(b.topic, b.partition) for b in v.blocking] == [("hidden", 0)]
    assert "Describe on Topic:hidden" in v.blocking[0].reason
    # broker 1's hidden partition does not concern broker 3
    assert rules.can_stop(parts, 3, LIVE, coverage=cov({3: {("t", 0)}, 1: {("hidden", 0)}})).safe


def test_log_dirs_that_could_not_be_listed_make_can_stop_unsafe_and_a_topic_filter_makes_it_honest():
    parts = [ps([1, 2, 3], [1, 2, 3], 1, min_isr=2), ps([3], [3], 3, min_isr=1, topic="hidden")]
    v = rules.can_stop(parts[:1], 3, LIVE, coverage=cov({}, {3: "CLUSTER_AUTHORIZATION_FAILED"}))
    assert not v.safe and v.blocking == () and v.unseen == ((3, "CLUSTER_AUTHORIZATION_FAILED"),)
    only_t = rules.TopicFilter(("t",))
    assert only_t.names == ["t"] and rules.TopicFilter(("t*", "u")).names is None
    # with --topic PATTERN the hidden topic outside it neither counts nor blocks; inside it, it does
    assert rules.can_stop(parts, 3, LIVE, coverage=cov({3: {("t", 0), ("hidden", 0)}}),
                          wanted=rules.TopicFilter(("t*",))).safe
    assert not rules.can_stop(parts[:1], 3, LIVE, coverage=cov({3: {("t", 0), ("hidden", 0)}}),
                              wanted=rules.TopicFilter(("h*",))).safe


def test_an_unknown_min_isr_of_the_leader_after_the_stop_blocks_unless_stated():
    """Issue 20: broker 1's DescribeConfigs was refused. Stopping 2 makes 1 the leader of a partition at ISR [1,2]:
    its min ISR is unknown, so not safe; --min-isr-default 1 states it (source "default"), and then it is safe."""
    from kadmin.domain.models import MinIsrConfig

    why = "broker 1's own min.insync.replicas could not be read"
    unknown = MinIsrConfig(cluster_default=None, static=1, unknown=((1, why),))
    p = PartitionState("t", 0, (2, 1, 3), (2, 1), leader=2, leader_epoch=0, min_isr=1, min_isr_config=unknown)
    v = rules.can_stop([p], 2, frozenset({1, 2}))
    assert not v.safe and why in v.blocking[0].reason and "leader 1" in v.blocking[0].reason
    stated = MinIsrConfig(static=1, unknown=((1, why),), default=1)
    assert rules.min_isr_for(stated, 1) == (1, "default") and rules.min_isr_for(unknown, 1) == (1, "unknown")
    # the value shown is the one it would have without a level of its own (the cluster default here), still unknown
    assert rules.min_isr_for(MinIsrConfig(cluster_default=2, static=1, unknown=((1, why),)), 1) == (2, "unknown")
    p2 = PartitionState("t", 0, (2, 1, 3), (2, 1), leader=2, leader_epoch=0, min_isr=1, min_isr_config=stated)
    assert rules.can_stop([p2], 2, frozenset({1, 2})).safe
    # a topic value needs no broker level: known whoever leads
    own = MinIsrConfig(topic=2, unknown=((1, why),))
    assert rules.min_isr_unknown(own, 1) is None and rules.min_isr_unknown(unknown, 2) is None


def test_check_is_critical_for_a_hidden_partition_and_unknown_for_unlisted_log_dirs():
    from kadmin.cluster.base import PartitionStream
    from kadmin.exit_codes import Verdict
    from kadmin.services import partitions as svc

    class Kraft:
        def __init__(self, coverage):
            self.cov = coverage

        def coverage(self, brokers=None):
            return self.cov

        def iter_partitions(self, topics=None, progress=None, min_isr_default=None):
            parts = [ps([1, 2], [1, 2], 1, min_isr=1, topic=t) for t in ("a", "b") if topics is None or t in topics]
            return PartitionStream(iter(parts), LIVE, [], {})

    r = svc.check(Kraft(cov({1: {("a", 0), ("hidden", 0)}, 2: {("a", 0), ("b", 0)}, 3: set()})))  # type: ignore[arg-type]
    assert r.exit_code == Verdict.CRITICAL and r.data.status == "critical"
    assert [(f.topic, f.partition) for f in r.data.findings] == [("hidden", 0)]
    r = svc.check(Kraft(cov({1: {("a", 0)}, 2: {("a", 0), ("b", 0)}}, {3: "cannot reach 127.0.0.1:1"})))  # type: ignore[arg-type]
    assert r.exit_code == Verdict.UNKNOWN
    assert r.data.to_json()["unseen"] == [{"broker_id": 3, "reason": "cannot reach 127.0.0.1:1"}]
    assert r.message.startswith("UNKNOWN: cannot show every partition was seen; partitions only broker 3 host")
    # the topics named: asked for by name (an error if not visible), no log dirs needed
    r = svc.check(Kraft(cov({}, {3: "cannot reach"})), wanted=rules.TopicFilter(("a",)))  # type: ignore[arg-type]
    assert r.exit_code == Verdict.OK and r.data.partitions == 1 and r.data.unseen == ()
    r = svc.check(Kraft(cov({1: {("a", 0)}, 2: {("a", 0), ("b", 0)}, 3: set()})))  # type: ignore[arg-type]
    assert r.exit_code == Verdict.OK and r.data.unseen == ()


class Racing:
    """A KRaft cluster whose log dirs and scans are read in turn: `scans[i]` is what the i-th scan shows (its
    topics), `log_dirs` what every coverage lists; it records the order of the reads."""

    def __init__(self, log_dirs, scans):
        self.log_dirs, self.scans, self.reads = log_dirs, list(scans), []

    def coverage(self, brokers=None):
        self.reads.append("log dirs")
        return cov(self.log_dirs)

    def _parts(self):
        self.reads.append("scan")
        topics = self.scans.pop(0) if len(self.scans) > 1 else self.scans[0]
        return [ps([1, 2], [1, 2], 1, min_isr=1, topic=t) for t in topics]

    def iter_partitions(self, topics=None, progress=None, min_isr_default=None):
        from kadmin.cluster.base import PartitionStream

        return PartitionStream(iter(self._parts()), LIVE, [], {})

    def scan_partitions(self, topics=None, progress=None, min_isr_default=None):
        from kadmin.cluster.base import PartitionScan

        return PartitionScan(self._parts(), LIVE)


def test_log_dirs_read_at_once_with_the_scan_are_read_again_in_order_when_they_list_an_unseen_partition():
    from kadmin.exit_codes import Verdict
    from kadmin.services import partitions as svc

    dirs = {1: {("a", 0), ("new", 0)}, 2: {("a", 0), ("new", 0)}}
    # "new" created between the two reads: the first scan missed it, the ordered read shows it, and judges it
    c = Racing(dirs, [["a"], ["a", "new"]])
    r = svc.check(c)  # type: ignore[arg-type]
    assert r.exit_code == Verdict.OK and r.data.partitions == 2
    assert sorted(c.reads[:2]) == ["log dirs", "scan"] and c.reads[2:] == ["log dirs", "scan"]  # then in order
    v, _ = svc.stop_verdict(Racing(dirs, [["a"], ["a", "new"]]), 1)  # type: ignore[arg-type]
    assert v.safe and v.hosted == 2 and v.hidden == 0
    # hidden from the principal: the ordered read confirms it, and it blocks
    c = Racing(dirs, [["a"]])
    r = svc.check(c)  # type: ignore[arg-type]
    assert r.exit_code == Verdict.CRITICAL and [(f.topic, f.partition) for f in r.data.findings] == [("new", 0)]
    assert c.reads[2:] == ["log dirs", "scan"]
    v, _ = svc.stop_verdict(Racing(dirs, [["a"]]), 1)  # type: ignore[arg-type]
    assert not v.safe and v.hidden == 1 and [(b.topic, b.partition) for b in v.blocking] == [("new", 0)]
    # everything seen at once: one read of each
    c = Racing(dirs, [["a", "new"]])
    assert svc.check(c).exit_code == Verdict.OK and sorted(c.reads) == ["log dirs", "scan"]  # type: ignore[arg-type]


def test_log_dirs_that_fail_on_their_thread_fail_the_command():
    from kadmin.errors import ClusterUnreachable
    from kadmin.services import partitions as svc

    class Down(Racing):
        def coverage(self, brokers=None):
            raise ClusterUnreachable("cannot reach 127.0.0.1:1")

    with pytest.raises(ClusterUnreachable):
        svc.check(Down({}, [["a"]]))  # type: ignore[arg-type]
    with pytest.raises(ClusterUnreachable):
        svc.stop_verdict(Down({}, [["a"]]), 1)  # type: ignore[arg-type]


# ------------------------------------------------------------------ topic znodes: the one-look path and the rules
def _reference_partitions(raw):
    """What a topic znode's partition map means, written from Kafka's rules (TopicZNode; Java's parseInt,
    canonical only): None when Kafka would not have written it."""
    if not isinstance(raw, dict):
        return None
    out = {}
    for p, replicas in raw.items():
        if not (p and all(c in "0123456789" for c in p)) or (len(p) > 1 and p[0] == "0") or int(p) > 2**31 - 1:
            return None
        if not isinstance(replicas, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                                 or not 0 <= x <= 2**31 - 1 for x in replicas):
            return None
        out[int(p)] = tuple(replicas)
    return out


_KEYS = st.one_of(st.integers(0, 2**31 + 5).map(str), st.sampled_from(["", "00", "01", "-0", "+1", "٣", "1 ", "x",
                                                                        "2147483647", "2147483648", "9" * 11]))
_IDS = st.one_of(st.integers(-2, 2**31 + 1), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(max_size=2), st.none())
_REPLICAS = st.one_of(st.lists(st.integers(0, 10), max_size=4), st.lists(_IDS, max_size=4), _IDS)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEYS, _REPLICAS, max_size=6), st.dictionaries(_KEYS, _REPLICAS, max_size=2))
def test_topic_znode_partitions_are_read_as_kafkas_rules_say(partitions, adding):
    raw = json.dumps({"version": 3, "partitions": partitions, "adding_replicas": adding}).encode()
    want, want_adding = _reference_partitions(partitions), _reference_partitions(adding)
    if want is None or want_adding is None:
        with pytest.raises(znodes.ZnodeFormatError):
            znodes.decode_topic(raw)
    else:
        got = znodes.decode_topic(raw)
        assert (got["partitions"], got["adding"], got["removing"]) == (want, want_adding, {})


def test_check_of_an_unread_min_isr_is_ok_with_every_replica_in_sync_else_unknown_never_critical():
    """Issue 34 §2b: a KRaft `partitions check` polled during a roll said CRITICAL ("broker 1's min.insync.replicas:
    cannot reach ...") for partitions that were neither offline nor under min ISR: broker 1 stopped between the
    pages and the configs. With every replica in sync the value cannot matter; short of one, it is UNKNOWN."""
    from kadmin.cluster.base import MIN_ISR_FALLBACK, PartitionStream
    from kadmin.exit_codes import Verdict
    from kadmin.results import Problem
    from kadmin.services import partitions as svc

    why = "min.insync.replicas unknown: broker 1's min.insync.replicas: cannot reach 127.0.0.1:1"

    class Stopping:
        def __init__(self, isr):
            self.isr = isr

        def coverage(self, brokers=None):
            return None

        def iter_partitions(self, topics=None, progress=None, min_isr_default=None):
            p = PartitionState("a", 0, (1, 2, 3), self.isr, 1, min_isr=2, problem=why, min_isr_unread=True)
            # as the KRaft scan reports the broker it could not ask (kadmin/cluster/min_isr.py): a warning
            said = Problem(MIN_ISR_FALLBACK, "broker 1's min.insync.replicas: cannot reach 127.0.0.1:1")
            return PartitionStream(iter([p]), frozenset({1, 2, 3}), [said], {})

    r = svc.check(Stopping((1, 2, 3)))  # type: ignore[arg-type]
    assert (r.exit_code, r.data.findings) == (Verdict.OK, ())
    assert any("broker 1's min.insync.replicas: cannot reach" in w for w in r.warnings)  # said, not hidden
    r = svc.check(Stopping((1, 2)))  # type: ignore[arg-type]
    assert r.exit_code == Verdict.UNKNOWN and "min.insync.replicas of 1 partition short of a replica" in r.message
