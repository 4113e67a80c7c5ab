"""The view's advice from the analysis: recommendations with engine flags, domain checks, the
compare summary, next steps and method notes (pre-flight, computed numbers, A/A scenarios)."""

from __future__ import annotations

import math
from typing import Any

from specsweep.analysis import advice as cell_advice
from specsweep.analysis import core, recommend
from specsweep.analysis.data import Dataset
from specsweep.report.build import groups, headline
from specsweep.report.build import view as V
from specsweep.report.build.groups import short_name
from specsweep.stats import basic as stats
from specsweep.stats import planning as stats_plan

QUIET_NOISE = 0.03  # a quiet host's run-to-run noise, for the planning line of single-run reports


def recommendations(
    t: core.Table,
    vs: list[core.PairVerdict],
    reasons: dict[tuple[str, int], str],
    bands: Any,
    *,
    by_class: bool = True,
    min_effect: float = 0.0,
    adv: dict[tuple[str, int], cell_advice.CellAdvice] | None = None,
) -> list[V.Recommendation]:
    """A recommendation per group (workload class x band, or band), decided on the verdicts outside
    the cells flagged as anomalies (``reasons``); each names the full configs to deploy (``picks``;
    ``adv``: the cell advice, :func:`specsweep.analysis.advice.cell_advice`)."""
    vs2 = core.VerdictList(vs).without(set(reasons))
    out = []
    decisions = (
        recommend.recommendations(t, vs2, bands) if by_class else recommend.band_summaries(t, vs2, bands)
    )
    for d in decisions:
        n = d.wins + d.losses + d.ties
        g = groups.group_text(t, vs2, d, reasons, min_effect)
        args: dict[str, Any] = {"wins": d.wins, "losses": d.losses, "ties": d.ties, "n": n,
                                "other": short_name(t, d.runner_up), "min_effect": min_effect}  # fmt: skip
        if d.config is None and d.losses == 0:
            note = V.Msg(key="rec.any_min" if g.all_ties_min_effect else "rec.any", args=args)
        elif d.losses == 0:
            note = V.Msg(key="rec.win", args=args)
        else:
            note = V.Msg(key="rec.mixed", args=args)
        out.append(
            V.Recommendation(
                workload_class=d.workload_class, band=d.band, c_low=d.c_low, c_high=d.c_high, config=d.config,
                alternatives=d.alternatives, expected_gain=d.expected_gain if d.config else None,
                ci_low=d.ci_low if d.config else None, ci_high=d.ci_high if d.config else None,
                confidence=d.confidence, basis=d.basis, n_cells=n, wins=d.wins, losses=d.losses, ties=d.ties,  # type: ignore[arg-type]
                picks=groups.picks(t, d, adv), decided_on=_decided_on(vs2, d, adv),
                set_aside=g.set_aside, note=note, extra=g.extra,
            )
        )  # fmt: skip
    return out


def _decided_on(
    vs: list[core.PairVerdict],
    d: recommend.GroupDecision,
    adv: dict[tuple[str, int], cell_advice.CellAdvice] | None,
) -> V.AdviceBasis | None:
    """The basis of a recommendation as its verdicts were decided: the group's verdicts between its
    leader and runner-up and, per counted cell, those the cell advice read (a method's own configs)."""
    read = []
    lead = d.config or (d.alternatives[0] if d.alternatives else None)
    for s, c in groups.counted(d):
        if lead is not None and (v := core.find_verdict(vs, s, c, lead, d.runner_up or "")) is not None:
            read.append(v)
        if adv and (a := adv.get((s, c))) is not None:
            read.extend(a.verdicts)
    b = cell_advice.Basis.of(read)
    return V.AdviceBasis(**b.__dict__) if b is not None else None


def checks(
    t: core.Table, ds: Dataset, noise: core.Noise, prov: V.Provenance, cap: int
) -> list[V.DomainCheck]:
    out = []
    for c in recommend.domain_checks(t, ds.manifests, noise, cap):
        args = dict(c.data)
        if c.kind == "cuda_graph_cap":
            args["k1"] = args["k"] + 1
        if c.kind == "below_block_size":
            args["discarded"] = args["block"] - args["k"]
        out.append(
            V.DomainCheck(
                kind=c.kind,  # type: ignore[arg-type]
                severity=c.severity,  # type: ignore[arg-type]
                configs=c.configs,
                cells=c.cells,
                message=V.Msg(key=f"check.{c.kind}", args=args),
            )
        )
    if prov.simulated:
        out.append(
            V.DomainCheck(
                kind="simulated",
                severity="warn",
                message=V.Msg(
                    key="check.simulated",
                    args={"scale": prov.time_scale if prov.time_scale is not None else "-"},
                ),
            )
        )
    return out


