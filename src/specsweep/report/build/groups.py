"""What a group of cells (a concurrency band, a workload class, or both) says beyond its main sentence,
read from the same verdicts: the cells its counts leave out and why, the configs that trail, why its
ties are ties, and (recommendations) the full configs to deploy in it with their engine flags.

A group's counts cover the cells where its leader and runner-up were compared; every other cell of
the group is set aside with its reason (an anomaly, or a config without a valid result), so the
counts and the set-aside cells add up to the group (issue 28 item 3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specsweep.analysis import advice, core, outcomes, recommend, verdicts
from specsweep.analysis.anomalies import AnomalyData
from specsweep.report.build import view as V

Point = tuple[str, int]
SKIPPED_ANOMALIES = ("trend_outlier", "prefix_cache")  # cells verdict summaries leave out


def short_name(t: core.Table, label: str | None) -> str:
    """A column's name in sentences (its ``short``); any other label as it is."""
    for c in t.columns:
        if c.label == label:
            return c.short
    return label or ""


def skip_reasons(anomalies: list[AnomalyData]) -> dict[Point, str]:
    """The cells that summaries leave out, each with the anomaly that flagged it."""
    out: dict[Point, str] = {}
    for a in anomalies:
        if a.kind in SKIPPED_ANOMALIES:
            out.setdefault((a.scenario, a.concurrency), a.kind)
    return out


def leader(d: recommend.GroupDecision) -> str:
    """The group's leading config: the recommended one, else the first of the even ones."""
    return d.config or d.alternatives[0]


def counted(d: recommend.GroupDecision) -> list[Point]:
    return [(p["scenario"], p["concurrency"]) for p in d.per_cell]


def entry_problem(t: core.Table, col: str, s: str, c: int) -> tuple[str, str] | None:
    """(reason, config label) when ``col`` has no valid result in the cell, else None."""
    e = t.entry(col, s, c)
    if e is None or e.data is None:
        return "missing", col
    if not e.data.ok:
        status = "invalid" if any(r.get("status") == "invalid" for r in e.data.bad) else "failed"
        return status, e.data.label
    return None


def set_aside(t: core.Table, d: recommend.GroupDecision, reasons: dict[Point, str]) -> list[V.SetAside]:
    """The group's cells its counts leave out, with why (see the module docstring)."""
    done = set(counted(d))
    out = []
    for s, c in d.points:
        if (s, c) in done:
            continue
        if (s, c) in reasons:
            out.append(V.SetAside(scenario=s, concurrency=c, reason=reasons[(s, c)]))  # type: ignore[arg-type]
            continue
        probs = [p for col in (leader(d), d.runner_up) if col and (p := entry_problem(t, col, s, c))]
        reason = probs[0][0] if probs else "missing"
        out.append(V.SetAside(scenario=s, concurrency=c, reason=reason, configs=[p[1] for p in probs]))  # type: ignore[arg-type]
    return out


@dataclass
class GroupText:
    """The sentences a group adds to its main one, and the counts of its ties by reason."""

    extra: list[V.Msg] = field(default_factory=list)
    set_aside: list[V.SetAside] = field(default_factory=list)
    ties_min_effect: int = 0  # ties between leader and runner-up only because the gap is under --min-effect
    ties_noise: int = 0

    @property
    def all_ties_min_effect(self) -> bool:
        return self.ties_min_effect > 0 and self.ties_noise == 0


def group_text(
    t: core.Table,
    vs: list[core.PairVerdict],
    d: recommend.GroupDecision,
    reasons: dict[Point, str],
    min_effect: float,
) -> GroupText:
    """``vs``: the verdicts the group was decided on (anomalies left out)."""
    out = GroupText(set_aside=set_aside(t, d, reasons))
    lead = leader(d)
    for s, c in counted(d):
        v = core.find_verdict(vs, s, c, lead, d.runner_up or "")
        why = outcomes.tie_reason(v) if v is not None else None
        out.ties_min_effect += why == "min_effect"
        out.ties_noise += why == "noise"
    if out.ties_min_effect and out.ties_noise:
        out.extra.append(V.Msg(key="ties.why", args={"below": out.ties_min_effect, "noise": out.ties_noise,
                                                     "min_effect": min_effect}))  # fmt: skip
    outs = outcomes.cell_outcomes(t, vs, d.points)
    for lab in t.labels():
        if lab in (lead, d.runner_up):
            continue
        compared = [o for o in outs if lab in o.configs]
        behind = [o for o in compared if o.beaten_by.get(lab)]
        if behind:
            by = sorted({w for o in behind for w in o.beaten_by[lab]}, key=t.labels().index)
            out.extra.append(V.Msg(key="group.behind", args={"config": short_name(t, lab), "k": len(behind),
                                                            "n": len(compared), "by": ", ".join(short_name(t, b) for b in by)}))  # fmt: skip
    return out


