"""Text from outside (labels, errors, server log tails) on its way to the terminal.

Two rules, in one place: every known secret is scrubbed (``redact.scrub_text``), and control
characters (ANSI escapes) are shown escaped, never acted on. Rich markup escaping is the display's
job (``progress``): this module only makes the text safe to print.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from rich.text import Text

from specsweep.store import redact


def plain(v: Any) -> str:
    """``v`` as terminal-safe text: secrets scrubbed, control characters escaped (newlines kept)."""
    text = redact.scrub_text(str(v))
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


def one_line(v: Any) -> str:
    """``plain``, with a newline shown as ``\\n`` too: for a table cell or one line of a list."""
    return plain(v).replace("\n", "\\n")


# bidirectional controls: U+202E shows "exe.txt" as "txt.exe" (a label, a tag, a model id)
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_MD_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")
# what a document (HTML, a log) must not hold raw: control characters but tab, newline and carriage
# return, and bidirectional controls
_DOC_CONTROL = re.compile(f"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f{_BIDI}]")


def visible_controls(text: str) -> str:
    """``text`` with every control character but tab and line breaks, and every bidirectional
    control, shown as its ``\\x1b``/``\\u202e`` escape: never acted on by a terminal or a browser."""
    return _DOC_CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def md_inline(s: str) -> str:
    """``s`` for one line of Markdown (a table cell, a list item): a line break is shown as ``\\n``
    (it would end a table row or start a heading), other control characters as ``\\x07``-style
    escapes (a BEL or ESC would act on the terminal the Markdown is printed to), and ``[`` ``]`` are
    backslash-escaped (``[x](http://evil)`` would be a live link)."""
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    s = _MD_CONTROL.sub(lambda m: repr(m.group())[1:-1], s)
    return s.replace("[", "\\[").replace("]", "\\]")


def md_tree(x: Any) -> Any:
    """Every string in ``x`` (dicts, lists, tuples; keys too) through ``md_inline``."""
    if isinstance(x, str):
        return md_inline(x)
    if isinstance(x, dict):
        return {md_tree(k): md_tree(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [md_tree(v) for v in x]
    return x


def cell(v: Any) -> Text:
    """``v`` for one cell of a rich table: ``one_line``, never read as markup."""
    return Text(one_line(v))


class ScrubFilter(logging.Filter):
    """Log records with every known secret scrubbed and control characters escaped."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = plain(record.getMessage()), None
        return True
