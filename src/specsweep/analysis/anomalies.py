"""Anomalies: cells whose numbers need a second look, each with the evidence that flagged it.

- trend_outlier: a cell whose comparison (log of a/b on the primary metric) departs from the line
  through the other concurrency levels of its scenario (at least three of them) by more than ``k``
  noise floors (interior levels only: an end point would be judged by extrapolation). A flag sets the
  cell aside from the band summaries' counts, never from the cell advice (analysis.advice).
- prefix_cache: throughput above the next concurrency level while TTFT dropped below the previous
  level's - the signature of prompts reused from an earlier run hitting the prefix cache.
- invalid_run: the client marked the run invalid (it was the bottleneck, etc.).
- error_burst: failed requests in the run.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from specsweep.analysis.core import PRIMARY, Noise, PairVerdict, Table, find_verdict, oriented
from specsweep.stats import basic as stats

OUTLIER_FLOORS = 4.0
# a cell is judged against the line through at least three other levels of its scenario (issue 34
# item 4: two other points make a "trend" that any real change of slope departs from)
MIN_TREND_POINTS = 4


@dataclass
class AnomalyData:
    scenario: str
    concurrency: int
    kind: str
    configs: list[str]
    data: dict[str, Any] = field(default_factory=dict)


def trend_outliers(
    t: Table, vs: list[PairVerdict], noise: Noise, k: float = OUTLIER_FLOORS
) -> list[AnomalyData]:
    out = []
    labels = [c.label for c in t.columns]
    limit = k * math.log1p(noise.floor)
    for s in t.scenarios():
        levels = [c for c in t.levels(s) if c > 0]  # 0: open loop, not on the concurrency axis
        for i in range(len(labels)):
            for j in range(i + 1, len(labels)):
                a, b = labels[i], labels[j]
                xs, ys, cs = [], [], []
                for c in levels:
                    v = find_verdict(vs, s, c, a, b)
                    if v is None:
                        continue
                    e = oriented(v, a)[0]
                    xs.append(math.log(c))
                    ys.append(math.log1p(e))
                    cs.append(c)
                if len(cs) < MIN_TREND_POINTS:
                    continue
                # the worst departure first, then again without it, so one outlier never makes its
                # neighbour look like one (each judged against at least three other levels)
                while len(cs) >= MIN_TREND_POINTS:
                    rs = [(abs(stats.loo_residual(xs, ys, n)), n) for n in range(1, len(cs) - 1)]
                    worst, n = max(rs)
                    if worst <= limit:
                        break
                    r = stats.loo_residual(xs, ys, n)
                    out.append(
                        AnomalyData(
                            s, cs[n], "trend_outlier", [a, b],
                            {
                                "a": a, "b": b, "effect": math.expm1(ys[n]), "expected": math.expm1(ys[n] - r),
                                "departure": math.expm1(abs(r)), "floors": abs(r) / math.log1p(noise.floor),
                                "neighbours": [c for c in cs if c != cs[n]],
                            },
                        )
                    )  # fmt: skip
                    del xs[n], ys[n], cs[n]
    return out


def prefix_cache(t: Table, noise: Noise, metric: str = PRIMARY) -> list[AnomalyData]:
    found: dict[tuple[str, int], AnomalyData] = {}
    f = noise.floor
    for s in t.scenarios():
        levels = t.levels(s)
        for col in t.columns:
            for n in range(1, len(levels) - 1):
                c0, c1, c2 = levels[n - 1], levels[n], levels[n + 1]
                thr1, thr2 = t.value(col.label, s, c1, metric), t.value(col.label, s, c2, metric)
                tt0, tt1 = (
                    t.value(col.label, s, c0, "mean_ttft_ms"),
                    t.value(col.label, s, c1, "mean_ttft_ms"),
                )
                if None in (thr1, thr2, tt0, tt1):
                    continue
                assert thr1 is not None and thr2 is not None and tt0 is not None and tt1 is not None
                if thr1 > thr2 * (1 + f) and tt1 < tt0 / (1 + f):
                    a = found.setdefault((s, c1), AnomalyData(s, c1, "prefix_cache", [], {"per_config": {}}))
                    a.configs.append(col.label)
                    a.data["per_config"][col.label] = {
                        "throughput": thr1, "next_concurrency": c2, "next_throughput": thr2,
                        "ttft_ms": tt1, "prev_concurrency": c0, "prev_ttft_ms": tt0,
                    }  # fmt: skip
    for a in found.values():
        pc = a.data["per_config"]
        first = pc[a.configs[0]]
        a.data.update(
            config=a.configs[0],
            throughput_gain=first["throughput"] / first["next_throughput"] - 1,
            ttft_drop=1 - first["ttft_ms"] / first["prev_ttft_ms"],
            next_concurrency=first["next_concurrency"],
            prev_concurrency=first["prev_concurrency"],
        )
    return list(found.values())


def run_problems(t: Table) -> list[AnomalyData]:
    """Invalid runs and failed requests of every config the table compares, its best-of pick or not:
    a compare column's other configs are listed too (issue 28 item 2)."""
    out = []
    members = list(dict.fromkeys(lab for col in t.columns for lab in col.members))
    cells = [d for s, c in t.points for lab in members if (d := t.dataset.get(lab, s, c)) is not None]
    for d in cells:
        s, c = d.scenario, d.concurrency
        for row in d.bad:
            if row.get("status") == "invalid":
                out.append(
                    AnomalyData(
                        s,
                        c,
                        "invalid_run",
                        [d.label],
                        {
                            "config": d.label,
                            "reason": str(row.get("error") or row.get("invalid_reason") or ""),
                            "reasons": row.get("invalid_reasons"),  # each reason's code and figures
                        },
                    )
                )
        failed = sum(int(r.get("failed") or 0) for r in d.ok) + sum(
            int(r.get("failed") or 0) for r in d.bad if r.get("status") == "failed"
        )
        done = sum(int(r.get("completed") or 0) for r in d.ok + d.bad)
        n_failed_runs = sum(1 for r in d.bad if r.get("status") == "failed")
        if failed > 0 or n_failed_runs:
            kinds: Counter[str] = Counter()
            max_1s = 0
            for recs in d.records:
                kinds.update(r.error_kind for r in recs if r.error_kind and not r.is_warmup)
                max_1s = max(
                    max_1s,
                    _max_in_window([r.end_ns or r.send_ns for r in recs if r.error_kind and not r.is_warmup]),
                )
            if not kinds:
                for r in d.ok + d.bad:
                    ebk = r.get("errors_by_kind")
                    if isinstance(ebk, dict):
                        kinds.update({str(k): int(v) for k, v in ebk.items() if isinstance(v, int)})
            out.append(
                AnomalyData(
                    s, c, "error_burst", [d.label],
                    {
                        "config": d.label, "failed": failed, "completed": done, "failed_runs": n_failed_runs,
                        "runs": len(d.ok) + n_failed_runs,
                        "share": failed / (failed + done) if failed + done else 1.0,
                        "kinds": dict(kinds), "max_in_1s": max_1s,
                        "error": next((str(r.get("error")) for r in d.bad
                                       if r.get("status") == "failed" and r.get("error")), ""),
                        "failure_kinds": dict(Counter(str(r["failure_kind"]) for r in d.bad
                                                      if r.get("status") == "failed" and r.get("failure_kind"))),
                    },
                )
            )  # fmt: skip
    # the same cell of a config appears once per column it belongs to: dedupe
    seen: set[tuple[str, int, str, str]] = set()
    uniq = []
    for a in out:
        key = (a.scenario, a.concurrency, a.kind, a.configs[0])
        if key not in seen:
            seen.add(key)
            uniq.append(a)
    return uniq


def _max_in_window(times_ns: list[int], window_ns: int = 1_000_000_000) -> int:
    """Most events within any window of ``window_ns`` (how bursty the failures were)."""
    ts = sorted(times_ns)
    best = lo = 0
    for hi, t in enumerate(ts):
        while t - ts[lo] > window_ns:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def find_all(t: Table, vs: list[PairVerdict], noise: Noise) -> list[AnomalyData]:
    found = trend_outliers(t, vs, noise) + prefix_cache(t, noise) + run_problems(t)
    order = {s: i for i, s in enumerate(t.scenarios())}
    return sorted(found, key=lambda a: (order.get(a.scenario, 0), a.concurrency, a.kind))
