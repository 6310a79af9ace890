"""The operator's commands a roll runs (`--stop`, `--start`, `--restart`, `--only-if`): placeholders quoted for
the shell, a wrapper that leaves a status record, the output in a log file, a bound on their time, and what
Ctrl-C does while one runs.

Rendering: the placeholders' values come from the cluster (a broker's host, its broker.rack) and may hold
anything, so each is quoted for the shell context where it stands (`render`); a context where no quoting is
reliable (backquotes, `${...}`, `$((...))`, a here-document) refuses the template.

Running: a hook runs as `/bin/sh -c CMD` under a small /bin/sh wrapper, in a session of its own (a Ctrl-C at the
terminal reaches kadmin, not the hook). Its stdout and stderr go to DIR/hooks/node-N.HOOK.log (never a pipe: a
hook outlives a dead kadmin without a SIGPIPE), and a thread relays that file's new lines to `say`. The wrapper
writes `began PID` to DIR/hooks/node-N.HOOK.ATTEMPT.status before it runs the command and `ended RC` after it, so
a later kadmin can tell what became of a hook nobody watched (`read_status`). The wrapper creates that file only if
it does not exist (noclobber: O_EXCL): a later kadmin that finds no file for an attempt its journal says started
creates it first (`take_over`), so a wrapper the dead kadmin had started but that had not yet begun can never run
the command as well (the hook would run twice). A first Ctrl-C lets the running
hook end (its outcome is journaled, then the roll stops, exit 130), a second one leaves it running and stops at
once.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kadmin.domain.roll import RollNode
from kadmin.errors import ConfigError, UsageError

PLACEHOLDERS = ("{id}", "{host}", "{port}", "{rack}", "{role}")
NAMES = tuple(p[1:-1] for p in PLACEHOLDERS)
# the hooks by their journal step names, and the options that give them
FLAGS = {"stop": "--stop", "start": "--start", "restart": "--restart", "only_if": "--only-if",
         "before_node": "--before-node", "after_node": "--after-node"}
# the environment variable that carries each placeholder's value (for the contexts kadmin cannot quote)
ENV = {"id": "KADMIN_ROLL_NODE", "role": "KADMIN_ROLL_ROLE", "host": "KADMIN_ROLL_HOST", "port": "KADMIN_ROLL_PORT",
       "rack": "KADMIN_ROLL_RACK"}
TAIL_LINES = 20
KILL_GRACE = 5.0  # s between the SIGTERM and the SIGKILL of a hook's process group

# $1: the operator's command; $2: the status file, created here only if it does not exist (set -C: O_EXCL). No
# `began` line: the command never ran (exit 125).
WRAPPER = ('if ! (set -C; printf "began %s\\n" "$$" > "$2") 2>/dev/null; then\n'
           '  echo "kadmin roll: not run: $2 exists already (a later kadmin took this attempt over) or cannot be '
           'written" >&2\n'
           '  exit 125\n'
           'fi\n'
           '/bin/sh -c "$1"\n'
           'rc=$?\n'
           'printf "ended %s\\n" "$rc" >> "$2"\n'
           'exit "$rc"\n')


@dataclass(frozen=True)
class Hooks:
    stop: str | None = None
    start: str | None = None
    restart: str | None = None
    only_if: str | None = None
    before_node: str | None = None
    after_node: str | None = None

    def asked(self) -> frozenset[str]:
        """The optional steps these hooks bring (kadmin/domain/roll.py `Needs`)."""
        out = {"restart" if self.restart is not None else "stop_start"}
        out |= {k for k in ("only_if", "before_node", "after_node") if getattr(self, k) is not None}
        return frozenset(out)


@dataclass(frozen=True)
class HookOutcome:
    code: int | None  # None: it did not return within the time allowed (it was killed)
    tail: tuple[str, ...]  # its last lines of output
    seconds: float
    interrupted: bool  # a Ctrl-C came while it ran (it was let end)

    @property
    def ok(self) -> bool:
        return self.code == 0


@dataclass(frozen=True)
class HookStatus:
    """What a hook's status file says. absent: no file; not_begun: the command never ran; void: a later kadmin took
    the attempt over before its wrapper began (`pid`: that kadmin), so the command never runs; running: its wrapper
    is alive; ended: it exited `code`; cut_short: it began and its wrapper is gone without an end (killed)."""

    state: Literal["absent", "not_begun", "void", "running", "ended", "cut_short"]
    pid: int | None = None
    code: int | None = None


# ------------------------------------------------------------------------------------------------ rendering
# `{{` and `}}` are literal braces; `{name}` of that shape is a placeholder (or refused), unless a `$` stands
# before it (`${VAR}` is the shell's). Any other brace is the shell's.
_TOKEN = re.compile(r"\{\{|\}\}|(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MARK = "\0"  # a placeholder in the skeleton the lexer reads (no template can hold a NUL: it is an argument)
_BLANKS = " \t\n"
_WORD_END = _BLANKS + ";&|()<>"
Context = Literal["unquoted", "single", "double", "comment"]
_Part = str | tuple[str, Context]


def _skeleton(template: str) -> tuple[str, list[str]]:
    """The template as the shell will read it around the values: `{{` and `}}` made single braces, each
    placeholder one _MARK; and the placeholders' names, in order."""
    if _MARK in template:
        raise UsageError("the command holds a NUL byte")
    names: list[str] = []

    def piece(m: re.Match[str]) -> str:
        name = m.group(1)
        if name is None:
            return m.group()[0]
        if name not in NAMES:
            listed = ", ".join(PLACEHOLDERS[:-1]) + " and " + PLACEHOLDERS[-1]
            raise UsageError(f"{{{name}}} is no placeholder (they are {listed}): write {{{{{name}}}}} for a literal "
                             "brace")
        names.append(name)
        return _MARK

    return _TOKEN.sub(piece, template), names


