"""`--zk-auth sasl:...` needs the pure-sasl package: without it, one line that says so (exit 3)."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture
def no_puresasl(monkeypatch):
    monkeypatch.setitem(sys.modules, "puresasl", None)  # `import puresasl` fails, as when not installed


@pytest.mark.parametrize("argv", [["brokers", "list"], ["quorum", "describe", "--status"]])
def test_sasl_without_pure_sasl_is_one_line_naming_the_package(run, no_puresasl, argv, capfd):
    r = run(*argv, "--zk-auth", "sasl:alice:secret", "--connect-timeout", "3")
    assert r.exit_code == 3, r.stderr
    lines = [line for line in r.stderr.splitlines() if "warning" not in line]
    assert len(lines) == 1 and "pure-sasl" in lines[0], r.stderr
    assert "Traceback" not in capfd.readouterr().err  # nor from a kazoo thread
