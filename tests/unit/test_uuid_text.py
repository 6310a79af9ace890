"""One Uuid formatter: Kafka's Uuid.toString(), the zero Uuid included; null only where the contract says so."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from kadmin.cluster import kraft, metadata_records
from kadmin.cluster.kraft import ZERO_UUID_TEXT, KraftClient, uuid_text

ZERO = uuid.UUID(int=0)
ONE = uuid.UUID(int=1)  # Uuid.METADATA_TOPIC_ID
DIR = uuid.UUID("7f448af1-8c45-4323-ba54-17211bd192a6")


def test_kafka_prints_the_zero_uuid_as_zeros():
    assert ZERO_UUID_TEXT == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_text(ZERO) == ZERO_UUID_TEXT
    assert uuid_text(bytes(16)) == ZERO_UUID_TEXT


def test_uuid_text_is_kafkas_url_safe_base64_of_any_form():
    assert uuid_text(ONE) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_text(DIR) == uuid_text(DIR.bytes) == uuid_text(str(DIR)) == "f0SK8YxFQyO6VBchG9GSpg"
    assert uuid_text("f0SK8YxFQyO6VBchG9GSpg") == "f0SK8YxFQyO6VBchG9GSpg"  # already Kafka's text
    assert uuid_text(None) is None  # kafka-python reads a zero Uuid off the wire as None


def test_metadata_records_use_the_same_function():
    assert metadata_records.uuid_text is kraft.uuid_text
    assert metadata_records._plain({"voter_directory_id": ZERO, "ids": [DIR]}) == {
        "voter_directory_id": ZERO_UUID_TEXT, "ids": ["f0SK8YxFQyO6VBchG9GSpg"]}


def quorum_response(directory_id):
    replica = SimpleNamespace(replica_id=1, log_end_offset=10, replica_directory_id=directory_id,
                              last_fetch_timestamp=-1, last_caught_up_timestamp=-1)
    partition = SimpleNamespace(partition_index=0, error_code=0, leader_id=1, leader_epoch=3, high_watermark=10,
                                current_voters=[replica], observers=[])
    topic = SimpleNamespace(topic_name="__cluster_metadata", partitions=[partition])
    return SimpleNamespace(version=2, error_code=0, topics=[topic], nodes=[])


def test_quorum_json_says_null_for_a_replica_without_a_directory_id():
    """docs/json.md: directory_id is null for the zero Uuid (kafka-metadata-quorum 3.9: "directoryId": null)."""
    client = KraftClient("c0:9093", {}, 1.0, controllers=True)  # connects only when asked something
    state = client._quorum_state(quorum_response(ZERO), "cluster", "c0:9093")  # the zero Uuid itself
    assert state.voters[0].directory_id is None
    state = client._quorum_state(quorum_response(DIR), "cluster", "c0:9093")
    assert state.voters[0].directory_id == "f0SK8YxFQyO6VBchG9GSpg"
