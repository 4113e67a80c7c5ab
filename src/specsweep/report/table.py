"""The core metrics table in the terminal (rich)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from specsweep.report.display import value_text
from specsweep.report.i18n import label
from specsweep.report.markdown import winner_table
from specsweep.report.view import ReportView
from specsweep.terminal import cell as text_cell

__all__ = ["print_table", "table_text", "winner_table"]


def build_table(view: ReportView, lang: str) -> Table:
    tbl = Table(title=None, show_lines=False)
    tbl.add_column(label("col.scenario", lang))
    tbl.add_column(label("col.concurrency", lang), justify="right")
    tbl.add_column(label(view.config_column, lang), justify="right")
    for k in view.core_columns:
        tbl.add_column(label(f"metric.{k}", lang), justify="right")
    for s, c in view.points():
        for cfg in view.configs:
            cell = view.cell(s, c, cfg.label)
            if cell is None:
                continue
            tbl.add_row(  # labels and scenario names come from outside: text, never markup or ESC
                text_cell(s),
                str(c),
                text_cell(view.config_name(cell)),
                *(value_text(view, cell, k, lang) for k in view.core_columns),
            )
    return tbl


def print_table(view: ReportView, lang: str, console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=240)
    console.print(build_table(view, lang))


def table_text(view: ReportView, lang: str, width: int = 240) -> str:
    """The table as plain text (no colour codes) for ``--format table -o FILE``.

    Rendered into a string buffer: ``Console.capture()`` swallows what ``record=True`` would export,
    which left the file empty (issue 19 item 1). The table keeps its natural width up to ``width``.
    """
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False, legacy_windows=False)
    console.print(build_table(view, lang))
    return buf.getvalue()
