"""Typed payloads (kadmin/results.py): each command's JSON contract in one place.

A payload's fields are its JSON keys in order; `to_json()` is what `-o json` and `-o ndjson` print, keys that
are there only sometimes included. The renderer prints the JSON form, the views read the fields.
"""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from kadmin import payloads, results
from kadmin.payloads import (
    Blocked,
    BrokerEvent,
    BrokerRow,
    BrokerShow,
    BrokerWait,
    CanStop,
    Drain,
    EnsembleMember,
    FencingEvent,
    IdClaim,
    IdDecision,
    Latency,
    LoggedBrokerRow,
    Mapped,
    MaxEpoch,
    MissingId,
    QuorumDescription,
    QuorumReplica,
    ServingMember,
    ShutdownDryRun,
    ShutdownRefused,
    ShutdownRequest,
    ShutdownSent,
    TopicPartition,
    Undrain,
    Unmapped,
    Unregistered,
)
from kadmin.render import views
from kadmin.render.renderer import Renderer
from kadmin.results import Payload, Result, json_form

pytestmark = pytest.mark.timeout(30)

ROW = BrokerRow(id=1, host="h", port=9092, rack=None, endpoints=("PLAINTEXT://h:9092",),
                listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"}, jmx_port=-1, version=5, timestamp_ms=7,
                features={"metadata.version": {"min": 1, "max": 20}}, epoch=42, session="0x100",
                is_controller=True, state="registered")
VERDICT = CanStop(3, False, 2, blocking=(Blocked("t", None, "unreadable"),), never_satisfiable=(), unseen=())
SHUTDOWN = dict(broker_id=3, broker_epoch=42, controller_id=1, attempts=1, remaining_partitions=(), error=None)
DRAIN = dict(drain_version=1, broker_id=1, mode="zookeeper", dry_run=False, file="/f.json", hosted=2, led_before=1,
             reorder=(), elect=(TopicPartition("t", 0),), in_flight=(), skipped=(), only_isr=(), sole_replica=(),
             refused=(), remaining=())
UNDRAIN = dict(drain_version=1, broker_id=1, mode="kraft", dry_run=False, file="/f.json", saved=1, restore=(),
               already=(), changed=(), gone=(), in_flight=(), skipped=(), elect=(), refused=(), not_preferred=())


def fields(p: Payload) -> list[str]:
    return [f.name for f in dataclasses.fields(p)]


def test_the_json_form_is_the_fields_in_order_lists_for_tuples_dicts_for_mappings() -> None:
    doc = ROW.to_json()
    assert list(doc) == fields(ROW)
    assert doc["endpoints"] == ["PLAINTEXT://h:9092"] and type(doc["features"]["metadata.version"]) is dict
    assert json_form({1: (TopicPartition("t", 0),)}) == {1: [{"topic": "t", "partition": 0}]}  # int keys stay
    assert VERDICT.to_json()["blocking"] == [{"topic": "t", "partition": None, "reason": "unreadable"}]


@pytest.mark.parametrize("cls", [*(c for c in vars(results).values() if isinstance(c, type) and issubclass(c, Payload)),
                                 *(getattr(payloads, name) for name in payloads.HOME)])
def test_every_payload_is_a_frozen_dataclass(cls: type) -> None:
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_each_payload_is_found_where_kadmin_payloads_says() -> None:
    """kadmin.payloads loads a group's module when one of its classes is named (issue 24 §2): HOME must name
    every payload class of every module, in the module that defines it."""
    import importlib
    import pkgutil

    defined = {}
    for info in pkgutil.iter_modules(payloads.__path__):
        module = importlib.import_module(f"kadmin.payloads.{info.name}")
        defined.update({c.__name__: info.name for c in vars(module).values()
                        if isinstance(c, type) and issubclass(c, Payload) and c.__module__ == module.__name__})
    assert defined == payloads.HOME
    assert sorted(payloads.__all__) == sorted(defined)
    with pytest.raises(AttributeError):
        payloads.NoSuchPayload  # noqa: B018 - the attribute access is the test


