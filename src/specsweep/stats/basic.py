"""Small pure statistics: bootstrap intervals, noise floors, the verdict rule's tests (t tests on log
values, multiplicity adjustment, repeats needed), crossings, trend residuals.

Conventions: an *effect* of config a against b is ``a/b - 1`` when higher is better and ``b/a - 1``
when lower is better, so a positive effect always favours a. Differences are judged in log-ratio
space, where "a is x% better" and "b is x% worse" are symmetric. docs/statistics.md explains the
verdict rule and benchmarks/verdict_calibration.py measures it.
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


# ---- the verdict rule: t tests on log ratios, multiplicity control, planning -------------------
# Everything below works on log values: a run's value is v = true * exp(noise), and "noise" (the
# run-to-run spread of one run, sd of log v) is what every test must account for. Two single runs
# carry no estimate of it: they use a measured one (A/A pairs or repeats elsewhere in the data) or
# the assumed DEFAULT_RUN_NOISE, and say so.

DEFAULT_LEVEL = 0.05  # false-winner rate the rule is calibrated to (benchmarks/verdict_calibration.py)
DEFAULT_RUN_NOISE = 0.10  # assumed sd of log(one run) across runs when nothing in the data measures it:
# the top of the noise seen on busy hosts, so the z test holds its level up to 10% real noise (docs/statistics.md)
DEFAULT_TARGET = 0.05  # the planning aid's target difference
DEFAULT_POWER = 0.8
ADJUSTMENTS = ("bh", "holm", "none")
Adjustment = Literal["bh", "holm", "none"]


def critical_value(level: float, df: float) -> float:
    """Two-sided critical value of t (df) or of the normal (df = inf) (scipy.special's inverses: the
    stats objects' call overhead dominates replayed designs)."""
    from scipy import special

    q = level / 2.0
    return float(-special.ndtri(q)) if math.isinf(df) else float(-special.stdtrit(df, q))


@dataclass(frozen=True)
class LogTest:
    """A test of "a and b are equal" on the log ratio log(a/b) (oriented: > 0 favours a)."""

    log_effect: float
    se: float  # standard error of log_effect
    df: float  # degrees of freedom of the t reference (inf: normal, an assumed noise)
    method: str  # "welch_t" | "z_assumed_noise" | "t_measured_noise"
    n_a: int
    n_b: int
    sigma: float  # one run's noise sd (log) the test used: for planning repeats

    @property
    def effect(self) -> float:
        return math.expm1(self.log_effect)

    @property
    def p_value(self) -> float:
        from scipy import stats as st

        if self.se <= 0:
            return 0.0 if self.log_effect != 0 else 1.0
        z = abs(self.log_effect) / self.se
        sf = st.norm.sf(z) if math.isinf(self.df) else st.t.sf(z, self.df)
        return float(min(1.0, 2.0 * sf))

    def half_width(self, level: float) -> float:
        """Half-width (log) of the two-sided (1 - level) interval: the smallest log ratio that would
        have been decided at this level with this noise and n."""
        return critical_value(level, self.df) * self.se

    def interval(self, level: float) -> tuple[float, float]:
        """The (1 - level) interval of the effect; log bounds clipped to +-30 (a ratio of 1e13 says
        "unbounded" and keeps 1 + low > 0, so the interval can be inverted)."""
        h = self.half_width(level)
        lo, hi = max(self.log_effect - h, -30.0), min(self.log_effect + h, 30.0)
        return math.expm1(lo), math.expm1(hi)


def _logs(values: Sequence[float], higher_is_better: bool) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"verdicts need positive finite values, got {list(values)}")
    return np.log(x) if higher_is_better else -np.log(x)


def log_test_repeats(
    a: Sequence[float], b: Sequence[float], *, higher_is_better: bool, floor_sigma: float = 0.0
) -> LogTest:
    """Repeats (>= 2 runs a side): Welch's t on the log values; for unequal n each side's variance is
    at least the pooled one (plain Welch names 6-10% false winners at 2 x 5). ``floor_sigma`` is a lower bound on
    each side's noise sd (used when the repeats are identical: zero spread)."""
    la, lb = _logs(a, higher_is_better), _logs(b, higher_is_better)
    na, nb = la.size, lb.size
    if min(na, nb) < 2:
        raise ValueError(f"Welch's t needs >= 2 runs a side, got {na} and {nb}")
    d = float(la.mean() - lb.mean())
    f2 = floor_sigma**2
    va, vb = max(float(la.var(ddof=1)), f2), max(float(lb.var(ddof=1)), f2)
    pooled = (va * (na - 1) + vb * (nb - 1)) / (na + nb - 2)
    if na != nb:  # Welch-Satterthwaite is liberal for unequal n (6-10% at 2 x 5, 2 x 10): no side's
        va, vb = max(va, pooled), max(vb, pooled)  # variance is taken below the pooled one
    qa, qb = va / na, vb / nb
    se2 = qa + qb
    df = se2**2 / (qa**2 / (na - 1) + qb**2 / (nb - 1)) if se2 > 0 else float(na + nb - 2)
    sigma = math.sqrt(pooled)
    return LogTest(d, math.sqrt(se2), df, "welch_t", na, nb, sigma)


