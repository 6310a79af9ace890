"""Typed payloads for history and sandbox (kadmin/payloads_ops.py): each command's JSON exactly as it was.

These commands handed their views plain dicts before; each payload's `to_json()` must be that dict, the same
keys in the same order with the same values (the JSON output byte for byte). The expected keys are those the
replaced code wrote; the sandbox's dicts are the manager's own (kadmin/sandbox/manager.py still answers in
dicts, which the CLI turns into payloads).
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kadmin import payloads_ops
from kadmin.payloads_ops import (
    REPORT_ROWS,
    BouncesRow,
    ControllersRow,
    EpochsRow,
    GenerationRow,
    IngestDamage,
    Ingested,
    IsrChurnRow,
    NothingIngested,
    SandboxBounce,
    SandboxControllerBounce,
    SandboxControllerKill,
    SandboxControllerStart,
    SandboxDown,
    SandboxKafkaBounce,
    SandboxKafkaKill,
    SandboxKafkaStart,
    SandboxKill,
    SandboxStart,
    SandboxStatus,
    SandboxUp,
    report_row,
    sandbox_bounce,
    sandbox_kill,
    sandbox_start,
)
from kadmin.render import views
from kadmin.render.renderer import Renderer
from kadmin.results import Payload, Result

pytestmark = pytest.mark.timeout(30)


def same_json(payload: Payload, doc: Any) -> None:
    """The payload's JSON form is `doc`: equal, keys in the same order, and the same text once dumped."""
    got = payload.to_json()
    assert got == doc
    assert json.dumps(got) == json.dumps(doc)  # key order (and int keys written as strings) included


def rendered(fmt: str, data: Any, view: views.ViewFn) -> str:
    out = io.StringIO()
    Renderer(fmt, out=out, err=io.StringIO()).emit(Result(data=data), view)
    return out.getvalue()


@pytest.mark.parametrize("cls", [c for c in vars(payloads_ops).values()
                                 if isinstance(c, type) and issubclass(c, Payload)])
def test_every_payload_is_a_frozen_dataclass(cls: type) -> None:
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- history ingest
def test_ingest_keys_as_the_dicts_had_them() -> None:
    # nothing found: no ranges, bytes, damage or run_id
    nothing = NothingIngested("c1", "/t", files=0, events_parsed=0, events_added=0, skipped=("/x/readme",),
                              unreadable=())
    same_json(nothing, {"cluster": "c1", "out": "/t", "files": 0, "events_parsed": 0, "events_added": 0,
                        "skipped": ["/x/readme"], "unreadable": []})
    damage = (IngestDamage("/x/log.1", 99, "bad crc"),)
    done = Ingested("c1", "/t", files=2, ranges=3, bytes=1234, events_parsed=10, events_added=7, damage=damage,
                    skipped=(), unreadable=("/x/locked",), run_id=None)
    same_json(done, {"cluster": "c1", "out": "/t", "files": 2, "ranges": 3, "bytes": 1234, "events_parsed": 10,
                     "events_added": 7, "damage": [{"file": "/x/log.1", "offset": 99, "reason": "bad crc"}],
                     "skipped": [], "unreadable": ["/x/locked"], "run_id": None})
    assert rendered("plain", done, views.key_values).splitlines()[0].split() == ["KEY", "VALUE"]


# ---------------------------------------------------------------------------- history report
# each kind's keys, in the order kadmin/pipeline/reports.py writes them
REPORT_KEYS = {
    "generations": ["broker_id", "epoch", "start", "end", "gap_ms", "fence_episodes", "fenced_ms"],
    "bounces": ["broker_id", "generations", "bounces", "downtime_p50_ms", "downtime_p90_ms", "downtime_max_ms",
                "fence_episodes", "fenced_ms", "fenced_max_ms"],
    "epochs": ["at", "max_broker_epoch", "broker_id"],
    "controllers": ["at", "event", "controller_id", "controller_epoch"],
    "isr-churn": ["broker_id", "isr_shrinks", "isr_expands", "rejoins", "rejoin_p50_ms", "rejoin_max_ms"],
}


def test_every_report_kind_has_its_row() -> None:
    from kadmin.pipeline.reports import KINDS

    assert set(REPORT_ROWS) == set(KINDS) == set(REPORT_KEYS)
    assert REPORT_ROWS["generations"] is GenerationRow and REPORT_ROWS["bounces"] is BouncesRow
    assert REPORT_ROWS["epochs"] is EpochsRow and REPORT_ROWS["controllers"] is ControllersRow
    assert REPORT_ROWS["isr-churn"] is IsrChurnRow


@pytest.mark.parametrize("kind", list(REPORT_KEYS))
def test_a_report_row_is_the_dict_it_was(kind: str) -> None:
    doc = {key: i for i, key in enumerate(REPORT_KEYS[kind])}
    row = report_row(kind, doc)
    assert isinstance(row, REPORT_ROWS[kind])
    same_json(row, doc)
    with pytest.raises(TypeError):  # a key left over is no silent change of the report
        report_row(kind, {**doc, "extra": 1})
    with pytest.raises(TypeError):
        report_row(kind, {k: v for k, v in doc.items() if k != REPORT_KEYS[kind][-1]})


