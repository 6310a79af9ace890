"""The operator's commands a roll runs (`--stop`, `--start`, `--restart`, `--only-if`): placeholders quoted for
the shell, a shell, their output on stderr, a bound on their time, and what Ctrl-C does while one runs.

Rendering: the placeholders' values come from the cluster (a broker's host, its broker.rack) and may hold
anything, so each is quoted for the shell context where it stands (`render`); a context where no quoting is
reliable (backquotes, `${...}`, `$((...))`, a here-document) refuses the template.

A hook runs as `/bin/sh -c CMD` in a session of its own (a Ctrl-C at the terminal reaches kadmin, not the hook):
a first Ctrl-C lets the running hook end (its outcome is journaled, then the roll stops, exit 130), a second one
leaves it running and stops at once (the journal shows the hook started and not ended: a resumed run works out
from the cluster what it did). Its output goes to stderr line by line, prefixed with the node and the hook.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from kadmin.domain.roll import RollNode
from kadmin.errors import ConfigError, UsageError

PLACEHOLDERS = ("{id}", "{host}", "{port}", "{rack}", "{role}")
NAMES = tuple(p[1:-1] for p in PLACEHOLDERS)
# the hooks by their journal step names, and the options that give them
FLAGS = {"stop": "--stop", "start": "--start", "restart": "--restart", "only_if": "--only-if"}
# the environment variable that carries each placeholder's value (for the contexts kadmin cannot quote)
ENV = {"id": "KADMIN_ROLL_NODE", "role": "KADMIN_ROLL_ROLE", "host": "KADMIN_ROLL_HOST", "port": "KADMIN_ROLL_PORT",
       "rack": "KADMIN_ROLL_RACK"}


@dataclass(frozen=True)
class Hooks:
    stop: str | None = None
    start: str | None = None
    restart: str | None = None
    only_if: str | None = None


@dataclass(frozen=True)
class HookOutcome:
    code: int | None  # None: it did not return within the time allowed (it was killed)
    tail: tuple[str, ...]  # its last lines of output
    seconds: float
    interrupted: bool  # a Ctrl-C came while it ran (it was let end)

    @property
    def ok(self) -> bool:
        return self.code == 0


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


# ------------------------------------------------------------------------------------------------ running
def run(cmd: str, node: RollNode, name: str, timeout: float, say: Callable[[str], None],
        env: Mapping[str, str] | None = None) -> HookOutcome:
    """Run `cmd` (rendered) for `node`, at most `timeout` seconds; its output said line by line."""
    start = time.monotonic()
    environ = dict(os.environ)
    environ.update(environment(node))
    environ["KADMIN_ROLL_HOOK"] = name
    environ.update(env or {})
    p = subprocess.Popen(["/bin/sh", "-c", cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True, env=environ)
    tail: deque[str] = deque(maxlen=20)
    reader = threading.Thread(target=_relay, args=(p, tail, say, f"node {node.id} {name}"), daemon=True)
    reader.start()
    interrupted = False
    code: int | None = None
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
    reader.join(timeout=2.0)
    return HookOutcome(code, tuple(tail), time.monotonic() - start, interrupted)


def _relay(p: subprocess.Popen[bytes], tail: deque[str], say: Callable[[str], None], who: str) -> None:
    assert p.stdout is not None
    with contextlib.suppress(OSError, ValueError):
        for raw in p.stdout:
            line = raw.decode(errors="replace").rstrip()
            tail.append(line)
            if line:
                say(f"{who}: {line}")


def _kill(p: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=5.0)


def describe(outcome: HookOutcome, name: str, cmd: str, timeout: float) -> str:
    """Why a hook failed, in one line: its code (or the time-out) and its last line of output."""
    last = next((line for line in reversed(outcome.tail) if line.strip()), "")
    why = (f"did not return within {timeout:g} s (killed)" if outcome.code is None
           else f"exited {outcome.code}")
    return f"the {name} hook `{cmd}` {why}" + (f": {last}" if last else "")
