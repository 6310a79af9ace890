"""The exit-code and status contract (kadmin/exit_codes.py), through the real CLI.

Internal errors exit 70 in one line; the check verbs follow the monitoring-plugin convention (0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN for anything that prevented a verdict); parse errors from the CLI
framework are one line, with the JSON envelope when -o json was asked for. Failures are injected only
at an edge (opening the cluster, loading the quorum); the quorum verdicts come from the emulated KRaft
server (tests/support/kraft_server.py), the partitions verdicts from a real ZooKeeper in
tests/integration/test_partitions_zk.py::test_check_exit_codes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from kadmin.exit_codes import CHECK_COMMANDS
from tests.support.kraft_server import KraftServer, Scenario

NOWHERE = "127.0.0.1:1"  # loopback port 1 refuses connections at once
ENVELOPE = {"kadmin_result_version", "command", "status", "exit_code", "data", "errors"}
CHECKS = [c.split() for c in CHECK_COMMANDS]


def lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


# ------------------------------------------------------------------------------------ internal errors: 70
@pytest.fixture
def crash_on_connect(mocker):
    """Opening the cluster raises what no layer expects (a bug): the edge every cluster command crosses."""
    return mocker.patch("kadmin.cluster.connect.open_backend", side_effect=RuntimeError("boom\nsecond line"))


def test_internal_error_exits_70_in_one_line_without_a_traceback(run_nozk, crash_on_connect):
    r = run_nozk("brokers", "wait", "1", "--registered", "--timeout", "5", "-z", NOWHERE)
    assert r.exit_code == 70, r.stderr  # not 1: a crashed wait must not read as "timed out"
    assert r.stdout == ""
    assert r.stderr == ("kadmin: internal error: RuntimeError: boom second line "
                        "(run with -v for the traceback)\n")


def test_internal_error_traceback_only_with_verbose(run_nozk, crash_on_connect):
    r = run_nozk("brokers", "wait", "1", "--registered", "--timeout", "5", "-z", NOWHERE, "-v")
    assert r.exit_code == 70
    assert "Traceback (most recent call last)" in r.stderr and "RuntimeError: boom" in r.stderr
    assert lines(r.stderr)[-1] == "kadmin: internal error: RuntimeError: boom second line"


def test_internal_error_under_json_prints_the_envelope(run_nozk, crash_on_connect):
    r = run_nozk("brokers", "list", "-z", NOWHERE, "-o", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 70 and set(doc) == ENVELOPE
    assert (doc["command"], doc["status"], doc["exit_code"], doc["data"]) == ("brokers list", "error", 70, None)
    assert doc["errors"] == [{"code": "internal", "message": "RuntimeError: boom second line"}]
    assert len(lines(r.stderr)) == 1


# ------------------------------------------------------------------------------------ check verbs: 0-3
@pytest.mark.parametrize("argv", CHECKS)
def test_check_verb_usage_errors_are_unknown(run_nozk, argv):
    for bad in (["--no-such-flag"], ["--output", "yaml"], ["-z"]):
        r = run_nozk(*argv, *bad)
        assert r.exit_code == 3, (bad, r.stderr)  # UNKNOWN, never 2 (CRITICAL) for a typo
        assert lines(r.stderr) == [r.stderr.strip()] and r.stderr.startswith("kadmin: error: ")
        assert r.stderr.rstrip().endswith(f"(see: kadmin {' '.join(argv)} --help)")
    r = run_nozk(*argv, "--no-such-flag", "-o", "json")
    doc = json.loads(r.stdout)
    assert (doc["command"], doc["status"], doc["exit_code"]) == (" ".join(argv), "unknown", 3)
    assert doc["errors"][0]["code"] == "usage" and "--no-such-flag" in doc["errors"][0]["message"]


def test_quorum_check_own_usage_error_is_unknown(run_nozk):
    """Options validated when parsed (out of range) and a usage error raised by kadmin itself: both 3."""
    r = run_nozk("quorum", "check", "--max-lag", "-1", "-z", NOWHERE)
    assert r.exit_code == 3 and "--max-lag" in r.stderr and len(lines(r.stderr)) == 1


@pytest.mark.parametrize("argv", CHECKS)
def test_check_verb_without_a_cluster_is_unknown(run_nozk, argv):
    r = run_nozk(*argv, "-o", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 3 and (doc["status"], doc["exit_code"]) == ("unknown", 3)
    assert doc["errors"][0]["code"] == "config" and r.stderr.startswith("kadmin: error: ")
    assert len(lines(r.stderr)) == 1


@pytest.mark.parametrize("argv", CHECKS)
def test_check_verb_on_an_unreachable_zookeeper_is_unknown(run_nozk, argv):
    start = time.monotonic()
    r = run_nozk(*argv, "-z", NOWHERE, "--connect-timeout", "1", "-o", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 3, r.stderr  # a general command says 4 (unreachable); a check has no verdict: 3
    assert (doc["status"], doc["exit_code"], doc["errors"][0]["code"]) == ("unknown", 3, "unreachable")
    assert time.monotonic() - start < 30
    assert run_nozk("brokers", "list", "-z", NOWHERE, "--connect-timeout", "1").exit_code == 4


@pytest.mark.parametrize("argv", CHECKS)
def test_check_verb_internal_error_is_unknown(run_nozk, mocker, argv):
    mocker.patch("kadmin.cluster.connect.open_backend", side_effect=RuntimeError("boom"))
    mocker.patch("kadmin.cli.quorum.load", side_effect=RuntimeError("boom"))
    r = run_nozk(*argv, "-z", NOWHERE, "-o", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 3 and (doc["status"], doc["exit_code"]) == ("unknown", 3)
    assert doc["errors"][0]["code"] == "internal"
    assert r.stderr.startswith("kadmin: internal error: RuntimeError: boom") and len(lines(r.stderr)) == 1


def test_quorum_check_verdicts_and_statuses(run_nozk):
    """OK, WARNING and CRITICAL from a DescribeQuorum answer: the exit code, the envelope's status and the
    data's status agree."""
    now = int(time.time() * 1000)

    def check(sc: Scenario, *extra: str) -> tuple[int, dict[str, Any]]:
        with KraftServer(sc) as srv:
            r = run_nozk("quorum", "check", "--bootstrap-server", srv.bootstrap(), *extra, "-o", "json")
        return r.exit_code, json.loads(r.stdout)

    code, doc = check(Scenario.cluster(now_ms=now))
    assert (code, doc["status"], doc["exit_code"], doc["data"]["status"]) == (0, "ok", 0, "ok")
    sc = Scenario.cluster(now_ms=now)
    sc.quorum.observers[0].log_end_offset -= 5000
    code, doc = check(sc, "--max-lag-ms", "600000")
    assert (code, doc["status"], doc["exit_code"], doc["data"]["status"]) == (1, "warning", 1, "warning")
    sc = Scenario.cluster(now_ms=now)
    sc.quorum.leader_id = -1
    code, doc = check(sc)
    assert (code, doc["status"], doc["exit_code"], doc["data"]["status"]) == (2, "critical", 2, "critical")


