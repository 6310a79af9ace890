"""The operator's commands a roll runs (`--stop`, `--start`, `--restart`, `--only-if`): placeholders, a shell,
their output on stderr, a bound on their time, and what Ctrl-C does while one runs.

A hook runs as `/bin/sh -c CMD` in a session of its own (a Ctrl-C at the terminal reaches kadmin, not the hook):
a first Ctrl-C lets the running hook end (its outcome is journaled, then the roll stops, exit 130), a second one
leaves it running and stops at once (the journal shows the hook started and not ended: a resumed run works out
from the cluster what it did). Its output goes to stderr line by line, prefixed with the node and the hook.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kadmin.domain.roll import RollNode
from kadmin.errors import ConfigError, UsageError

PLACEHOLDERS = ("{id}", "{host}", "{port}", "{rack}", "{role}")


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


def values(node: RollNode) -> dict[str, str]:
    return {"{id}": str(node.id), "{host}": node.host or "", "{port}": "" if node.port is None else str(node.port),
            "{rack}": node.rack or "", "{role}": node.role}


def render(template: str, node: RollNode) -> str:
    """The command for `node`: each placeholder replaced (other braces are the shell's). A placeholder whose value
    is unknown (a controller's host when DescribeQuorum lists no endpoints) is a configuration error."""
    v = values(node)
    for ph in ("{host}", "{port}"):
        if ph in template and not v[ph]:
            raise ConfigError(f"node {node.id} ({node.role}): its {ph[1:-1]} is unknown (DescribeQuorum before "
                              "Kafka 3.9 lists no controller endpoints), and a hook uses " + ph + ": give "
                              "--bootstrap-controller, or use {id} in the hook", code="placeholder_unknown")
    out = template
    for ph, value in v.items():
        out = out.replace(ph, value)
    return out


def check_templates(hooks: Hooks) -> None:
    """Nothing to check but that each hook is not blank (a template without placeholders is allowed: one host)."""
    for name, cmd in (("--stop", hooks.stop), ("--start", hooks.start), ("--restart", hooks.restart),
                      ("--only-if", hooks.only_if)):
        if cmd is not None and not cmd.strip():
            raise UsageError(f"{name} is empty")


def run(cmd: str, node: RollNode, name: str, timeout: float, say: Callable[[str], None],
        env: Mapping[str, str] | None = None) -> HookOutcome:
    """Run `cmd` (rendered) for `node`, at most `timeout` seconds; its output said line by line."""
    start = time.monotonic()
    environ = dict(os.environ)
    environ.update({"KADMIN_ROLL_NODE": str(node.id), "KADMIN_ROLL_ROLE": node.role, "KADMIN_ROLL_HOOK": name})
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
