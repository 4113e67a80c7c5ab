"""The view model's display decisions in words, shared by the Markdown, HTML and terminal renderers.

What to show is decided by :class:`~specsweep.report.view.ReportView` (``short``, ``config_name``,
``winner_name``, :func:`~specsweep.report.view.band_range`); this module only puts a decision in a
language, so no two renderers can word one cell differently.
"""

from __future__ import annotations

from specsweep.report.i18n import fmt_num, label, text
from specsweep.report.view import CellView, ReportView, WinnerRow

__all__ = ["value_text", "winner_text"]


def value_text(view: ReportView, cell: CellView, key: str, lang: str) -> str:
    """A cell's value of metric ``key`` at the metric's decimals, or the cell's status when not ok."""
    if cell.status != "ok":
        return label(f"value.{cell.status}", lang)
    v = cell.values.get(key)
    dec = next((m.decimals for m in view.metrics if m.key == key), 2)
    return fmt_num(v, dec, lang)


def winner_text(view: ReportView, row: WinnerRow, lang: str) -> str:
    """The winner column of ``row``: the winner, "tie" (naming the two even leaders when more than
    two configs compete), "-" when there is no verdict, or why no winner is named (``row.note``)."""
    if row.note is not None:
        return text(row.note, lang)
    who = view.winner_name(row)
    if who.kind == "none":
        return label("value.none", lang)
    if who.kind == "tie":
        tie = label("verdict.tie", lang)
        return f"{tie} ({', '.join(who.names)})" if who.names else tie
    return who.names[0]
