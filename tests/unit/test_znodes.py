"""Kafka's znode JSON, byte for byte where Kafka's encoder is fixed (kafka-formats.md §1)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kadmin.domain import znodes


def test_v5_example_from_kafka_decodes() -> None:
    raw = (b'{"version":5,"host":"h1","port":9092,"jmx_port":-1,"timestamp":"1700000000000",'
           b'"endpoints":["PLAINTEXT://h1:9092","SSL://h1:9093"],"rack":"r1",'
           b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},"features":{}}')
    r = znodes.decode_registration(raw)
    assert (r.version, r.host, r.port, r.rack, r.jmx_port) == (5, "h1", 9092, "r1", -1)
    assert r.timestamp_ms == 1700000000000
    assert r.endpoints == ("PLAINTEXT://h1:9092", "SSL://h1:9093")
    assert r.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}


def test_v1_has_only_host_and_port() -> None:
    r = znodes.decode_registration(b'{"version":1,"host":"old","port":9092,"jmx_port":9999,"timestamp":"1"}')
    assert r.endpoints == ("PLAINTEXT://old:9092",)
    assert r.listener_security_protocol_map == {"PLAINTEXT": "PLAINTEXT"}
    assert r.jmx_port == 9999


def test_null_host_and_port_minus_one() -> None:
    raw = json.dumps({"version": 4, "host": None, "port": -1, "jmx_port": -1, "timestamp": "5",
                      "endpoints": ["SASL_SSL://:9094"], "listener_security_protocol_map": {"SASL_SSL": "SASL_SSL"}})
    r = znodes.decode_registration(raw.encode())
    assert r.host is None and r.port == -1
    assert znodes.parse_endpoint(r.endpoints[0]) == ("SASL_SSL", None, 9094)


def test_missing_protocol_map_defaults_to_listener_names() -> None:
    r = znodes.decode_registration(b'{"version":3,"host":"h","port":1,"jmx_port":-1,"timestamp":"1",'
                                   b'"endpoints":["CLIENT://h:1","[::1]"]}'.replace(b',"[::1]"', b',"REPL://[::1]:2"'))
    assert r.listener_security_protocol_map == {"CLIENT": "CLIENT", "REPL": "REPL"}
    assert znodes.parse_endpoint("REPL://[::1]:2") == ("REPL", "::1", 2)


@pytest.mark.parametrize(
    "raw, fragment",
    [
        (b"{not json", "invalid JSON"),
        (b"", "empty"),
        (b"[1,2]", "JSON object"),
        (b'{"version":0,"host":"h","port":1}', "unsupported broker registration version 0"),
        (b'{"version":6,"host":"h","port":1,"endpoints":[]}', "unknown broker registration version 6"),
        (b'{"version":5,"host":"h","port":"x","endpoints":[]}', "'port'"),
        (b'{"version":5,"host":"h","port":1,"endpoints":["nope"]}', "LISTENER://host:port"),
        (b'{"version":5,"host":"h","port":1,"endpoints":[],"timestamp":"soon"}', "timestamp"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_bad_registrations_are_named(raw: bytes, fragment: str) -> None:
    with pytest.raises(znodes.ZnodeFormatError, match=fragment):
        znodes.decode_registration(raw)


@pytest.mark.parametrize("version", [2, 4, 5])
def test_encoder_writes_what_kafka_writes_for_each_version(version: int) -> None:
    raw = znodes.encode_registration(host="b1", port=9092, endpoints=["PLAINTEXT://b1:9092"], timestamp_ms=42,
                                     version=version, rack="r")
    doc = json.loads(raw)
    expected = {"version", "host", "port", "jmx_port", "timestamp", "endpoints"}
    if version >= 3:
        expected.add("rack")
    if version >= 4:
        expected.add("listener_security_protocol_map")
    if version >= 5:
        expected.add("features")
    assert set(doc) == expected
    assert doc["timestamp"] == "42"  # a string, as Jackson writes it
    assert b" " not in raw  # compact
    assert znodes.decode_registration(raw).timestamp_ms == 42


def test_controller_and_cluster_id_formats() -> None:
    c = znodes.decode_controller(znodes.encode_controller(3, 7))
    assert (c.broker_id, c.version, c.kraft_controller_epoch, c.timestamp_ms) == (3, 2, -1, 7)
    v1 = znodes.decode_controller(b'{"version":1,"brokerid":2,"timestamp":"9"}')
    assert (v1.broker_id, v1.kraft_controller_epoch) == (2, -1)
    assert json.loads(znodes.encode_cluster_id("abc")) == {"version": "1", "id": "abc"}
    assert znodes.decode_cluster_id(b'{"version":"1","id":"xyz"}') == "xyz"


def test_partition_state_omits_recovered_leader_recovery_state() -> None:
    assert "leader_recovery_state" not in json.loads(znodes.encode_partition_state(1, 0, 1, [1]))
    assert json.loads(znodes.encode_partition_state(1, 0, 1, [1], 1))["leader_recovery_state"] == 1


@given(st.text(alphabet=st.sampled_from(list("+-0123456789 \n") + ["\u0661", "\u00b2", "\uff11", "x"]), max_size=12))
def test_a_broker_id_name_is_canonical_ascii_decimal_as_kafka_writes_it(name: str) -> None:
    """/brokers/ids children: Kafka writes Integer.toString(id), so an id is ASCII digits, no sign, no leading
    zero, at most 2^31 - 1; anything else (Arabic-Indic or full-width digits, superscripts, spaces) is refused."""
    canonical = name != "" and all(c in "0123456789" for c in name) and (name == "0" or name[0] != "0") \
        and int(name) <= 2**31 - 1
    if canonical:
        assert znodes.broker_id_from_name(name) == int(name)
    else:
        with pytest.raises(znodes.ZnodeFormatError, match="is not a broker id"):
            znodes.broker_id_from_name(name)
