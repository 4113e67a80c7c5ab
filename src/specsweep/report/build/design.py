"""The design section of the view (:class:`~specsweep.report.build.view_design.DesignView`) for a run made
with the adaptive design: the rules' state on the run's own rows (specsweep.design.observe), so
the report says exactly what the run decided, and why each cell stopped."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from specsweep.analysis import core
from specsweep.analysis.data import Dataset
from specsweep.design import observe, race_plan
from specsweep.design.costs import BASELINE_REPEATS
from specsweep.design.types import DesignState, PairStatus
from specsweep.experiment.adaptive import DesignSettings
from specsweep.report.build.view_design import DesignCell, DesignMsg, DesignPair, DesignView


def fmt_seconds(s: float) -> str:
    """``1h05m``, ``4m12s``: durations as the run's progress lines show them."""
    n = max(0, round(s))
    h, rem = divmod(n, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"


def _why(p: PairStatus, margin: float) -> DesignMsg:
    if p.status == "decided" and p.winner is not None:
        return DesignMsg(key="design.why.decided", args={"winner": p.winner})
    if p.status == "equivalent":
        return DesignMsg(key="design.why.equivalent", args={"margin": margin})
    if p.status == "no_data":
        return DesignMsg(key="design.why.no_data")
    if p.more_runs is not None and p.gap is not None:
        return DesignMsg(key="design.why.undecided", args={"more": p.more_runs, "gap": abs(p.gap)})
    return DesignMsg(key="design.why.undecided_plain")


def _budget_text(s: DesignSettings, limit: float | None) -> DesignMsg:
    if s.budget_fraction is not None and (s.budget_s is None or limit is None or limit < s.budget_s):
        seconds = fmt_seconds(limit) if limit is not None else "-"
        return DesignMsg(key="design.budget_share", args={"share": s.budget_fraction, "seconds": seconds})
    if limit is not None:
        return DesignMsg(key="design.budget_seconds", args={"seconds": fmt_seconds(limit)})
    return DesignMsg(key="design.budget_none")


def design_view(
    run_dir: str, rows: Sequence[dict[str, Any]], state: DesignState, settings: DesignSettings
) -> DesignView:
    """The section for one run dir's rows and the rules' state on them."""
    rounds = {r.get("round") for r in rows if isinstance(r.get("round"), int)}
    launches = {(r.get("label"), r.get("round")) for r in rows if isinstance(r.get("round"), int)}
    runs = sum(1 for r in rows if isinstance(r.get("round"), int))
    limit = observe.budget_s(state, settings)
    cells = [
        DesignCell(
            scenario=c.point[0], concurrency=c.point[1], status=c.status, stopped_by=c.stopped_by or "",
            leader=c.leader, runs=dict(c.runs),
            pairs=[DesignPair(a=p.a, b=p.b, status=p.status, winner=p.winner, effect=p.effect, ci_low=p.ci_low,
                              ci_high=p.ci_high, n_a=p.n_a, n_b=p.n_b, p_value=p.p_value, more_runs=p.more_runs,
                              gap=p.gap, why=_why(p, settings.margin)) for p in c.pairs],
        )
        for c in state.cells
    ]  # fmt: skip
    budget = _budget_text(settings, limit)
    share = state.spent_s / state.baseline_s if state.baseline_s > 0 else 0.0
    return DesignView(
        run_dir=run_dir, metric=settings.metric, margin=settings.margin, max_repeats=settings.max_repeats,
        level=settings.level, budget_s=limit, budget=budget, spent_s=state.spent_s,
        baseline_s=state.baseline_s, rounds=len(rounds), runs=runs, launches=len(launches),
        noise={k: [float(v[0]), float(v[1])] for k, v in state.noise.items()}, cells=cells,
        summary=DesignMsg(key="design.summary", args={"spent": fmt_seconds(state.spent_s), "runs": runs,
                                                      "rounds": len(rounds), "launches": len(launches),
                                                      "baseline": fmt_seconds(state.baseline_s), "share": share,
                                                      "single": fmt_seconds(state.baseline_s / BASELINE_REPEATS),
                                                      "single_share": BASELINE_REPEATS * share}),
        settings_line=_settings_line(settings),
        intro=DesignMsg(key="design.intro_race" if settings.race else "design.intro"),
    )  # fmt: skip


def _settings_line(settings: DesignSettings) -> DesignMsg:
    """The design's settings in words: under racing, ``max_repeats`` bounds a cell's later runs by time
    (full runs' worth, up to race_plan.MAX_RUNS x as many shorter ones) and ``launches`` the launches."""
    args: dict[str, Any] = {"metric": settings.metric, "margin": settings.margin,
                            "max_repeats": settings.max_repeats, "level": settings.level}  # fmt: skip
    if not settings.race:
        return DesignMsg(key="design.settings", args=args)
    args.update(max_runs=race_plan.MAX_RUNS * settings.max_repeats, launches=settings.launches)
    return DesignMsg(key="design.settings_race", args=args)


@dataclass(frozen=True)
class DesignRun:
    """The rules' state on the first run dir of a dataset made with the design."""

    run_dir: str
    rows: list[dict[str, Any]]
    state: DesignState
    settings: DesignSettings


def design_run(ds: Dataset, rules: observe.PlanNext | None = None) -> DesignRun | None:
    for rd, manifest in zip(ds.run_dirs, ds.manifests, strict=False):
        rows = rd.summary()
        inputs = observe.design_inputs(rows, manifest)
        if inputs is None:
            continue
        state = (rules or observe.default_rules())(*inputs.args())
        return DesignRun(str(rd.path), list(rows), state, inputs.settings)
    return None


def build_design(
    ds: Dataset, rules: observe.PlanNext | None = None, run: DesignRun | None = None
) -> DesignView | None:
    """The design section of the first run dir in ``ds`` made with the design (None: none was)."""
    run = run or design_run(ds, rules)
    return None if run is None else design_view(run.run_dir, run.rows, run.state, run.settings)


def agree_with_design(t: core.Table, vs: core.VerdictList, run: DesignRun | None) -> core.VerdictList:
    """``vs`` with each comparison the design judged (the same two configs in the same cell, on its
    metric) given the design's decision and interval: one comparison, one interval, in the design
    table and everywhere else (issue 34). A compare report's method-against-method verdict is the
    design's pair of the configs picked in that cell; the design's across-method family already holds
    every such pair, so no best-of factor widens it again. A racing design's verdicts name its own
    test (``race``): the report's tests did not decide them."""
    if run is None or not vs or vs[0].metric != run.settings.metric:
        return vs
    pairs = {(c.point, p.a, p.b): p for c in run.state.cells for p in c.pairs}
    out = core.VerdictList()
    for v in vs:
        pt = (v.scenario, v.concurrency)
        ea, eb = t.entry(v.a, *pt), t.entry(v.b, *pt)
        pa, pb = (ea.picked if ea else None) or "", (eb.picked if eb else None) or ""
        p = pairs.get((pt, pa, pb)) or pairs.get((pt, pb, pa))
        if p is None or p.status == "no_data":
            out.append(v)
            continue
        lo, hi = (p.ci_low, p.ci_high) if p.a == pa else (1 / (1 + p.ci_high) - 1, 1 / (1 + p.ci_low) - 1)
        side: Literal["a", "b", "tie"] = "tie"
        if p.status == "decided" and p.winner is not None:
            side = "a" if p.winner == pa else "b"
        winner = v.a if side == "a" else v.b if side == "b" else None
        width = (math.log1p(hi) - math.log1p(lo)) / 2
        nv = dataclasses.replace(v, ci_low=lo, ci_high=hi, verdict=side, winner=winner,
                                 equivalent=p.status == "equivalent", detectable_effect=math.expm1(width))  # fmt: skip
        out.append(dataclasses.replace(nv, method="race", sequential=True) if run.settings.race else nv)
    return out
