"""The command line without a cluster: start-up cost, help, version, usage errors, generated artifacts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kadmin import __version__
from kadmin.cli.app import app
from kadmin.cli.completion import SHELLS, script

ROOT = Path(__file__).resolve().parents[2]


def test_help_loads_no_heavy_library():
    code = (
        "import atexit, sys\n"
        "from kadmin.cli.app import main\n"
        "sys.argv = ['kadmin', '--help']\n"
        "def report():  # main() ends the process: its atexit handlers are the last code to run\n"
        "    heavy = sorted(m for m in ('kazoo', 'kafka', 'pyspark', 'kazoo.client') if m in sys.modules)\n"
        "    print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
        "atexit.register(report)\n"
        "main()\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY=\n" in p.stderr, p.stderr
    assert "brokers" in p.stdout and "sandbox" in p.stdout


def test_version(run_nozk):
    r = run_nozk("--version")
    assert r.exit_code == 0 and r.stdout.strip() == f"kadmin {__version__}"


def test_python_dash_m_works():
    p = subprocess.run([sys.executable, "-m", "kadmin", "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("kadmin ")


def test_no_cluster_is_a_configuration_error_in_every_format(run_nozk):
    r = run_nozk("brokers", "list")
    assert r.exit_code == 3
    assert r.stderr.startswith("kadmin: error: no cluster given") and r.stdout == ""
    r = run_nozk("brokers", "list", "-o", "json")
    doc = json.loads(r.stdout)
    assert set(doc) == {"kadmin_result_version", "command", "status", "exit_code", "data", "errors"}
    assert (doc["kadmin_result_version"], doc["status"], doc["exit_code"], doc["data"]) == (2, "error", 3, None)
    assert doc["errors"][0]["code"] == "config"


@pytest.mark.parametrize("zk", ["host:notaport", ",", "h:1,,h:2"])
def test_malformed_connect_string_is_a_usage_error(run_nozk, zk):
    r = run_nozk("brokers", "list", "-z", zk)
    assert r.exit_code == 2 and "--zookeeper" in r.stderr and "Traceback" not in r.stderr


def test_bad_option_is_usage_exit_2(run_nozk):
    assert run_nozk("brokers", "list", "--no-such-flag").exit_code == 2
    assert run_nozk("brokers", "list", "-o", "yaml").exit_code == 2


def test_bad_contexts_file_is_a_configuration_error(run_nozk, tmp_path):
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text("this is = = not toml")
    r = run_nozk("brokers", "list", "--context", "x")
    assert r.exit_code == 3 and "not valid TOML" in r.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_completions_are_current(shell):
    """completions/ is generated from the Typer app: regenerate with `make completions`."""
    assert (ROOT / "completions" / f"kadmin.{shell}").read_text() == script(shell, app)


def test_bash_completion_completes_commands_and_options():
    src = ROOT / "completions" / "kadmin.bash"
    cmd = (f"source {src}; COMP_WORDS=(kadmin brokers ma); COMP_CWORD=2; _kadmin_complete; echo ${{COMPREPLY[@]}};"
           "COMP_WORDS=(kadmin brokers wait 3 --epo); COMP_CWORD=4; _kadmin_complete; echo ${COMPREPLY[@]}")
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30).stdout.splitlines()
    assert out == ["max-epoch", "--epoch-gt"]

