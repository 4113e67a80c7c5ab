"""Strings from outside as Markdown shows them: never as structure, links or terminal control.

Labels, scenario and method names, tags and model ids come from experiment files, servers and
imported results. Before the Markdown renderer sees the view, every string in it goes through
``md_inline`` (``escaped_view``): a line break is shown as ``\\n`` (it would end a table row or start
a heading), other control characters as ``\\x07``-style escapes (a BEL or ESC would act on the
terminal the report is printed to), and ``[`` ``]`` are backslash-escaped (``[x](http://evil)``
would be a live link). ``markdown.inert`` then escapes ``&``, ``<`` and ``>``. The mapping is the
same for every string, so the view's lookups (cells by label) still match.
"""

from __future__ import annotations

import re
from typing import Any

from specsweep.report.view import ReportView

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def md_inline(s: str) -> str:
    """``s`` for one line of Markdown (a table cell, a list item): see the module docstring."""
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    s = _CONTROL.sub(lambda m: repr(m.group())[1:-1], s)
    return s.replace("[", "\\[").replace("]", "\\]")


def _walk(x: Any) -> Any:
    if isinstance(x, str):
        return md_inline(x)
    if isinstance(x, dict):
        return {_walk(k): _walk(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_walk(v) for v in x]
    return x


def escaped_view(view: ReportView) -> ReportView:
    """``view`` with every string passed through ``md_inline``."""
    return ReportView.model_validate(_walk(view.model_dump()))