@dataclass
class _Frame:
    """One level of the shell's quoting. U: unquoted (the top, or inside `$(`: `sub`); S '...'; D "..."; B `...`;
    P ${...}; A $((...)); E $'...'; C a comment."""

    kind: str
    sub: bool = False  # U: a command substitution (ends at its `)`)
    depth: int = 0  # U (sub): the parentheses open inside it; A: the parentheses open
    placeholder: str | None = None  # the first placeholder inside it


_CONTEXT: dict[str, Context] = {"U": "unquoted", "S": "single", "D": "double", "C": "comment"}
_QUOTES = {"'": "S", '"': "D", "`": "B"}
_WHERE = {"B": "inside backquotes (`...`)", "P": "inside ${...}", "A": "inside $((...))", "E": "inside $'...'"}
_OPENS = {"S": "an unterminated '...'", "D": 'an unterminated "..."', "U": "an unterminated $(...)",
          "B": "an unterminated `...`", "P": "an unterminated ${...}", "A": "an unterminated $((...))",
          "E": "an unterminated $'...'"}


def _refuse(name: str, where: str) -> UsageError:
    return UsageError(f"{{{name}}} stands {where}, where kadmin cannot quote it for the shell: move it out of there "
                      f"(or use \"${ENV[name]}\" there)")


