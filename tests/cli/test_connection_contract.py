"""The connection contract: two timeouts that can both be set, and a flag that beats the environment.

`--connect-timeout` (env KADMIN_CONNECT_TIMEOUT, context key connect-timeout) bounds each wait for an
answer on every command; `--timeout` is the command's deadline, connecting included, on every command
(3 × --connect-timeout unless set). The cluster's address is taken from the
highest-precedence source that gives one: a `--bootstrap-server` flag is a Kafka-protocol connection
even with KADMIN_ZOOKEEPER set, and the reverse.

A loopback server that accepts connections and never answers is a hung cluster; port 1 on loopback
refuses connections. No real ZooKeeper or Kafka is needed here (tests/integration has those).
"""

from __future__ import annotations

import pytest

from kadmin.config import Sourced, resolve
from tests.support.hung import timed

SLACK = 2.0  # thread start-up and a loaded machine
NOWHERE = "127.0.0.1:1"




def context(tmp_path, body: str) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / "config" / "kadmin"  # XDG_CONFIG_HOME is tmp_path/config (tests/conftest.py)
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('current-context = "c"\n[contexts.c]\n' + body)


# ------------------------------------------------------------------------------------ --connect-timeout
@pytest.mark.parametrize("argv", [
    ["brokers", "list"],
    ["partitions", "list"],
    ["brokers", "wait", "1", "--registered", "--timeout", "300"],
    ["brokers", "wait", "1", "--in-sync", "--timeout", "300"],
    ["brokers", "watch", "--timeout", "300"],
    ["brokers", "shutdown", "1", "--timeout", "300"],
    ["brokers", "drain", "1", "--timeout", "300"],
])
def test_connect_timeout_bounds_reaching_a_hung_zookeeper_whatever_the_command_deadline(run_nozk, hung, argv):
    r, elapsed = timed(run_nozk, *argv, "--connect-timeout", "1", "-z", hung.address)
    assert r.exit_code == 4, (r.exit_code, r.stderr)
    assert f"cannot reach ZooKeeper {hung.address} within 1s" in r.stderr
    assert elapsed < 1 + SLACK, f"{argv} took {elapsed:.1f}s with --connect-timeout 1"
    assert "deprecated" not in r.stderr


@pytest.mark.parametrize("argv", [
    ["brokers", "wait", "1", "--registered"],
    ["brokers", "watch"],
])
def test_the_command_deadline_still_covers_connecting(run_nozk, hung, argv):
    r, elapsed = timed(run_nozk, *argv, "--timeout", "1", "--connect-timeout", "60", "-z", hung.address)
    assert r.exit_code == 4, r.stderr
    assert elapsed < 1 + SLACK
    assert "deprecated" not in r.stderr  # --timeout is this command's own deadline


def test_connect_timeout_bounds_a_hung_kafka_bootstrap_server(run_nozk, hung):
    r, elapsed = timed(run_nozk, "brokers", "list", "--connect-timeout", "1", "--bootstrap-server", hung.address)
    assert r.exit_code == 4, r.stderr
    assert elapsed < 1 + SLACK


def test_connect_timeout_from_the_environment_and_a_context(run_nozk, hung, tmp_path):
    r, elapsed = timed(run_nozk, "brokers", "list", "-z", hung.address, env={"KADMIN_CONNECT_TIMEOUT": "1"})
    assert r.exit_code == 4 and "within 1s" in r.stderr and elapsed < 1 + SLACK
    context(tmp_path, "connect-timeout = 1.5\n")
    r = run_nozk("brokers", "list", "-z", hung.address)
    assert r.exit_code == 4 and "within 1.5s" in r.stderr and "warning" not in r.stderr, r.stderr
    # the flag beats the environment, which beats the context
    r = run_nozk("brokers", "list", "-z", hung.address, env={"KADMIN_CONNECT_TIMEOUT": "1"})
    assert "within 1s" in r.stderr
    r = run_nozk("brokers", "list", "-z", hung.address, "--connect-timeout", "0.5",
                 env={"KADMIN_CONNECT_TIMEOUT": "1"})
    assert "within 0.5s" in r.stderr


def test_the_old_context_key_timeout_still_works_with_a_warning(run_nozk, hung, tmp_path):
    context(tmp_path, "timeout = 1\n")
    r = run_nozk("brokers", "list", "-z", hung.address)
    assert r.exit_code == 4 and "within 1s" in r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("kadmin: warning:")]
    assert len(warnings) == 1 and "rename it connect-timeout" in warnings[0], r.stderr


def test_a_context_with_both_keys_is_a_configuration_error(run_nozk, tmp_path):
    context(tmp_path, "timeout = 1\nconnect-timeout = 2\n")
    r = run_nozk("brokers", "list", "-z", NOWHERE)
    assert r.exit_code == 3 and "connect-timeout only" in r.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "1e308", "ten"])
def test_connect_timeout_must_be_finite_and_positive(run_nozk, value):
    r = run_nozk("brokers", "wait", "1", "--registered", "-z", NOWHERE, f"--connect-timeout={value}")
    assert r.exit_code == 2 and "--connect-timeout" in r.stderr, r.stderr


# ------------------------------------------------------------------------- --timeout: every command's deadline
def test_timeout_bounds_a_command_without_a_deadline_of_its_own_and_does_not_warn(run_nozk, hung):
    # a hung server: --connect-timeout 30 alone would wait 30 s; --timeout 1 ends the whole command
    r, elapsed = timed(run_nozk, "brokers", "list", "--timeout", "1", "--connect-timeout", "30", "-z", hung.address)
    assert r.exit_code == 4 and elapsed < 1 + SLACK, (elapsed, r.stderr)
    assert "warning" not in r.stderr and "deprecated" not in r.stderr, r.stderr
    assert "the command's deadline passed" in r.stderr, r.stderr