def member_verdicts(
    t: core.Table,
    noise: core.Noise,
    agree: Callable[[core.Table, core.VerdictList], core.VerdictList] | None = None,
) -> core.VerdictList:
    """Compare: the verdicts between the configs of each method that has several (its sweep), which
    say whether a method's best-of pick in a cell beats its other configs or is even with them.
    ``agree``: gives a design run's own decisions to the pairs it judged (the sweep report's verdicts
    of the same run), so the compare report's picks and the sweep report agree."""
    out = core.VerdictList()
    if t.kind == "compare":
        for col in t.columns:
            if len(col.members) > 1 and not col.is_baseline:
                sweep = core.build_sweep(t.dataset, col.method)
                vs = verdicts.all_verdicts(sweep, core.PRIMARY, noise)
                out.extend(agree(sweep, vs) if agree is not None else vs)
    return out


def _advised(t: core.Table, col: str, a: advice.CellAdvice) -> tuple[str, list[str], str, bool] | None:
    """What the cell advice ``a`` says of column ``col``: (config named, the configs even or undecided
    with it, state, band pick); None when ``col`` is not advised there (another config beats it).
    Compare: the method's configs the advice keeps (one, or an even or undecided set); sweep: the
    column's config, covering the cell by a tie when the advice leaves others with it (a band pick)."""
    if col not in a.columns:
        return None
    if t.kind == "compare":
        members = next((c.members for c in t.columns if c.label == col), [col])
        mine = [x for x in a.configs if x in members] or [col]
        return mine[0], mine[1:], advice.set_state(mine, a.verdicts), False
    others = [x for x in a.configs if x != col]
    return col, others, a.state if others else "pick", bool(others)


def picks(
    t: core.Table, d: recommend.GroupDecision, adv: dict[Point, advice.CellAdvice] | None = None
) -> list[V.Pick]:
    """The full configs behind a recommended column in the group's counted cells, read from the cell
    advice (:mod:`specsweep.analysis.advice`, ``adv``): compare, the method's configs the verdicts
    advise there (one, or the set they leave even or undecided); sweep, the column's config, naming
    the cells it covers by a tie. Most cells first, each with the engine flags that deploy it."""
    if d.config is None:
        return []
    adv = adv or {}
    by: dict[tuple[str, tuple[str, ...], str, bool], list[advice.CellAdvice | None]] = {}
    cells: dict[tuple[str, tuple[str, ...], str, bool], list[list[str | int]]] = {}
    for s, c in counted(d):
        a = adv.get((s, c))
        if a is None:
            e = t.entry(d.config, s, c)
            key: tuple[str, tuple[str, ...], str, bool] = (
                e.picked if e is not None and e.picked else d.config,
                (),
                "pick",
                False,
            )
        else:
            got = _advised(t, d.config, a)
            if got is None:
                continue
            key = (got[0], tuple(got[1]), got[2], got[3])
        by.setdefault(key, []).append(a)
        cells.setdefault(key, []).append([s, c])
    out = []
    for key, cs in sorted(cells.items(), key=lambda kv: (kv[0][2] != "pick", -len(kv[1]))):
        lab, even, state, band = key
        more = [a.more_runs for a in by[key] if a is not None and a.more_runs is not None]
        gaps = [a.gap for a in by[key] if a is not None and a.gap is not None]
        extra: dict[str, Any] = {"even_with": list(even), "state": state, "band_pick": band,
                                 "more_runs": max(more) if more and state == "undecided" else None,
                                 "gap": max(gaps) if gaps and state == "undecided" else None}  # fmt: skip
        extra["even_flags"] = {x: f for x in even if (f := _flags(t, x)) is not None}
        meta = t.dataset.configs.get(lab)
        if meta is None:
            out.append(V.Pick(config=lab, method="", cells=cs, **extra))
            continue
        out.append(V.Pick(config=lab, method=meta.method, params=dict(meta.params), cells=cs,
                          flags=_flags(t, lab), **extra))  # fmt: skip
    return out


def _flags(t: core.Table, label: str) -> V.EngineFlags | None:
    """The engine flags that deploy a config (None: not a config of these results)."""
    meta = t.dataset.configs.get(label)
    if meta is None:
        return None
    engine = recommend.engine_of(meta.backend or "")
    return V.EngineFlags(**recommend.engine_flags(meta.method, meta.params, meta.argv or None, engine=engine))
