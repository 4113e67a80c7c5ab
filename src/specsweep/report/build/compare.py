"""The compare report's summary: win counts, who trails, ties and their reason, the conclusion.

Every count and sentence is read from the pairwise verdict list through
:mod:`specsweep.analysis.outcomes`, for any number of methods: a method "wins" a cell when it beats
every other method there; it is "behind" where another method beats it; a cell where the leading
methods are even with each other but ahead of the rest is neither a win nor a tie.
"""

from __future__ import annotations

from specsweep.analysis import core, outcomes, recommend
from specsweep.report.build import view as V
from specsweep.report.build.groups import entry_problem


def compare_summary(
    t: core.Table, vs: list[core.PairVerdict], min_effect: float, apart: set[tuple[str, int]] | None = None
) -> V.CompareSummary:
    """``apart``: cells whose configs ran different workloads (no verdict; set aside, left out of the
    latency ratios)."""
    labels = t.labels()
    apart = apart or set()
    outs = outcomes.cell_outcomes(t, vs)
    tl = outcomes.tally(t, outs)
    compared = {(o.scenario, o.concurrency) for o in outs}
    aside = []
    for s, c in t.points:  # a cell where fewer than two methods have a valid result: not compared
        if (s, c) not in compared:
            probs = [p for lab in labels if (p := entry_problem(t, lab, s, c))]
            reason = "workloads" if (s, c) in apart else probs[0][0] if probs else "missing"
            aside.append(V.SetAside(scenario=s, concurrency=c, reason=reason, configs=[p[1] for p in probs]))  # type: ignore[arg-type]
    ref = max(labels, key=lambda lab: tl.wins[lab])
    ratios = recommend.latency_ratios(t, ref, core.LATENCY_VERDICT_METRICS, apart)
    trailing = []
    if len(labels) > 2:  # with two methods "wins: 0" says it; with more, name who trails everywhere
        trailing = [
            V.Msg(key="compare.behind_all", args={"method": lab, "n": tl.n})
            for lab in labels
            if tl.n and tl.behind[lab] == tl.n
        ]
    return V.CompareSummary(
        methods=labels, n_cells=tl.n, win_counts=tl.wins, ties=tl.even,
        ratios=[V.RatioRow(**r.__dict__) for r in ratios],
        conclusion=(tl.n == 0 and _why_nothing(t, apart)) or conclusion(labels, tl, min_effect),
        behind=tl.behind, leaders_even=tl.leaders_even, ties_min_effect=tl.ties.get("min_effect", 0),
        min_effect=min_effect, trailing=trailing, set_aside=aside,
    )  # fmt: skip


def conclusion(labels: list[str], tl: outcomes.Tally, min_effect: float) -> V.Msg:
    """The conclusion, from the tally and nothing else: no comparable cell; one method wins every
    cell; only one method wins any; the methods split the cells they win; no cell has a single
    winner but the leaders are ahead of the rest; or no pair of any cell differs (because every gap is
    under ``--min-effect``, because the runs cannot resolve it, or some of each)."""
    n, wins = tl.n, tl.wins
    if n == 0:
        return V.Msg(key="compare.no_cells", args={"methods": ", ".join(labels)})
    ranked = sorted(labels, key=lambda lab: -wins[lab])
    ref = ranked[0]
    others = ", ".join(lab for lab in labels if lab != ref)
    if wins[ref] == n:
        return V.Msg(key="compare.all", args={"winner": ref, "others": others, "n": n})
    winners = [lab for lab in ranked if wins[lab]]
    if len(winners) == 1:
        return V.Msg(
            key="compare.most", args={"winner": ref, "wins": wins[ref], "n": n, "rest": n - wins[ref]}
        )
    if len(winners) > 1:
        split = "; ".join(f"{lab} {wins[lab]}" for lab in winners)
        return V.Msg(key="compare.split", args={"wins": split, "n": n, "ties": n - sum(wins.values())})
    if tl.leaders_even:
        return V.Msg(key="compare.leaders_even", args={"k": tl.leaders_even, "n": n, "even": tl.even})
    below, noise = tl.ties.get("min_effect", 0), tl.ties.get("noise", 0)
    if below and not noise:
        return V.Msg(key="compare.none_min", args={"n": n, "min_effect": min_effect})
    if below:
        return V.Msg(
            key="compare.none_mixed", args={"n": n, "below": below, "noise": noise, "min_effect": min_effect}
        )
    return V.Msg(key="compare.none", args={"n": n})


def _has_data(e: core.Entry | None) -> bool:
    return e is not None and e.data is not None and bool(e.data.ok or e.data.bad)


def _why_nothing(t: core.Table, apart: set[tuple[str, int]]) -> V.Msg | None:
    """When no cell was compared although the methods share cells: the shared cells ran different
    workloads, or a run failed (or is missing) on one side - not different scenario names."""
    shared = [
        (s, c) for s, c in t.points if sum(1 for col in t.columns if _has_data(t.entry(col.label, s, c))) >= 2
    ]
    if not shared:
        return None
    methods = ", ".join(t.labels())
    cells = ", ".join(f"{s} c={V.level_text(c)}" for s, c in shared[:4]) + (
        ", ..." if len(shared) > 4 else ""
    )
    key = "compare.no_cells_workloads" if all(p in apart for p in shared) else "compare.no_cells_failed"
    return V.Msg(key=key, args={"methods": methods, "n": len(shared), "cells": cells})
