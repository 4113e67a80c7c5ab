"""Small pure statistics: bootstrap intervals, noise floors, verdicts, crossings, trend residuals.

Conventions: an *effect* of config a against b is ``a/b - 1`` when higher is better and ``b/a - 1``
when lower is better, so a positive effect always favours a. Intervals are percentile bootstrap
intervals unless stated. Differences are judged in log-ratio space, where "a is x% better" and
"b is x% worse" are symmetric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

DEFAULT_NOISE_FLOOR = 0.05  # single runs: differences under ~5% are not evidence (design/simulator.md)
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95

Stat = Callable[[np.ndarray], float]
VerdictKind = Literal["a", "b", "tie"]


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's linear percentile (what sglang and vLLM report), q in [0, 100]."""
    if len(values) == 0:
        raise ValueError("percentile of no values")
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# Statistics numpy can apply to every resample at once (one call on a resamples x n matrix, axis=1)
# instead of once per resample: the report of a 1,200-cell run spent 78 of its 88 s in that loop.
_AXIS_STATS: frozenset[Any] = frozenset(
    {np.mean, np.median, np.nanmean, np.nanmedian, np.sum, np.max, np.min}
)


def _resampled(stat: Stat, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``stat`` of every resample ``x[idx[k]]`` (rows of ``idx``)."""
    if stat in _AXIS_STATS:
        return np.asarray(stat(x[idx], axis=1), dtype=float)  # type: ignore[call-arg]
    return np.array([stat(x[i]) for i in idx], dtype=float)


def bootstrap_ci(
    values: Sequence[float],
    stat: Stat = np.mean,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` over ``values`` (resampled with replacement).

    One value gives a zero-width interval at that value.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap of no values")
    if x.size == 1:
        v = float(stat(x))
        return v, v
    idx = _rng(seed).integers(0, x.size, size=(n_resamples, x.size))
    stats = _resampled(stat, x, idx)
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(stats, alpha)), float(np.quantile(stats, 1.0 - alpha))


def bootstrap_ratio_ci(
    a: Sequence[float],
    b: Sequence[float],
    stat: Stat = np.mean,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Interval of ``stat(a)/stat(b) - 1``, resampling a and b independently."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size == 0 or xb.size == 0:
        raise ValueError("ratio bootstrap needs values on both sides")
    rng = _rng(seed)
    ia = rng.integers(0, xa.size, size=(n_resamples, xa.size))
    ib = rng.integers(0, xb.size, size=(n_resamples, xb.size))
    num = _resampled(stat, xa, ia)
    den = _resampled(stat, xb, ib)
    ratios = num / den - 1.0
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(ratios, alpha)), float(np.quantile(ratios, 1.0 - alpha))


def throughput_ci(
    tokens: Sequence[float], duration_s: float, *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> tuple[float, float]:
    """Interval of a run's throughput sum(tokens)/duration, resampling its requests."""
    if duration_s <= 0:
        raise ValueError(f"duration must be > 0, got {duration_s}")
    lo, hi = bootstrap_ci(tokens, np.sum, seed=seed, n_resamples=n_resamples)
    return lo / duration_s, hi / duration_s


def relative_differences(pairs: Sequence[tuple[float, float]]) -> list[float]:
    """|x/y - 1| in log-symmetric form (exp|log(x/y)| - 1) for each positive pair."""
    return [math.expm1(abs(math.log(x / y))) for x, y in pairs if x > 0 and y > 0]


def noise_floor_from_pairs(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Noise floor from A/A pairs (the same config measured twice): the largest relative difference
    with fewer than 20 pairs, else the 95th percentile. None without pairs."""
    d = relative_differences(pairs)
    if not d:
        return None
    return max(d) if len(d) < 20 else float(np.quantile(d, 0.95))


def noise_floor_from_repeats(groups: Sequence[Sequence[float]]) -> float | None:
    """Noise floor from repeats: every pair of repeats within a group is an A/A pair."""
    pairs = [(g[i], g[j]) for g in groups for i in range(len(g)) for j in range(i + 1, len(g))]
    return noise_floor_from_pairs(pairs)


def effect_of(a: float, b: float, higher_is_better: bool) -> float:
    """a against b: a/b - 1 (higher is better) or b/a - 1 (lower is better); > 0 favours a."""
    if a <= 0 or b <= 0:
        raise ValueError(f"effects need positive values, got a={a}, b={b}")
    return a / b - 1.0 if higher_is_better else b / a - 1.0


def floor_interval(effect: float, floor: float) -> tuple[float, float]:
    """Interval of an effect measured once: the effect widened by the noise floor in log space."""
    r = 1.0 + effect
    return r / (1.0 + floor) - 1.0, r * (1.0 + floor) - 1.0


def widen(ci: tuple[float, float], floor: float) -> tuple[float, float]:
    """Widen an interval by a noise floor in log space (run-to-run noise on top of within-run)."""
    return (1.0 + ci[0]) / (1.0 + floor) - 1.0, (1.0 + ci[1]) * (1.0 + floor) - 1.0


@dataclass(frozen=True)
class VerdictResult:
    verdict: VerdictKind
    effect: float
    ci_low: float
    ci_high: float
    gain: float  # leader/other - 1, the "Gain" column: exp(|log(1+effect)|) - 1


def decide(effect: float, ci: tuple[float, float], min_effect: float = 0.0) -> VerdictResult:
    """a wins when the whole interval is above 0 and the gain reaches ``min_effect``; b the mirror;
    otherwise a tie."""
    gain = math.expm1(abs(math.log1p(effect)))
    lo, hi = ci
    v: VerdictKind = "tie"
    if gain >= min_effect:
        if lo > 0 and effect > 0:
            v = "a"
        elif hi < 0 and effect < 0:
            v = "b"
    return VerdictResult(v, effect, lo, hi, gain)


def verdict_single(
    a: float, b: float, *, higher_is_better: bool, floor: float = DEFAULT_NOISE_FLOOR, min_effect: float = 0.0
) -> VerdictResult:
    """Verdict for two single measurements against a noise floor."""
    e = effect_of(a, b, higher_is_better)
    return decide(e, floor_interval(e, floor), min_effect)


def verdict_repeats(
    a: Sequence[float],
    b: Sequence[float],
    *,
    higher_is_better: bool,
    min_effect: float = 0.0,
    seed: int = 0,
) -> VerdictResult:
    """Verdict from repeated runs: bootstrap interval of mean(a)/mean(b) - 1 over repeats."""
    ma, mb = float(np.mean(a)), float(np.mean(b))
    e = effect_of(ma, mb, higher_is_better)
    ci = bootstrap_ratio_ci(a, b, seed=seed) if higher_is_better else bootstrap_ratio_ci(b, a, seed=seed)
    return decide(e, ci, min_effect)


def log_interp_crossing(c1: float, y1: float, c2: float, y2: float, level: float = 0.0) -> float:
    """Concurrency where a quantity linear in log(concurrency) crosses ``level`` between two points."""
    if y1 == y2:
        return math.sqrt(c1 * c2)
    t = (level - y1) / (y2 - y1)
    t = min(1.0, max(0.0, t))
    return math.exp(math.log(c1) + t * (math.log(c2) - math.log(c1)))


def loo_residual(xs: Sequence[float], ys: Sequence[float], i: int) -> float:
    """Residual of point i against a straight line fitted (least squares) to all other points."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    mask = np.ones(x.size, dtype=bool)
    mask[i] = False
    if mask.sum() < 2 or np.ptp(x[mask]) == 0:
        return float(y[i] - np.mean(y[mask]))
    slope, icept = np.polyfit(x[mask], y[mask], 1)
    return float(y[i] - (slope * x[i] + icept))


def geo_mean_effect(effects: Sequence[float]) -> float:
    """Geometric mean of (1 + effect) minus 1."""
    if not effects:
        raise ValueError("no effects")
    return math.expm1(float(np.mean([math.log1p(e) for e in effects])))