def test_keys_that_are_there_only_sometimes() -> None:
    # brokers wait: `fenced` only where registrations have a fenced state (KRaft), between epoch and waited_ms
    zk = BrokerWait(3, "registered", True, epoch=42, fenced=None, waited_ms=5)
    assert list(zk.to_json()) == ["broker_id", "condition", "met", "epoch", "waited_ms"]
    kraft = dataclasses.replace(zk, epoch=None, fenced=False, fencing=True)
    assert list(kraft.to_json()) == ["broker_id", "condition", "met", "epoch", "fenced", "waited_ms"]
    assert kraft.to_json()["fenced"] is False
    # brokers show: `error` only when the registration does not parse
    show = BrokerShow(ROW, path="/brokers/ids/1", raw="{}", stat={"czxid": 42})
    assert list(show.to_json()) == [*fields(ROW), "path", "raw", "stat"]
    assert list(dataclasses.replace(show, error="bad JSON").to_json())[-1] == "error"
    # brokers watch: KRaft events carry fenced and endpoint, endpoint_changed the old endpoint
    assert list(BrokerEvent("registered", 1, 42, None, "T").to_json()) == ["event", "id", "epoch", "old_epoch", "at"]
    fenced = FencingEvent("fenced", 1, None, None, "T", fenced=True, endpoint="h:9092")
    assert list(fenced.to_json()) == ["event", "id", "epoch", "old_epoch", "at", "fenced", "endpoint"]
    moved = FencingEvent("endpoint_changed", 1, None, None, "T", fenced=False, endpoint="h:9093", old_endpoint="h:9092")
    assert list(moved.to_json())[-1] == "old_endpoint"
    # brokers unregister: `dry_run` only with --dry-run
    assert list(Unregistered(4, True, "fenced").to_json()) == ["broker_id", "unregistered", "was"]
    assert Unregistered(4, False, None, dry_run=True).to_json()["dry_run"] is True
    # brokers shutdown: each outcome adds its keys after the common ones
    common = list(SHUTDOWN)
    assert list(ShutdownRefused(**SHUTDOWN, can_stop=VERDICT).to_json()) == [*common, "can_stop"]  # type: ignore[arg-type]
    request = ShutdownRequest(7, "v", 3, 42, "h:9092")
    dry = ShutdownDryRun(**SHUTDOWN, dry_run=True, request=request, can_stop=None)  # type: ignore[arg-type]
    assert list(dry.to_json()) == [*common, "dry_run", "request", "can_stop"] and dry.to_json()["can_stop"] is None
    sent = ShutdownSent(**SHUTDOWN, shutting_down_until_restart=True, epoch_fenced=True)  # type: ignore[arg-type]
    assert list(sent.to_json()) == [*common, "shutting_down_until_restart", "epoch_fenced"]
    alone = dataclasses.replace(sent, isr_only_this_broker=())
    assert list(alone.to_json())[-1] == "isr_only_this_broker" and alone.to_json()["isr_only_this_broker"] == []
    # drain, undrain: `led_after` once the leaders were moved
    drain = Drain(**DRAIN)  # type: ignore[arg-type]
    assert list(drain.to_json()) == list(DRAIN) and dataclasses.replace(drain, led_after=0).to_json()["led_after"] == 0
    undrain = Undrain(**UNDRAIN)  # type: ignore[arg-type]
    assert list(undrain.to_json()) == list(UNDRAIN) and list(dataclasses.replace(undrain, led_after=1).to_json())[-1] \
        == "led_after"


REPLICA = QuorumReplica(1, None, 100, 0, None, None, "Leader", endpoints=())
QUORUM = QuorumDescription("c", 1, 5, 100, 0, 0, voters=(REPLICA,), observers=())
REPLICA_KEYS = ["id", "directory_id", "log_end_offset", "lag", "last_fetch_timestamp", "last_caught_up_timestamp",
                "status", "endpoints"]
QUORUM_KEYS = ["cluster_id", "leader_id", "leader_epoch", "high_watermark", "max_follower_lag",
               "max_follower_lag_time_ms", "voters", "observers"]


def test_quorum_keys_that_are_there_only_in_zookeeper_mode() -> None:
    """`zookeeper` (each replica) and `mode` (the quorum) are keys only with --zookeeper (golden files)."""
    assert list(REPLICA.to_json()) == REPLICA_KEYS and list(QUORUM.to_json()) == QUORUM_KEYS
    down = EnsembleMember("z3:2181", None, "connection refused")
    assert list(dataclasses.replace(REPLICA, zookeeper=down).to_json()) == [*REPLICA_KEYS, "zookeeper"]
    assert dataclasses.replace(REPLICA, zookeeper=down).to_json()["zookeeper"] == {
        "address": "z3:2181", "mode": None, "error": "connection refused"}
    serving = ServingMember("z1:2181", "leader", None, zxid="0x500000064", zxid_epoch=5, older_epoch=False,
                            latency_ms=Latency(0.0, 0.5, 3.0), outstanding=0)
    assert serving.to_json() == {"address": "z1:2181", "mode": "leader", "error": None, "zxid": "0x500000064",
                                 "zxid_epoch": 5, "older_epoch": False,
                                 "latency_ms": {"min": 0.0, "avg": 0.5, "max": 3.0}, "outstanding": 0}
    zk = dataclasses.replace(QUORUM, mode="zookeeper")
    assert list(zk.to_json()) == [*QUORUM_KEYS, "mode"] and zk.to_json()["mode"] == "zookeeper"


