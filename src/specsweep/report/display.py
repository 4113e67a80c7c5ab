"""The view model's display decisions in words, shared by the Markdown, HTML and terminal renderers.

What to show is decided by :class:`~specsweep.report.build.view.ReportView` (``short``, ``config_name``,
``winner_name``, :func:`~specsweep.report.build.view.band_range`); this module only puts a decision in a
language, so no two renderers can word one cell differently.
"""

from __future__ import annotations

from collections.abc import Sequence

from specsweep.report.build.view import (
    CellView,
    ClassBest,
    EngineFlags,
    Msg,
    Recommendation,
    ReportView,
    SetAside,
    WinnerRow,
    cells_text,
    level_text,
)
from specsweep.report.i18n import fmt_num, label, text

__all__ = [
    "advice_text", "aside_text", "basis_text", "counted", "deployed_flags", "recommended_text", "sentences", "value_text", "winner_text",
]  # fmt: skip


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


def aside_text(items: Sequence[SetAside], counted: int, lang: str) -> str | None:
    """ "2 of 5 cells set aside: chat_short c=16 (outlier vs. trend), rag_medium c=1 (DSpark(st=3)
    invalid)." - the cells a group's counts leave out and why; None when none is."""
    if not items:
        return None
    cells = []
    for a in items:
        if a.reason in ("trend_outlier", "prefix_cache"):
            why = label(f"anomaly.{a.reason}", lang)
        else:
            why = " ".join([*a.configs, label(f"value.{a.reason}", lang)])
        cells.append(f"{a.scenario} c={level_text(a.concurrency)} ({why})")
    sep = "，" if lang == "zh" else ", "
    return text(
        Msg(
            key="aside.cells", args={"k": len(items), "total": counted + len(items), "cells": sep.join(cells)}
        ),
        lang,
    )


def sentences(main: Msg, extra: Sequence[Msg], aside: Sequence[SetAside], counted: int, lang: str) -> str:
    """A group's main sentence, then what it adds (who trails, why the ties, the cells set aside);
    the main one as it is when it stands alone."""
    first = text(main, lang)
    more = [text(m, lang) for m in extra]
    if (a := aside_text(aside, counted, lang)) is not None:
        more.append(a)
    if not more:
        return first
    stop = "。" if lang == "zh" else "."
    parts = [p if p.endswith((".", "。")) else p + stop for p in [first, *more]]
    return ("" if lang == "zh" else " ").join(parts)


def counted(main: Msg) -> int:
    """The cells a group's main sentence counts (its ``n``)."""
    n = main.args.get("n")
    return n if isinstance(n, int) else 0


def recommended_text(view: ReportView, r: Recommendation | ClassBest, lang: str) -> str:
    """The full configs a recommendation (or a workload class's best) names - method + parameters;
    compare: the method's configs, with the cells each is the one for when they differ - or the even
    configs for "either"; Markdown marks (bold, code), which the HTML report turns into tags."""
    if r.config is None:
        alts = r.alternatives if isinstance(r, Recommendation) else []
        return " / ".join(f"`{a}`" for a in alts) + (" " if alts else "") + label("value.any", lang)
    if not r.picks:
        return f"**{r.config}**"
    parts = []
    for p in r.picks:
        where = cells_text(p.cells, view.scenarios)
        notes = [where] if len(r.picks) > 1 and not p.band_pick else []
        others = ", ".join(f"`{x}`" for x in p.even_with)
        if p.band_pick:  # the band's config, covering these cells by a tie
            notes.append(label("pick.band_tie", lang, cells=where))
        if p.even_with:
            key = "pick.even_with" if p.state == "even" else "pick.undecided_with"
            notes.append(label(key, lang, configs=others))
        if p.even_with and not p.band_pick:  # a set inside the method: no one config is named
            who = " / ".join(f"**{x}**" for x in [p.config, *p.even_with])
            parts.append(f"{who} ({'; '.join([*notes[:-1], label(f'advice.{p.state}', lang)])})")
            continue
        parts.append(f"**{p.config}**" + (f" ({'; '.join(notes)})" if notes else ""))
    return "; ".join(parts)


def basis_text(r: Recommendation, lang: str) -> str:
    """What a recommendation rests on, as its verdicts were decided: runs a side, measured or assumed
    noise and the deciding look; the verdict basis's label when no cell advice was read."""
    b = r.decided_on
    if b is None:
        from specsweep.report.build.verdict_notes import rests_on

        return label(rests_on(r.basis), lang)
    runs = str(b.runs_low) if b.runs_low == b.runs_high else f"{b.runs_low}-{b.runs_high}"
    key = "rests.basis_single" if b.runs_high == 1 else "rests.basis_looks" if b.looks > 1 else "rests.basis"
    return label(key, lang, runs=runs, noise=label(f"noise_kind.{b.noise}", lang), looks=b.looks)


def advice_text(configs: Sequence[str], state: str, lang: str) -> str:
    """The cell advice in a table cell: the one config, or the even or undecided set and which it is;
    Markdown code marks (the HTML report turns them into tags)."""
    who = " / ".join(f"`{c}`" for c in configs)
    return who if state == "pick" else f"{who} ({label(f'advice.{state}', lang)})"


def deployed_flags(view: ReportView) -> dict[str, EngineFlags]:
    """Every full config a recommendation names, with its engine flags, in the order named: a set the
    verdicts leave even or undecided names each of its configs (the user deploys one of them)."""
    flags: dict[str, EngineFlags] = {}
    for rec in view.recommendations:
        for p in rec.picks:
            for cfg, ef in [(p.config, p.flags), *p.even_flags.items()]:
                if ef is not None and (ef.vllm or ef.sglang or ef.measured) and cfg not in flags:
                    flags[cfg] = ef
    return flags
