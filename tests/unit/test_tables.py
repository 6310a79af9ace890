"""The table rule (kadmin/render/tables.py): the first layout that fits, never a value cut or elided."""

from __future__ import annotations

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from kadmin.render.tables import Fitted, fit_table, fold, pieces
from kadmin.render.views import inert


def shown(renderable: object, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width).print(renderable, crop=False)
    return out.getvalue()


def words(text: str) -> set[str]:
    raw = {w for w in re.split(r"[\s│┃]+", text) if w}
    found = raw | {w.rstrip(",") for w in raw} | {w[:-1] for w in raw if w.endswith(":")}  # a key's colon
    return found | {x for w in found for x in w.split(",")}


TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-:/", min_size=1, max_size=15)
VALUE = st.one_of(TOKEN, st.integers(0, 10**6), st.lists(TOKEN, min_size=1, max_size=8),
                  st.lists(TOKEN, min_size=1, max_size=4).map(" ".join))
HEADER = st.text(alphabet="ABCDEFGHIJ_", min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(HEADER, min_size=1, max_size=8).flatmap(
    lambda hs: st.tuples(st.just(hs), st.lists(st.lists(VALUE, min_size=len(hs), max_size=len(hs)), max_size=4))),
    st.integers(40, 200))
def test_every_element_and_word_is_shown_whole_and_no_line_is_wider(table, width):
    headers, rows = table
    text = shown(fit_table(headers, rows, width), width)
    assert "…" not in text
    assert [ln for ln in text.splitlines() if cell_len(ln) > width] == []
    seen = words(text)
    for row in rows:
        for v in row:
            for x in v if isinstance(v, list) else str(v).split(" "):
                assert str(x) in seen, (x, text)


BROKERS = ["ID", "HOST", "ENDPOINTS"]
ROWS = [[1, "broker-1.example.internal", ["PLAINTEXT://broker-1.example.internal:9092",
                                          "SASL_SSL://broker-1.example.internal:9093"]],
        [2, "broker-2.example.internal", ["PLAINTEXT://broker-2.example.internal:9092"]]]


def test_the_boxed_table_one_line_a_row_when_it_fits():
    lines = shown(fit_table(BROKERS, ROWS, 200), 200).splitlines()
    assert lines[1].startswith("┃ ID ┃ HOST")
    assert [ln for ln in lines if ln.startswith("│")] == [
        "│ 1  │ broker-1.example.internal │ PLAINTEXT://broker-1.example.internal:9092,"
        "SASL_SSL://broker-1.example.internal:9093 │",
        "│ 2  │ broker-2.example.internal │ PLAINTEXT://broker-2.example.internal:9092"
        "                                           │"]


def test_a_list_folds_after_its_commas_before_the_box_goes():
    lines = shown(fit_table(BROKERS, ROWS, 90), 90).splitlines()
    assert [ln for ln in lines if ln.startswith("│")] == [
        "│ 1  │ broker-1.example.internal │ PLAINTEXT://broker-1.example.internal:9092, │",
        "│    │                           │ SASL_SSL://broker-1.example.internal:9093   │",
        "│ 2  │ broker-2.example.internal │ PLAINTEXT://broker-2.example.internal:9092  │"]


def test_without_the_box_then_one_block_per_row():
    assert shown(fit_table(BROKERS, ROWS, 75), 75).splitlines() == [
        "ID  HOST                       ENDPOINTS                                  ",
        "1   broker-1.example.internal  PLAINTEXT://broker-1.example.internal:9092,",
        "                               SASL_SSL://broker-1.example.internal:9093  ",
        "2   broker-2.example.internal  PLAINTEXT://broker-2.example.internal:9092 "]
    assert shown(fit_table(BROKERS, ROWS, 60, title="brokers"), 60).splitlines() == [
        "brokers",
        "",
        "ID:        1",
        "HOST:      broker-1.example.internal",
        "ENDPOINTS: PLAINTEXT://broker-1.example.internal:9092,",
        "           SASL_SSL://broker-1.example.internal:9093",
        "",
        "ID:        2",
        "HOST:      broker-2.example.internal",
        "ENDPOINTS: PLAINTEXT://broker-2.example.internal:9092"]


def test_a_word_longer_than_the_terminal_is_printed_whole_on_its_own_line():
    long = "x" * 50
    assert shown(fit_table(["ID", "HOST"], [[1, long]], 30), 30).splitlines() == ["ID:   1", "HOST:", "  " + long]


def test_cells_are_never_markup_and_control_characters_are_escaped():
    text = shown(fit_table(["HOST"], [["[/bold][red]x\x1b[2J"]], 80), 80)
    assert "[/bold][red]x\\x1b[2J" in text and "\x1b" not in text


def test_pieces_keep_the_cells_one_line_text_and_fold_only_between_them():
    assert pieces([1, 22, 333]) == ["1,", "22,", "333"]
    assert pieces({"a": 1, "b": [2, 3]}) == ["a=1,", "b=2,3"]
    assert pieces("wait for 3") == ["wait ", "for ", "3"] and pieces(None) == ["-"] and pieces([]) == ["-"]
    assert fold(pieces([70001, 70002, 70003]), 12) == ["70001,70002,", "70003"]
    assert fold(pieces("wait for broker 3"), 9) == ["wait for", "broker 3"]


def test_fitted_follows_the_width_it_is_rendered_at():
    f = Fitted(BROKERS, ROWS)
    assert shown(f, 200) == shown(fit_table(BROKERS, ROWS, 200), 200)
    assert shown(f, 60) == shown(fit_table(BROKERS, ROWS, 60), 60)


# What must never reach a terminal as it is: C0 and C1 controls, DEL, line and paragraph separators, bidirectional
# overrides and isolates. Text of them and of what may pass (ASCII, accents, CJK, the other invisibles).
NEVER_RAW = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F),
                              *range(0x2066, 0x206A)]))


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from([*NEVER_RAW, "a", "Z", " ", "é", "漢", "\u00ad", "\u200b", "\ufeff", "\\"]),
               max_size=12),
       st.sampled_from(["", "\n\t", "\n"]))
def test_inert_escapes_exactly_the_characters_never_sent_raw_but_those_kept(text: str, keep: str) -> None:
    want = "".join(c if c not in NEVER_RAW or c in keep else
                   {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(c) or
                   (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") for c in text)
    assert inert(text, keep) == want
