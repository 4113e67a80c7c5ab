"""The view's advice from the analysis: recommendations with engine flags, domain checks, the
compare summary, next steps and method notes (pre-flight, computed numbers, A/A scenarios)."""

from __future__ import annotations

import math
from typing import Any

from specsweep import stats, stats_plan
from specsweep.analysis import core, recommend
from specsweep.analysis.data import Dataset
from specsweep.report import verdict_notes
from specsweep.report import view as V
from specsweep.report.build_findings import short_name

QUIET_NOISE = 0.03  # a quiet host's run-to-run noise, for the planning line of single-run reports


def recommendations(
    t: core.Table, vs: list[core.PairVerdict], skip: set[tuple[str, int]], bands: Any, by_class: bool = True
) -> list[V.Recommendation]:
    vs2 = core.VerdictList(vs).without(skip)
    out = []
    decisions = (
        recommend.recommendations(t, vs2, bands) if by_class else recommend.band_summaries(t, vs2, bands)
    )
    for d in decisions:
        n = d.wins + d.losses + d.ties
        args: dict[str, Any] = {
            "wins": d.wins,
            "losses": d.losses,
            "ties": d.ties,
            "n": n,
            "other": short_name(t, d.runner_up),
        }
        if d.config is None:
            note = V.Msg(key="rec.any", args=args)
        elif d.losses == 0:
            note = V.Msg(key="rec.win", args=args)
        else:
            note = V.Msg(key="rec.mixed", args=args)
        flags = None
        if d.config is not None:
            lab = _picked_config(t, d.config, d.points)
            meta = t.dataset.configs[lab]
            engine = recommend.engine_of(meta.backend or "")
            f = recommend.engine_flags(meta.method, meta.params, meta.argv or None, engine=engine)
            flags = V.EngineFlags(**f)
        out.append(
            V.Recommendation(
                workload_class=d.workload_class, band=d.band, c_low=d.c_low, c_high=d.c_high, config=d.config,
                alternatives=d.alternatives, expected_gain=d.expected_gain if d.config else None,
                ci_low=d.ci_low if d.config else None, ci_high=d.ci_high if d.config else None,
                confidence=d.confidence, basis=d.basis, n_cells=n, flags=flags, note=note,  # type: ignore[arg-type]
            )
        )  # fmt: skip
    return out


def _picked_config(t: core.Table, col: str, pts: list[tuple[str, int]]) -> str:
    """The member config a column used most often at these points (compare: its best config)."""
    counts: dict[str, int] = {}
    for s, c in pts:
        e = t.entry(col, s, c)
        if e is not None and e.picked:
            counts[e.picked] = counts.get(e.picked, 0) + 1
    if counts:
        return max(counts, key=lambda k: counts[k])
    return next(c.members[0] for c in t.columns if c.label == col)


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


def compare_summary(t: core.Table, ws: list[core.Winner]) -> V.CompareSummary:
    labels = t.labels()
    counts = dict.fromkeys(labels, 0)
    ties = 0
    n = 0
    for w in ws:
        if w.leader is None or w.runner_up is None:
            continue
        n += 1
        if w.winner:
            counts[w.winner] += 1
        else:
            ties += 1
    ref = max(labels, key=lambda lab: counts[lab])
    ratios = recommend.latency_ratios(t, ref, core.LATENCY_VERDICT_METRICS)
    concl = verdict_notes.compare_conclusion(labels, counts, n, ties)
    return V.CompareSummary(
        methods=labels, n_cells=n, win_counts=counts, ties=ties,
        ratios=[V.RatioRow(**r.__dict__) for r in ratios], conclusion=concl,
    )  # fmt: skip


def next_steps(
    t: core.Table, view_parts: dict[str, Any], noise: core.Noise, prov: V.Provenance
) -> list[V.Msg]:
    steps: list[V.Msg] = []
    recs: list[V.Recommendation] = view_parts["bands"]
    low = next((r for r in recs if r.band == "low" and r.config), None)
    high = next((r for r in recs if r.band == "high" and r.config), None)
    if t.kind == "sweep" and low and high and low.config != high.config:
        steps.append(
            V.Msg(
                key="next.schedule",
                args={
                    "c_high": high.c_low,
                    "high": short_name(t, high.config),
                    "low": short_name(t, low.config),
                },
            )
        )
    elif t.kind == "compare" and view_parts["compare"] is not None:
        cs: V.CompareSummary = view_parts["compare"]
        best = max(cs.win_counts, key=lambda k: cs.win_counts[k])
        step = verdict_notes.default_step(cs, recs)
        if step is not None:
            steps.append(step)
        for lab in cs.methods:
            if lab == best:
                continue
            losses = sum(
                1 for w in view_parts["winners"] if w.winner == best and lab in (w.leader, w.runner_up)
            )
            col = next(c for c in t.columns if c.label == lab)
            params = sorted({k for m in col.members for k in t.dataset.configs[m].params})
            if losses and params:
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
    assumed one (the planning aid's rule: stats_plan.runs_to_decide)."""
    target = noise.min_effect if noise.min_effect > 0 else stats.DEFAULT_TARGET
    m = max(comparisons, 1)
    lo = stats_plan.runs_to_decide(QUIET_NOISE, target, comparisons=m, cells=cells)
    hi = stats_plan.runs_to_decide(noise.sigma, target, comparisons=m, cells=cells)
    args: dict[str, Any] = {"floor": noise.floor, "detectable": detectable, "target": target, "m": m, "power": stats.DEFAULT_POWER,
            "quiet": QUIET_NOISE, "sigma": noise.sigma, "need_quiet": lo or stats_plan.MAX_RUNS,
            "need": hi or stats_plan.MAX_RUNS}  # fmt: skip
    return V.Msg(key="next.repeats", args=args)


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
