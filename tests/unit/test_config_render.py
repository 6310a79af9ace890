"""Settings precedence, connection strings and the JSON envelope."""

from __future__ import annotations

import io
import json

import pytest

from kadmin.cluster.connect import split_connect_string
from kadmin.config import Sourced, parse_auth, resolve
from kadmin.errors import ConfigError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.payloads import MaxEpoch
from kadmin.render import views
from kadmin.render.renderer import Renderer
from kadmin.results import Problem, Result


def test_flag_beats_context_and_context_fills_the_rest(tmp_path):
    cfg = tmp_path / "kadmin"
    cfg.mkdir()
    (cfg / "config.toml").write_text(
        'current-context = "a"\n[contexts.a]\nzookeeper = "za:1"\nzk-auth = "digest:u:p"\n'
        '[contexts.b]\nzookeeper = "zb:1"\n'
    )
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    s = resolve({"zookeeper": Sourced("flag:1", "flag")}, None, env)
    assert s.get("zookeeper") == "flag:1" and s.source("zookeeper") == "flag"
    assert s.get("zk-auth") == "digest:u:p" and s.source("zk-auth") == "context a"
    assert resolve({}, "b", env).get("zookeeper") == "zb:1"
    assert resolve({}, None, {**env, "KADMIN_CONTEXT": "b"}).get("zookeeper") == "zb:1"
    assert resolve({}, None, env).connect_timeout == 10.0
    assert all("u:p" not in line for line in s.describe())  # secrets never echoed by -v
    with pytest.raises(ConfigError, match="unknown context 'c'"):
        resolve({}, "c", env)


def test_unknown_context_key_is_rejected(tmp_path):
    (tmp_path / "kadmin").mkdir()
    (tmp_path / "kadmin" / "config.toml").write_text('[contexts.a]\nzookeper = "typo:1"\n')
    with pytest.raises(ConfigError, match="zookeper"):
        resolve({}, "a", {"XDG_CONFIG_HOME": str(tmp_path)})


def test_auth_from_file_and_malformed(tmp_path):
    f = tmp_path / "secret"
    f.write_text("digest:kafka:pw\n")
    assert parse_auth(f"@{f}") == ("digest", "kafka:pw")
    with pytest.raises(UsageError):
        parse_auth("nocolon")
    with pytest.raises(ConfigError, match="cannot read"):
        parse_auth(f"@{tmp_path}/missing")


@pytest.mark.parametrize(
    "value, expected",
    [
        ("h:2181", ("h:2181", "")),
        ("a:1,b:2,c:3/kafka", ("a:1,b:2,c:3", "/kafka")),
        ("a:1/kafka/prod/", ("a:1", "/kafka/prod")),
        ("a:1/", ("a:1", "")),
        ("localhost", ("localhost", "")),
    ],
)
def test_connect_strings(value, expected):
    assert split_connect_string(value) == expected


def test_json_envelope_and_partial_status():
    out = io.StringIO()
    err = io.StringIO()
    r = Result(data=[{"id": 1}], errors=[Problem("invalid_znode", "/brokers/ids/2: bad")], command="brokers list")
    code = Renderer("json", out=out, err=err).emit(r, views.brokers_list)
    doc = json.loads(out.getvalue())
    assert code == ExitCode.PARTIAL == doc["exit_code"]
    assert doc == {"kadmin_result_version": 2, "command": "brokers list", "status": "partial", "exit_code": 5,
                   "data": [{"id": 1}], "errors": [{"code": "invalid_znode", "message": "/brokers/ids/2: bad"}]}
    assert err.getvalue() == "kadmin: warning: /brokers/ids/2: bad\n"


def test_ndjson_prints_one_object_per_line():
    out = io.StringIO()
    Renderer("ndjson", out=out, err=io.StringIO()).emit(Result(data=[{"a": 1}, {"a": 2}]), views.records)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [{"a": 1}, {"a": 2}]


def test_max_epoch_plain_is_the_bare_integer():
    out = io.StringIO()
    data = MaxEpoch(max_broker_epoch=4294967397, broker_id=3, brokers=3)
    Renderer("plain", out=out, err=io.StringIO()).emit(Result(data=data), views.max_epoch)
    assert out.getvalue() == "4294967397\n"
