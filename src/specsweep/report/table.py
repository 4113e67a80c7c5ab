"""The core metrics table in the terminal (rich), fitted to the terminal's width without cutting a
value (:mod:`specsweep.console.table`), then every invalid run and failed request with its reason."""

from __future__ import annotations

import io
import os

from rich.console import Console, Group, RenderableType
from rich.text import Text

from specsweep.console.table import fit
from specsweep.console.terminal import one_line
from specsweep.report.build.view import ReportView, level_text
from specsweep.report.display import value_text
from specsweep.report.i18n import label, text
from specsweep.report.markdown import winner_table

__all__ = ["print_table", "table_text", "winner_table"]

PROBLEMS = ("invalid_run", "error_burst")  # the anomalies that are runs gone wrong


def build_table(view: ReportView, lang: str, width: int) -> RenderableType:
    headers = [label("col.scenario", lang), label("col.concurrency", lang), label(view.config_column, lang)]
    headers += [label(f"metric.{k}", lang) for k in view.core_columns]
    rows = []
    for s, c in view.points():
        for cfg in view.configs:
            cell = view.cell(s, c, cfg.label)
            if cell is None:
                continue
            rows.append(  # labels and scenario names come from outside: shown, never acted on (ESC)
                [
                    one_line(s),
                    level_text(c),
                    one_line(view.config_name(cell)),
                    *(value_text(view, cell, k, lang) for k in view.core_columns),
                ]
            )
    parts: list[RenderableType] = [fit(headers, rows, width, keys=3, right=range(1, len(headers)))]
    problems = [a for a in view.anomalies if a.kind in PROBLEMS]
    if problems:
        lines = [label("sec.problems", lang)]
        lines += [one_line(f"- {a.scenario} c={level_text(a.concurrency)} ({label('anomaly.' + a.kind, lang)}): "
                           f"{text(a.evidence, lang)}") for a in problems]  # fmt: skip
        parts.append(Text("\n".join(lines)))
    return Group(*parts)


def print_table(view: ReportView, lang: str, console: Console | None = None) -> None:
    if console is None:
        console = Console()  # a terminal's width, or COLUMNS
        if not console.is_terminal and "COLUMNS" not in os.environ:
            console = Console(width=240)  # a pipe or file: wide, so it rarely needs to stack
    console.print(build_table(view, lang, console.width))


def table_text(view: ReportView, lang: str, width: int = 240) -> str:
    """The table as plain text (no colour codes) for ``--format table -o FILE``.

    Rendered into a string buffer: ``Console.capture()`` swallows what ``record=True`` would export,
    which left the file empty (issue 19 item 1). The table keeps its natural width up to ``width``.
    """
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False, legacy_windows=False)
    console.print(build_table(view, lang, width))
    return buf.getvalue()
