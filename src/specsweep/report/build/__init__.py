"""Build the :class:`ReportView` from run dirs: load -> analysis -> view (numbers + message keys)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from specsweep.analysis import advice as cell_advice
from specsweep.analysis import anomalies as an
from specsweep.analysis import core, crossover, model, recommend, verdicts, workloads
from specsweep.analysis.data import CellData, Dataset, load, skip_notes
from specsweep.errors import UsageError, one_of
from specsweep.importers import cellnames
from specsweep.report.build import advice, domains, findings, groups, verdict_notes
from specsweep.report.build import compare as build_compare
from specsweep.report.build import view as V
from specsweep.report.build.design import agree_with_design, build_design, design_run
from specsweep.report.build.findings import view_verdict
from specsweep.report.build.groups import short_name
from specsweep.report.build.provenance import provenance
from specsweep.report.build.steady_notes import steady_notes
from specsweep.stats import basic as stats

KINDS = ("sweep", "compare")


def _cells(t: core.Table, keys: list[str]) -> list[V.CellView]:
    out = []
    for s, c in t.points:
        wc = recommend.scenario_class(s, t.dataset.scenario_defs)
        for col in t.columns:
            e = t.entry(col.label, s, c)
            picked = e.picked if e is not None and t.kind == "compare" else None
            out.append(_cell(s, c, col.label, wc, e.data if e else None, keys, picked))
    return out


def _member_cells(t: core.Table, keys: list[str]) -> list[V.CellView]:
    """Compare: each config of a method with several, in each cell, as its own cell (what the plots
    draw as its own line); a sweep's cells are its configs already."""
    if t.kind != "compare":
        return []
    out = []
    for s, c in t.points:
        wc = recommend.scenario_class(s, t.dataset.scenario_defs)
        for col in t.columns:
            if len(col.members) > 1:
                out += [_cell(s, c, lab, wc, t.dataset.get(lab, s, c), keys) for lab in col.members]
    return out


def _cell(
    s: str, c: int, config: str, wc: str, d: CellData | None, keys: list[str], picked: str | None = None
) -> V.CellView:
    if d is None:
        return V.CellView(scenario=s, concurrency=c, config=config, workload_class=wc, status="missing",
                          values=dict.fromkeys(keys))  # fmt: skip
    status: Literal["ok", "missing", "failed", "invalid"] = "ok"
    if not d.ok:
        status = "invalid" if any(r.get("status") == "invalid" for r in d.bad) else "failed"
    vals = {k: d.mean(k) for k in keys}
    ci: dict[str, list[float]] = {}
    basis = None
    if len(d.ok) >= 2:
        for k in keys:
            xs = d.values(k)
            if len(xs) >= 2:
                lo, hi = stats.bootstrap_ci(xs, n_resamples=1000)
                ci[k] = [lo, hi]
        basis = "repeats"
    elif len(d.ok) == 1 and len(d.records) == 1:
        ci = core.request_cell_ci(d.records[0], d.ok[0], keys)
        basis = "requests" if ci else None
    al = d.mean("accept_length")
    err = next((_failure_text(r) for r in d.bad if r.get("error")), None)
    return V.CellView(
        scenario=s, concurrency=c, config=config, workload_class=wc, status=status, picked=picked,
        repeats=len(d.ok), values=vals, ci=ci, ci_basis=basis,
        completed=int(sum(d.values("completed"))) if d.values("completed") else None,
        failed=int(sum(d.values("failed"))) if d.ok else None, accept_length=al, error=err,
    )  # fmt: skip


def _tokens_detail(t: core.Table, m: workloads.Mismatch) -> str:
    """``in: sglang 506, vLLM 1024`` - tokens per request of the side(s) that differ (language-neutral:
    the templates say what in and out are)."""
    parts = []
    for i, side in enumerate(("input", "output")):
        if side in m.sides:
            vals = ", ".join(
                f"{short_name(t, lab)} {v[i]:.0f}" for lab, v in m.tokens.items() if v[i] is not None
            )
            parts.append(f"{side[:2] if side == 'input' else 'out'}: {vals}")
    return "; ".join(parts)


