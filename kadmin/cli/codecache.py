"""The compiled methods of kadmin's dataclasses, kept between `kadmin` processes (issue 38 §4).

Python builds a dataclass's methods (`__init__`, `__repr__`, `__eq__`, a frozen one's `__setattr__` and
`__delattr__`, `__hash__`) from source text when the class is created: one `compile` each, every time a process
imports the class. The .pyc files of kadmin's modules do not hold them. A gate (`brokers max-epoch`, `wait`,
`can-stop`) creates 26-32 dataclasses at start-up, and compiling their methods was ~29 % of all the instructions
`brokers max-epoch` executed: more than its reads.

Here the `exec` that Python's dataclasses module runs on that text finds the code compiled by an earlier process
in a cache file, keyed by the text itself: the same text gives the same code, so nothing can be stale, and a class
whose text is new is compiled as always (and kept for the next process). The file is
`$XDG_CACHE_HOME/kadmin/dataclass-code-<python>.bin` (else `~/.cache/kadmin/...`), written whole to a temporary
file and renamed, at exit, only by a process that compiled something new; past MAX_ENTRIES texts, such a process
writes only the texts it used (an older kadmin's classes go). It is read only when this user owns
it and it starts with this Python's bytecode magic number; any fault in reading or writing it (no home, a full
disk, a truncated or foreign file) leaves the process compiling as Python does without it. Only the `kadmin`
command installs it (kadmin/cli/main.py, first), not an import of kadmin as a library.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

MAX_ENTRIES = 4096  # a bound on the file: past it, a process writes only the texts it used (older kadmins' go)
# text -> its code, marshalled: a process unmarshals only the code of the classes it creates (the file holds every
# command's; unmarshalling all of its ~1,400 code objects would cost 27 M instructions, the table alone 4 M)
_codes: dict[str, bytes] = {}
_used: set[str] = set()  # the texts this process asked for
_state = {"new": 0}


def cache_file() -> Path | None:
    """Where the cache is; None: nowhere (no XDG_CACHE_HOME and no home directory)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no HOME, and no password entry to find it in
            return None
    return Path(base) / "kadmin" / f"dataclass-code-{sys.implementation.cache_tag}.bin"


def _magic() -> bytes:
    from importlib.util import MAGIC_NUMBER

    return MAGIC_NUMBER


def _load(path: Path | None) -> dict[str, bytes]:
    import marshal

    if path is None:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return {}
    try:
        if os.fstat(fd).st_uid != os.getuid():
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read()
    except OSError:
        return {}
    finally:
        os.close(fd)
    magic = _magic()
    if not data.startswith(magic):
        return {}
    try:
        table = marshal.loads(data[len(magic):])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if type(k) is str and type(v) is bytes}


def _save() -> None:
    if not _state["new"]:
        return
    import marshal
    import tempfile

    path = cache_file()
    if path is None:
        return
    table = _codes if len(_codes) <= MAX_ENTRIES else {text: _codes[text] for text in _used}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_magic() + marshal.dumps(table))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        return


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: Mapping[str, object] | None = None) -> None:
    """dataclasses' `exec(text, globals, ns)`, with the text's code from the cache."""
    if type(source) is str:
        source = _code(source)
    exec(source, globals, locals)  # noqa: S102 - dataclasses' own exec, of its own text


def _code(text: str) -> CodeType:
    import marshal

    _used.add(text)
    kept = _codes.get(text)
    if kept is not None:
        try:
            code = marshal.loads(kept)
        except (EOFError, ValueError, TypeError):
            code = None
        if type(code) is CodeType:
            return code
    code = compile(text, "<string>", "exec", dont_inherit=True)  # dont_inherit: not this module's __future__
    _codes[text] = marshal.dumps(code)
    _state["new"] += 1
    return code


def install() -> None:
    """Have the dataclasses module's `exec` use the cache (it looks `exec` up in its own globals first).
    Idempotent; a no-op where the dataclasses module does not build methods with `exec`."""
    import atexit
    import dataclasses

    if getattr(dataclasses, "exec", None) is _exec:
        return
    _codes.update(_load(cache_file()))
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_save)
