"""The last pass over Markdown that holds strings from outside (labels, scenario names, model ids):
nothing in it becomes live HTML, and what a reader sees is the text itself, without escapes that show.

Strings from outside reach the Markdown through ``terminal.md_inline`` first (line breaks and control
characters shown escaped, ``[`` ``]`` backslash-escaped so no link forms). :func:`inert` then reads
each line as a CommonMark renderer does - table rows cell by cell (GFM splits cells before anything
else), backslash escapes, code spans matched by backtick runs of equal length - and:

- outside code spans: ``<`` before anything but a space (what could open a tag, a comment or an
  autolink) becomes ``&lt;``, after a backslash too (not every renderer reads ``\\<`` as CommonMark
  does); ``&`` that begins an entity reference (``&lt;``, ``&#60;``) becomes
  ``&amp;``, so it shows as written; ``>`` stays (it opens nothing; ``&gt;`` would show as such in a
  terminal);
- inside code spans, which a renderer shows verbatim: ``<`` before anything but a space still becomes
  ``&lt;`` (a renderer that disagrees about where a span ends can never meet a live tag), and the
  backslashes ``md_inline`` put before ``[`` ``]`` go (a link never forms inside a code span, and the
  backslash would show);
- a backtick run no run of its length closes on the line is backslash-escaped, so no code span can
  open on one line and close on another (where a line-by-line reading would disagree with the
  renderer's).

A line's leading ``>`` (a quote) is the renderer's own and stays.
"""

from __future__ import annotations

import re

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);")
_CELL = re.compile(r"(?:\\.|[^|\\]|\\$)+|\|")  # GFM: a table row splits at pipes no backslash escapes
_MD_ESCAPED_BRACKET = re.compile(r"\\([\[\]])")


def _lt(text: str, i: int) -> str:
    nxt = text[i + 1] if i + 1 < len(text) else ""
    return "<" if nxt == "" or nxt.isspace() else "&lt;"


def _run(text: str, i: int) -> int:
    j = i
    while j < len(text) and text[j] == "`":
        j += 1
    return j


def _closing(text: str, start: int, n: int) -> int:
    """Index of the first backtick run of exactly ``n`` at or after ``start``; -1 if none."""
    j = start
    while j < len(text):
        if text[j] == "`":
            k = _run(text, j)
            if k - j == n:
                return j
            j = k
        else:
            j += 1
    return -1


def _code(content: str) -> str:
    content = _MD_ESCAPED_BRACKET.sub(r"\1", content)
    return "".join(_lt(content, i) if ch == "<" else ch for i, ch in enumerate(content))


def inert_inline(text: str) -> str:
    """One inline segment (a paragraph line, a list item, a table cell) made inert (module docstring)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == "<":
            # "\<" is a literal "<" to CommonMark but not to every renderer (Python-Markdown escapes no
            # "<"): an escaped backslash and the "<" made inert, shown as written
            out.append("\\\\" + _lt(text, i + 1))
            i += 2
        elif ch == "\\" and i + 1 < len(text) and text[i + 1] in _PUNCT:
            out.append(text[i : i + 2])
            i += 2
        elif ch == "`":
            j = _run(text, i)
            n = j - i
            close = _closing(text, j, n)
            if close < 0:
                out.append("\\`" * n)
                i = j
            else:
                out.append("`" * n + _code(text[j:close]) + "`" * n)
                i = close + n
        elif ch == "<":
            out.append(_lt(text, i))
            i += 1
        elif ch == "&":
            out.append("&amp;" if _ENTITY.match(text, i) else "&")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def inert(md: str) -> str:
    """``md`` with every line made inert (module docstring); fenced code blocks are left as they are."""
    lines = []
    fenced = False
    for line in md.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            lines.append(line)
            continue
        if fenced:
            lines.append(line)
            continue
        quote = ""
        while line.startswith(">"):
            quote, line = quote + ">", line[1:]
        if line.startswith("|"):
            body = "".join(p if p == "|" else inert_inline(p) for p in _CELL.findall(line))
        else:
            body = inert_inline(line)
        lines.append(quote + body)
    return "\n".join(lines)
