"""Build the :class:`ReportView` from run dirs: load -> analysis -> view (numbers + message keys)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from specsweep import stats
from specsweep.analysis import anomalies as an
from specsweep.analysis import core, crossover, recommend
from specsweep.analysis.data import Dataset, load, skip_notes
from specsweep.errors import UsageError, one_of
from specsweep.report import domains, verdict_notes
from specsweep.report import view as V

KINDS = ("sweep", "compare")


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _length_info(scenario: str, r: dict[str, Any]) -> V.LengthInfo | None:
    """The length rule of a result row with ``random_*_len`` keys (issue 19 item 15)."""
    from specsweep.workload.lengths import length_rule

    if r.get("dataset_name") not in (None, "random", "random-ids", "shared-prefix"):
        return None
    try:
        rule = length_rule(
            int(r["random_input_len"]),
            int(r["random_output_len"]),
            float(r.get("random_range_ratio") or 0.0),
            str(r.get("range_ratio_mode") or "sglang"),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return V.LengthInfo(scenario=scenario, input_lo=rule.input_lo, input_hi=rule.input_hi, output_lo=rule.output_lo,
                        output_hi=rule.output_hi, ratio=rule.ratio, mode=rule.mode)  # fmt: skip


def _provenance(ds: Dataset, t: core.Table, now: str | None) -> V.Provenance:
    exps: list[Any] = []
    sources: list[Any] = []
    clients: list[Any] = []
    tools: list[Any] = []
    datasets: list[Any] = []
    lengths: list[V.LengthInfo] = []
    warm: list[int] = []
    models: list[Any] = []
    backends: list[Any] = []
    simulated, scale, ignore_eos = False, None, None

    def add(lst: list[Any], v: Any) -> None:
        if v not in (None, "") and v not in lst:
            lst.append(v)

    used = {d for col in t.columns for lab in col.members for d in ds.configs[lab].run_dirs}
    pairs = [(rd, m) for rd, m in zip(ds.run_dirs, ds.manifests, strict=True) if str(rd.path) in used]
    for _rd, m in pairs:
        e = m.get("experiment")
        add(exps, e.get("name") if isinstance(e, dict) else e)
        add(sources, m.get("source") or "run")
        add(tools, m.get("tool_version"))
        cfg = m.get("config") if isinstance(m.get("config"), dict) else {}
        assert isinstance(cfg, dict)
        cl = m.get("client") if isinstance(m.get("client"), dict) else cfg.get("client")
        cl = cl if isinstance(cl, dict) else {}
        assert isinstance(cl, dict)
        tool = cl.get("tool") or "specsweep bench"
        be = cl.get("backend")
        add(clients, f"{tool} --backend {be}" if isinstance(be, str) and be else tool)
        w = cl.get("warmup", cl.get("warmup_requests"))
        if isinstance(w, int) and not isinstance(w, bool) and w not in warm:
            warm.append(w)
        if cl.get("ignore_eos") is not None:
            ignore_eos = bool(cl.get("ignore_eos")) or bool(ignore_eos)
        add(datasets, cl.get("dataset"))
        ts = (
            m.get("time_scale") or (m.get("sim") or {}).get("time_scale")
            if isinstance(m.get("sim"), dict)
            else m.get("time_scale")
        )
        if m.get("simulated") or ts is not None or m.get("source") == "sim":
            simulated = True
            scale = _num(ts) if ts is not None else scale
    servers = []
    for col in t.columns:
        for lab in col.members:
            meta = ds.configs[lab]
            si = meta.server_info
            argv = si.get("argv") if isinstance(si.get("argv"), list) else []
            backend = si.get("backend") or si.get("launcher") or si.get("kind")
            model = si.get("model") or si.get("model_id")
            versions = si.get("versions") or si.get("version")
            servers.append(
                V.ServerInfo(
                    name=meta.server or lab, label=lab, method=meta.method, params=meta.params,
                    backend=str(backend) if backend else None, model=str(model) if model else None,
                    argv=[str(a) for a in argv or []],
                    version=str(versions) if versions else None,
                    run_dirs=list(meta.run_dirs),
                    column=col.label,
                )
            )  # fmt: skip
            add(models, str(model) if model else None)
            add(backends, str(backend) if backend else None)
            if str(backend or "").startswith("sim"):
                simulated = True
    for cell in ds.cells.values():
        if str(cell.run_dirs[0] if cell.run_dirs else "") not in used:
            continue
        for r in cell.ok[:1]:
            add(datasets, r.get("dataset_name"))
            add(lengths, _length_info(cell.scenario, r))
            if r.get("ignore_eos") is not None:
                ignore_eos = bool(r["ignore_eos"]) or bool(ignore_eos)
            if _num(r.get("time_scale")) is not None:
                simulated, scale = True, _num(r.get("time_scale"))
            w = r.get("warmup_requests")
            if isinstance(w, int) and not isinstance(w, bool) and w not in warm:
                warm.append(w)
    return V.Provenance(
        run_dirs=[str(rd.path) for rd, _m in pairs], experiments=[str(e) for e in exps], sources=sources,
        servers=servers, models=models, backends=backends, clients=clients, warmup=sorted(warm),
        ignore_eos=ignore_eos, datasets=[str(d) for d in datasets], simulated=simulated, time_scale=scale,
        lengths=sorted(lengths, key=lambda x: x.scenario),
        tool_versions=[str(x) for x in tools],
        generated_at=now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )  # fmt: skip


def _verdict(v: core.PairVerdict) -> V.Verdict:
    return V.Verdict(**v.__dict__)


def _cells(t: core.Table, keys: list[str]) -> list[V.Cell]:
    out = []
    for s, c in t.points:
        wc = recommend.scenario_class(s, t.dataset.scenario_defs)
        for col in t.columns:
            e = t.entry(col.label, s, c)
            d = e.data if e else None
            if d is None:
                out.append(
                    V.Cell(
                        scenario=s,
                        concurrency=c,
                        config=col.label,
                        workload_class=wc,
                        status="missing",
                        values=dict.fromkeys(keys),
                    )
                )
                continue
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
            out.append(
                V.Cell(
                    scenario=s, concurrency=c, config=col.label, workload_class=wc, status=status,
                    picked=e.picked if e is not None and t.kind == "compare" else None,
                    repeats=len(d.ok), values=vals, ci=ci, ci_basis=basis,
                    completed=int(sum(d.values("completed"))) if d.values("completed") else None,
                    failed=int(sum(d.values("failed"))) if d.ok else None, accept_length=al, error=err,
                )
            )  # fmt: skip
    return out


def _failure_text(row: dict[str, Any]) -> str:
    """A failed cell's error, led by its machine-readable failure_kind when the run dir has one."""
    kind = row.get("failure_kind")
    return f"{kind}: {row.get('error')}" if kind else str(row.get("error"))