class _Lexer:
    """POSIX sh quoting, enough to tell the context of each placeholder (a _MARK) in a skeleton: it follows
    quotes, backslashes, `$(`, `${`, `$((`, backquotes, bash's `$'...'`, comments and `<<`."""

    def __init__(self, skel: str, names: list[str]) -> None:
        self.s = skel
        self.names = iter(names)
        self.frames = [_Frame("U")]
        self.word_start = True  # U: the next character begins a word (where `#` begins a comment)
        self.lost: str | None = None  # why the contexts from here on cannot be told
        self.heredoc = False
        self.contexts: list[Context] = []

    def run(self) -> list[Context]:
        i = 0
        while i < len(self.s):
            c = self.s[i]
            i = self.placeholder(i) if c == _MARK else getattr(self, "in_" + self.frames[-1].kind)(i, c)
        for f in self.frames[1:]:
            if f.placeholder is not None and f.kind != "C":
                raise UsageError(f"{{{f.placeholder}}} stands in {_OPENS[f.kind]}")
        return self.contexts

    def push(self, kind: str, i: int, *, sub: bool = False, depth: int = 0) -> int:
        self.frames.append(_Frame(kind, sub, depth))
        return i

    def placeholder(self, i: int) -> int:
        name = next(self.names)
        if self.lost:
            raise _refuse(name, f"after {self.lost}")
        if self.heredoc:
            raise _refuse(name, "after a here-document (<<)")
        for f in self.frames:
            if f.kind in _WHERE:
                raise _refuse(name, _WHERE[f.kind])
        for f in self.frames:
            f.placeholder = f.placeholder or name
        self.contexts.append(_CONTEXT[self.frames[-1].kind])
        self.word_start = False
        return i + 1

    def escape(self, i: int) -> int:
        """A backslash at i, where it quotes the next character: the index after that one."""
        if self.s[i + 1:i + 2] == _MARK:
            raise _refuse(next(self.names), "right after a backslash")
        self.word_start = False
        return i + 2

    def skip(self, i: int) -> int:
        """A backslash at i where no placeholder may stand anyway: the next one is refused for where it is."""
        return i + 1 if self.s[i + 1:i + 2] == _MARK else i + 2

    def dollar(self, i: int) -> int:
        """A `$` at i: `$((`, `$(` or `${` opens a level; the index after what was read."""
        s = self.s
        if s.startswith("$((", i):
            return self.push("A", i + 3, depth=2)
        if s.startswith("$(", i):
            self.word_start = True
            return self.push("U", i + 2, sub=True)
        if s.startswith("${", i):
            return self.push("P", i + 2)
        return i + 1

    def in_U(self, i: int, c: str) -> int:
        f = self.frames[-1]
        s = self.s
        if c == "\\":
            return self.escape(i)
        if c in _QUOTES:
            self.word_start = False
            return self.push(_QUOTES[c], i + 1)
        if c == "$":
            self.word_start = False
            return self.push("E", i + 2) if s.startswith("$'", i) else self.dollar(i)
        if c == "#" and self.word_start:
            return self.push("C", i + 1)
        if s.startswith("<<", i):
            self.heredoc = True
            return i + 2
        if c == ")" and f.sub and f.depth == 0:
            self.frames.pop()
            self.word_start = False
            return i + 1
        if f.sub:
            f.depth += {"(": 1, ")": -1}.get(c, 0)
            if self.word_start and s.startswith("case", i) and s[i + 4:i + 5] in ("", *_WORD_END):
                # `case WORD in PATTERN)`: that `)` would end the $( ) as this lexer counts
                self.lost = "a case statement inside $(...)"
        self.word_start = c in _WORD_END
        return i + 1

    def in_S(self, i: int, c: str) -> int:
        if c == "'":
            self.frames.pop()
        return i + 1

    def in_E(self, i: int, c: str) -> int:
        return self.until(i, c, "'")

    def in_D(self, i: int, c: str) -> int:
        if c == "\\":
            return self.escape(i)
        if c == '"':
            self.frames.pop()
            return i + 1
        if c == "`":
            return self.push("B", i + 1)
        return self.dollar(i) if c == "$" else i + 1

    def in_B(self, i: int, c: str) -> int:
        return self.until(i, c, "`")

    def until(self, i: int, c: str, end: str) -> int:
        """Inside `...` or $'...': a backslash takes the next character, `end` closes."""
        if c == "\\":
            return self.skip(i)
        if c == end:
            self.frames.pop()
        return i + 1

    def in_P(self, i: int, c: str) -> int:
        if c == "\\":
            return self.skip(i)
        if c == "}":
            self.frames.pop()
            return i + 1
        if c == "'" and any(f.kind == "D" for f in self.frames):  # dash and bash disagree on where "${x:-'}'}" ends
            self.lost = "a ' inside \"${...}\""
            return i + 1
        if c in _QUOTES:
            return self.push(_QUOTES[c], i + 1)
        return self.dollar(i) if c == "$" else i + 1

    def in_A(self, i: int, c: str) -> int:
        f = self.frames[-1]
        if c in _QUOTES:
            return self.push(_QUOTES[c], i + 1)
        if c == "$":
            return self.dollar(i)
        f.depth += {"(": 1, ")": -1}.get(c, 0)
        if f.depth == 0:
            self.frames.pop()
        return i + 1

    def in_C(self, i: int, c: str) -> int:
        if c == "\n":
            self.frames.pop()
            self.word_start = True
        return i + 1


