"""Streaming one large JSON value of a result file (ijson's C parser), keeping only what is used.

:mod:`reader` parses a small document or line whole; one over ``reader.STREAM_AT`` comes here. Its
events build the value as json would, except the per-request detail the importers do not use
(:mod:`detail`): dropped members are never built, folded list items are reduced as each ends. A list
of results (a ``bench sweep`` ``summary.json``) gives each result as soon as it is complete. Memory is
one result without its detail, whatever the file's size.

Python's ``Infinity`` / ``NaN`` literals (sglang writes ``request_rate: Infinity``) are no JSON to
ijson: a value that fails on them is read again through :class:`Literals`, which spells them as
strings the builder turns back into floats (:data:`detail.SENTINELS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import ijson

from specsweep.importers import detail

CHUNK = 1 << 20
_ENDS = frozenset({"end_map", "end_array"})
_STARTS = frozenset({"start_map", "start_array"})
# a string (closed, or running to the end of the text), or a literal strict JSON has not
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:(")|\\?\Z)|-?Infinity|NaN', re.DOTALL)
_SPELLED = {b"Infinity": b'"\\u0000specsweep:Infinity"', b"-Infinity": b'"\\u0000specsweep:-Infinity"',
            b"NaN": b'"\\u0000specsweep:NaN"'}  # fmt: skip


class Source:
    """The bytes of one value from ``fh`` at its position: to the end of the file, or (``line``) to
    the end of the line, leaving ``fh`` at the start of the next line. A UTF-8 BOM is skipped."""

    def __init__(self, fh: BinaryIO, line: bool) -> None:
        self.fh, self.line, self.done, self.first = fh, line, False, True

    def read(self, n: int = CHUNK) -> bytes:
        if self.done or n == 0:  # ijson reads 0 bytes to learn the type
            return b""
        data = self.fh.read(n if n > 0 else CHUNK)
        if self.first:
            self.first = False
            data = data.removeprefix(b"\xef\xbb\xbf")
        if not data:
            self.done = True
        elif self.line:
            i = data.find(b"\n")
            if i >= 0:
                self.fh.seek(i + 1 - len(data), 1)
                data, self.done = data[: i + 1], True
        return data


class Literals:
    """``Infinity``, ``-Infinity`` and ``NaN`` outside strings spelled as sentinel strings."""

    def __init__(self, src: Source) -> None:
        self.src, self.pending, self.eof = src, b"", False

    def read(self, n: int = CHUNK) -> bytes:
        while not self.eof and n != 0:
            piece = self.src.read(n)
            self.eof = not piece
            text, pos, last = self.pending + piece, 0, 0
            out: list[bytes] = []
            cut = len(text)
            for m in _TOKEN.finditer(text):
                last = m.end()
                if m.group()[:1] == b'"':
                    if m.group(1) is None and not self.eof:
                        cut = m.start()  # a string not closed yet: it goes with the next piece
                        break
                    continue
                out += (text[pos : m.start()], _SPELLED[m.group()])
                pos = last
            if not self.eof and cut == len(text):
                cut = max(last, len(text) - 9)  # a literal cut short waits for its end (no quote here)
            out.append(text[pos:cut])
            self.pending = text[cut:]
            data = b"".join(out)
            if data or self.eof:
                return data
        return b""


def values(src: Source | Literals, top_list: bool, skip: int = 0) -> Iterator[tuple[Any, int | None]]:
    """(value, item number) of the value ``src`` holds: itself (item None), or each item of a list
    (1-based) when ``top_list`` and it is one; the first ``skip`` items are read but not given."""
    drop, fold = detail.rules(top_list)
    events = ijson.parse(src, use_float=True, buf_size=CHUNK)
    stack: list[Any] = []
    keys: list[Any] = []
    item = 0
    sentinels = detail.SENTINELS
    for prefix, event, value in events:
        if event == "map_key":
            keys[-1] = value
            continue
        if event in _STARTS:
            if prefix in drop and stack and type(stack[-1]) is dict:
                _skip(events)
                continue
            stack.append({} if event == "start_map" else [])
            keys.append(None)
            continue
        if event in _ENDS:
            value = stack.pop()
            keys.pop()
        elif event == "string" and value[:1] == "\x00" and value in sentinels:
            value = sentinels[value]
        if not stack:
            if not (top_list and event == "end_array"):  # else a list of results: its items were given
                yield value, None
            for _rest in events:  # the text after the value: ijson fails on any but whitespace
                pass
            return
        parent = stack[-1]
        if type(parent) is list:
            fn: Callable[[Any], Any] | None = fold.get(prefix)
            if fn is not None:
                value = fn(value)
            if top_list and len(stack) == 1:
                item += 1
                if item > skip:
                    yield value, item
                continue
            parent.append(value)
        elif prefix not in drop:
            parent[keys[-1]] = value


def _skip(events: Iterator[tuple[str, str, Any]]) -> None:
    depth = 1
    for _prefix, event, _value in events:
        if event in _STARTS:
            depth += 1
        elif event in _ENDS:
            depth -= 1
            if not depth:
                return


def message(e: Exception) -> str:
    """The first line of ijson's error ("parse error: premature EOF")."""
    text = str(e)
    if text.startswith(("b'", 'b"')):
        text = text[2:]
    return text.split("\\n")[0].split("\n")[0].strip()


def cut_short(e: Exception) -> bool:
    """Whether ijson stopped because the text ended before the value did."""
    return "premature EOF" in str(e) or "Incomplete or empty" in str(e)


Error = ijson.JSONError
