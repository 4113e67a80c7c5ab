"""Tables for the terminal that fit its width and never cut a value.

Rich shrinks a table that is wider than the console by cutting cells ("17,…"), which turns numbers
into other numbers. Here a cell is never wrapped or cut: each column is as wide as its widest value;
headers wrap at spaces; when the columns still do not fit, they are stacked - the value columns are
split into several tables that fit, each repeating the key columns (scenario, concurrency, config)
so every row stays readable; when even one value column does not fit beside the keys, each row is
printed as a block of "header: value" lines.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

BOX = box.SQUARE  # one character per border: a table's width is its columns + 3 per column + 1


def _header(text: str, width: int) -> str:
    """``text`` wrapped at spaces to ``width`` (a word longer than that keeps its own line)."""
    return "\n".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)) or text


def _widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Per column: the widest value, at least the header's longest word."""
    out = []
    for i, h in enumerate(headers):
        cells = max((len(r[i]) for r in rows), default=0)
        words = max((len(w) for w in h.split()), default=0)
        out.append(max(cells, words, 1))
    return out


def _width(ws: Sequence[int]) -> int:
    return sum(w + 3 for w in ws) + 1  # each column: its width, one space each side, one border


def _table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    cols: Sequence[int],
    ws: Sequence[int],
    right: set[int],
) -> Table:
    t = Table(box=BOX, expand=False, show_edge=True, pad_edge=True)
    for i in cols:
        t.add_column(
            _header(headers[i], ws[i]),
            justify="right" if i in right else "left",
            no_wrap=True,
            width=ws[i],
            overflow="fold",  # never reached: the column is as wide as its widest value
        )
    for r in rows:
        t.add_row(*(Text(r[i]) for i in cols))
    return t


def _blocks(headers: Sequence[str], rows: Sequence[Sequence[str]], keys: int, width: int) -> Text:
    """Each row as "key key" then one "header: value" line per value; a long line wraps after a
    separator, never inside a value."""
    lines: list[str] = []
    for r in rows:
        lines.append(" ".join(r[:keys]))
        for h, v in zip(headers[keys:], r[keys:], strict=True):
            lines.extend(textwrap.wrap(f"{h}: {v}", max(width, 1), subsequent_indent="    ",
                                       break_long_words=False, break_on_hyphens=False) or [""])  # fmt: skip
        lines.append("")
    return Text("\n".join(lines).rstrip("\n"))


def fit(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    keys: int = 1,
    right: Sequence[int] = (),
) -> RenderableType:
    """The rows as one table, several stacked tables or row blocks, whichever first fits ``width``
    (see the module docstring). ``keys``: how many leading columns identify a row; ``right``: the
    columns to right-align (numbers)."""
    right_set = set(right)
    ws = _widths(headers, rows)
    n = len(headers)
    if _width(ws) <= width:
        return _table(headers, rows, range(n), ws, right_set)
    key_cols = list(range(min(keys, n)))
    base = _width([ws[i] for i in key_cols])
    if base + max((ws[i] + 3 for i in range(len(key_cols), n)), default=0) > width:
        return _blocks(headers, rows, len(key_cols), width)
    groups: list[list[int]] = [[]]
    used = base
    for i in range(len(key_cols), n):
        if groups[-1] and used + ws[i] + 3 > width:
            groups.append([])
            used = base
        groups[-1].append(i)
        used += ws[i] + 3
    return Group(*(_table(headers, rows, key_cols + g, ws, right_set) for g in groups))