@functools.lru_cache(maxsize=64)
def _parse(template: str) -> tuple[_Part, ...]:
    """The template's text and placeholders, each with its shell context; a UsageError for what cannot be
    rendered safely."""
    skel, names = _skeleton(template)
    contexts = _Lexer(skel, names).run()
    texts = skel.split(_MARK)
    parts: list[_Part] = [texts[0]]
    for name, context, text in zip(names, contexts, texts[1:], strict=True):
        parts += [(name, context), text]
    return tuple(parts)


def _quote(value: str, context: Context) -> str:
    if context == "single":
        return value.replace("'", "'\\''")
    if context == "double":
        return re.sub(r'([\\$`"])', r"\\\1", value)
    quoted = shlex.quote(value)
    return quoted.replace("\n", " ") if context == "comment" else quoted  # a newline would end the comment


def _values(node: RollNode) -> dict[str, str | None]:
    return {"id": str(node.id), "host": node.host or None, "port": None if node.port is None else str(node.port),
            "rack": node.rack or "", "role": node.role}


def render(template: str, node: RollNode) -> str:
    """The command for `node`: each placeholder replaced, in one pass, by its value quoted for the shell context
    where it stands (one argument when unquoted, even empty). A placeholder whose value is unknown (a
    controller's host when DescribeQuorum lists no endpoints), or holds a NUL byte, is a configuration error; a
    template kadmin cannot render safely is a usage error."""
    parts = _parse(template)
    used = {p[0] for p in parts if isinstance(p, tuple)}
    v = _values(node)
    for name in ("host", "port"):
        if name in used and v[name] is None:
            raise ConfigError(f"node {node.id} ({node.role}): its {name} is unknown (DescribeQuorum before Kafka 3.9 "
                              "lists no controller endpoints), and a hook uses {" + name + "}: give "
                              "--bootstrap-controller, or use {id} in the hook", code="placeholder_unknown")
    for name in NAMES:
        if name in used and "\0" in (v[name] or ""):
            raise ConfigError(f"node {node.id} ({node.role}): its {name} holds a NUL byte, which no shell argument "
                              "can hold", code="placeholder_invalid")
    return "".join(p if isinstance(p, str) else _quote(v[p[0]] or "", p[1]) for p in parts)


def _given(hooks: Hooks) -> list[tuple[str, str]]:
    return [(k, cmd) for k in FLAGS if (cmd := getattr(hooks, k)) is not None]


def check_templates(hooks: Hooks) -> None:
    """Each hook given is not blank and can be rendered (placeholders known, each where kadmin can quote it);
    a template without placeholders is allowed (one host)."""
    for key, cmd in _given(hooks):
        if not cmd.strip():
            raise UsageError(f"{FLAGS[key]} is empty")
        try:
            _parse(cmd)
        except UsageError as e:
            raise UsageError(f"{FLAGS[key]}: {e.message}", code=e.code) from None


def render_all(hooks: Hooks, nodes: Iterable[RollNode]) -> dict[tuple[int, str], str]:
    """Every hook given rendered for every node, keyed (node id, hook): what a roll checks before it touches
    anything. The first error names its node and hook."""
    out: dict[tuple[int, str], str] = {}
    given = _given(hooks)
    for n in nodes:
        who = f"node {n.id} ({n.role}): "
        for key, cmd in given:
            try:
                out[n.id, key] = render(cmd, n)
            except (UsageError, ConfigError) as e:
                raise type(e)(f"{who}{FLAGS[key]}: {e.message.removeprefix(who)}", code=e.code) from None
        if given:
            environment(n)
    return out


def environment(node: RollNode) -> dict[str, str]:
    """The node as environment variables for its hooks (an unknown value is empty)."""
    v = _values(node)
    env = {var: v[name] or "" for name, var in ENV.items()}
    for name, var in ENV.items():
        if "\0" in env[var]:
            raise ConfigError(f"node {node.id} ({node.role}): its {name} holds a NUL byte, which no environment "
                              f"variable ({var}) can hold", code="placeholder_invalid")
    return env


# ------------------------------------------------------------------------------------------------ files
def log_path(directory: Path, node_id: int, hook: str) -> Path:
    """Where the output of a node's hook goes, every attempt appended (`hook`: the journal's step name)."""
    return directory / "hooks" / f"node-{node_id}.{hook}.log"


