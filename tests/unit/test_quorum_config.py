"""controller.quorum.fetch.timeout.ms's pure parts (kadmin/cluster/quorum_config.py): the value as Kafka writes it,
what one node's DescribeConfigs answer says, and which source text the setting carries."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kadmin.cluster.base import QUORUM_FETCH_TIMEOUT, QuorumSetting
from kadmin.cluster.connect import ZkEnsemble
from kadmin.cluster.kraft import KraftClient
from kadmin.cluster.quorum_config import Asked, acl_hint, asked, choose, int_value, principal, told
from kadmin.config import ConnectionSettings

NAME = QUORUM_FETCH_TIMEOUT


@pytest.mark.parametrize(("text", "value"), [("2000", 2000), ("1", 1), ("2147483647", 2147483647)])
def test_an_int_string_is_the_value(text: str, value: int) -> None:
    assert int_value(text) == (value, "")


@pytest.mark.parametrize("text", ["", "0", "-1", "+5", " 5", "5 ", "1.5", "2s", "1_000", "١٢"])
def test_anything_else_is_no_value_with_why(text: str) -> None:
    assert int_value(text) == (None, f"value {text!r} is not a positive whole number of ms")


def test_a_null_value_is_no_value() -> None:
    assert int_value(None) == (None, "no value")


def result(error_code: int = 0, message: str | None = None, **configs: str | None) -> SimpleNamespace:
    return SimpleNamespace(error_code=error_code, error_message=message, resource_name="1",
                           configs=[SimpleNamespace(name=k.replace("_", "."), value=v) for k, v in configs.items()])


def test_a_describe_configs_answer_as_what_the_node_said() -> None:
    fetch = {"controller_quorum_fetch_timeout_ms": "1500"}
    assert asked("controller", 3001, result(**fetch)) == Asked("controller", 3001, 1500)
    assert asked("broker", 1, result(**{"controller_quorum_fetch_timeout_ms": "x"})) == Asked(
        "broker", 1, None, f"{NAME}: value 'x' is not a positive whole number of ms")
    assert asked("broker", 1, result()) == Asked("broker", 1, None, f"DescribeConfigs did not list {NAME}")
    # an authorization error is `denied` (the ACL is named); any other error is not
    assert asked("broker", 1, result(31, "Cluster authorization failed.")) == Asked(
        "broker", 1, None, "DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED (Cluster authorization failed.)", True)
    assert asked("controller", 3001, result(42, "Unexpected broker id")) == Asked(
        "controller", 3001, None, "DescribeConfigs: INVALID_REQUEST (Unexpected broker id)", False)


def test_reasons_are_said_once_for_the_nodes_that_share_them() -> None:
    said = [Asked("controller", 3001, None, "DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED", True),
            Asked("controller", 3002, None, "cannot reach it", at="h2:9093"),
            Asked("controller", 3003, None, "DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED", True)]
    assert told(said) == ("controllers 3001, 3003: DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED; "
                          "controller 3002 at h2:9093: cannot reach it")


def test_the_principal_is_the_sasl_user_where_the_configuration_says_it() -> None:
    assert principal({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice"}) \
        == "User:alice"
    assert principal({"sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "bob"}) == "User:bob"
    assert principal({"sasl_mechanism": "GSSAPI", "sasl_kerberos_service_name": "kafka"}) is None
    assert principal({"security_protocol": "PLAINTEXT"}) is None
    assert acl_hint("User:alice") == ("kadmin needs DescribeConfigs on the Cluster resource for User:alice (kafka-acls "
                                      "--add --allow-principal User:alice --operation DescribeConfigs --cluster)")
    assert acl_hint(None) == "kadmin needs DescribeConfigs on the Cluster resource for the principal it connects as"


LEADER, FOLLOWER = Asked("controller", 3001, 1500), Asked("controller", 3002, 1500)
DENIED = Asked("controller", 3001, None, "DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED", True)
AWAY = Asked("controller", 3001, None, "cannot reach h1:9093", at="h1:9093")


def test_the_first_controller_with_a_value_is_the_source() -> None:
    assert choose(NAME, [LEADER, FOLLOWER], "", None, "", None) == QuorumSetting(
        NAME, 1500, "controller 3001 (DescribeConfigs)")
    assert choose(NAME, [AWAY, FOLLOWER], "", None, "", None) == QuorumSetting(
        NAME, 1500, "controller 3002 (DescribeConfigs)")
    # a controller that says otherwise is named beside it
    assert choose(NAME, [LEADER, Asked("controller", 3002, 1800), FOLLOWER], "", None, "", None).source == (
        "controller 3001 (DescribeConfigs); the controllers disagree: controller 3002 has 1800")


def test_a_brokers_value_says_why_the_controllers_could_not_be_asked() -> None:
    broker = Asked("broker", 1, 2500)
    assert choose(NAME, [AWAY], "kadmin must reach a controller", broker, "", None) == QuorumSetting(
        NAME, 2500, "broker 1 (DescribeConfigs): the controllers could not be asked: controller 3001 at h1:9093: "
                    "cannot reach h1:9093; kadmin must reach a controller")
    assert choose(NAME, [], "DescribeQuorum lists no endpoints", broker, "", None).source == (
        "broker 1 (DescribeConfigs): the controllers could not be asked: DescribeQuorum lists no endpoints")


def test_nothing_read_is_none_with_every_reason_and_the_acl_after_a_refusal() -> None:
    refused = Asked("broker", 1, None, "DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED", True)
    got = choose(NAME, [DENIED], "", refused, "", "User:alice")
    assert got == QuorumSetting(NAME, None, "unknown: the controllers could not be asked: controller 3001: "
                                            "DescribeConfigs: CLUSTER_AUTHORIZATION_FAILED; broker 1: DescribeConfigs: "
                                            "CLUSTER_AUTHORIZATION_FAILED; " + acl_hint("User:alice"))
    # unreachable, not refused: no ACL is named
    got = choose(NAME, [AWAY], "", None, "no broker could be asked: ...", "User:alice")
    assert got.value is None and "DescribeConfigs on the Cluster" not in got.source
    assert got.source == ("unknown: the controllers could not be asked: controller 3001 at h1:9093: cannot reach "
                          "h1:9093; no broker could be asked: ...")
    assert choose(NAME, [], "", None, "", None).source == "unknown: the controllers could not be asked: none was found"


def test_a_zookeeper_ensemble_has_no_fetch_timeout_and_its_voters_are_no_nodes_of_the_cluster() -> None:
    ensemble = ZkEnsemble(ConnectionSettings({}), None)  # nothing is contacted
    assert ensemble.quorum_fetch_timeout() == QuorumSetting(NAME, None, "a ZooKeeper ensemble has no KRaft quorum")
    assert ensemble.voters_are_nodes is False
    assert KraftClient.voters_are_nodes is True
