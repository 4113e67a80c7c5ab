"""Per-request statistics of one run: the samples a metric is computed from, and within-run
intervals (resampling the run's requests). They describe one run only: run-to-run noise is the
verdict rule's business (:mod:`specsweep.analysis.core`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from specsweep.measure.records import RequestRecord
from specsweep.stats import basic as stats


def _req_samples(recs: list[RequestRecord], key: str) -> list[float] | None:
    ok = [r for r in recs if not r.is_warmup and r.ok and r.chunk_ns]
    if not ok:
        return None
    if key in ("total_throughput", "output_throughput"):
        return [
            float(
                r.output_tokens + (r.prompt_tokens_server or r.prompt_len if key == "total_throughput" else 0)
            )
            for r in ok
        ]
    if "e2e" in key:
        return [(r.e2e_ns or 0) / 1e6 for r in ok]
    if "ttft" in key:
        return [(r.ttft_ns or 0) / 1e6 for r in ok]
    if "tpot" in key:
        return [
            ((r.e2e_ns or 0) - (r.ttft_ns or 0)) / 1e6 / (r.output_tokens - 1)
            for r in ok
            if r.output_tokens > 1
        ]
    return None


def _stat_for(key: str) -> Any:
    if key.startswith("p") and key[1:3].isdigit():
        q = float(key[1:3])
        return lambda x: float(np.percentile(x, q))
    if key.startswith("median_"):
        return np.median
    if key.endswith("_throughput"):
        return np.sum
    return np.mean


def log_se_of_mean(x: np.ndarray) -> float | None:
    """Standard error of log(mean(x)) (delta method): sd / (mean * sqrt(n)); also that of a sum."""
    m = float(np.mean(x))
    return float(np.std(x, ddof=1) / (m * math.sqrt(x.size))) if m > 0 and x.size >= 2 else None


def within_log_se(recs: list[RequestRecord], key: str, seed: int = 0) -> float | None:
    """Standard error (log scale) of a run's value of ``key`` from its own requests: analytic for
    means and throughputs (sums), bootstrap for medians and percentiles. None without samples."""
    xs = _req_samples(recs, key)
    if not xs or len(xs) < 2:
        return None
    x = np.asarray(xs, dtype=float)
    st = _stat_for(key)
    if st is np.mean or st is np.sum:
        return log_se_of_mean(x)
    point = float(st(x))
    lo, hi = stats.bootstrap_ci(xs, st, seed=seed, n_resamples=1000)
    if point <= 0 or lo <= 0:
        return None
    return (math.log(hi) - math.log(lo)) / (2 * 1.959964)


CELL_CI_KEYS = (
    "total_throughput", "output_throughput", "mean_e2e_latency_ms", "p95_e2e_latency_ms", "p99_e2e_latency_ms",
    "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
)  # fmt: skip


def request_cell_ci(
    recs: list[RequestRecord], row: dict[str, Any], keys: list[str], seed: int = 0
) -> dict[str, list[float]]:
    """Within-run intervals of a single run, resampling its requests: throughputs as sum/duration,
    latencies as their statistic (mean, median or percentile) of the per-request values."""
    out: dict[str, list[float]] = {}
    dur = row.get("duration")
    for k in keys:
        if k not in CELL_CI_KEYS:
            continue
        xs = _req_samples(recs, k)
        if not xs or len(xs) < 2:
            continue
        if k.endswith("_throughput"):
            if not isinstance(dur, (int, float)) or dur <= 0:
                continue
            lo, hi = stats.throughput_ci(xs, float(dur), seed=seed, n_resamples=1000)
        else:
            lo, hi = stats.bootstrap_ci(xs, _stat_for(k), seed=seed, n_resamples=1000)
        out[k] = [lo, hi]
    return out