def test_without_timeout_a_command_ends_within_three_connect_timeouts(run_nozk, hung):
    r, elapsed = timed(run_nozk, "brokers", "list", "-z", hung.address, env={"KADMIN_CONNECT_TIMEOUT": "1"})
    assert r.exit_code == 4 and elapsed < 3 + SLACK, (elapsed, r.stderr)


def test_help_shows_connect_timeout_and_timeout_on_every_command(run_nozk):
    for words in (("brokers", "list"), ("brokers", "can-stop"), ("partitions", "check"), ("brokers", "wait")):
        shown = run_nozk(*words, "--help", env={"COLUMNS": "200"}).stdout
        # --connect-timeout is in the Connection panel, summed up in one line that names where it is in full
        assert "kadmin help connection" in shown and "--timeout" in shown, words
    assert "--connect-timeout" in run_nozk("help", "connection", env={"COLUMNS": "200"}).stdout


# ----------------------------------------------------------------------- the mode: a flag beats the env
def test_a_bootstrap_server_flag_beats_kadmin_zookeeper(run_nozk):
    r = run_nozk("brokers", "list", "--bootstrap-server", NOWHERE, "-v", env={"KADMIN_ZOOKEEPER": NOWHERE})
    assert r.exit_code == 4, r.stderr
    assert f"no bootstrap server answered ({NOWHERE})" in r.stderr and "cannot reach ZooKeeper" not in r.stderr
    assert (f"kadmin: ignored zookeeper = '{NOWHERE}' from env KADMIN_ZOOKEEPER: bootstrap-server came from a flag"
            in r.stderr)


def test_a_zookeeper_flag_beats_kadmin_bootstrap_server(run_nozk):
    r = run_nozk("brokers", "list", "-z", NOWHERE, "--connect-timeout", "1",
                 env={"KADMIN_BOOTSTRAP_SERVER": NOWHERE})
    assert r.exit_code == 4 and f"cannot connect to ZooKeeper {NOWHERE}: {NOWHERE} refused" in r.stderr, r.stderr
    # a KRaft-only command sees ZooKeeper mode: the environment's bootstrap server is not used
    r = run_nozk("brokers", "unregister", "1", "-z", NOWHERE, env={"KADMIN_BOOTSTRAP_SERVER": NOWHERE})
    assert r.exit_code == 3 and "unregister is a KRaft operation" in r.stderr, r.stderr


def test_the_environment_beats_a_context_and_a_flag_beats_a_context(run_nozk, tmp_path):
    context(tmp_path, f'zookeeper = "{NOWHERE}"\n')
    r = run_nozk("brokers", "list", env={"KADMIN_BOOTSTRAP_SERVER": NOWHERE})
    assert r.exit_code == 4 and "no bootstrap server answered" in r.stderr, r.stderr
    r = run_nozk("cluster", "id", "--bootstrap-server", NOWHERE)
    assert r.exit_code == 4 and "no bootstrap server answered" in r.stderr, r.stderr


def test_zookeeper_and_bootstrap_server_from_one_source_stay_together(run_nozk):
    r = run_nozk("brokers", "list", "-z", NOWHERE, "--bootstrap-server", NOWHERE, "--connect-timeout", "1")
    assert r.exit_code == 4 and "to ZooKeeper" in r.stderr, r.stderr  # ZooKeeper mode, as before


@pytest.mark.parametrize("given, kept", [
    ({"bootstrap-server": "flag", "zookeeper": "env KADMIN_ZOOKEEPER"}, {"bootstrap-server"}),
    ({"zookeeper": "flag", "bootstrap-server": "env KADMIN_BOOTSTRAP_SERVER"}, {"zookeeper"}),
    ({"bootstrap-controller": "flag", "zookeeper": "env KADMIN_ZOOKEEPER"}, {"bootstrap-controller"}),
    ({"zookeeper": "flag", "bootstrap-server": "flag"}, {"zookeeper", "bootstrap-server"}),
    ({"zookeeper": "env KADMIN_ZOOKEEPER", "bootstrap-server": "env KADMIN_BOOTSTRAP_SERVER"},
     {"zookeeper", "bootstrap-server"}),
    ({"zookeeper": "env KADMIN_ZOOKEEPER"}, {"zookeeper"}),  # the context's bootstrap-server goes
    ({}, {"zookeeper", "bootstrap-server"}),  # a context is one source: both stay
])
def test_the_address_comes_from_one_source(tmp_path, given, kept):
    (tmp_path / "kadmin").mkdir()
    (tmp_path / "kadmin" / "config.toml").write_text(
        'current-context = "c"\n[contexts.c]\nzookeeper = "cz:1"\nbootstrap-server = "cb:1"\nzk-auth = "x:y"\n')
    s = resolve({k: Sourced(f"{k}-value", src) for k, src in given.items()}, None,
                {"XDG_CONFIG_HOME": str(tmp_path)})
    present = {"zookeeper", "bootstrap-server"} | set(given)
    assert {k for k in present if s.get(k)} == kept
    assert len(s.notes) == len(present - kept)  # each left-out value is said with -v
    assert s.get("zk-auth") == "x:y"  # credentials are not an address: they stay
