"""A secret given literally on the command line is visible in `ps` while kadmin runs: say so, once."""

from __future__ import annotations

import pytest

ARGS = ("brokers", "list", "-z", "127.0.0.1:1", "--connect-timeout", "0.3")


def test_literal_zk_auth_on_the_command_line_warns_without_echoing_it(run_nozk):
    r = run_nozk(*ARGS, "--zk-auth", "digest:alice:s3cret")
    assert r.exit_code == 4
    warning = [line for line in r.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1, r.stderr
    assert "ps" in warning[0] and "@FILE" in warning[0] and "KADMIN_ZK_AUTH" in warning[0]
    assert "s3cret" not in r.stderr


@pytest.mark.parametrize("how", ["env", "file"])
def test_the_environment_or_a_file_do_not_warn(run_nozk, tmp_path, how):
    if how == "env":
        r = run_nozk(*ARGS, env={"KADMIN_ZK_AUTH": "digest:alice:s3cret"})
    else:
        (tmp_path / "auth").write_text("digest:alice:s3cret\n")
        r = run_nozk(*ARGS, "--zk-auth", f"@{tmp_path / 'auth'}")
    assert r.exit_code == 4
    assert "warning" not in r.stderr, r.stderr
