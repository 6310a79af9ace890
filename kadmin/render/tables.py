"""Tables that never hide data: the one rule every table on a terminal follows (`-o table`, the roll's live view).

A value read from the cluster (a host, an endpoint, a topic, a broker id of an ISR) is never cut and never
elided with `…`. For a table of HEADERS and ROWS at WIDTH columns, the first layout that fits is drawn:

1. the boxed table, each cell on one line;
2. the boxed table with cells folded onto more lines, only at their separators: a list (ISR, replicas,
   endpoints, `k=v` pairs) after its commas, as many elements to a line as fit (the comma ends the line, so a
   folded list shows it goes on); text at its spaces; a header after `_` or at a space. Nothing is broken
   inside a word or a list element: each host, endpoint, topic and broker id stays whole on one line, for the
   terminal's search, a double-click copy and `grep` of a saved screen;
3. and 4. the same two without the box (columns two spaces apart, as in plain output);
5. one record per row: `KEY: value` lines, a blank line between rows; a long list folds after its commas
   under its value.

No line is wider than WIDTH, except a single word or list element longer than the terminal itself: it is
printed whole on a line of its own, and the terminal wraps it. The plain layout (`-o plain`, a pipe) is not
fitted: it keeps one line per row, for scripts.

`fit_table(headers, rows, width, title=None)` returns the layout as a rich renderable; `Fitted` is the same
fitted again to whatever width it is rendered at (a live view, a resized terminal). Importing this module
imports rich: import it where a table is drawn, not at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from kadmin.render import views

_BOXED = box.HEAVY_HEAD  # rich's default table
_GAP = 2  # between the columns of the layout without box


def pieces(value: Any) -> list[str]:
    """`views.cell(value)` cut where it may fold: each piece ends with its separator (`,` of a list, ` ` of
    text), so the pieces joined are the cell's one-line text."""
    if isinstance(value, (list, tuple)) and value:
        items = [views.cell(x) for x in value]
    elif isinstance(value, dict) and value:
        items = [f"{views.inert(str(k))}={views.cell(x)}" for k, x in value.items()]
    else:
        words = views.cell(value).split(" ")
        return [w + " " for w in words[:-1]] + [words[-1]]
    return [x + "," for x in items[:-1]] + [items[-1]]


def header_pieces(header: str) -> list[str]:
    """A header cut after each `_` and at its spaces (LEADER_EPOCH folds as LEADER_ / EPOCH)."""
    out: list[str] = []
    word = ""
    for c in views.inert(header):
        word += c
        if c in "_ ":
            out.append(word)
            word = ""
    return [*out, word] if word or not out else out


def fold(parts: Sequence[str], width: int) -> list[str]:
    """The pieces packed greedily into lines of at most `width` cells; a piece is never cut (one longer than
    `width` is a line of its own). A space at a fold is dropped; a comma stays at the end of its line."""
    lines: list[str] = []
    line = ""
    for p in parts:
        if line and cell_len((line + p).rstrip(" ")) > width:
            lines.append(line.rstrip(" "))
            line = p
        else:
            line += p
    return [*lines, line]


def _one_line(parts: Sequence[str]) -> str:
    return "".join(parts)


def _widest_piece(parts: Sequence[str]) -> int:
    return max(cell_len(p.rstrip(" ")) for p in parts)


