"""`host_port`: the one way kadmin writes an address; an IPv6 literal must be bracketed."""

from __future__ import annotations

import pytest

from kadmin.domain.addresses import host_port
from kadmin.domain.znodes import parse_endpoint
from kadmin.services.shutdown import pick_endpoint


@pytest.mark.parametrize(("host", "port", "expected"), [
    ("127.0.0.1", 9092, "127.0.0.1:9092"),
    ("kafka-1.example.com", 9093, "kafka-1.example.com:9093"),
    ("::1", 9093, "[::1]:9093"),
    ("fd00::2", "2181", "[fd00::2]:2181"),
    ("fe80::1%eth0", 9092, "[fe80::1%eth0]:9092"),
    ("[::1]", 9093, "[::1]:9093"),  # already bracketed: kept
])
def test_host_port(host: str, port: int | str, expected: str) -> None:
    assert host_port(host, port) == expected


def test_an_endpoint_round_trips_through_parse_endpoint() -> None:
    name, host, port = parse_endpoint("PLAINTEXT://[::1]:9093")
    assert (name, host, port) == ("PLAINTEXT", "::1", 9093)
    assert host is not None and host_port(host, port) == "[::1]:9093"


def test_pick_endpoint_brackets_an_ipv6_controller() -> None:
    eps = ("INTERNAL://[fd00::2]:9094", "PLAINTEXT://[::1]:9093")
    assert pick_endpoint(eps, {"INTERNAL": "SSL", "PLAINTEXT": "PLAINTEXT"}, "PLAINTEXT", None) == "[::1]:9093"
    assert pick_endpoint(eps, {"INTERNAL": "SSL", "PLAINTEXT": "PLAINTEXT"}, "SSL", None) == "[fd00::2]:9094"
    assert pick_endpoint(("PLAINTEXT://127.0.0.1:9092",), {}, "PLAINTEXT", None) == "127.0.0.1:9092"