def log_test_noise(
    a: Sequence[float],
    b: Sequence[float],
    *,
    higher_is_better: bool,
    sigma: float,
    sigma_df: float = math.inf,
    within_se: tuple[float, float] = (0.0, 0.0),
) -> LogTest:
    """A side with a single run: the difference of the sides' mean log values against run-to-run
    noise ``sigma`` (sd of one run's log value, measured elsewhere in the data with ``sigma_df``
    degrees of freedom, or assumed: inf), plus each run's own sampling error ``within_se`` (log)
    when both sides are one run that kept per-request records. The within-run spread alone never
    decides: it says nothing about how the next run would differ."""
    if sigma <= 0:
        raise ValueError(f"run-to-run noise must be > 0, got {sigma}")
    la, lb = _logs(a, higher_is_better), _logs(b, higher_is_better)
    d = float(la.mean() - lb.mean())
    run_var = sigma**2 * (1.0 / la.size + 1.0 / lb.size)
    se2 = run_var + within_se[0] ** 2 + within_se[1] ** 2
    if math.isinf(sigma_df):
        df, method = math.inf, "z_assumed_noise"
    else:  # Satterthwaite: only the run-to-run part is estimated
        df, method = se2**2 / (run_var**2 / sigma_df), "t_measured_noise"
    return LogTest(d, math.sqrt(se2), df, method, la.size, lb.size, sigma)


def adjust(p_values: Sequence[float], how: Adjustment = "bh") -> np.ndarray:
    """Multiplicity-adjusted p values: Benjamini-Hochberg (false-discovery rate), Holm (family-wise
    error) or none."""
    p = np.asarray(p_values, dtype=float)
    if how not in ADJUSTMENTS:
        raise ValueError(f"adjustment {how!r}: use one of {', '.join(ADJUSTMENTS)}")
    if p.size == 0 or how == "none":
        return p.copy()
    if how == "bh":
        from scipy import stats as st

        return np.asarray(st.false_discovery_control(p, method="bh"), dtype=float)
    order = np.argsort(p)
    m = p.size
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def effective_level(p_values: Sequence[float], level: float, how: Adjustment = "bh") -> float:
    """The per-comparison level the adjusted decisions amount to: a comparison is decided exactly
    when its raw p value is <= this level, so intervals at 1 - this level agree with the verdicts
    (for BH these are the false-coverage-rate intervals of Benjamini and Yekutieli)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0 or how == "none":
        return level
    r = int(np.sum(adjust(list(p), how) <= level))
    if how == "bh":
        return level * max(r, 1) / m
    return level / (m - r + 1) if r < m else level


def repeats_needed(
    sigma: float,
    target: float = DEFAULT_TARGET,
    *,
    level: float = DEFAULT_LEVEL,
    power: float = DEFAULT_POWER,
    max_n: int = 200,
) -> int | None:
    """Runs per config for a Welch t test on log values to decide a real ``target`` difference with
    probability ``power`` at ``level``, when one run's noise sd is ``sigma``; None beyond ``max_n``."""
    if sigma <= 0 or target <= 0:
        raise ValueError(f"repeats_needed: sigma and target must be > 0, got {sigma}, {target}")
    from scipy import stats as st

    delta = math.log1p(target)
    for n in range(2, max_n + 1):
        df = 2 * n - 2
        se = sigma * math.sqrt(2.0 / n)
        if float(st.t.ppf(1 - level / 2, df)) + float(st.t.ppf(power, df)) <= delta / se:
            return n
    return None


def sigma_from_groups(groups: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """Pooled run-to-run noise sd (log) and its degrees of freedom from groups of repeats."""
    ss, df = 0.0, 0
    for g in groups:
        x = np.log(np.asarray([v for v in g if v > 0], dtype=float))
        if x.size >= 2:
            ss += float(np.sum((x - x.mean()) ** 2))
            df += x.size - 1
    if df == 0 or ss <= 0:
        return None
    return math.sqrt(ss / df), float(df)


def sigma_from_pairs(pairs: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """Run-to-run noise sd (log) from A/A pairs: var(log x - log y) = 2 sigma^2, one df per pair."""
    d = [math.log(x / y) for x, y in pairs if x > 0 and y > 0]
    ss = float(np.sum(np.square(d))) if d else 0.0
    if not d or ss <= 0:
        return None
    return math.sqrt(ss / (2 * len(d))), float(len(d))