def test_ids_keys_that_are_there_only_sometimes() -> None:
    decision = IdDecision(1001, "new-id", "h", missing_ids=(9,), detail="d")
    assert decision.to_json() == {"broker_id": 1001, "rule": "new-id", "host": "h", "missing_ids": [9], "detail": "d"}
    # ids claim: `dry_run` only when nothing was written (--dry-run, or nothing to write)
    sent = IdClaim(**vars(decision), writes=("w",), attempts=2)
    assert list(sent.to_json()) == [*fields(decision), "writes", "attempts"]
    assert dataclasses.replace(sent, attempts=0, dry_run=False).to_json()["dry_run"] is False
    # ids map: `dry_run` only with --dry-run, `previous` (maybe null) only once changed
    assert list(Mapped("h", 3, changed=False).to_json()) == ["host", "broker_id", "changed"]
    assert list(Mapped("h", 3, changed=False, dry_run=True).to_json()) == ["host", "broker_id", "changed", "dry_run"]
    assert Mapped("h", 3, changed=True).to_json() == {"host": "h", "broker_id": 3, "changed": True, "previous": None}
    # ids unmap: `invalid` only for an invalid mapping (no id), `dry_run` only with --dry-run
    assert Unmapped("h", 3).to_json() == {"host": "h", "broker_id": 3}
    assert list(Unmapped("h", None, invalid="bad", dry_run=True).to_json()) == ["host", "broker_id", "invalid",
                                                                               "dry_run"]
    # ids missing: its assignments as topic-partition objects
    assert MissingId(9, 1, None, (TopicPartition("t", 0),)).to_json() == {
        "broker_id": 9, "partitions": 1, "mapped_host": None, "assignments": [{"topic": "t", "partition": 0}]}


def test_a_metadata_dir_row_adds_its_keys_after_the_list_rows() -> None:
    row = LoggedBrokerRow(**{f: getattr(ROW, f) for f in fields(ROW)}, incarnation_id="abc", fenced=False,
                          in_controlled_shutdown=False, offset=None, source="snapshot")
    assert list(row.to_json()) == [*fields(ROW), "incarnation_id", "fenced", "in_controlled_shutdown", "offset",
                                   "source"]


def test_the_renderer_prints_the_json_form_and_the_view_reads_the_fields() -> None:
    out = io.StringIO()
    Renderer("json", out=out, err=io.StringIO()).emit(Result(data=MaxEpoch(7, 1, 3)), views.max_epoch)
    doc = {"kadmin_result_version": 2, "command": None, "status": "success", "exit_code": 0,
           "data": {"max_broker_epoch": 7, "broker_id": 1, "brokers": 3}, "errors": []}
    assert out.getvalue() == json.dumps(doc, indent=2) + "\n"
    out = io.StringIO()
    Renderer("ndjson", out=out, err=io.StringIO()).emit(Result(data=[ROW, ROW]), views.brokers_list)
    assert out.getvalue() == (json.dumps(ROW.to_json(), ensure_ascii=False) + "\n") * 2
    out = io.StringIO()
    Renderer("plain", out=out, err=io.StringIO()).emit(Result(data=MaxEpoch(7, 1, 3)), views.max_epoch)
    assert out.getvalue() == "7\n"


def test_a_streamed_event_is_its_json_form_on_one_line_or_a_fixed_width_row() -> None:
    ev = BrokerEvent("bounced", 2, 20, 7, "1970-01-01T00:00:00.000Z")
    out = io.StringIO()
    Renderer("ndjson", out=out, err=io.StringIO()).stream_item(ev, views.broker_events, first=True)
    assert out.getvalue() == ('{"event": "bounced", "id": 2, "epoch": 20, "old_epoch": 7, '
                              '"at": "1970-01-01T00:00:00.000Z"}\n')
    out = io.StringIO()
    Renderer("plain", out=out, err=io.StringIO()).stream_item(ev, views.broker_events, first=False)
    assert out.getvalue().split() == ["1970-01-01T00:00:00.000Z", "bounced", "2", "20", "7"]