def next_steps(
    t: core.Table, view_parts: dict[str, Any], noise: core.Noise, prov: V.Provenance
) -> list[V.Msg]:
    steps: list[V.Msg] = headline.steps(view_parts["recs"], view_parts["advice"], t.scenarios())
    if t.kind == "compare" and view_parts["compare"] is not None:
        cs: V.CompareSummary = view_parts["compare"]
        best = max(cs.win_counts, key=lambda k: cs.win_counts[k])
        for lab in cs.methods:
            losses = cs.behind.get(lab, 0)
            if lab == best or not losses:
                continue
            col = next(c for c in t.columns if c.label == lab)
            params = sorted({k for m in col.members for k in t.dataset.configs[m].params})
            if params:
                steps.append(
                    V.Msg(
                        key="next.tune",
                        args={"loser": lab, "losses": losses, "n": cs.n_cells, "params": ", ".join(params)},
                    )
                )
        if len(prov.backends) > 1:
            steps.append(V.Msg(key="next.engines", args={"backends": ", ".join(prov.backends)}))
    anomalies: list[V.Anomaly] = view_parts["anomalies"]
    outl = [
        f"{s} c={c}"
        for s, c in sorted({(a.scenario, a.concurrency) for a in anomalies if a.kind == "trend_outlier"})
    ]
    if outl:
        steps.append(V.Msg(key="next.rerun_outliers", args={"cells": ", ".join(outl)}))
    pc = [
        f"{s} c={c}"
        for s, c in sorted({(a.scenario, a.concurrency) for a in anomalies if a.kind == "prefix_cache"})
    ]
    if pc:
        steps.append(V.Msg(key="next.prefix_cache", args={"cells": ", ".join(pc)}))
    for c in view_parts["checks"]:
        if c.kind == "below_block_size":
            steps.append(V.Msg(key="next.lossless", args={"config": c.message.args["config"]}))
        if c.kind == "cuda_graph_cap":
            steps.append(
                V.Msg(
                    key="next.graph_cap",
                    args={"config": c.message.args["config"], "threshold": c.message.args["threshold"]},
                )
            )
    if noise.source == "default":
        steps.append(
            repeats_step(noise, view_parts["detectable"], view_parts.get("n_compared", 1), len(t.points))
        )
    if prov.warmup and max(prov.warmup) >= 10:
        steps.append(V.Msg(key="next.warmup", args={"n": max(prov.warmup)}))
    return steps


def repeats_step(noise: core.Noise, detectable: float, comparisons: int, cells: int) -> V.Msg:
    """Nothing measured: measure first (2 runs per config give each config's noise), and what deciding
    the target difference in each comparison would take, computed at a quiet host's noise and at the
    assumed one (the planning aid's rule: stats.planning.runs_to_decide)."""
    target = noise.min_effect if noise.min_effect > 0 else stats.DEFAULT_TARGET
    m = max(comparisons, 1)
    lo = stats_plan.runs_to_decide(QUIET_NOISE, target, comparisons=m, cells=cells)
    hi = stats_plan.runs_to_decide(noise.sigma, target, comparisons=m, cells=cells)
    args: dict[str, Any] = {"floor": noise.floor, "detectable": detectable, "target": target, "m": m, "power": stats.DEFAULT_POWER,
            "quiet": QUIET_NOISE, "sigma": noise.sigma, "need_quiet": lo or stats_plan.MAX_RUNS,
            "need": hi or stats_plan.MAX_RUNS}  # fmt: skip
    # no comparison was made (every cell set aside): no difference was there to resolve, so no "~0%"
    return V.Msg(key="next.repeats" if detectable > 0 else "next.repeats_nothing_compared", args=args)


def preflight_notes(t: core.Table) -> list[V.Msg]:
    """Pre-flight checks that did not pass at the start of the run (manifest ``preflight``)."""
    out = []
    for run in t.dataset.runs:
        for c in run.preflight:
            if c.get("status") in ("warn", "fail"):
                out.append(V.Msg(key="note.preflight", args={k: str(c.get(k) or "-") for k in
                                                             ("status", "check", "config", "message", "fix")}))  # fmt: skip
    return out


def computed_notes(t: core.Table) -> list[V.Msg]:
    """Which numbers were not measured but computed from others (imports of older client versions)."""
    keys: dict[str, set[str]] = {}
    for e in t.entries.values():
        if e.data is None:
            continue
        for r in e.data.ok:
            ck = r.get("computed_keys")
            if isinstance(ck, list) and ck:
                keys.setdefault(e.data.label, set()).update(str(k) for k in ck)
    return [
        V.Msg(key="note.computed", args={"config": lab, "keys": ", ".join(sorted(ks))})
        for lab, ks in sorted(keys.items())
    ]


def aa_scenario_notes(t: core.Table, noise: core.Noise) -> list[V.Msg]:
    """Scenarios with identical definitions under different names are an A/A check of the setup."""
    from specsweep.workload.scenarios import BUILTIN

    defs = {**BUILTIN, **t.dataset.scenario_defs}
    groups: dict[tuple[Any, ...], list[str]] = {}
    for s in t.scenarios():
        sc = defs.get(s)
        if sc is not None:
            key = (
                sc.input_len,
                sc.output_len,
                sc.range_ratio,
                sc.range_mode,
                sc.dataset,
                sc.dataset_path,
                sc.num_groups,
                sc.prefix_len,
            )
            groups.setdefault(key, []).append(s)
    out = []
    for key, names in groups.items():
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                s1, s2 = names[i], names[j]
                diffs = []
                for col in t.columns:
                    for c in sorted(set(t.levels(s1)) & set(t.levels(s2))):
                        v1, v2 = (
                            t.value(col.label, s1, c, core.PRIMARY),
                            t.value(col.label, s2, c, core.PRIMARY),
                        )
                        if v1 and v2:
                            diffs.append((math.expm1(abs(math.log(v1 / v2))), col.short, c))
                if not diffs:
                    continue
                worst = max(d[0] for d in diffs)
                args: dict[str, Any] = {
                    "s1": s1, "s2": s2, "input_len": key[0], "output_len": key[1], "max_diff": worst, "floor": noise.floor,
                    "diffs": ", ".join(f"{d:.2%} ({lab}, c={c})" for d, lab, c in diffs),
                }  # fmt: skip
                out.append(
                    V.Msg(key="note.aa_within" if worst <= noise.floor else "note.aa_beyond", args=args)
                )
    return out