def test_the_records_view_reads_a_payloads_json_form() -> None:
    rows = [EpochsRow("2026-01-01T00:00:00.000Z", 42, 1), EpochsRow("2026-01-01T00:00:01.000Z", None, None)]
    dicts = [r.to_json() for r in rows]
    for fmt in ("json", "ndjson", "plain", "table"):
        assert rendered(fmt, rows, views.records) == rendered(fmt, dicts, views.records)
    assert rendered("plain", rows, views.records).splitlines()[0].split() == ["AT", "MAX_BROKER_EPOCH", "BROKER_ID"]


# ---------------------------------------------------------------------------- sandbox: the manager's own dicts
def dead_pid() -> int:
    import subprocess

    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def emulated_state(d: Path) -> None:
    """An emulated sandbox whose processes are gone: status() and down() read no network."""
    from kadmin.sandbox.manager import STATE_VERSION

    d.mkdir(parents=True)
    (d / "state.json").write_text(json.dumps({
        "version": STATE_VERSION, "dir": str(d), "connect": "127.0.0.1:1/kafka", "chroot": "/kafka", "brokers": 3,
        "zookeeper": [{"myid": 0, "port": 1, "pid": dead_pid(), "data_dir": str(d / "zk0")}],
        "daemon": {"pid": dead_pid(), "port": 2, "identity": None}}))


def kafka_state(d: Path, mode: str) -> None:
    from kadmin.sandbox.manager import STATE_VERSION

    d.mkdir(parents=True)
    nodes = [{"role": "broker", "id": i, "port": 9000 + i, "dir": str(d / f"broker-{i}"), "pid": None,
              "identity": None} for i in (1, 2)]
    if mode == "kraft":
        nodes = [{"role": "controller", "id": 3001, "port": 9101, "dir": str(d / "controller-3001"), "pid": None,
                  "identity": None}, *nodes]
    zk = [{"myid": 0, "port": 1, "pid": None, "data_dir": str(d / "zk0"), "identity": None}] if mode == "zk" else []
    (d / "state.json").write_text(json.dumps({
        "version": STATE_VERSION, "dir": str(d), "engine": "kafka", "mode": mode, "kafka_version": "3.9.1",
        "kafka_home": "/opt/kafka", "connect": "127.0.0.1:1/kafka" if mode == "zk" else None,
        "chroot": "/kafka" if mode == "zk" else None, "brokers": 2, "zookeeper": zk,
        "daemon": {"pid": None, "port": None, "identity": None}, "nodes": nodes,
        "cluster_id": "MkU3OEVBNTcwNTJENDM2Qg" if mode == "kraft" else None,
        "bootstrap_servers": "127.0.0.1:9001,127.0.0.1:9002",
        "bootstrap_controllers": "127.0.0.1:9101" if mode == "kraft" else None}))


def test_an_emulated_status_and_down_are_the_managers_dicts(tmp_path: Path) -> None:
    from kadmin.sandbox.manager import Sandbox

    emulated_state(tmp_path / "sb")
    sb = Sandbox(tmp_path / "sb")
    doc = sb.status()
    status = SandboxStatus.from_json(doc)
    same_json(status, doc)
    assert "bootstrap_servers" not in status.to_json()  # a key only on real Kafka
    assert [p.alive for p in status.processes] == [False, False]
    up = {**doc, "already_running": True}
    same_json(SandboxUp.from_json(up), up)
    for fmt in ("json", "ndjson", "plain", "table"):
        assert rendered(fmt, status, views.sandbox) == rendered(fmt, doc, views.sandbox)
    down = sb.down()
    assert [g["process"] for g in down["already_gone"]] == ["brokers", "zookeeper"]
    same_json(SandboxDown.from_json(down), down)
    for fmt in ("json", "ndjson", "plain", "table"):
        assert rendered(fmt, SandboxDown.from_json(down), views.sandbox_down) == rendered(fmt, down,
                                                                                          views.sandbox_down)


@pytest.mark.parametrize("mode", ["zk", "kraft"])
def test_a_real_kafka_status_is_the_managers_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    from kadmin.sandbox import realkafka
    from kadmin.sandbox.manager import Sandbox

    kafka_state(tmp_path / "sb", mode)
    # what the cluster shows: zk {id: (port, czxid)}, kraft {id: fenced}; and (kraft) the controllers' voters
    view: dict[int, Any] = {1: (9001, 4294967397)} if mode == "zk" else {1: False, 2: True}
    monkeypatch.setattr(Sandbox, "_view", lambda self, st, ids: (view, 1 if mode == "zk" else 3001))
    monkeypatch.setattr(realkafka, "kraft_view", lambda *a, **k: ({3001: False}, 3001))
    doc = Sandbox(tmp_path / "sb").status()
    status = SandboxStatus.from_json(doc)
    same_json(status, doc)
    assert list(doc)[-4:] == ["cluster_id", "bootstrap_servers", "bootstrap_controllers", "processes"]
    same_json(SandboxUp.from_json({**doc, "already_running": False}), {**doc, "already_running": False})
    for fmt in ("json", "ndjson", "plain", "table"):
        assert rendered(fmt, status, views.sandbox) == rendered(fmt, doc, views.sandbox)
    assert rendered("plain", status, views.sandbox) == ("127.0.0.1:1/kafka\n" if mode == "zk"
                                                        else "127.0.0.1:9001,127.0.0.1:9002\n")