def _winner_note(t: core.Table, m: workloads.Mismatch | None) -> V.Msg | None:
    return None if m is None else V.Msg(key="winner.workloads", args={"detail": _tokens_detail(t, m)})


def _session_note(t: core.Table, w: core.Winner) -> V.Msg | None:
    """A tie between configs measured only in unlinked sessions: the cell names the two and says a host
    change between the sessions cannot be told from their difference (stats_launch)."""
    v = w.verdict
    if v is None or not v.unanchored or v.winner is not None:
        return None
    pair = sorted(
        (x for x in (w.leader, w.runner_up) if x), key=lambda x: t.labels().index(x) if x in t.labels() else 0
    )
    names = ", ".join(short_name(t, x) or x for x in pair)
    key = "winner.launches" if model.launches_apart(t.dataset, v.a, v.b) else "winner.sessions"
    return V.Msg(key=key, args={"names": names, "allow": math.expm1(1.96 * v.se_session)})


def _workloads_note(t: core.Table, ms: list[workloads.Mismatch]) -> V.Msg:
    cells = "; ".join(f"{m.scenario} c={V.level_text(m.concurrency)} ({_tokens_detail(t, m)})" for m in ms)
    return V.Msg(key="note.workloads", args={"n": len(ms), "cells": cells, "tol": cellnames.TOKEN_TOLERANCE})


def _failure_text(row: dict[str, Any]) -> str:
    """A failed cell's error, led by its machine-readable failure_kind when the run dir has one."""
    kind = row.get("failure_kind")
    return f"{kind}: {row.get('error')}" if kind else str(row.get("error"))


def default_kind(ds: Dataset, method: str | None = None, baseline: str | None = None) -> str:
    """The report kind of run dirs when none is asked for: the one their experiments' ``report: kind:``
    names (issue 34 item 7), else as a run chooses it: compare when the results hold several methods
    (a config named by ``--baseline`` aside), sweep for one method or with ``--method``."""
    if method is not None:
        return "sweep"
    named = set()
    for m in ds.manifests:
        cfg = m.get("config")
        rep = cfg.get("report") if isinstance(cfg, dict) else None
        k = rep.get("kind") if isinstance(rep, dict) else None
        if k in KINDS:
            named.add(k)
    if len(named) == 1:
        return named.pop()
    methods = {c.method for c in ds.configs.values() if c.label != baseline}
    return "compare" if len(methods) > 1 else "sweep"


def _advice_views(adv: dict[tuple[str, int], cell_advice.CellAdvice]) -> list[V.CellAdvice]:
    out = []
    for a in adv.values():
        b = V.AdviceBasis(**a.basis.__dict__) if a.basis is not None else None
        out.append(V.CellAdvice(scenario=a.scenario, concurrency=a.concurrency, columns=a.columns, configs=a.configs,
                                state=a.state, basis=b, more_runs=a.more_runs, gap=a.gap))  # fmt: skip
    return out


