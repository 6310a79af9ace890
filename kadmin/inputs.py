"""Files named on the command line and read whole: regular files under a size limit (issue 22 §3).

A path given to `--since`, `--to`, `--from`, `--command-config`, `--meta-properties`, `--zk-auth @FILE`, a
`cluster check-id` argument or a keystore named in a --command-config could name anything: /dev/zero (endless:
a MemoryError), a FIFO (an open that waits for a writer forever), a directory, a socket, a device, a 10 GiB log.
`read_input` looks at what the path is before opening it (a device is never opened), opens it without blocking
and checks the opened descriptor again (so nothing swapped in between slips through), and reads at most the
limit. What it refuses is a usage error (exit 2), one line naming the flag, the path and why:

    --since /dev/zero: not a regular file (a character device)
    --command-config big.properties: is 70 MiB, over the 64 MiB limit

A file that does not exist or cannot be read raises its OSError, which each caller words as it always did.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kadmin.errors import UsageError

MIB = 1024 * 1024
MAX_INPUT_BYTES = 64 * MIB
_CHUNK = MIB

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO or pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class InputRefused(UsageError):
    """A path that is not a regular file, or is over the limit: `reason` says which, without flag or path."""

    def __init__(self, flag: str, path: str | Path, reason: str) -> None:
        super().__init__(f"{flag} {path}: {reason}" if flag else f"{path}: {reason}")
        self.flag, self.path, self.reason = flag, str(path), reason


def size_text(n: int) -> str:
    """`70 MiB`, `64.5 MiB`, or bytes (`67,108,865 bytes`) where one decimal would hide that it is over a limit."""
    if n and n % MIB == 0:
        return f"{n // MIB} MiB"
    mib = f"{n / MIB:.1f}"
    return f"{mib} MiB" if n >= MIB and not mib.endswith(".0") else f"{n:,} bytes"


def _kind(mode: int) -> str | None:
    """None for a regular file, else what it is."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a file kadmin knows")


def _check(flag: str, path: str | Path, st: os.stat_result, limit: int) -> None:
    kind = _kind(st.st_mode)
    if kind is not None:
        raise InputRefused(flag, path, f"not a regular file ({kind})")
    if st.st_size > limit:
        raise InputRefused(flag, path, f"is {size_text(st.st_size)}, over the {size_text(limit)} limit")


def check_input(path: str | Path, flag: str, limit: int = MAX_INPUT_BYTES) -> None:
    """Refuse (InputRefused, exit 2) a path that another library will open and read by itself (a TLS certificate
    or key given to kazoo's ssl context) when it is not a regular file, or is over `limit`: a FIFO there would
    block the open forever. A path that does not exist is left for that library to report."""
    try:
        st = os.stat(path)
    except OSError:
        return
    _check(flag, path, st, limit)


def read_input(path: str | Path, flag: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; `flag` names where the path came from.

    Raises InputRefused (a UsageError, exit 2) for anything but a regular file (directory, FIFO, socket,
    character or block device) and for a file over `limit`, also one that grows past it while being read;
    raises OSError when the file cannot be found, opened or read.
    """
    _check(flag, path, os.stat(path), limit)  # a device or a FIFO is refused before it is opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        _check(flag, path, os.fstat(fd), limit)  # what was opened, if the path changed since
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if got > limit:
        raise InputRefused(flag, path, f"grew past the {size_text(limit)} limit while being read")
    return b"".join(chunks)