class _Grid:
    """The table's cells as pieces, column by column, and each column's widths: one-line and narrowest."""

    def __init__(self, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        n = len(headers)
        self.headers = [header_pieces(h) for h in headers]
        self.rows = [[pieces(r[i] if i < len(r) else None) for i in range(n)] for r in rows]
        cols = [[self.headers[i], *(r[i] for r in self.rows)] for i in range(n)]
        self.natural = [max(cell_len(_one_line(c)) for c in col) for col in cols]
        self.narrowest = [max(_widest_piece(c) for c in col) for col in cols]

    def widths(self, room: int, folded: bool) -> list[int] | None:
        """Each column's width for `room` cells of content, or None when they do not fit. Folded: each column
        starts at its narrowest, or at its whole header; the room left goes to the columns that fold, in
        proportion to what each would need to be one line. Of the two, the one with fewer lines (whole headers
        on a tie)."""
        if not folded:
            return list(self.natural) if sum(self.natural) <= room else None
        if sum(self.narrowest) > room:
            return None
        headed = [max(w, cell_len(_one_line(h))) for w, h in zip(self.narrowest, self.headers, strict=True)]
        starts = [headed, self.narrowest] if sum(headed) <= room else [self.narrowest]
        return min((self._spread(s, room) for s in starts), key=self.height)

    def _spread(self, start: Sequence[int], room: int) -> list[int]:
        widths = list(start)
        want = [max(0, nat - w) for nat, w in zip(self.natural, widths, strict=True)]
        spare, wanted = room - sum(widths), sum(want)
        if wanted <= spare:
            return [max(w, nat) for w, nat in zip(widths, self.natural, strict=True)]
        for i, w in enumerate(want):
            widths[i] += spare * w // wanted
        spare = room - sum(widths)
        for i in sorted(range(len(widths)), key=lambda j: widths[j] - self.natural[j]):
            if spare <= 0:
                break
            if self.natural[i] > widths[i]:
                widths[i] += 1
                spare -= 1
        return widths

    def height(self, widths: Sequence[int]) -> int:
        """How many lines the cells take at these widths (the header's included)."""
        return sum(max(len(fold(c, w)) for c, w in zip(row, widths, strict=True)) for row in [self.headers, *self.rows])


def _table(grid: _Grid, widths: Sequence[int], boxed: bool, title: str | None) -> Table:
    if boxed:
        table = Table(title=None if title is None else Text(views.inert(title)), header_style="bold", box=_BOXED)
    else:
        table = Table(title=None if title is None else Text(views.inert(title)), header_style="bold", box=None,
                      padding=(0, _GAP // 2), pad_edge=False)
    for parts, w in zip(grid.headers, widths, strict=True):
        # no_wrap: the cell's lines are ours; "fold" only as a last guard, never "…"
        table.add_column(Text("\n".join(fold(parts, w))), no_wrap=True, overflow="fold")
    for row in grid.rows:
        table.add_row(*[Text("\n".join(fold(parts, w))) for parts, w in zip(row, widths, strict=True)])
    return table


def _records(grid: _Grid, width: int, title: str | None) -> Group:
    """One block of `KEY: value` lines per row, a blank line between blocks; values aligned after the longest
    key. A value whose widest piece does not fit after the keys starts on the next line, indented by two."""
    keys = ["".join(h) + ":" for h in grid.headers]
    at = max((cell_len(k) for k in keys), default=0) + 1
    out = Text(no_wrap=True, overflow="ignore", end="\n")
    if title is not None:
        out.append("\n".join(fold(pieces(title), width)) + "\n\n", style="bold")
    for n, row in enumerate(grid.rows):
        if n:
            out.append("\n")
        for key, parts in zip(keys, row, strict=True):
            out.append(key, style="bold")
            if at + _widest_piece(parts) <= width:
                lines = fold(parts, width - at)
                out.append(" " * (at - cell_len(key)) + lines[0] + "\n")
                out.append("".join(" " * at + line + "\n" for line in lines[1:]))
            else:
                out.append("\n" + "".join("  " + line + "\n" for line in fold(parts, width - 2)))
    out.rstrip()
    return Group(out)  # not the Text itself: Console.print would join it into a Text that wraps


def fit_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int,
              title: str | None = None) -> RenderableType:
    """The first layout of the module's rule that fits `width` terminal columns: a rich Table, or the records
    (a Group of one Text). A cell is any value: a list or tuple is a list (folds after its commas), None is `-`, a bool
    yes/no, anything else its str(); every cell goes through views.cell (control characters escaped, never
    read as markup). Print it with `crop=False`, so a single word wider than the terminal is not cut."""
    grid = _Grid(headers, rows)
    n = len(headers)
    for boxed, extra in ((True, 3 * n + 1), (False, _GAP * (n - 1))):
        for folded in (False, True):
            widths = grid.widths(width - extra, folded)
            if widths is not None:
                return _table(grid, widths, boxed, title)
    return _records(grid, width, title)


class Fitted:
    """A table fitted by `fit_table` to the width it is rendered at (rich's Live re-renders it on a resize)."""

    def __init__(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
        self.headers, self.rows, self.title = headers, rows, title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield fit_table(self.headers, self.rows, options.max_width, self.title)