# ---------------------------------------------------------------------------- sandbox bounce / kill / start
# as kadmin/sandbox/daemon.py (emulated) and manager.py (real Kafka: _bounce_kafka, _kill_kafka, _start_kafka,
# _kill_controller, _start_controller) answer
ANSWERS = [
    (sandbox_bounce, {"id": 2, "old_epoch": 35, "new_epoch": 76, "controller": 1}, SandboxBounce),
    (sandbox_bounce, {"id": 2, "old_epoch": 100, "new_epoch": 200, "controller": 1, "old_pid": 111, "pid": 222,
                      "stop_seconds": 1.234}, SandboxKafkaBounce),
    (sandbox_bounce, {"id": 2, "old_epoch": None, "new_epoch": None, "controller": 3001, "old_pid": 111, "pid": 222,
                      "stop_seconds": 12.5}, SandboxKafkaBounce),
    (sandbox_bounce, {"id": 3002, "role": "controller", "controller": 3001, "pid": 555, "log_end_offset": 1234,
                      "old_pid": 444, "stop_seconds": 0.5}, SandboxControllerBounce),
    (sandbox_kill, {"id": 1, "old_epoch": 36, "controller": 2}, SandboxKill),
    (sandbox_kill, {"id": 2, "old_epoch": None, "controller": None, "pid": 222, "hard": True, "stop_seconds": 0.01},
     SandboxKafkaKill),
    (sandbox_kill, {"id": 3002, "role": "controller", "controller": 3001, "pid": 555, "hard": False,
                    "stop_seconds": 0.1}, SandboxControllerKill),
    (sandbox_start, {"id": 1, "new_epoch": 80, "controller": 2}, SandboxStart),
    (sandbox_start, {"id": 2, "new_epoch": None, "controller": 3001, "pid": 333}, SandboxKafkaStart),
    (sandbox_start, {"id": 3002, "role": "controller", "controller": 3001, "pid": 556, "log_end_offset": None},
     SandboxControllerStart),
]


@pytest.mark.parametrize(("read", "doc", "cls"), ANSWERS)
def test_a_bounce_kill_or_start_is_its_engines_dict(read: Any, doc: dict[str, Any], cls: type) -> None:
    payload = read(doc)
    assert type(payload) is cls
    same_json(payload, doc)
    for fmt in ("json", "ndjson", "plain", "table"):
        assert rendered(fmt, payload, views.key_values) == rendered(fmt, doc, views.key_values)


def test_the_sandbox_cli_hands_payloads_with_the_same_json(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import kadmin.cli.sandbox as cli
    from kadmin.cli.app import app

    answers = {"status": {"dir": "/sb", "zookeeper": "127.0.0.1:1/kafka", "ensemble": [
        {"myid": 0, "address": "127.0.0.1:1", "pid": 10, "alive": True, "mode": "standalone"}],
        "daemon": {"pid": 11, "alive": True}, "brokers": {1: 36, 2: 35}, "stopped_brokers": [3], "controller": 1,
        "engine": "emulated", "mode": "zk", "kafka_version": None, "kafka_home": None,
        "processes": [{"role": "zookeeper", "id": 0, "pid": 10, "port": 1, "alive": True, "registered": None,
                       "phase": None},
                      {"role": "emulated-brokers", "id": None, "pid": 11, "port": 2, "alive": True,
                       "registered": None, "phase": None}]},
        "down": {"dir": "/sb", "stopped": [{"process": "brokers", "pid": 11, "reason": "start time and command "
                                            "line match"}], "already_gone": []},
        "bounce": ANSWERS[0][1], "kill": ANSWERS[4][1], "start": ANSWERS[7][1]}
    answers["up"] = {**answers["status"], "already_running": True}

    class Fake:
        def __getattr__(self, verb: str) -> Any:
            return lambda *a, **k: json.loads(json.dumps(answers[verb]), object_hook=lambda o: {
                int(k) if k.isdigit() else k: v for k, v in o.items()})

    monkeypatch.setattr(cli, "_sandbox", lambda directory: Fake())
    for verb, args in [("up", []), ("status", []), ("down", []), ("bounce", ["2"]), ("kill", ["1"]),
                       ("start", ["1"])]:
        r = CliRunner().invoke(app, ["sandbox", verb, *args, "-o", "json"])
        assert r.exit_code == 0, r.output
        assert r.stdout.split('"data": ')[1] == json.dumps(answers[verb], indent=2).replace("\n", "\n  ") + \
            ',\n  "errors": []\n}\n'
