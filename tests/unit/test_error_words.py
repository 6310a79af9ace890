"""Library failures in words (issue 35 §5): what the Kafka client, kazoo or the OS raised, said without its class
name, as each message that reaches a user says it."""

from __future__ import annotations

import socket
import ssl

import pytest
from kafka import errors as ke
from kazoo.exceptions import ConnectionLoss, NoAuthError, NoNodeError

from kadmin.cluster.bulk import zk_words
from kadmin.cluster.kafka import translate, words
from kadmin.errors import AuthFailed, ClusterUnreachable, in_words

AT = "broker-7.example:9092"


@pytest.mark.parametrize(("error", "said"), [
    (ke.KafkaConnectionError("111 ECONNREFUSED"), "it refused the connection (nothing listens there)"),
    (ConnectionRefusedError(111, "Connection refused"), "it refused the connection (nothing listens there)"),
    (ke.KafkaConnectionError("104 ECONNRESET"), "it reset the connection"),
    (ke.KafkaConnectionError("113 EHOSTUNREACH"), "no route to the host"),
    (ke.KafkaConnectionError("DNS Resolution failure"), "the name broker-7.example does not resolve"),
    (socket.gaierror(-2, "Name or service not known"),
     "the name broker-7.example does not resolve (Name or service not known)"),
    (ke.KafkaConnectionError("Connection timed out"), "the connection timed out"),
    (ke.KafkaConnectionError("socket disconnected"), "it closed the connection"),
    (ke.KafkaTimeoutError(), "it did not answer in time"),
    (ke.NodeNotReadyError(7), "the connection is not ready"),
    (ke.UnknownTopicOrPartitionError(), "UNKNOWN_TOPIC_OR_PARTITION (error 3)"),
    (ke.NotLeaderForPartitionError("t-0"), "NOT_LEADER_OR_FOLLOWER (error 6): t-0"),
    (ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"), "TLS failed: "),
])
def test_kafka_failures_in_words(error, said):  # type: ignore[no-untyped-def]
    got = words(error, AT)
    assert got.startswith(said) and "Error" not in got, got


def test_translate_keeps_the_exit_codes_and_drops_the_class_names():
    refused = translate(ke.KafkaConnectionError("111 ECONNREFUSED"), AT, peer="the controller")
    assert isinstance(refused, ClusterUnreachable)
    assert refused.message == f"cannot reach the controller at {AT}: it refused the connection (nothing listens there)"
    sasl = translate(ke.SaslAuthenticationFailedError("bad password"), AT)
    assert isinstance(sasl, AuthFailed)
    assert sasl.message == f"{AT} refused us: SASL_AUTHENTICATION_FAILED (error 58): bad password"


@pytest.mark.parametrize(("error", "said"), [
    (NoNodeError(), "ZooKeeper error NONODE (-101)"),
    (NoAuthError("/x"), "ZooKeeper error NOAUTH (-102): /x"),
    (ConnectionLoss(), "ZooKeeper error CONNECTIONLOSS (-4)"),
    (OSError(104, "Connection reset by peer"), "Connection reset by peer"),
])
def test_zookeeper_failures_in_words(error, said):  # type: ignore[no-untyped-def]
    assert zk_words(error) == said


@pytest.mark.parametrize(("error", "said"), [
    (ValueError("bad magic  \n at 0"), "bad magic at 0"),
    (ValueError(), "value error"),
    (ConnectionLoss(), "connection loss"),
    (ke.KafkaTimeoutError(), "timeout error"),
    (FileNotFoundError(2, "No such file or directory"), "No such file or directory"),
    (KeyError("k"), "k"),
])
def test_any_exception_in_words(error, said):  # type: ignore[no-untyped-def]
    assert in_words(error) == said
