"""The exit-code tables and the status mapping (kadmin/exit_codes.py): one place, complete, consistent."""

from __future__ import annotations

import pytest
import typer

from kadmin.cli.app import app, json_asked
from kadmin.exit_codes import (
    CHECK_COMMANDS,
    DESCRIPTIONS,
    STATUS,
    VERDICT_STATUS,
    ExitCode,
    Verdict,
    markdown_table,
    status,
    verdict,
)
from kadmin.results import Problem, Result


def test_every_exit_code_has_a_description_and_a_status():
    assert set(DESCRIPTIONS) == set(ExitCode) and set(STATUS) == set(ExitCode)
    assert set(VERDICT_STATUS) == set(Verdict)


def test_internal_is_ex_software_and_the_general_table_keeps_its_values():
    assert int(ExitCode.INTERNAL) == 70
    # 9: a `roll` hook failed; 10: a roll's --until window closed (issue 37); 74 (EX_IOERR): stdout's reader
    # closed the pipe (issue 34 §1)
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 70, 74, 130]


def test_verdicts_are_the_monitoring_plugin_codes():
    assert {v.name: int(v) for v in Verdict} == {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}
    assert VERDICT_STATUS == {Verdict.OK: "ok", Verdict.WARNING: "warning", Verdict.CRITICAL: "critical",
                              Verdict.UNKNOWN: "unknown"}


@pytest.mark.parametrize("code, general, check", [
    (0, "success", "ok"),
    (1, "condition_not_met", "warning"),
    (2, "error", "critical"),
    (3, "error", "unknown"),
    (4, "error", "unknown"),
    (5, "partial", "unknown"),
    (70, "error", "unknown"),
    (130, "interrupted", "interrupted"),
])
def test_status_is_a_function_of_the_exit_code(code, general, check):
    assert status(code) == general and status(code, check=True) == check


@pytest.mark.parametrize("code, want", [(0, 0), (1, 1), (2, 2), (3, 3), (4, 3), (5, 3), (7, 3), (70, 3), (130, 130)])
def test_a_check_verb_exit_that_is_no_verdict_is_unknown(code, want):
    assert verdict(code) == want


def test_result_status_follows_its_exit_code():
    assert Result(None).status == "success"
    assert Result(None, errors=[Problem("p", "m")]).status == "partial"  # errors make a result partial
    assert Result(None, exit_code=ExitCode.CONDITION_NOT_MET).status == "condition_not_met"
    assert Result(None, exit_code=ExitCode.INTERRUPTED).status == "interrupted"
    assert Result(None, exit_code=Verdict.WARNING).status == "warning"
    assert Result(None, exit_code=Verdict.CRITICAL, errors=[Problem("p", "m")]).status == "critical"
    ok = Result(None, exit_code=Verdict.OK, errors=[Problem("p", "m")])
    assert (ok.exit_code, ok.status) == (Verdict.OK, "ok")  # a verdict is never turned into PARTIAL (5)


def test_check_commands_are_commands_of_the_app():
    root = typer.main.get_command(app)
    for name in CHECK_COMMANDS:
        node = root
        for word in name.split():
            node = node.commands[word]  # type: ignore[attr-defined]
        assert node.name == name.split()[-1]


def test_the_generated_table_carries_both_tables_and_the_statuses():
    table = markdown_table()
    assert "| 70 | `INTERNAL` | `error` |" in table
    assert "| 1 | `CONDITION_NOT_MET` | `condition_not_met` |" in table
    assert "| 3 | `UNKNOWN` | `unknown` |" in table and "| 2 | `CRITICAL` | `critical` |" in table
    assert all(f"`kadmin {c}`" in table for c in CHECK_COMMANDS)


@pytest.mark.parametrize("argv, asked", [
    (["brokers", "list", "-o", "json"], True),
    (["brokers", "list", "-ojson"], True),
    (["brokers", "list", "--output", "json"], True),
    (["brokers", "list", "--output=json"], True),
    (["brokers", "list", "-vo", "json"], True),
    (["brokers", "list", "-vojson"], True),
    (["brokers", "list", "-o", "JSON"], True),
    (["brokers", "list", "-o", "json", "-o", "plain"], False),  # the last one wins, as the parser does
    (["brokers", "list", "-o", "ndjson"], False),
    (["brokers", "list", "-z", "json"], False),
    (["brokers", "list", "-zjson"], False),
    (["brokers", "list", "--context", "json"], False),
    (["brokers", "list", "-o"], False),
    (["brokers", "list", "--", "-o", "json"], False),
])
def test_json_asked_reads_the_words(argv, asked):
    assert json_asked(argv) is asked
