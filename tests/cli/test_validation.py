"""Numbers and addresses are checked when the command line is parsed: exit 2, nothing sent anywhere.

Port 1 on loopback refuses connections, so a value that slipped through would show as exit 4 (or
an internal error, exit 1), never as exit 2.
"""

from __future__ import annotations

import pytest

from kadmin.config import ConnectionSettings, Sourced

NOWHERE = "127.0.0.1:1"
BAD_SECONDS = ["nan", "NaN", "inf", "-inf", "1e308", "0", "-1", "-0.5", "ten", ""]


def assert_usage(r, *names: str, code: int = 2) -> None:
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert any(n in r.stderr for n in names), r.stderr


@pytest.mark.parametrize("value", BAD_SECONDS)
@pytest.mark.parametrize("argv", [
    ["brokers", "list"],
    ["quorum", "describe", "--status"],
    ["brokers", "watch"],
    ["brokers", "wait", "1", "--registered"],
    ["brokers", "shutdown", "1"],
])
def test_timeouts_must_be_finite_and_positive(run_nozk, argv, value):
    assert_usage(run_nozk(*argv, "-z", NOWHERE, f"--timeout={value}"), "--timeout")


def test_sandbox_bounce_down_must_be_finite_and_not_negative(run_nozk, tmp_path):
    for value in ("nan", "inf", "-1", "1e308"):
        assert_usage(run_nozk("sandbox", "bounce", "1", "--down", value, "--dir", str(tmp_path)), "--down")


@pytest.mark.parametrize("value", ["1", "0.25", "1.5"])
def test_ordinary_timeouts_still_parse(run_nozk, value):
    r = run_nozk("brokers", "list", "-z", NOWHERE, "--timeout", value)
    assert r.exit_code == 4, r.stderr  # parsed, then nobody answered


@pytest.mark.parametrize("zk", ["127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:65536", "h:1,h:70000/kafka",
                                "127.0.0.1:-1"])
def test_zookeeper_ports_are_checked(run_nozk, zk):
    assert_usage(run_nozk("brokers", "list", "-z", zk), "--zookeeper", "port")


def test_zookeeper_port_from_the_environment_is_checked_too(run_nozk):
    assert_usage(run_nozk("brokers", "list", env={"KADMIN_ZOOKEEPER": "127.0.0.1:99999"}), "port")


def test_zookeeper_port_from_a_context_is_a_configuration_error(run_nozk, tmp_path):
    cfg = tmp_path / "config" / "kadmin"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('current-context = "x"\n[contexts.x]\nzookeeper = "127.0.0.1:99999"\n')
    r = run_nozk("brokers", "list")
    assert r.exit_code in (2, 3) and "port" in r.stderr and "internal error" not in r.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_timeout_from_a_context_is_checked(value):
    from kadmin.errors import ConfigError

    s = ConnectionSettings({"connect-timeout": Sourced(float(value), "context x")})
    with pytest.raises(ConfigError, match="connect-timeout"):
        _ = s.connect_timeout


@pytest.mark.parametrize("option", ["--epoch-gt"])
@pytest.mark.parametrize("value", [str(2**63), str(-(2**63) - 1), "-2"])
def test_epochs_outside_int64_are_refused(run_nozk, option, value):
    assert_usage(run_nozk("brokers", "wait", "1", option, value, "-z", NOWHERE), option)


@pytest.mark.parametrize("value", [str(2**63), "-1"])
def test_shutdown_epoch_is_a_real_epoch(run_nozk, value):
    assert_usage(run_nozk("brokers", "shutdown", "1", "--epoch", value, "-z", NOWHERE), "--epoch")


@pytest.mark.parametrize("argv", [
    ["quorum", "check", "--max-lag", str(2**63)],
    ["quorum", "check", "--max-lag-ms", str(2**63)],
    ["quorum", "check", "--fetch-timeout-ms", str(2**63)],
    ["partitions", "check", "--min-isr-default", str(2**31)],
    ["brokers", "can-stop", "1", "--min-isr-default", str(2**31)],
    ["brokers", "watch", "--count", str(2**63)],
])
def test_counts_and_limits_are_bounded(run_nozk, argv):
    check = argv[1] == "check"  # a check verb's usage error is UNKNOWN, 3 (the monitoring convention)
    assert_usage(run_nozk(*argv, "-z", NOWHERE), argv[-2], code=3 if check else 2)
