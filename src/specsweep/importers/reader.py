"""Reading result files as a stream of JSON objects, each with the place it came from.

Two shapes, told apart by the first non-empty line:

* JSON lines (``sglang.bench_serving --output-file``, ``vllm bench serve --append-result``): the
  first line is a complete JSON value. Lines are read one at a time, so a file of a million lines
  needs the memory of one line, not of the file.
* One JSON document (``vllm bench serve --save-result``, indented or not; a ``bench sweep``
  ``summary.json`` list): the first line is not complete on its own. The document is parsed whole;
  a list's items are located by their real line, so errors say "item 3 (line 120)".

A document or line over :data:`STREAM_AT` (per-request detail: vLLM's ``--save-detailed``, sglang's
``--output-details``, GuideLLM's request records) is streamed instead (:mod:`stream`): memory is one
result without the detail the importers do not use, whatever the file's size. Either way every
result comes without that detail (:mod:`detail`), so it has one content hash however it was read.

Errors name the real place: a truncated document or line is :data:`TRUNCATED` at its last line, not "syntax error on line 1"; nesting too deep for the parser is one clear error, not a
RecursionError. Python's ``Infinity``/``NaN`` literals are accepted (sglang writes them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from specsweep.errors import DataError
from specsweep.importers import detail, stream
from specsweep.store.inputs import open_regular

_DECODER = json.JSONDecoder()
STREAM_AT = 8 * 2**20  # a document or line larger than this is streamed, not parsed whole
TRUNCATED = "the JSON ends before it is complete (truncated?)"  # one message in every importer
_WS = " \t\r\n"


@dataclass
class Located:
    """One JSON object of a file: its 1-based line and, for items of a list, the 1-based index."""

    obj: Any
    line: int
    item: int | None = None

    def where(self, path: Path) -> str:
        return f"{path} item {self.item}" if self.item is not None else str(path)


def _loads(data: str | bytes, path: Path, line: int) -> Any:
    if isinstance(data, bytes) and b"Infinity" not in data and b"NaN" not in data:
        try:  # orjson: several times faster; strict JSON only, so Python's literals go to json
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # json below says what is wrong, in its words (or reads what orjson refuses)
    try:
        return json.loads(data)
    except RecursionError:
        raise _deep(path, line) from None


def _deep(path: Path, line: int) -> DataError:
    return DataError(
        "JSON nested too deeply to read: not a benchmark result "
        "(result files are flat objects with per-request lists)",
        file=str(path),
        line=line,
    )


def read_objects(path: Path) -> Iterator[Located]:
    """Every JSON value of the file, in order (lists of a whole-document file as their items), each
    without the per-request detail the importers do not use (:mod:`detail`)."""
    try:
        fh = open_regular(path)  # a FIFO or /dev/zero: refused at once, never read forever
    except OSError as e:
        raise DataError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    with fh:
        lineno = 0
        first: bytes | None = None
        while raw := fh.readline(STREAM_AT + 1):
            lineno += 1
            if len(raw) > STREAM_AT:  # a line too long to hold whole: streamed
                fh.seek(-len(raw), 1)
                start = fh.tell()
                try:
                    yield from _streamed(fh, path, lineno, one_line=True)
                except _CutShort:
                    if first is not None:
                        raise DataError(TRUNCATED, file=str(path), line=lineno) from None
                    fh.seek(start)  # the first line of a multi-line document
                    yield from _streamed(fh, path, lineno, one_line=False)
                    return
                first = first or b"{}"
                continue
            if not raw.strip():
                continue
            if first is None:
                first = raw
                try:
                    value = _loads(first, path, lineno)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    value = _NOT_JSON
                if value is _NOT_JSON:  # a multi-line document: parse it whole, or stream a large one
                    fh.seek(0)
                    if os.fstat(fh.fileno()).st_size > STREAM_AT:
                        yield from _streamed(fh, path, lineno, one_line=False)
                    else:
                        yield from _document(fh.read(), path)
                    return
                yield from _values(value, lineno)
                continue
            try:
                value = _loads(raw, path, lineno)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:  # bytes: json guesses UTF-8/16/32
                if isinstance(e, json.JSONDecodeError) and _cut(e, len(raw.rstrip())):
                    raise DataError(f"{TRUNCATED}: {e.msg}", file=str(path), line=lineno) from e
                raise DataError(f"not valid JSON ({e})", file=str(path), line=lineno) from e
            yield from _values(value, lineno)


class _CutShort(Exception):
    """A streamed line ended before its value did."""


def _streamed(fh: BinaryIO, path: Path, lineno: int, *, one_line: bool) -> Iterator[Located]:
    """The value at ``fh``'s position (to the end of its line, or of the file), streamed without the
    detail the importers do not use (:mod:`stream`); a list's items one by one. Errors name the line
    of a line, the item of a list (the parser does not count a document's lines)."""
    start = fh.tell()
    top_list = _starts_list(fh)
    given = 0
    for literals in (False, True):  # Infinity / NaN: read again with them spelled as strings
        fh.seek(start)
        src = stream.Source(fh, one_line)
        try:
            for value, item in stream.values(stream.Literals(src) if literals else src, top_list, given):
                given = item or given
                yield Located(value, lineno, item)
            return
        except stream.Error as e:
            where = f"{path} item {given + 1}" if top_list else str(path)
            line = lineno if one_line else None
            if stream.cut_short(e):
                if one_line and not given:
                    raise _CutShort from None
                raise DataError(TRUNCATED, file=where, line=line) from None
            msg = stream.message(e)
            if not literals and msg.startswith("lexical error"):
                continue
            if "trailing garbage" in msg and not one_line:
                raise DataError(
                    "more text after the JSON document (expected one JSON object, or one object per line)",
                    file=str(path),
                ) from None
            raise DataError(f"not valid JSON: {msg}", file=where, line=line) from None


def _starts_list(fh: BinaryIO) -> bool:
    """Whether the value at ``fh``'s position is a list (its first byte past whitespace is ``[``)."""
    start = fh.tell()
    head = b""
    while not head and (piece := fh.read(1 << 16)):
        head = piece.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    fh.seek(start)
    return head[:1] == b"["


_NOT_JSON = object()


def _values(value: Any, line: int) -> Iterator[Located]:
    if isinstance(value, list):
        for i, v in enumerate(value, 1):
            yield Located(detail.prune(v), line, i)
    else:
        yield Located(detail.prune(value), line)


def _document(data: bytes, path: Path) -> Iterator[Located]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise DataError(f"not valid UTF-8 text (byte {data[e.start]:#04x})", file=str(path), line=line) from e
    start = len(text) - len(text.lstrip(_WS))
    if text.startswith("[", start):
        yield from _list_items(text, start + 1, path)
        return
    try:
        obj, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as e:
        raise _syntax(e, text, path) from e
    except RecursionError:
        raise _deep(path, text.count("\n", 0, start) + 1) from None
    rest = text[end:].strip(_WS)
    if rest:
        line = text.count("\n", 0, end + text[end:].index(rest[0])) + 1
        raise DataError(
            "more text after the JSON document (expected one JSON object, or one object per line)",
            file=str(path),
            line=line,
        )
    yield Located(detail.prune(obj), text.count("\n", 0, start) + 1)


def _list_items(text: str, pos: int, path: Path) -> Iterator[Located]:
    """Items of a top-level JSON list, each with its own line (the list itself is not kept)."""
    n = len(text)
    item = 0
    while True:
        while pos < n and text[pos] in _WS:
            pos += 1
        if pos < n and text[pos] == "]" and item == 0:
            return
        item += 1
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise _syntax(e, text, Path(f"{path} item {item}")) from e
        except RecursionError:
            raise _deep(Path(f"{path} item {item}"), line) from None
        yield Located(detail.prune(obj), line, item)
        while pos < n and text[pos] in _WS:
            pos += 1
        if pos < n and text[pos] == ",":
            pos += 1
            continue
        if pos < n and text[pos] == "]":
            return
        line = text.count("\n", 0, pos) + 1
        what = f"{TRUNCATED}: the list is not closed" if pos >= n else "expected ',' or ']'"
        raise DataError(f"{what} after item {item}", file=str(path), line=line)


def _cut(e: json.JSONDecodeError, end: int) -> bool:
    """Whether the JSON stops short: the error is at its end, or a string never closes before it."""
    return e.pos >= end or e.msg.startswith("Unterminated string")


def _syntax(e: json.JSONDecodeError, text: str, path: Path) -> DataError:
    if _cut(e, len(text.rstrip(_WS))):
        return DataError(f"{TRUNCATED}: {e.msg}", file=str(path), line=e.lineno)
    return DataError(f"not valid JSON: {e.msg} (column {e.colno})", file=str(path), line=e.lineno)
