"""Text from outside (labels, errors, server log tails) on its way to the terminal.

Two rules, in one place: every known secret is scrubbed (``redact.scrub_text``), and control
characters (ANSI escapes) are shown escaped, never acted on. Rich markup escaping is the display's
job (``progress``): this module only makes the text safe to print.
"""

from __future__ import annotations

import logging
from typing import Any

from rich.text import Text

from specsweep import redact


def plain(v: Any) -> str:
    """``v`` as terminal-safe text: secrets scrubbed, control characters escaped (newlines kept)."""
    text = redact.scrub_text(str(v))
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


def one_line(v: Any) -> str:
    """``plain``, with a newline shown as ``\\n`` too: for a table cell or one line of a list."""
    return plain(v).replace("\n", "\\n")


def cell(v: Any) -> Text:
    """``v`` for one cell of a rich table: ``one_line``, never read as markup."""
    return Text(one_line(v))


class ScrubFilter(logging.Filter):
    """Log records with every known secret scrubbed and control characters escaped."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = plain(record.getMessage()), None
        return True