def _levels_text(cs: Sequence[int]) -> str:
    cs = sorted(set(cs))
    return ", ".join(str(c) for c in cs)


def _short(t: core.Table, label: str | None) -> str:
    for c in t.columns:
        if c.label == label:
            return c.short
    return label or ""


def _max_gap(t: core.Table, ws: list[core.Winner], pts: set[tuple[str, int]]) -> dict[str, Any]:
    best: core.Winner | None = None
    for w in ws:
        if (
            (w.scenario, w.concurrency) in pts
            and w.gain is not None
            and (best is None or (best.gain or 0) < w.gain)
        ):
            best = w
    if best is None:
        return {"max_leader": "", "max_gain": 0.0, "max_scenario": "", "max_c": 0}
    return {
        "max_leader": _short(t, best.leader),
        "max_gain": best.gain,
        "max_scenario": best.scenario,
        "max_c": best.concurrency,
    }


def _band_findings(
    t: core.Table, vs: list[core.PairVerdict], ws: list[core.Winner], skip: set[tuple[str, int]], bands: Any
) -> list[V.Finding]:
    out = []
    vs2 = core.VerdictList(vs).without(skip)
    for d in recommend.band_summaries(t, vs2, bands):
        n = d.wins + d.losses + d.ties
        args: dict[str, Any] = {
            "band": f"band.{d.band}", "levels": _levels_text([c for _s, c in d.points]), "n": n,
            "wins": d.wins, "losses": d.losses, "ties": d.ties, "gain": d.expected_gain,
            "config": _short(t, d.config or (d.alternatives[0] if d.alternatives else None)),
            "other": _short(t, d.runner_up if d.config else (d.alternatives[1] if len(d.alternatives) > 1 else None)),
            **_max_gap(t, ws, set(d.points) - skip),
        }  # fmt: skip
        if d.config is None:
            key = "band.tie"
        elif d.losses == 0:
            key = "band.winner"
            p99 = (
                _geo_ratio(t, d.config, d.runner_up, d.points, "p99_e2e_latency_ms") if d.runner_up else None
            )
            if p99 is not None:
                key, args["p99"] = "band.winner_p99", p99
        elif d.wins >= 2 * d.losses and d.wins > d.ties:
            key = "band.mostly"
        else:
            key = "band.mixed"
        out.append(
            V.Finding(
                band=d.band,
                text=V.Msg(key=key, args=args),
                data={"points": [[s, c] for s, c in d.points], "config": d.config},
            )
        )
    return out