def build_view(
    run_dirs: Sequence[str | Path],
    kind: str = "sweep",
    *,
    method: str | None = None,
    baseline: str | None = None,
    min_effect: float = 0.0,
    bands: list[tuple[str, int, int | None]] | None = None,
    graph_cap: int = recommend.CUDA_GRAPH_CAP,
    lossless: V.LosslessView | None = None,
    now: str | None = None,
) -> V.ReportView:
    """The whole analysis of the run dirs as one view model (see :mod:`specsweep.report.build.view`):
    provenance (:mod:`build_provenance`), findings (:mod:`build_findings`) and advice
    (:mod:`build_advice`) around the cells, verdicts and winners built here."""
    if kind not in (*KINDS, "auto"):
        raise UsageError(f"--kind: {one_of(kind, KINDS)}")
    if min_effect < 0:
        raise UsageError(f"--min-effect must be >= 0, got {min_effect}")
    bands = bands or recommend.DEFAULT_BANDS
    ds = load(run_dirs)
    if kind == "auto":
        kind = default_kind(ds, method, baseline)
    baseline = baseline or domains.baseline_label(ds)  # an experiment's `baseline: true` server
    t = core.build_sweep(ds, method, baseline) if kind == "sweep" else core.build_compare(ds, baseline)
    noise = core.measure_noise(ds, min_effect)
    dom_rows, dom_view = domains.build_domains(ds, noise, baseline)
    fam = verdicts.report_verdicts(t, noise, core.PRIMARY, core.LATENCY_VERDICT_METRICS)
    drun = design_run(ds)
    # a design run alone: its decisions and intervals (with other run dirs beside it, the verdicts hold more runs)
    vs = agree_with_design(t, fam[core.PRIMARY], drun if len(ds.run_dirs) == 1 else None)
    lat = [v for m in core.LATENCY_VERDICT_METRICS for v in fam[m]]
    mism = {(m.scenario, m.concurrency): m for m in workloads.mismatches(t)}
    vs = vs.without(set(mism))  # different workloads: no verdict
    lat = [v for v in lat if (v.scenario, v.concurrency) not in mism]
    ws = [
        dataclasses.replace(w, runner_up=None, winner=None, gain=None, verdict=None)
        if (w.scenario, w.concurrency) in mism else w
        for w in core.winners(t, vs)
    ]  # fmt: skip
    anomalies = an.find_all(t, vs, noise)
    reasons = groups.skip_reasons(anomalies)  # cells summaries leave out, and why
    reasons.update(dict.fromkeys(mism, "workloads"))  # the configs ran different workloads there
    xs = crossover.crossovers(
        t, vs, noise, {(a.scenario, a.concurrency) for a in anomalies if a.kind == "trend_outlier"}
    )
    prov = provenance(ds, t, now)
    if mism:
        prov = prov.model_copy(
            update={"comparability": [*prov.comparability, _workloads_note(t, list(mism.values()))]}
        )
    core_cols = list(core.SWEEP_COLUMNS if kind == "sweep" else core.COMPARE_COLUMNS)
    if any(e.mean("accept_length") is not None for e in t.entries.values() if e.ok):
        core_cols.append("accept_length")  # speculative acceptance, when the runs measured it
    keys = list(
        dict.fromkeys([*core_cols, *core.LATENCY_VERDICT_METRICS, "accept_length", "completed", "failed"])
    )
    metric_keys = [k for k in keys if k in core.METRICS]
    metrics = [V.MetricSpec(**core.METRICS[k].__dict__) for k in metric_keys]
    cols = [
        V.ConfigInfo(
            label=c.label,
            short=c.short,
            method=c.method,
            params=c.params,
            members=c.members,
            is_baseline=c.is_baseline,
        )
        for c in t.columns
    ]
    winners = [
        V.WinnerRow(scenario=w.scenario, concurrency=w.concurrency, metric=core.PRIMARY, values=w.values, winner=w.winner,
                    leader=w.leader, runner_up=w.runner_up, gain=w.gain, verdict=view_verdict(w.verdict) if w.verdict else None,
                    missing=w.missing, note=_winner_note(t, mism.get((w.scenario, w.concurrency))) or _session_note(t, w))
        for w in ws
    ]  # fmt: skip
    anomaly_views = [findings.anomaly_view(t, a) for a in anomalies]
    cross_views = [
        V.Crossover(scenario=x.scenario, a=x.a, b=x.b, metric=x.metric, concurrency=x.concurrency, low=x.low, high=x.high,
                    kind=x.kind, before=x.before, after=x.after,  # type: ignore[arg-type]
                    text=V.Msg(key="cross.baseline" if x.kind == "baseline" else "cross.change",
                               args={"scenario": x.scenario, "a": short_name(t, x.a), "b": short_name(t, x.b), "c": x.concurrency,
                                     "low": x.low, "high": x.high,
                                     "before": "verdict.tie" if x.before == "tie" else short_name(t, x.a if x.before == "a" else x.b),
                                     "after": "verdict.tie" if x.after == "tie" else short_name(t, x.a if x.after == "a" else x.b)}))
        for x in xs
    ]  # fmt: skip
    one = drun if len(ds.run_dirs) == 1 else None
    mvs = groups.member_verdicts(
        t, noise, lambda st, v: agree_with_design(st, v, one)
    )  # compare: a method's picks
    adv = cell_advice.cell_advice(t, vs, mvs)  # the one source of every piece of advice below
    recs = advice.recommendations(t, vs, reasons, bands, min_effect=min_effect, adv=adv)
    band_recs = advice.recommendations(t, vs, reasons, bands, by_class=False, min_effect=min_effect, adv=adv)
    sched = [
        V.ScheduleEntry(**{**s.__dict__, "configs": list(s.configs)}) for s in recommend.schedule(t, adv)
    ]
    checks = advice.checks(t, ds, noise, prov, graph_cap)
    compare = build_compare.compare_summary(t, vs, min_effect, set(mism)) if kind == "compare" else None
    noise_msg = verdict_notes.noise_msg(noise)
    if kind == "sweep":
        head = t.columns[0]
        mdisp = core.method_display(ds, head.method, [c.label for c in t.columns if not c.is_baseline])
        title = (
            V.Msg(key="title.sweep", args={"method": mdisp, "param": t.varied_param})
            if t.varied_param
            else V.Msg(key="title.sweep_any", args={"method": mdisp})
        )
        config_column = f"col.param.{t.varied_param}" if t.varied_param else "col.config"
    else:
        title = V.Msg(key="title.compare", args={"methods": " vs ".join(c.label for c in t.columns)})
        config_column = "col.method"
    advice_views = _advice_views(adv)
    parts = {
        "recs": recs,
        "advice": advice_views,
        "compare": compare,
        "winners": winners,
        "anomalies": anomaly_views,
        "checks": checks,
        "detectable": verdict_notes.detectable(vs) or 0.0,
        "n_compared": len(vs),
    }
    return V.ReportView(
        kind=kind,  # type: ignore[arg-type]
        title=title, provenance=prov, metrics=metrics, core_columns=list(core_cols), config_column=config_column,
        varied_param=t.varied_param, configs=cols, scenarios=t.scenarios(),
        concurrencies=sorted({c for _s, c in t.points}), cells=_cells(t, [*metric_keys, "completed", "failed"]),
        member_cells=_member_cells(t, [*metric_keys, "completed", "failed"]),
        noise=V.NoiseInfo(floor=noise.floor, source=noise.source, n=noise.n, min_effect=noise.min_effect, detail=noise_msg,
                          sigma=noise.sigma, sigma_measured=noise.source != "default",
                          rule=verdict_notes.rule_msg(vs), rule_within=verdict_notes.rule_msg(mvs),
                          ties=verdict_notes.ties_msg(vs),
                          ties_min=verdict_notes.ties_min_msg(vs)),
        verdicts=[view_verdict(v) for v in vs], latency_verdicts=[view_verdict(v) for v in lat], winners=winners,
        findings=findings.band_findings(t, vs, ws, reasons, bands, min_effect), class_best=findings.class_best(t, vs, reasons, min_effect, adv), gaps=findings.gaps(t, vs, ws),
        anomalies=anomaly_views, crossovers=cross_views, recommendations=band_recs + recs, schedule=sched, advice=advice_views, checks=checks,
        compare=compare, next_steps=advice.next_steps(t, parts, noise, prov), lossless=lossless,
        notes=advice.aa_scenario_notes(t, noise) + verdict_notes.model_notes(model.findings(ds, core.PRIMARY, True), lambda x: short_name(t, x) or x, vs) + steady_notes(ds) + advice.computed_notes(t) + advice.preflight_notes(t) + [V.Msg(key="note.skipped", args={"what": w}) for w in skip_notes(ds.skipped)],
        domains=dom_rows, domain_summary=dom_view, design=build_design(ds, run=drun),
    )  # fmt: skip