# ------------------------------------------------------------------------------------ parse errors
@pytest.mark.parametrize("argv, says, see", [
    (["brokers", "list", "--no-such-flag"], "No such option: --no-such-flag", "kadmin brokers list --help"),
    (["brokers", "show"], "Missing argument 'ID'", "kadmin brokers show --help"),
    (["brokers", "list", "--connect-timeout", "ten"], "'ten' is not a number of seconds",
     "kadmin brokers list --help"),
    (["brokers", "list", "-z"], "Option '-z' requires an argument", "kadmin brokers list --help"),
    (["brokers", "lst"], "No such command 'lst'", "kadmin brokers --help"),
    (["--no-such-flag"], "No such option: --no-such-flag", "kadmin --help"),
])
def test_parse_error_is_one_line_exit_2(run_nozk, argv, says, see):
    r = run_nozk(*argv)
    assert r.exit_code == 2, r.stderr
    assert r.stdout == "" and len(lines(r.stderr)) == 1
    line = r.stderr.strip()
    assert line.startswith("kadmin: error: ") and says in line and line.endswith(f"(see: {see})"), line
    assert "╭" not in r.stderr and "Usage:" not in r.stderr


@pytest.mark.parametrize("json_flag", [["-o", "json"], ["-ojson"], ["--output", "json"], ["--output=json"],
                                       ["-vo", "json"], ["-o", "JSON"]])
def test_parse_error_under_json_prints_the_envelope(run_nozk, json_flag):
    r = run_nozk("brokers", "show", *json_flag)  # the ID is missing
    assert r.exit_code == 2 and len(lines(r.stderr)) == 1
    doc = json.loads(r.stdout)
    assert set(doc) == ENVELOPE
    assert (doc["command"], doc["status"], doc["exit_code"], doc["data"]) == ("brokers show", "error", 2, None)
    assert doc["errors"] == [{"code": "usage", "message": "Missing argument 'ID'."}]


def test_parse_error_of_an_unknown_command_under_json_names_no_command(run_nozk):
    r = run_nozk("no-such-noun", "-o", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 2 and (doc["command"], doc["status"]) == (None, "error")


def test_a_value_that_only_looks_like_json_is_not_asked_for(run_nozk):
    r = run_nozk("brokers", "list", "--no-such-flag", "-o", "plain", "--context", "json")
    assert r.exit_code == 2 and r.stdout == ""


def test_help_is_unchanged(run_nozk):
    r = run_nozk("partitions", "check", "--help")
    assert r.exit_code == 0 and "Usage: kadmin partitions check" in r.stdout
    r = run_nozk("brokers")  # no subcommand: the help, exit 2 as before
    assert r.exit_code == 2 and "Usage: kadmin brokers" in r.stdout


def test_the_console_script_path_gives_one_line_too():
    """`python -m kadmin` runs main(), as the console script does (not the test runner's entry)."""
    p = subprocess.run([sys.executable, "-m", "kadmin", "partitions", "check", "--no-such-flag", "-o", "json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3 and len(lines(p.stderr)) == 1, p.stderr
    assert json.loads(p.stdout)["status"] == "unknown"