def _geo_ratio(t: core.Table, a: str, b: str, pts: list[tuple[str, int]], key: str) -> float | None:
    logs = []
    for s, c in pts:
        x, y = t.value(a, s, c, key), t.value(b, s, c, key)
        if x and y and x > 0 and y > 0:
            logs.append(math.log(x / y))
    return math.expm1(sum(logs) / len(logs)) if logs else None


def _class_best(t: core.Table, vs: list[core.PairVerdict], skip: set[tuple[str, int]]) -> list[V.ClassBest]:
    vs2 = core.VerdictList(vs).without(skip)
    out = []
    for d in recommend.class_decisions(t, vs2):
        scen = sorted({s for s, _c in d.points})
        n = d.wins + d.losses + d.ties
        best = d.config
        args: dict[str, Any] = {
            "wins": d.wins,
            "losses": d.losses,
            "ties": d.ties,
            "n": n,
            "scenarios": ", ".join(scen),
        }
        if best is None or d.runner_up is None:
            msg = V.Msg(key="class.reason_tie", args=args)
        else:
            other = d.runner_up
            args.update(other=_short(t, other), gain=d.expected_gain)
            al_a = _geo_ratio(t, best, other, d.points, "accept_length")
            acc = [t.value(best, s, c, "accept_length") for s, c in d.points]
            acc_o = [t.value(other, s, c, "accept_length") for s, c in d.points]
            acc_f = [x for x in acc if x]
            acc_of = [x for x in acc_o if x]
            if al_a is not None and acc_f and acc_of:
                args.update(accept_a=sum(acc_f) / len(acc_f), accept_b=sum(acc_of) / len(acc_of))
                msg = V.Msg(key="class.reason_accept", args=args)
            else:
                args.update(
                    tpot=_geo_ratio(t, best, other, d.points, "mean_tpot_ms") or 0.0,
                    ttft=_geo_ratio(t, best, other, d.points, "mean_ttft_ms") or 0.0,
                )
                msg = V.Msg(key="class.reason", args=args)
        out.append(
            V.ClassBest(workload_class=d.workload_class or "other", scenarios=scen, config=best, wins=d.wins,
                        losses=d.losses, ties=d.ties, mean_gain=d.expected_gain if best else None, reason=msg)
        )  # fmt: skip
    order = ["chat", "generation", "decode_heavy", "rag", "long_context", "other"]
    out.sort(key=lambda cb: order.index(cb.workload_class) if cb.workload_class in order else 99)
    return out


