"""The core metrics table in the terminal (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from specsweep.report.i18n import label
from specsweep.report.markdown import _config_cell, _value, winner_table  # shared cell formatting
from specsweep.report.view import ReportView

__all__ = ["print_table", "winner_table"]


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
            tbl.add_row(
                s, str(c), _config_cell(view, cell), *(_value(view, cell, k, lang) for k in view.core_columns)
            )
    return tbl


def print_table(view: ReportView, lang: str, console: Console | None = None) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=240)
    console.print(build_table(view, lang))
