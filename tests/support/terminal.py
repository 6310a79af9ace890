"""The real `kadmin` CLI on a pseudo-terminal of a given size: what a user's terminal shows.

stdin and stdout are the terminal (rich measures it through them), stderr a pipe of its own. COLUMNS and LINES
are unset, so the width is the terminal's window size, as at a shell prompt."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import threading
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


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
    screen = _ANSI.sub("", received.decode("utf-8", "replace")).replace("\r\n", "\n")
    return Shown(proc.returncode, screen, err.decode("utf-8", "replace"))
