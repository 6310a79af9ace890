"""Issue 21 §2: the command line's front door, tried as a new user would: one clear line on stderr and the
documented exit code, never a traceback, whatever the reader of stdout does or the address looks like."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENV = {k: v for k, v in os.environ.items() if not k.startswith("KADMIN_")}


def piped_to_true(*args: str) -> tuple[int, str]:
    """`kadmin ARGS | true`: the reader closes the pipe before kadmin writes (it exits at once)."""
    r = subprocess.run(f"e=$(mktemp); {sys.executable} -m kadmin {' '.join(args)} 2>$e | true; "
                       f"echo \"rc=${{PIPESTATUS[0]}}\"; cat $e; rm -f $e", shell=True, executable="/bin/bash",
                       capture_output=True, text=True, env=ENV, timeout=120)
    rc_line, _, err = r.stdout.partition("\n")
    return int(rc_line.removeprefix("rc=")), err


@pytest.mark.parametrize("args, code", [
    (("nosuch", "-o", "json"), 2),
    (("brokers", "list", "-z", "127.0.0.1:99999", "-o", "json"), 2),
    (("partitions", "check", "--nosuch", "-o", "json"), 3),  # a check verb: UNKNOWN, never 1 = WARNING
    (("quorum", "check", "-o", "json"), 3),  # no cluster given: a runtime error, its envelope to a closed pipe
    (("completion", "bash", "-o", "json"), 2),
])
def test_a_closed_pipe_never_turns_an_error_into_a_traceback(args: tuple[str, ...], code: int) -> None:
    rc, err = piped_to_true(*args)
    assert rc == code, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("kadmin: error: "), err


@pytest.mark.parametrize("value, said", [
    ("127.0.0.1:abc", "'127.0.0.1:abc' is not HOST:PORT"),
    ("127.0.0.1:0", "port 0 of '127.0.0.1:0' is not in 1-65535"),
    ("127.0.0.1:99999", "port 99999 of '127.0.0.1:99999' is not in 1-65535"),
    ("127.0.0.1", "'127.0.0.1' is not HOST:PORT"),
    ("::1:9092", "an IPv6 address goes in brackets"),
    ("[::1]", "'[::1]' is not HOST:PORT"),
    ("a:9092,,b:9092", "'' is not HOST:PORT"),
])
@pytest.mark.parametrize("flag", ["--bootstrap-server", "-b", "--bootstrap-controller"])
def test_bootstrap_addresses_are_checked_like_zookeeper_ones(flag: str, value: str, said: str) -> None:
    cmd = ["quorum", "describe"] if flag == "--bootstrap-controller" else ["partitions", "list"]
    r = subprocess.run([sys.executable, "-m", "kadmin", *cmd, flag, value], capture_output=True, text=True,
                       env=ENV, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_env_var_is_checked_too_and_brackets_pass() -> None:
    from kadmin.domain.addresses import split_bootstrap

    assert split_bootstrap("[::1]:9092, h:1") == ["[::1]:9092", "h:1"]
    r = subprocess.run([sys.executable, "-m", "kadmin", "partitions", "list"], capture_output=True, text=True,
                       env={**ENV, "KADMIN_BOOTSTRAP_SERVER": "h:abc"}, timeout=120)
    assert r.returncode == 2 and "KADMIN_BOOTSTRAP_SERVER" in r.stderr, r.stderr


def test_no_cluster_given_names_both_kinds_of_cluster() -> None:
    r = subprocess.run([sys.executable, "-m", "kadmin", "brokers", "list"], capture_output=True, text=True,
                       env=ENV, timeout=120)
    assert r.returncode == 3
    for name in ("--bootstrap-server/-b", "KADMIN_BOOTSTRAP_SERVER", "--zookeeper/-z", "KADMIN_ZOOKEEPER"):
        assert name in r.stderr, r.stderr


@pytest.mark.parametrize("args, said", [
    (("brokers", "can-stop", "abc"), "Invalid value for 'ID': not a whole number"),
    (("partitions", "check", "--min-isr-default", "0"), "Invalid value for '--min-isr-default': must be at least 1"),
    (("partitions", "check", "--min-isr-default", "x"), "Invalid value for '--min-isr-default': not a whole number"),
    (("brokers", "shutdown", "1", "--epoch", "-5"), "Invalid value for '--epoch': must be at least 0"),
])
def test_pydantic_wording_never_reaches_a_user(args: tuple[str, ...], said: str) -> None:
    r = subprocess.run([sys.executable, "-m", "kadmin", *args, "-z", "127.0.0.1:2181"], capture_output=True, text=True,
                       env=ENV, timeout=120)
    assert r.returncode in (2, 3) and said in r.stderr, r.stderr
    assert "Input should" not in r.stderr and "Value error" not in r.stderr


@pytest.mark.parametrize("args", [("--help",), ("brokers", "--help"), ("brokers", "list", "--help"),
                                  ("completion", "bash")])
def test_output_a_closed_pipe_cut_short_is_exit_74_said_on_stderr(args: tuple[str, ...]) -> None:
    """Issue 34 §1: help (Typer and rich answer a closed pipe with exit 1) and any other output that is no gate's
    verdict: never 0 silently, never 1; 74 (EX_IOERR), one line saying so."""
    rc, err = piped_to_true(*args)
    assert rc == 74, err
    assert err.strip() == "kadmin: output lost: stdout's reader closed the pipe before all of it was written (exit 74)"


def test_help_to_a_reader_that_takes_it_all_is_0() -> None:
    r = subprocess.run([sys.executable, "-m", "kadmin", "--help"], capture_output=True, text=True, env=ENV,
                       timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
