"""Issue 9 §1: verdicts that cannot be wrong in the dangerous direction, and absurd values that are
malformed data (never an internal error). Pure domain functions and the JSON renderer."""

from __future__ import annotations

import io
import json

import pytest

from kadmin.domain import partitions as rules
from kadmin.domain import znodes
from kadmin.domain.ids import decode_mapping
from kadmin.domain.models import PartitionState
from kadmin.errors import UsageError
from kadmin.render import Renderer, dumps, views
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