def _gaps(t: core.Table, vs: list[core.PairVerdict], ws: list[core.Winner]) -> list[V.GapTable]:
    pair = recommend.gap_pairs(t, ws)
    if pair is None:
        return []
    a, b = pair
    out = []
    for s in t.scenarios():
        rows = []
        series = []
        for c in t.levels(s):
            va, vb = t.value(a, s, c, core.PRIMARY), t.value(b, s, c, core.PRIMARY)
            v = core.find_verdict(vs, s, c, a, b)
            if v is None:
                rows.append(
                    V.GapRow(
                        concurrency=c, a_value=va, b_value=vb, verdict=None, text=V.Msg(key="gap.missing")
                    )
                )
                continue
            lead = _short(t, v.leader)
            key = "gap.tie" if v.verdict == "tie" else "gap.lead"
            rows.append(
                V.GapRow(
                    concurrency=c,
                    a_value=va,
                    b_value=vb,
                    verdict=_verdict(v),
                    text=V.Msg(key=key, args={"leader": lead, "gain": v.gain}),
                )
            )
            series.append((c, v))
        if len(series) < 3:
            continue
        (c0, v0), (c1, v1) = series[0], series[-1]
        args: dict[str, Any] = {
            "c0": c0,
            "c1": c1,
            "g0": v0.gain,
            "g1": v1.gain,
            "leader": _short(t, v1.leader),
            "first": _short(t, v0.leader),
        }
        signed = [math.log1p(core.oriented(v, a)[0]) for _c, v in series]
        if v0.leader != v1.leader and v0.verdict != "tie":
            key = "gap.flips"
        elif (
            all(abs(y2) >= abs(y1) for y1, y2 in itertools.pairwise(signed))
            and len({y > 0 for y in signed[1:]}) == 1
        ):
            key = "gap.widens"
        elif all(abs(y2) <= abs(y1) for y1, y2 in itertools.pairwise(signed)):
            key = "gap.narrows"
        else:
            key = "gap.mixed"
        out.append(
            V.GapTable(
                scenario=s, metric=core.PRIMARY, a=a, b=b, rows=rows, summary=V.Msg(key=key, args=args)
            )
        )
    return out


