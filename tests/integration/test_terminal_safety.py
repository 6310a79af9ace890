"""Strings from the cluster never drive the terminal: no rich markup, no control sequences.

A registration's host is whatever a client wrote into ZooKeeper. Tables and plain columns show it
with markup escaped and control characters made visible (`\\x1b`); JSON keeps it exact.
"""

from __future__ import annotations

import json

import pytest

from kadmin.payloads import QuorumDescription
from kadmin.render import views
from kadmin.render.renderer import Renderer
from kadmin.results import Result
from kadmin.sandbox.fleet import BrokerSpec

pytestmark = pytest.mark.integration

MARKUP = "[/bold][red]x"
ESCAPES = "\x1b]0;pwned\x07\x1b[2J"
C1 = "csi\x9b31m"


@pytest.fixture
def hostile(fleet):
    fleet.register(BrokerSpec(1, host=MARKUP))
    fleet.register(BrokerSpec(2, host=ESCAPES))
    fleet.register(BrokerSpec(3, host=C1))
    return fleet


def controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) < 0xA0]


@pytest.mark.parametrize("fmt", ["table", "plain"])
def test_hostile_hosts_are_shown_inert(run, hostile, fmt):
    r = run("brokers", "list", "-o", fmt, env={"COLUMNS": "400"})  # a table wide enough not to elide cells
    assert r.exit_code == 0, r.stderr
    assert controls(r.stdout) == []
    assert MARKUP in r.stdout  # shown as written, not interpreted
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in r.stdout
    assert "csi\\x9b31m" in r.stdout


def test_show_escapes_the_raw_znode_too(run, hostile):
    for fmt in ("table", "plain"):
        r = run("brokers", "show", "2", "-o", fmt, env={"COLUMNS": "400"})
        assert r.exit_code == 0, r.stderr
        assert controls(r.stdout) == [] and "\\x1b[2J" in r.stdout


def test_json_keeps_the_data_exact(run, hostile):
    code, doc, _ = run.json("brokers", "list")
    assert code == 0
    assert {b["id"]: b["host"] for b in doc["data"]} == {1: MARKUP, 2: ESCAPES, 3: C1}
    r = run("brokers", "list", "-o", "ndjson")
    assert [json.loads(line)["host"] for line in r.stdout.splitlines()] == [MARKUP, ESCAPES, C1]


def test_tabs_and_newlines_inside_a_cell_cannot_forge_rows():
    assert views.cell("a\tb\nc\rd") == "a\\tb\\nc\\rd"
    assert views.cell(["x\x1b", None]) == "x\\x1b,-"


def test_titles_and_diagnostics_are_escaped_too(tmp_path):
    out = (tmp_path / "out").open("w+")
    err = (tmp_path / "err").open("w+")
    r = Renderer("table", out=out, err=err)
    data = QuorumDescription(MARKUP + ESCAPES, leader_id=1, leader_epoch=1, high_watermark=1, max_follower_lag=0,
                             max_follower_lag_time_ms=0, voters=(), observers=())
    r.emit(Result(data=data, warnings=[f"/brokers/ids/9: host {ESCAPES}"]), views.quorum_table)
    out.seek(0)
    err.seek(0)
    text, diag = out.read(), err.read()
    assert MARKUP in text and controls(text) == []
    assert controls(diag) == [] and "\\x1b[2J" in diag