def status_path(directory: Path, node_id: int, hook: str, attempt: int) -> Path:
    """The status record of one attempt of a node's hook: `began PID`, then `ended RC`."""
    return directory / "hooks" / f"node-{node_id}.{hook}.{attempt}.status"


def read_status(path: Path) -> HookStatus:
    """What became of the hook whose status file is `path` (a torn last line is not read)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return HookStatus("absent")
    except OSError:  # no file there (a directory in its place): the wrapper could not write it either
        return HookStatus("not_begun")
    pid = code = None
    for line in data.split(b"\n")[:-1]:  # the last piece has no newline: torn, or empty
        word, _, number = line.decode(errors="replace").partition(" ")
        if number.strip().lstrip("-").isdigit():
            if word == "void" and pid is None:
                return HookStatus("void", int(number))
            if word == "began" and pid is None:
                pid = int(number)
            elif word == "ended" and pid is not None and code is None:
                code = int(number)
    if pid is None:
        # the wrapper creates the file, then writes its line: between the two it is alive, and about to run
        wrapper = _wrapper_of(path)
        return HookStatus("not_begun") if wrapper is None else HookStatus("running", wrapper)
    if code is not None:
        return HookStatus("ended", pid, code)
    return HookStatus("running" if _wrapper_alive(pid, path) else "cut_short", pid)


def take_over(path: Path) -> bool:
    """Take over an attempt whose status file does not exist (its hook never began): create the file holding
    `void PID` (this kadmin), only if it does not exist. A wrapper of that attempt that starts later (its kadmin
    died between starting it and its first line) then finds the file and runs nothing. False when the file exists:
    the wrapper was first (read it again)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, f"void {os.getpid()}\n".encode())
    finally:
        os.close(fd)
    return True


def _wrapper_of(path: Path) -> int | None:
    """The pid of a live wrapper of `path` (its argv names the file), if there is one."""
    want = os.fsencode(os.path.abspath(path))
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    for d in proc.iterdir():
        if d.name.isdigit():
            try:
                if want in (d / "cmdline").read_bytes().split(b"\0"):
                    return int(d.name)
            except OSError:
                continue
    return None


