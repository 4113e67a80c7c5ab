"""Strings from outside as Markdown shows them: never as structure, links or terminal control.

Labels, scenario and method names, tags and model ids come from experiment files, servers and
imported results. Before the Markdown renderer sees the view, every string in it goes through
``md_inline`` (``escaped_view``): a line break is shown as ``\\n`` (it would end a table row or start
a heading), other control characters as ``\\x07``-style escapes (a BEL or ESC would act on the
terminal the report is printed to), and ``[`` ``]`` are backslash-escaped (``[x](http://evil)``
would be a live link). :func:`specsweep.console.md_inert.inert` then reads the whole Markdown as a renderer
does: ``<`` that could open a tag is ``&lt;`` everywhere, ``&`` is escaped only where it would begin
an entity, ``>`` is never escaped, and inside code spans (shown verbatim) the bracket escapes go. The
mapping is the same for every string, so the view's lookups (cells by label) still match.
"""

from __future__ import annotations

from specsweep.console.terminal import md_inline as md_inline
from specsweep.console.terminal import md_tree
from specsweep.report.build.view import ReportView


def escaped_view(view: ReportView) -> ReportView:
    """``view`` with every string passed through ``md_inline``."""
    return ReportView.model_validate(md_tree(view.model_dump()))
