"""Kafka error names: kafka-python's error table, spelled as Kafka's own Errors enum spells them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kadmin.cluster.kafka import ERROR_NAMES, error_name

# Every code kadmin named by hand before the names came from kafka-python: unchanged.
NAMED_BEFORE = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    6: "NOT_LEADER_OR_FOLLOWER",
    8: "BROKER_NOT_AVAILABLE",
    11: "STALE_CONTROLLER_EPOCH",
    29: "TOPIC_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    58: "SASL_AUTHENTICATION_FAILED",
    77: "STALE_BROKER_EPOCH",
    102: "BROKER_ID_NOT_REGISTERED",
    114: "MISMATCHED_ENDPOINT_TYPE",
    115: "UNSUPPORTED_ENDPOINT_TYPE",
}


@pytest.mark.parametrize(("code", "name"), sorted(NAMED_BEFORE.items()))
def test_the_codes_kadmin_named_keep_their_names(code, name):
    assert error_name(code) == name


@pytest.mark.parametrize(("code", "name"), [
    (7, "REQUEST_TIMED_OUT"),  # named by kafka-python's table, no longer ERROR_7
    (10, "MESSAGE_TOO_LARGE"),  # kafka-python: MESSAGE_SIZE_TOO_LARGE
    (17, "INVALID_TOPIC_EXCEPTION"),  # kafka-python: INVALID_TOPIC
    (39, "INVALID_REPLICA_ASSIGNMENT"),  # kafka-python: INVALID_REPLICATION_ASSIGNMENT
    (113, "STALE_MEMBER_EPOCH"),
])
def test_other_codes_come_from_kafka_pythons_table_in_kafkas_spelling(code, name):
    assert error_name(code) == name


def test_a_code_nobody_knows_is_error_n():
    assert error_name(9999) == "ERROR_9999"
    assert ERROR_NAMES.get(-9999, "error") == "error"


def test_the_table_covers_kafka_pythons_codes():
    from kafka.errors import kafka_errors

    assert {c for c in kafka_errors if isinstance(c, int)} == set(ERROR_NAMES)


def test_importing_the_module_does_not_import_kafka():
    # kadmin.cluster.kafka registers kafka-python's package without running it (kafka_package.py): none of it loads
    code = ("import sys\nimport kadmin.cluster.kafka as k\nfrom kadmin.cluster.kafka_package import full\n"
            "assert not [m for m in sys.modules if m.startswith('kafka.')] and not full(sys.modules['kafka'])\n"
            "k.error_name(77)\nassert 'kafka.errors' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
