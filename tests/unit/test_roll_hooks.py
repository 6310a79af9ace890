"""The operator's commands a roll runs (kadmin/services/roll_hooks.py): placeholders, /bin/sh in a session of its
own, the exit code, the output's last lines, the time bound (the whole process group killed) and the env."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from kadmin.domain.roll import RollNode
from kadmin.errors import ConfigError, UsageError
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll_hooks import HookOutcome, Hooks

pytestmark = pytest.mark.timeout(60)

BROKER = RollNode(3, "broker", "kafka-3.example", 9093, "rack-a")
CONTROLLER = RollNode(3001, "controller")  # DescribeQuorum listed no endpoint: host and port unknown


# ------------------------------------------------------------------------------------------------ render
@pytest.mark.parametrize(("template", "node", "command"), [
    ("ssh {host} sudo systemctl restart kafka", BROKER, "ssh kafka-3.example sudo systemctl restart kafka"),
    ("stop {id} {host}:{port} rack={rack} role={role}", BROKER, "stop 3 kafka-3.example:9093 rack=rack-a role=broker"),
    ("{id}{id}", BROKER, "33"),
    # other braces are the shell's: kept as they are
    ("for i in {1..3}; do echo ${HOME} {x} {ID} {{id}}; done", BROKER,
     "for i in {1..3}; do echo ${HOME} {x} {ID} {3}; done"),
    ("awk '{print $1}' /etc/{role}s", BROKER, "awk '{print $1}' /etc/brokers"),
    ("no placeholder at all", BROKER, "no placeholder at all"),
    # an unknown rack is empty (allowed); a controller's id and role are always known
    ("x --rack '{rack}'", RollNode(1, "broker", "h", 1), "x --rack ''"),
    ("kadmin sandbox kill {id} # {role} {rack}", CONTROLLER, "kadmin sandbox kill 3001 # controller "),
])
def test_render(template: str, node: RollNode, command: str) -> None:
    assert hooks.render(template, node) == command


@pytest.mark.parametrize(("template", "missing"), [("ssh {host} stop", "host"), ("nc -z h {port}", "port"),
                                                   ("x {id} {port} {host}", "host")])
def test_an_unknown_host_or_port_is_a_configuration_error(template: str, missing: str) -> None:
    with pytest.raises(ConfigError) as e:
        hooks.render(template, CONTROLLER)
    assert e.value.code == "placeholder_unknown" and int(e.value.exit_code) == 3
    assert e.value.message.startswith(f"node 3001 (controller): its {missing} is unknown")
    assert "{" + missing + "}" in e.value.message and "--bootstrap-controller" in e.value.message


def test_check_templates() -> None:
    hooks.check_templates(Hooks(stop="a", start="b"))
    hooks.check_templates(Hooks(restart="a", only_if="true"))
    hooks.check_templates(Hooks())
    for kw, flag in [({"stop": ""}, "--stop"), ({"start": "  "}, "--start"), ({"restart": "\t"}, "--restart"),
                     ({"only_if": ""}, "--only-if")]:
        with pytest.raises(UsageError, match=f"^{flag} is empty$") as e:
            hooks.check_templates(Hooks(**kw))
        assert int(e.value.exit_code) == 2


# ------------------------------------------------------------------------------------------------ run
def run(cmd: str, timeout: float = 20.0, node: RollNode = BROKER, name: str = "stop",
        env: dict[str, str] | None = None) -> tuple[HookOutcome, list[str]]:
    said: list[str] = []
    out = hooks.run(cmd, node, name, timeout, said.append, env)
    return out, said


@pytest.mark.parametrize("code", [0, 1, 3, 9, 127])
def test_the_exit_code(code: int) -> None:
    out, _ = run(f"exit {code}")
    assert (out.code, out.ok, out.interrupted) == (code, code == 0, False)
    assert 0 <= out.seconds < 10


def test_a_command_that_does_not_exist() -> None:
    out, said = run("no-such-command-kadmin-roll-test")
    assert out.code == 127 and not out.ok
    assert "not found" in out.tail[-1]
    assert said and said[-1].startswith("node 3 stop: ")


def test_the_output_stdout_and_stderr_said_line_by_line_and_its_tail_kept() -> None:
    out, said = run("echo one; echo two >&2; echo; printf 'no newline'")
    assert out.ok
    assert out.tail == ("one", "two", "", "no newline")
    assert said == ["node 3 stop: one", "node 3 stop: two", "node 3 stop: no newline"]  # blank lines not said


def test_only_the_last_20_lines_are_kept() -> None:
    out, said = run("for i in $(seq 1 50); do echo line $i; done; exit 4")
    assert out.code == 4 and out.tail == tuple(f"line {i}" for i in range(31, 51))
    assert len(said) == 50


def test_stdin_is_empty() -> None:
    out, _ = run("cat; echo read-all")
    assert out.ok and out.tail == ("read-all",)


def test_the_environment() -> None:
    out, _ = run('echo "$KADMIN_ROLL_NODE $KADMIN_ROLL_ROLE $KADMIN_ROLL_HOOK ${EXTRA:-}"', node=CONTROLLER,
                 name="start", env={"EXTRA": "given"})
    assert out.tail == ("3001 controller start given",)
    out, _ = run('echo "$KADMIN_ROLL_NODE $KADMIN_ROLL_ROLE $KADMIN_ROLL_HOOK"', name="only-if")
    assert out.tail == ("3 broker only-if",)


def test_it_runs_under_bin_sh_in_a_session_of_its_own() -> None:
    """A Ctrl-C at the terminal reaches kadmin's process group, not the hook's."""
    probe = f"{sys.executable} -c 'import os; print(os.getsid(0), os.getpgid(0), os.getppid())'"
    out, _ = run(f"{probe}; echo $$")
    sid, pgid, parent = map(int, out.tail[0].split())
    shell = int(out.tail[1])
    assert sid == pgid == parent == shell  # the shell leads its own session and group
    assert sid != os.getsid(0) and pgid != os.getpgid(0)


def alive(pid: int) -> bool:
    """Running (a zombie is gone for this purpose)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_over_the_timeout_the_whole_process_group_is_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    cmd = f"sleep 60 & echo $! >> {pids}; (sleep 60; echo never) & echo $! >> {pids}; echo $$ >> {pids}; wait"
    t0 = time.monotonic()
    out, _ = run(cmd, timeout=1.0)
    assert out.code is None and not out.ok
    assert 0.9 <= out.seconds < 8 and time.monotonic() - t0 < 10
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 3
    deadline = time.monotonic() + 5
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in started if alive(p)], "a hook's child survived the time-out"
    assert "never" not in out.tail
    why = hooks.describe(out, "--stop", "the-cmd", 1.0)
    assert why == "the --stop hook `the-cmd` did not return within 1 s (killed)"


@pytest.mark.timeout(30)
def test_a_hook_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    """SIGTERM first; what is still there 5 s later gets SIGKILL."""
    pids = tmp_path / "pids"
    out, _ = run(f"trap '' TERM; echo $$ > {pids}; sleep 60 & echo $! >> {pids}; wait; wait", timeout=0.5)
    assert out.code is None and 5.0 <= out.seconds < 15
    started = [int(p) for p in pids.read_text().split()]
    deadline = time.monotonic() + 5
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in started if alive(p)]


def test_describe() -> None:
    assert hooks.describe(HookOutcome(3, ("a", "last words", "  "), 0.1, False), "--start", "go {id}", 600) == \
        "the --start hook `go {id}` exited 3: last words"
    assert hooks.describe(HookOutcome(1, (), 0.1, False), "--stop", "x", 600) == "the --stop hook `x` exited 1"
    assert hooks.describe(HookOutcome(None, ("slow",), 2.5, False), "--restart", "x", 2.5) == \
        "the --restart hook `x` did not return within 2.5 s (killed): slow"
