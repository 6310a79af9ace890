"""The real `kadmin` CLI on a pseudo-terminal of a given size: what a person's terminal shows.

- `on_terminal(*args, columns=...)`: a command's whole screen, stdin and stdout the terminal (rich measures it
  through them), stderr a pipe of its own.
- `Terminal(argv, env, cols)`: a long-running program whose stderr is the terminal (stdin /dev/null, stdout a
  pipe: a script's NDJSON reader, say), the window size set and changed mid-run (SIGWINCH and all), everything
  it draws kept and rich's live frames split out.

COLUMNS and LINES are unset, so the width is the terminal's window size, as at a shell prompt.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Shown:
    exit_code: int
    screen: str  # what the terminal received, without its colour and style sequences; lines end with "\n"
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.screen.splitlines()


def on_terminal(*args: str, columns: int, rows: int = 50, env: dict[str, str] | None = None,
                timeout: float = 60) -> Shown:
    """Run `python -m kadmin ARGS` with a terminal `columns` wide; its exit code, screen and stderr."""
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        e = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        e.update({"TERM": "xterm-256color", "PYTHONPATH": os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")])})
        e.update(env or {})
        proc = subprocess.Popen([sys.executable, "-m", "kadmin", *args], stdin=slave, stdout=slave,
                                stderr=subprocess.PIPE, env=e, cwd=ROOT, start_new_session=True)
    finally:
        os.close(slave)
    received = bytearray()

    def read() -> None:  # until the last holder of the terminal's other end is gone (EIO on Linux)
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        reader.join(timeout)
        os.close(master)
    screen = ANSI.sub("", received.decode("utf-8", "replace")).replace("\r\n", "\n")
    return Shown(proc.returncode, screen, err.decode("utf-8", "replace"))


# ------------------------------------------------------------------------------------------------ live views
# rich's Live goes back over its last frame before it draws the next: a carriage return, then "erase the line,
# one line up" for each line of it, then "erase the line"
REDRAW = re.compile(r"\r(?:\x1b\[2K\x1b\[1A)+\x1b\[2K|\r\x1b\[2K")


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cols: int, rows: int = 60,
                 cwd: str | None = None) -> None:
        self.master, slave = pty.openpty()
        set_size(slave, cols, rows)
        environ = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        environ["TERM"] = "xterm-256color"
        self.proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                                     env=environ, cwd=cwd, start_new_session=True)
        os.close(slave)
        self._raw = bytearray()
        self._out: list[bytes] = []
        self._cond = threading.Condition()
        self._eof = False
        self._out_eof = False  # the program's stdout read to its end
        threading.Thread(target=self._read, daemon=True, name="pty-reader").start()
        threading.Thread(target=self._read_stdout, daemon=True, name="pty-stdout").start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the last holder of the terminal's other side closed it
                data = b""
            with self._cond:
                if not data:
                    self._eof = True
                    self._cond.notify_all()
                    return
                self._raw += data
                self._cond.notify_all()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self._out.append(line)
                self._cond.notify_all()
        with self._cond:
            self._out_eof = True
            self._cond.notify_all()

    def resize(self, cols: int, rows: int = 60) -> None:
        set_size(self.master, cols, rows)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGWINCH)

    # ---------------------------------------------------------------- what it drew
    def text(self) -> str:
        with self._cond:
            return bytes(self._raw).decode(errors="replace")

    def stdout_lines(self) -> list[str]:
        with self._cond:
            return [b.decode(errors="replace").rstrip("\n") for b in self._out]

    def chunks(self) -> list[str]:
        """What was drawn between two redraws, escape sequences removed, lines ended by \\n."""
        return [ANSI.sub("", c).replace("\r\n", "\n").replace("\r", "") for c in REDRAW.split(self.text())]

    def frames(self, first_line: str) -> list[list[str]]:
        """The live view's frames: in each chunk, the lines from the one starting with `first_line` on (what
        comes before it in a chunk was printed above the view)."""
        out = []
        for c in self.chunks():
            lines = c.split("\n")
            at = next((i for i, line in enumerate(lines) if line.startswith(first_line)), None)
            if at is not None:
                out.append([line for line in lines[at:] if line])
        return out

    def above(self, first_line: str) -> list[str]:
        """The lines printed above the live view (each chunk's lines before its frame)."""
        out = []
        for c in self.chunks():
            lines = c.split("\n")
            at = next((i for i, line in enumerate(lines) if line.startswith(first_line)), len(lines))
            out.extend(line for line in lines[:at] if line.strip())
        return out

    def wait_for(self, pred: Callable[[Terminal], bool], timeout: float, what: str) -> None:
        """Until `pred(self)` holds, looked at again each time the program draws (or each second); pred runs
        without the lock, so the reader keeps draining the terminal meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                ended = self._eof  # read before pred: once ended, pred has seen everything drawn
            if pred(self):
                return
            left = deadline - time.monotonic()
            if ended or left <= 0:
                raise AssertionError(f"the terminal {'closed' if ended else f'showed for {timeout:g} s'} "
                                     f"without {what}; it last showed:\n{self.tail()}")
            with self._cond:
                if not self._eof:
                    self._cond.wait(min(left, 1.0))

    def tail(self, n: int = 40) -> str:
        lines = "\n".join(self.chunks()[-2:]).split("\n")
        return "\n".join(lines[-n:])

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            raise
        with self._cond:  # the exit can come before the readers have taken the last of the terminal and stdout
            end = time.monotonic() + 10
            while not (self._eof and self._out_eof) and time.monotonic() < end:
                self._cond.wait(0.5)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.master)
