"""What a group of cells (a concurrency band, a workload class, or both) says beyond its main sentence,
read from the same verdicts: the cells its counts leave out and why, the configs that trail, why its
ties are ties, and (recommendations) the full configs to deploy in it with their engine flags.

A group's counts cover the cells where its leader and runner-up were compared; every other cell of
the group is set aside with its reason (an anomaly, or a config without a valid result), so the
counts and the set-aside cells add up to the group (issue 28 item 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specsweep.analysis import core, outcomes, recommend, verdicts
from specsweep.analysis.anomalies import AnomalyData
from specsweep.report import view as V

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


def member_verdicts(t: core.Table, noise: core.Noise) -> core.VerdictList:
    """Compare: the verdicts between the configs of each method that has several (its sweep), which
    say whether a method's best-of pick in a cell beats its other configs or is even with them."""
    out = core.VerdictList()
    if t.kind == "compare":
        for col in t.columns:
            if len(col.members) > 1 and not col.is_baseline:
                out.extend(
                    verdicts.all_verdicts(core.build_sweep(t.dataset, col.method), core.PRIMARY, noise)
                )
    return out


def _even_with(
    t: core.Table, col: str, lab: str, cells: list[list[str | int]], mvs: core.VerdictList
) -> list[str]:
    """The column's other configs that are even with ``lab`` (a tie) in every one of ``cells``."""
    out = []
    members = next((c.members for c in t.columns if c.label == col), [])
    for other in members:
        if other == lab:
            continue
        vs = [core.find_verdict(mvs, str(s), int(c), lab, other) for s, c in cells]
        if vs and all(v is not None and v.verdict == "tie" for v in vs):
            out.append(other)
    return out


def picks(t: core.Table, d: recommend.GroupDecision, mvs: core.VerdictList | None = None) -> list[V.Pick]:
    """The full configs behind a recommended column in the group's counted cells (compare: the
    method's best config per cell; a sweep column is one config), most cells first, each with the
    engine flags that deploy it and (compare, ``mvs`` from :func:`member_verdicts`) the method's
    configs even with it in all its cells."""
    if d.config is None:
        return []
    by: dict[str, list[list[str | int]]] = {}
    for s, c in counted(d):
        e = t.entry(d.config, s, c)
        lab = e.picked if e is not None and e.picked else d.config
        by.setdefault(lab, []).append([s, c])
    out = []
    for lab, cells in sorted(by.items(), key=lambda kv: -len(kv[1])):
        meta = t.dataset.configs.get(lab)
        even = _even_with(t, d.config, lab, cells, mvs) if mvs else []
        if meta is None:
            out.append(V.Pick(config=lab, method="", cells=cells, even_with=even))
            continue
        engine = recommend.engine_of(meta.backend or "")
        f = recommend.engine_flags(meta.method, meta.params, meta.argv or None, engine=engine)
        params: dict[str, Any] = dict(meta.params)
        out.append(
            V.Pick(
                config=lab,
                method=meta.method,
                params=params,
                cells=cells,
                flags=V.EngineFlags(**f),
                even_with=even,
            )
        )
    return out
