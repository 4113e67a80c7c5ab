"""Decisions read from the verdicts: per concurrency band and workload class, which config to deploy,
how much it is expected to gain and how sure that is; schedules; engine flags; domain checks.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from typing import Any

from specsweep.analysis.advice import CellAdvice
from specsweep.analysis.core import (
    METRICS,
    PRIMARY,
    Noise,
    PairVerdict,
    Table,
    Winner,
    find_verdict,
    oriented,
)
from specsweep.analysis.outcomes import cell_outcomes
from specsweep.measure.acceptance import spec_tokens
from specsweep.stats.planning import gain_interval
from specsweep.workload.scenarios import BUILTIN, Scenario, workload_class

# Concurrency bands (inclusive upper bounds): low <= 32 < mid < 96 <= high.
DEFAULT_BANDS: list[tuple[str, int, int | None]] = [("low", 1, 32), ("mid", 33, 95), ("high", 96, None)]
# Open-loop cells with no concurrency limit (level 0, cells by request rate): a band of their own.
OPEN_BAND: tuple[str, int, int | None] = ("open", 0, 0)
CUDA_GRAPH_CAP = 512  # vLLM max_cudagraph_capture_size default
DRAFTER_BLOCK = {"dspark": 5}  # drafters that propose a fixed block of tokens per pass


def band_of(c: int, bands: list[tuple[str, int, int | None]] = DEFAULT_BANDS) -> tuple[str, int, int | None]:
    if c == 0:
        return OPEN_BAND
    for b in bands:
        if c >= b[1] and (b[2] is None or c <= b[2]):
            return b
    return bands[-1]


def scenario_class(name: str, extra: dict[str, Scenario] | None = None) -> str:
    sc = (extra or {}).get(name) or BUILTIN.get(name)
    return workload_class(sc) if sc is not None else "other"


_SGLANG_ALGO = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN", "nextn": "NEXTN", "ngram": "NGRAM",
                "draft_model": "STANDALONE", "standalone": "STANDALONE"}  # fmt: skip
_NO_SPEC = {"none", "baseline", "nospec", "no_spec", ""}


ENGINES = ("vllm", "sglang", "llamacpp", "sim")


def engine_of(backend: str | None) -> str | None:
    """The engine family a backend string names ("vllm-dspark (TP=8)" -> "vllm"); None if unknown."""
    b = (backend or "").lower()
    for key, eng in (("sglang", "sglang"), ("vllm", "vllm"), ("llama", "llamacpp"), ("sim", "sim")):
        if key in b:
            return eng
    return None


def engine_flags(
    method: str, params: dict[str, Any], argv: list[str] | None = None, *, engine: str | None = None
) -> dict[str, str | None]:
    """Speculative-decoding flags to deploy a measured config, only for the engine that ran it
    (``engine``: vllm or sglang; none for llama.cpp, the simulator or an unknown engine, whose
    measured argv is the recipe) and only with values the config set (nothing filled in by default).
    A config without speculation gets no flags. ``measured`` is the argv the server ran with."""
    measured = shlex.join(argv) if argv else None
    m = method.lower()
    out: dict[str, str | None] = {"vllm": None, "sglang": None, "measured": measured}
    if m in _NO_SPEC:
        return out
    k = spec_tokens(method, params)
    if engine == "vllm":
        cfg: dict[str, Any] = {"method": m}
        if params.get("draft_model"):
            cfg["model"] = params["draft_model"]
        if k is not None:
            cfg["num_speculative_tokens"] = k
        for key in ("prompt_lookup_max", "prompt_lookup_min"):
            if key in params:
                cfg[key] = params[key]
        out["vllm"] = "--speculative-config " + shlex.quote(json.dumps(cfg))
    algo = _SGLANG_ALGO.get(m)
    if engine == "sglang" and algo is not None:
        parts = [f"--speculative-algorithm {algo}"]
        if params.get("draft_model"):
            parts.append(f"--speculative-draft-model-path {params['draft_model']}")
        steps = params.get("num_steps", params.get("speculative_num_steps", k))
        if steps is not None:
            parts.append(f"--speculative-num-steps {steps}")
        for key, flag in (
            ("topk", "--speculative-eagle-topk"),
            ("draft_tokens", "--speculative-num-draft-tokens"),
        ):
            if key in params:
                parts.append(f"{flag} {params[key]}")
        out["sglang"] = " ".join(parts)
    return out


@dataclass
class GroupDecision:
    workload_class: str | None
    band: str
    c_low: int
    c_high: int | None
    points: list[tuple[str, int]]
    config: str | None
    runner_up: str | None
    alternatives: list[str]
    wins: int
    losses: int
    ties: int
    expected_gain: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: str
    basis: str
    per_cell: list[dict[str, Any]] = field(default_factory=list)


def decide_group(
    t: Table,
    vs: list[PairVerdict],
    points: list[tuple[str, int]],
    wc: str | None,
    band: tuple[str, int, int | None],
) -> GroupDecision | None:
    labels = [c.label for c in t.columns]
    score: dict[str, int] = dict.fromkeys(labels, 0)
    logsum: dict[str, float] = dict.fromkeys(labels, 0.0)
    present: set[str] = set()
    for s, c in points:
        for i in range(len(labels)):
            for j in range(i + 1, len(labels)):
                v = find_verdict(vs, s, c, labels[i], labels[j])
                if v is None:
                    continue
                present.update((v.a, v.b))
                if v.winner:
                    score[v.winner] += 1
                    score[v.b if v.winner == v.a else v.a] -= 1
                logsum[v.a] += math.log1p(v.effect)
                logsum[v.b] -= math.log1p(v.effect)
    cands = [lab for lab in labels if lab in present]
    if len(cands) < 2:
        return None
    # the leader is beaten in the fewest cells (with two configs: the better score), so with three or
    # more it is never a config that another one beats where it is itself unbeaten (issue 26 item 3)
    outs = cell_outcomes(t, vs, points)
    behind = {lab: sum(1 for o in outs if o.beaten_by.get(lab)) for lab in cands}
    cands.sort(key=lambda lab: (-behind[lab], score[lab], logsum[lab]), reverse=True)
    best, second = cands[0], cands[1]
    wins = losses = ties = 0
    effects: list[float] = []
    ses: list[float] = []
    dfs: list[float] = []
    shared: list[float] = []
    shared_dfs: list[float] = []
    bases: list[str] = []
    per_cell = []
    for s, c in points:
        v = find_verdict(vs, s, c, best, second)
        if v is None:
            continue
        e, lo1, hi1, verdict = oriented(v, best)
        bases.append(v.basis)
        wins += verdict == "a"
        losses += verdict == "b"
        ties += verdict == "tie"
        effects.append(math.log1p(e))
        ses.append(v.se_log)
        dfs.append(math.inf if v.df is None else v.df)
        shared.append(v.se_shared)
        shared_dfs.append(math.inf if v.df_shared is None else v.df_shared)
        per_cell.append({"scenario": s, "concurrency": c, "effect": e, "verdict": verdict})
    if not effects:
        return None
    g, lo_g, hi_g = gain_interval(effects, ses, dfs, shared, shared_dfs=shared_dfs)
    if len(effects) == 1:  # one cell: its comparison's own interval, as every table shows it (issue 34)
        lo_g, hi_g = lo1, hi1
    alternatives = []
    for lab in cands[1:]:
        vv = [find_verdict(vs, s, c, best, lab) for s, c in points]
        vv2 = [v for v in vv if v is not None]
        if vv2 and all(v.verdict == "tie" for v in vv2):
            alternatives.append(lab)
    n = len(effects)
    measured = all(b == "repeats" for b in bases)  # "high" rests on measured repeats, never on a floor
    config: str | None = best
    if wins == 0:
        config = None
        confidence = "medium" if n >= 2 and losses == 0 else "low"
        alternatives = [best, *alternatives]  # the leader and every config even with it
    elif wins == n and n >= 2 and measured:
        confidence = "high"
    elif losses == 0 and wins * 2 >= n:
        confidence = "medium"
    else:
        confidence = "low"
    basis = max(set(bases), key=bases.count)
    return GroupDecision(wc, band[0], band[1], band[2], points, config, second, alternatives, wins, losses, ties,
                         g, lo_g, hi_g, confidence, basis, per_cell)  # fmt: skip


def group_points(
    t: Table, bands: list[tuple[str, int, int | None]], by_class: bool
) -> dict[tuple[str | None, str], list[tuple[str, int]]]:
    groups: dict[tuple[str | None, str], list[tuple[str, int]]] = {}
    for s, c in t.points:
        wc = scenario_class(s, t.dataset.scenario_defs) if by_class else None
        groups.setdefault((wc, band_of(c, bands)[0]), []).append((s, c))
    return groups


def recommendations(
    t: Table, vs: list[PairVerdict], bands: list[tuple[str, int, int | None]] = DEFAULT_BANDS
) -> list[GroupDecision]:
    out = []
    bands = [*bands, OPEN_BAND]
    bmap = {b[0]: b for b in bands}
    class_order = ["chat", "generation", "decode_heavy", "rag", "long_context", "other"]
    groups = group_points(t, bands, by_class=True)
    for (wc, bname), pts in sorted(
        groups.items(),
        key=lambda kv: (class_order.index(kv[0][0] or "other"), [b[0] for b in bands].index(kv[0][1])),
    ):
        d = decide_group(t, vs, pts, wc, bmap[bname])
        if d is not None:
            out.append(d)
    return out


def band_summaries(
    t: Table, vs: list[PairVerdict], bands: list[tuple[str, int, int | None]] = DEFAULT_BANDS
) -> list[GroupDecision]:
    out = []
    groups = group_points(t, bands, by_class=False)
    for b in [*bands, OPEN_BAND]:
        pts = groups.get((None, b[0]))
        if pts:
            d = decide_group(t, vs, pts, None, b)
            if d is not None:
                out.append(d)
    return out


def class_decisions(t: Table, vs: list[PairVerdict]) -> list[GroupDecision]:
    by: dict[str, list[tuple[str, int]]] = {}
    for s, c in t.points:
        by.setdefault(scenario_class(s, t.dataset.scenario_defs), []).append((s, c))
    out = []
    for wc, pts in by.items():
        d = decide_group(t, vs, pts, wc, ("all", 1, None))
        if d is not None:
            out.append(d)
    return out


@dataclass(frozen=True)
class ScheduleData:
    scope: str
    c_low: int
    c_high: int | None
    config: str | None  # the one config advised, else None
    configs: tuple[str, ...] = ()
    state: str = "pick"
    more_runs: int | None = None
    gap: float | None = None


def schedule(t: Table, adv: dict[tuple[str, int], CellAdvice]) -> list[ScheduleData]:
    """Per scenario: runs of consecutive levels with the same cell advice (:mod:`analysis.advice`):
    the one config to run, or the configs left even or undecided (with the most runs a side any of
    the run's cells needs and the largest gap). Every cell with advice is in it, anomalies or not."""
    out: list[ScheduleData] = []
    for s in t.scenarios():
        runs: list[list[Any]] = []
        for c in t.levels(s):
            a = adv.get((s, c))
            if a is None:
                continue
            key = (tuple(a.configs), a.state)
            if runs and runs[-1][2] == key:
                runs[-1][1] = c
                runs[-1][3].append(a)
            else:
                runs.append([c, c, key, [a]])
        for lo, hi, (configs, state), cells in runs:
            more = [a.more_runs for a in cells if a.more_runs is not None]
            gaps = [a.gap for a in cells if a.gap is not None]
            out.append(ScheduleData(s, lo, hi, configs[0] if state == "pick" else None, configs, state,
                                    max(more) if more else None, max(gaps) if gaps else None))  # fmt: skip
    return out


@dataclass
class CheckData:
    kind: str
    severity: str
    configs: list[str]
    cells: list[list[str | int]]
    data: dict[str, Any]


def domain_checks(
    t: Table, manifests: list[dict[str, Any]], noise: Noise, graph_cap: int = CUDA_GRAPH_CAP
) -> list[CheckData]:
    out: list[CheckData] = []
    ds = t.dataset
    for col in t.columns:
        for lab in col.members:
            meta = ds.configs.get(lab)
            if meta is None:
                continue
            k = spec_tokens(meta.method, meta.params)
            if k is None or meta.method.lower() in _NO_SPEC:
                continue
            over = [
                (s, c) for (s, c) in t.points if ds.get(lab, s, c) is not None and c * (k + 1) > graph_cap
            ]
            if over:
                first = min(c for _s, c in over)
                out.append(CheckData("cuda_graph_cap", "warn", [lab], [[s, c] for s, c in over],
                                     {"config": lab, "k": k, "cap": graph_cap, "from_concurrency": first,
                                      "tokens": first * (k + 1), "threshold": graph_cap // (k + 1) + 1}))  # fmt: skip
            block = DRAFTER_BLOCK.get(meta.method.lower())
            if block is not None and k < block:
                out.append(
                    CheckData(
                        "below_block_size",
                        "warn",
                        [lab],
                        [],
                        {"config": lab, "k": k, "block": block, "method": meta.method},
                    )
                )
    datasets: set[str] = set()
    ignore_eos = False
    for man in manifests:
        cfg = man.get("config") if isinstance(man.get("config"), dict) else {}
        assert isinstance(cfg, dict)
        cl = man.get("client") if isinstance(man.get("client"), dict) else cfg.get("client")
        cl = cl if isinstance(cl, dict) else {}
        if cl.get("ignore_eos"):
            ignore_eos = True
        if cl.get("dataset"):
            datasets.add(str(cl["dataset"]))
    for cell in ds.cells.values():
        for r in cell.ok:
            if r.get("dataset_name"):
                datasets.add(str(r["dataset_name"]))
            if r.get("dataset"):
                datasets.add(str(r["dataset"]))
            if r.get("ignore_eos"):
                ignore_eos = True
    defs = {**BUILTIN, **ds.scenario_defs}
    datasets.update(defs[s].dataset for s in t.scenarios() if s in defs)
    spec_cols = [c.label for c in t.columns if c.method.lower() not in _NO_SPEC]
    if "random-ids" in datasets:
        out.append(CheckData("random_ids", "warn", spec_cols, [], {"dataset": "random-ids"}))
    if ignore_eos and spec_cols:
        out.append(CheckData("ignore_eos", "info", spec_cols, [], {}))
    if noise.source == "default":
        out.append(CheckData("single_run", "info", [], [], {"floor": noise.floor, "sigma": noise.sigma}))
    return out


@dataclass(frozen=True)
class RatioData:
    metric: str
    numerator: str
    denominator: str
    mean_ratio: float
    n_cells: int


def latency_ratios(
    t: Table, ref: str, metrics: list[str], skip: set[tuple[str, int]] | None = None
) -> list[RatioData]:
    """Mean over cells of other/ref per latency metric (the reference reports' "平均比值"); ``skip``:
    cells left out (the configs ran different workloads there)."""
    out = []
    for col in t.columns:
        if col.label == ref:
            continue
        for m in metrics:
            rs = []
            for s, c in t.points:
                if skip and (s, c) in skip:
                    continue
                a, b = t.value(ref, s, c, m), t.value(col.label, s, c, m)
                if a and b:
                    rs.append(b / a)
            if rs:
                out.append(RatioData(m, col.label, ref, sum(rs) / len(rs), len(rs)))
    return out


def gap_pairs(t: Table, ws: list[Winner]) -> tuple[str, str] | None:
    """The two columns a gap table follows: the two that lead most often (ties by table order)."""
    labels = [c.label for c in t.columns if not c.is_baseline]
    if len(labels) < 2:
        return None
    lead = dict.fromkeys(labels, 0)
    for w in ws:
        if w.leader in lead:
            lead[w.leader] += 1
        if w.runner_up in lead:
            lead[w.runner_up] += 1
    top = sorted(labels, key=lambda lab: -lead[lab])[:2]
    top.sort(key=labels.index)
    return top[0], top[1]


__all__ = ["METRICS", "PRIMARY"]