def _wrapper_alive(pid: int, path: Path) -> bool:
    """Is `pid` alive and the wrapper of `path` (its argv names the file: a reused pid is not it)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # no /proc here: the pid's life is all there is to go by
    except OSError:
        return False
    return os.fsencode(os.path.abspath(path)) in argv  # a zombie's is empty


def wait_ended(path: Path, timeout: float, sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> HookStatus:
    """The status of `path` once it is no longer running, or at `timeout` s (then still running)."""
    deadline = clock() + timeout
    while True:
        status = read_status(path)
        if status.state != "running" or clock() >= deadline:
            return status
        sleep(0.1)


# ------------------------------------------------------------------------------------------------ running
def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _open_log(path: Path, header: str) -> tuple[int, int]:
    """The log opened for appending (O_APPEND: whoever writes, nothing is overwritten), the header written; the
    descriptor and the offset after the header."""
    fd = -1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        os.write(fd, header.encode(errors="replace"))
        return fd, os.lseek(fd, 0, os.SEEK_CUR)
    except OSError as e:
        if fd >= 0:
            os.close(fd)
        raise ConfigError(f"cannot write the hook's log {path}: {e.strerror or e}", code="hook_log") from e


def run(cmd: str, node: RollNode, name: str, timeout: float, say: Callable[[str], None], *,
        directory: Path | None, attempt: int = 1, env: Mapping[str, str] | None = None,
        line: Callable[[str], None] | None = None) -> HookOutcome:
    """Run `cmd` (rendered) for `node`, at most `timeout` seconds; its output appended to its log file under
    `directory` (None: a temporary directory) and each of its lines given to `line` (the live view), or said
    when there is no `line`. `name`: "stop", "start", "restart" or "only-if"."""
    if directory is None:
        scratch = tempfile.mkdtemp(prefix="kadmin-hook-")
        try:
            return run(cmd, node, name, timeout, say, directory=Path(scratch), attempt=attempt, env=env, line=line)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    hook = name.replace("-", "_")
    log = log_path(directory, node.id, hook)
    status = status_path(directory.absolute(), node.id, hook, attempt)
    environ = dict(os.environ)
    environ.update(environment(node))
    environ["KADMIN_ROLL_HOOK"] = name
    environ.update(env or {})
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    fd, offset = _open_log(log, f"==> kadmin roll: node {node.id} {name} attempt {attempt} at {when}: "
                                f"{_printable(cmd)}\n")
    start = time.monotonic()
    try:
        p = subprocess.Popen(["/bin/sh", "-c", WRAPPER, "kadmin-hook", cmd, str(status)], stdin=subprocess.DEVNULL,
                             stdout=fd, stderr=fd, start_new_session=True, env=environ)
    finally:
        os.close(fd)
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    done = threading.Event()
    who = f"node {node.id} {name}"
    relay = line or (lambda text: say(f"{who}: {text}"))
    reader = threading.Thread(target=_relay, args=(log, offset, done, tail, relay), daemon=True)
    reader.start()
    interrupted = False
    code: int | None = None
    try:
        while True:
            try:
                code = p.wait(timeout=max(0.0, start + timeout - time.monotonic()))
                break
            except subprocess.TimeoutExpired:
                _kill(p)
                code = None
                break
            except KeyboardInterrupt:
                if interrupted:  # the second Ctrl-C: leave it running
                    raise
                interrupted = True
                say(f"interrupted: letting the {name} hook of node {node.id} end first (Ctrl-C again to leave it "
                    "running and stop now)")
    finally:
        done.set()
    reader.join(timeout=2.0)
    return HookOutcome(code, tuple(tail), time.monotonic() - start, interrupted)


def _relay(path: Path, offset: int, done: threading.Event, tail: deque[str], relay: Callable[[str], None]) -> None:
    """Follow the log from `offset`: each complete line kept in `tail` and relayed (if not blank); once `done`,
    what is left up to the end of the file, a last line without its newline included."""
    def line(raw: bytes) -> None:
        text = raw.decode(errors="replace").rstrip()
        tail.append(text)
        if text:
            relay(text)

    with contextlib.suppress(OSError, ValueError), open(path, "rb") as f:
        f.seek(offset)
        pending = b""
        while True:
            finished = done.is_set()  # read before the last read: nothing written before the end is missed
            chunk = f.read(65536)
            if chunk:
                *lines, pending = (pending + chunk).split(b"\n")
                for raw in lines:
                    line(raw)
                if len(pending) > 65536:  # no newline in sight: say it as it is
                    line(pending)
                    pending = b""
            elif finished:
                break
            else:
                done.wait(0.05)
        if pending:
            line(pending)


def _group_alive(pgid: int) -> bool:
    """Is any process of the group still running (a zombie is not)?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for d in proc.iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                return True
    return False


def _kill(p: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the hook's process group; what is still running of it 5 s later gets SIGKILL. (The wrapper
    dies at the SIGTERM: the group's other processes, not the wrapper, say whether the hook is gone.)"""
    deadline = time.monotonic() + KILL_GRACE
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.wait(timeout=KILL_GRACE)
    while _group_alive(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(p.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=KILL_GRACE)


# ------------------------------------------------------------------------------------------------ accounts
def describe(outcome: HookOutcome, name: str, cmd: str, timeout: float) -> str:
    """Why a hook failed, in one line: its code (or the time-out) and its last line of output."""
    last = next((line for line in reversed(outcome.tail) if line.strip()), "")
    why = (f"did not return within {timeout:g} s (killed)" if outcome.code is None
           else f"exited {outcome.code}")
    return f"the {name} hook `{cmd}` {why}" + (f": {last}" if last else "")


def describe_status(status: HookStatus, name: str) -> str:
    """What became of a hook nobody watched, in one line (`name`: "--stop", ...)."""
    if status.state == "absent":
        return f"the {name} hook left no status file: it was never started"
    if status.state == "not_begun":
        return f"the {name} hook never ran: its wrapper could not record its start"
    if status.state == "void":
        return f"the {name} hook never ran: a later kadmin (pid {status.pid}) took its attempt over before it began"
    if status.state == "running":
        return f"the {name} hook is still running (pid {status.pid})"
    if status.state == "ended":
        return f"the {name} hook ended with exit {status.code} while no kadmin was watching"
    return f"the {name} hook was cut short: it began (pid {status.pid}) and was killed before it ended"