def _anomaly_view(t: core.Table, a: an.AnomalyData) -> V.Anomaly:
    d = dict(a.data)
    args: dict[str, Any]
    if a.kind == "trend_outlier":
        if d["effect"] < 0:  # told from the side of the config that leads in this cell
            d = {
                **d,
                "a": d["b"],
                "b": d["a"],
                "effect": 1 / (1 + d["effect"]) - 1,
                "expected": 1 / (1 + d["expected"]) - 1,
            }
        args = {"a": _short(t, d["a"]), "b": _short(t, d["b"]), "effect": d["effect"], "expected": d["expected"],
                "floors": d["floors"], "neighbours": ", ".join(str(c) for c in d["neighbours"])}  # fmt: skip
    elif a.kind == "prefix_cache":
        pc = d["per_config"][d["config"]]
        args = {"config": d["config"], "throughput_gain": d["throughput_gain"], "ttft_drop": d["ttft_drop"],
                "throughput": pc["throughput"], "next_throughput": pc["next_throughput"], "ttft_ms": pc["ttft_ms"],
                "prev_ttft_ms": pc["prev_ttft_ms"], "next_concurrency": pc["next_concurrency"],
                "prev_concurrency": pc["prev_concurrency"]}  # fmt: skip
        if len(a.configs) > 1:
            args["config"] = ", ".join(a.configs)
    elif a.kind == "invalid_run":
        args = {"config": d["config"], "reason": d.get("reason") or "-"}
    else:
        kinds = d.get("kinds") or {}
        kt = ("; " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items()))) if kinds else ""
        fk = d.get("failure_kinds") or {}
        if fk:  # failed cells by failure_kind (orchestrate.FAILURE_KINDS), e.g. "server_died x2"
            kt += "; " + ", ".join(k if n == 1 else f"{k} x{n}" for k, n in sorted(fk.items())) + ":"
        if d.get("error"):
            kt += f"; {d['error']}" if not fk else f" {d['error']}"
        args = {"config": d["config"], "failed": d["failed"], "share": d["share"], "kinds_text": kt}
        if d.get("max_in_1s"):
            args["max_in_1s"] = d["max_in_1s"]
            return V.Anomaly(scenario=a.scenario, concurrency=a.concurrency, kind="error_burst", configs=a.configs,
                             evidence=V.Msg(key="anomaly.error_burst_window", args=args), data=_jsonable(d))  # fmt: skip
    return V.Anomaly(scenario=a.scenario, concurrency=a.concurrency, kind=a.kind, configs=a.configs,  # type: ignore[arg-type]
                     evidence=V.Msg(key=f"anomaly.{a.kind}", args=args), data=_jsonable(d))  # fmt: skip


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _recommendations(
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
            "other": _short(t, d.runner_up),
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
            argv = meta.server_info.get("argv") if isinstance(meta.server_info.get("argv"), list) else None
            engine = recommend.engine_of(
                str(
                    meta.server_info.get("backend")
                    or meta.server_info.get("launcher")
                    or meta.server_info.get("kind")
                    or ""
                )
            )
            f = recommend.engine_flags(
                meta.method, meta.params, [str(a) for a in argv] if argv else None, engine=engine
            )
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


def _checks(
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


def _compare_summary(t: core.Table, ws: list[core.Winner]) -> V.CompareSummary:
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


def _next_steps(
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
                args={"c_high": high.c_low, "high": _short(t, high.config), "low": _short(t, low.config)},
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
            V.Msg(key="next.repeats", args={"floor": noise.floor, "detectable": view_parts["detectable"]})
        )
    if prov.warmup and max(prov.warmup) >= 10:
        steps.append(V.Msg(key="next.warmup", args={"n": max(prov.warmup)}))
    return steps


def _preflight_notes(t: core.Table) -> list[V.Msg]:
    """Pre-flight checks that did not pass at the start of the run (manifest ``preflight``)."""
    out = []
    for man in t.dataset.manifests:
        for c in man.get("preflight") or []:
            if isinstance(c, dict) and c.get("status") in ("warn", "fail"):
                out.append(V.Msg(key="note.preflight", args={k: str(c.get(k) or "-") for k in
                                                             ("status", "check", "config", "message", "fix")}))  # fmt: skip
    return out


def _notes(t: core.Table) -> list[V.Msg]:
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


def _aa_scenarios(t: core.Table, noise: core.Noise) -> list[V.Msg]:
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
    """The whole analysis of the run dirs as one view model (see :mod:`specsweep.report.view`)."""
    if kind not in KINDS:
        raise UsageError(f"--kind: {one_of(kind, KINDS)}")
    if min_effect < 0:
        raise UsageError(f"--min-effect must be >= 0, got {min_effect}")
    bands = bands or recommend.DEFAULT_BANDS
    ds = load(run_dirs)
    baseline = baseline or domains.baseline_label(ds)  # an experiment's `baseline: true` server
    t = core.build_sweep(ds, method, baseline) if kind == "sweep" else core.build_compare(ds, baseline)
    noise = core.measure_noise(ds, min_effect)
    dom_rows, dom_view = domains.build_domains(ds, noise, baseline)
    vs = core.all_verdicts(t, core.PRIMARY, noise)
    lat = [v for m in core.LATENCY_VERDICT_METRICS for v in core.all_verdicts(t, m, noise)]
    ws = core.winners(t, vs)
    anomalies = an.find_all(t, vs, noise)
    skip = {(a.scenario, a.concurrency) for a in anomalies if a.kind in ("trend_outlier", "prefix_cache")}
    xs = crossover.crossovers(
        t, vs, noise, {(a.scenario, a.concurrency) for a in anomalies if a.kind == "trend_outlier"}
    )
    prov = _provenance(ds, t, now)
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
                    leader=w.leader, runner_up=w.runner_up, gain=w.gain, verdict=_verdict(w.verdict) if w.verdict else None,
                    missing=w.missing)
        for w in ws
    ]  # fmt: skip
    anomaly_views = [_anomaly_view(t, a) for a in anomalies]
    cross_views = [
        V.Crossover(scenario=x.scenario, a=x.a, b=x.b, metric=x.metric, concurrency=x.concurrency, low=x.low, high=x.high,
                    kind=x.kind, before=x.before, after=x.after,  # type: ignore[arg-type]
                    text=V.Msg(key="cross.baseline" if x.kind == "baseline" else "cross.change",
                               args={"scenario": x.scenario, "a": _short(t, x.a), "b": _short(t, x.b), "c": x.concurrency,
                                     "low": x.low, "high": x.high,
                                     "before": "verdict.tie" if x.before == "tie" else _short(t, x.a if x.before == "a" else x.b),
                                     "after": "verdict.tie" if x.after == "tie" else _short(t, x.a if x.after == "a" else x.b)}))
        for x in xs
    ]  # fmt: skip
    recs = _recommendations(t, vs, skip, bands)
    band_recs = _recommendations(t, vs, skip, bands, by_class=False)
    sched = [V.ScheduleEntry(**s.__dict__) for s in recommend.schedule(t, ws, skip)]
    checks = _checks(t, ds, noise, prov, graph_cap)
    compare = _compare_summary(t, ws) if kind == "compare" else None
    noise_msg = verdict_notes.noise_msg(noise)
    if kind == "sweep":
        head = t.columns[0]
        mdisp = core.method_display(ds, head.method)
        title = (
            V.Msg(key="title.sweep", args={"method": mdisp, "param": t.varied_param})
            if t.varied_param
            else V.Msg(key="title.sweep_any", args={"method": mdisp})
        )
        config_column = f"col.param.{t.varied_param}" if t.varied_param else "col.config"
    else:
        title = V.Msg(key="title.compare", args={"methods": " vs ".join(c.label for c in t.columns)})
        config_column = "col.method"
    parts = {
        "bands": band_recs,
        "compare": compare,
        "winners": winners,
        "anomalies": anomaly_views,
        "checks": checks,
        "detectable": verdict_notes.detectable(vs) or 0.0,
    }
    return V.ReportView(
        kind=kind,  # type: ignore[arg-type]
        title=title, provenance=prov, metrics=metrics, core_columns=list(core_cols), config_column=config_column,
        varied_param=t.varied_param, configs=cols, scenarios=t.scenarios(),
        concurrencies=sorted({c for _s, c in t.points}), cells=_cells(t, [*metric_keys, "completed", "failed"]),
        noise=V.NoiseInfo(floor=noise.floor, source=noise.source, n=noise.n, min_effect=noise.min_effect, detail=noise_msg,
                          sigma=noise.sigma, sigma_measured=noise.source != "default",
                          rule=verdict_notes.rule_msg(vs), ties=verdict_notes.ties_msg(vs)),
        verdicts=[_verdict(v) for v in vs], latency_verdicts=[_verdict(v) for v in lat], winners=winners,
        findings=_band_findings(t, vs, ws, skip, bands), class_best=_class_best(t, vs, skip), gaps=_gaps(t, vs, ws),
        anomalies=anomaly_views, crossovers=cross_views, recommendations=band_recs + recs, schedule=sched, checks=checks,
        compare=compare, next_steps=_next_steps(t, parts, noise, prov), lossless=lossless,
        notes=_aa_scenarios(t, noise) + _notes(t) + _preflight_notes(t) + [V.Msg(key="note.skipped", args={"what": w}) for w in skip_notes(ds.skipped)],
        domains=dom_rows, domain_summary=dom_view,
    )  # fmt: skip
