"""The Renderer: a command's Result as text on stdout (or JSON), its warnings and errors on stderr (the package's
docstring, kadmin/render/__init__.py, says how each format looks)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, TypeVar

from kadmin import exit_codes
from kadmin.exit_codes import ExitCode, Verdict
from kadmin.render import views
from kadmin.results import Payload, Problem, Result

D = TypeVar("D")

RESULT_VERSION = 2  # 2: `status` follows the exit code (check verbs: ok/warning/critical/unknown)
_TEXT = "\n\t"  # kept in whole texts (plain output we lay out, multi-line messages); escaped in cells
FORMATS = ("auto", "table", "plain", "json", "ndjson")


def resolve(fmt: str, isatty: bool) -> str:
    if fmt == "auto":
        return "table" if isatty else "plain"
    return fmt


def envelope(command: str | None, status: str, exit_code: int, data: Any, errors: Sequence[Any]) -> dict[str, Any]:
    return {
        "kadmin_result_version": RESULT_VERSION,
        "command": command,
        "status": status,
        "exit_code": int(exit_code),
        "data": data,
        "errors": [{"code": e.code, "message": e.message} for e in errors],
    }


def json_data(data: Any) -> Any:
    """A result's data as JSON values: a payload as its to_json(), and so each payload of a list (data not
    typed yet, plain JSON values, as it is)."""
    if isinstance(data, Payload):
        return data.to_json()
    if isinstance(data, list):
        return [d.to_json() if isinstance(d, Payload) else d for d in data]
    return data


def finite(obj: Any) -> Any:
    """`obj` with every NaN/Infinity float replaced by null, so no JSON output is ever non-standard JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, indent: int | None = None) -> str:
    """JSON text: standard JSON only (allow_nan=False; non-finite floats become null)."""
    try:
        return json.dumps(obj, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: the rare case pays for the walk
        return json.dumps(finite(obj), ensure_ascii=False, indent=indent, allow_nan=False)


def reader_gone(out: IO[str]) -> None:
    """The reader of `out` closed the pipe: point its descriptor at /dev/null, so that nothing written or flushed
    later (Python's own flush at exit included) fails again. The exit code stays the command's."""
    import os

    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's StringIO)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class OutputLost(Exception):
    """stdout's reader closed the pipe while a stream was being written: the stream stops (run_guarded: exit 74,
    or a gate's own verdict)."""


class Renderer:
    def __init__(self, fmt: str, out: IO[str] | None = None, err: IO[str] | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.fmt = resolve(fmt, self.out.isatty())
        self.output_lost = False  # stdout's reader closed the pipe before all was written

    def lost(self) -> None:
        """The reader of stdout went away: nothing more can reach it (its descriptor now points at /dev/null)."""
        reader_gone(self.out)
        self.output_lost = True

    # -- diagnostics -------------------------------------------------------------
    # Messages may quote the cluster's data (a znode's path or content): control characters are escaped.
    def warn(self, message: str) -> None:
        print(f"kadmin: warning: {views.inert(message, keep=_TEXT)}", file=self.err, flush=True)

    def note(self, message: str) -> None:
        print(f"kadmin: {views.inert(message, keep=_TEXT)}", file=self.err, flush=True)

    def error(self, message: str) -> None:
        print(f"kadmin: error: {views.inert(message, keep=_TEXT)}", file=self.err, flush=True)

    # -- results -----------------------------------------------------------------
    def emit(self, result: Result[D], view: views.ViewFn[D]) -> ExitCode | Verdict:
        """Print `result`: its data as `view` shows it (table, plain) or as JSON, its warnings, errors and
        message on stderr. The view is made before anything is written, so a view that fails (quorum
        describe's clock drift) leaves stdout empty."""
        shown = view(result.data) if self.fmt in ("table", "plain") else None
        for w in result.warnings:
            self.warn(w)
        for e in result.errors:
            self.warn(e.message)
        try:
            self._emit_data(result, shown)
        except BrokenPipeError:  # the reader went away: the message on stderr and the exit code still stand
            self.lost()
        if result.message:
            self.note(result.message)
        return result.exit_code

    def _emit_data(self, result: Result[D], shown: views.View | None) -> None:
        if self.fmt == "json":
            doc = envelope(result.command, result.status, result.exit_code, json_data(result.data), result.errors)
            print(dumps(doc, indent=2), file=self.out, flush=True)
        elif self.fmt == "ndjson":
            data = json_data(result.data)
            items = data if isinstance(data, list) else [data]
            for item in items:
                print(dumps(item), file=self.out)
            self.out.flush()
        elif shown is not None:
            self._print_view(shown)

    def emit_error(self, command: str | None, code: str, message: str, exit_code: int, *, check: bool = False,
                   label: str = "error", hint: str = "") -> int:
        """One line on stderr, `kadmin: LABEL: MESSAGE HINT`, and under -o json the envelope on stdout (without
        the hint); its status follows the exit code (a check verb's: `unknown`)."""
        print(f"kadmin: {label}: {views.inert(message + hint, keep=_TEXT)}", file=self.err, flush=True)
        if self.fmt == "json":
            doc = envelope(command, exit_codes.status(exit_code, check=check), exit_code, None,
                           [Problem(code, message)])
            try:
                print(dumps(doc, indent=2), file=self.out, flush=True)
            except BrokenPipeError:  # the reader went away: the line on stderr and the exit code still stand
                self.lost()
        return exit_code

    def _print_view(self, view: views.View) -> None:
        if view.text is not None and self.fmt == "plain":
            self.out.write(views.inert(view.text, keep=_TEXT))  # exact: the view ends its lines itself
            self.out.flush()
            return
        if self.fmt == "table":
            if not view.headers:  # an empty list of records: nothing to draw
                return
            from rich.console import Console

            from kadmin.render.tables import fit_table  # imports rich: only when a table is drawn

            # fitted to the width, never a value cut or elided (kadmin/render/tables.py); crop=False: a word
            # wider than the terminal itself is printed whole
            console = Console(file=self.out, width=views.table_width(self.out.isatty()))
            console.print(fit_table(view.headers, view.rows, console.width, title=view.title), crop=False)
        else:
            if view.rows:
                from tabulate import tabulate  # only with rows to lay out: it costs ~30 ms to import (a gate's third)

                text = tabulate(
                    [[views.cell(c) for c in r] for r in view.rows], headers=view.headers, tablefmt="plain",
                    disable_numparse=True,
                )
                print(text, file=self.out, flush=True)
            elif view.header_when_empty:  # else nothing: no rows, no header line (a script sees empty stdout)
                print("  ".join(view.headers), file=self.out, flush=True)

    # -- streams -----------------------------------------------------------------
    def stream_event(self, event: Mapping[str, Any]) -> None:
        """One JSON object on its own line (`roll run -o ndjson`), flushed at once for a script that follows.
        OutputLost when the reader went away (nothing more is written after)."""
        if self.output_lost:
            raise OutputLost
        try:
            print(dumps(dict(event)), file=self.out, flush=True)
        except BrokenPipeError:
            self.lost()
            raise OutputLost from None

    def stream_item(self, item: D, view: Callable[[list[D]], views.View], *, first: bool) -> None:
        """One item of a streamed result (watch), shown as `view` shows a list of one item; the header line
        comes with the first. `json` collects them for the envelope instead. OutputLost when the reader went
        away: the stream stops."""
        try:
            self._stream_item(item, view, first=first)
        except BrokenPipeError:
            self.lost()
            raise OutputLost from None

    def _stream_item(self, item: D, view: Callable[[list[D]], views.View], *, first: bool) -> None:
        if self.fmt == "ndjson":
            print(dumps(json_data(item)), file=self.out, flush=True)
        elif self.fmt != "json":
            shown = view([item])
            if first:
                print(views.fixed(shown.headers), file=self.out)
            print(views.fixed(shown.rows[0]), file=self.out, flush=True)
