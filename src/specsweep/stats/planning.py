"""Planning and summarising: how many runs a grid needs (honest about its pilot), and the expected gain
of a recommendation over several cells with an interval that covers.

``runs_to_decide``: runs per config so that a real ``target`` difference is decided with probability
``power`` in *each* comparison of a grid of ``comparisons`` adjusted with Benjamini-Hochberg. Three
things make it honest (issue 29): the noise is its upper confidence bound (a pilot of a few runs
under-states it half the time), the level is the grid's first BH step ``level / comparisons`` (BH
decides at least what that decides, so the power holds inside the grid), and the power is stated.

``gain_interval``: the geometric-mean gain over cells, with a t interval over the cells' log
effects (their spread holds both each cell's own error and the real variation between cells).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from specsweep.stats.basic import DEFAULT_LEVEL, DEFAULT_POWER, DEFAULT_TARGET, critical_value

NOISE_CONFIDENCE = 0.9  # the noise the plan uses is its 90% upper confidence bound
MAX_RUNS = 200
MIN_SPREAD_CELLS = 3  # a recommendation's interval holds the cells' spread from this many cells


def noise_upper(sigma: float, df: float, confidence: float = NOISE_CONFIDENCE) -> float:
    """Upper ``confidence`` bound of a noise sd measured with ``df`` degrees of freedom:
    sigma * sqrt(df / chi2_{1-confidence}(df)); sigma itself for an assumed noise (df = inf)."""
    from scipy import stats as st

    if sigma <= 0:
        raise ValueError(f"noise must be > 0, got {sigma}")
    if math.isinf(df):
        return sigma
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    return sigma * math.sqrt(df / float(st.chi2.ppf(1.0 - confidence, df)))


def runs_to_decide(
    sigma: float,
    target: float = DEFAULT_TARGET,
    *,
    comparisons: int = 1,
    level: float = DEFAULT_LEVEL,
    power: float = DEFAULT_POWER,
    sigma_df: float = math.inf,
    cells: int = 1,
    max_n: int = MAX_RUNS,
) -> int | None:
    """Smallest runs per config n (>= 2) with power ``power`` for a real ``target`` difference in one
    comparison at level ``level / comparisons``, at the noise's upper bound (``sigma_df``: the df it
    was measured with; inf: assumed). The test pools each config's noise over ``cells`` cells, so its
    df is about cells * (n - 1) per side. None beyond ``max_n``."""
    from scipy import special

    if sigma <= 0 or target <= 0:
        raise ValueError(f"runs_to_decide: sigma and target must be > 0, got {sigma}, {target}")
    if comparisons < 1 or not 0 < level < 1 or not 0 < power < 1:
        raise ValueError(
            f"runs_to_decide: comparisons >= 1, level and power in (0, 1); got {comparisons}, {level}, {power}"
        )
    s = noise_upper(sigma, sigma_df)
    delta = math.log1p(target)
    alpha = level / comparisons
    n = np.arange(2, max_n + 1, dtype=float)
    df = 2.0 * max(cells, 1) * (n - 1)
    need = -special.stdtrit(df, alpha / 2) + special.stdtrit(df, power)  # t_{1-alpha/2} + t_{power}
    ok = np.flatnonzero(need <= delta / (s * np.sqrt(2.0 / n)))
    return int(n[ok[0]]) if ok.size else None


def gain_interval(
    log_effects: Sequence[float],
    ses: Sequence[float],
    dfs: Sequence[float],
    shared: Sequence[float] | None = None,
    confidence: float = 0.95,
    shared_dfs: Sequence[float] | None = None,
) -> tuple[float, float, float]:
    """(gain, low, high) as ratios - 1: the mean of the cells' log effects. With MIN_SPREAD_CELLS or
    more cells, a t interval from their spread, which holds their own errors and their real
    variation, plus ``shared`` (per cell, the standard error they have in common: the drift estimate's
    and the configs' launch levels, which move every cell alike and so are not in the spread; its df
    ``shared_dfs``, counted in launches), Welch-Satterthwaite over the two parts: the gain to expect
    over the band's workloads. With fewer cells the spread cannot be estimated (a t with 1 df makes a
    two-cell band's interval run from a loss to a ten-fold gain): the interval is for these cells'
    mean, from their own errors (t, Welch-Satterthwaite df), the shared part counted once."""
    k = len(log_effects)
    if k == 0 or len(ses) != k or len(dfs) != k:
        raise ValueError("gain_interval needs one standard error and df per cell effect")
    mean = sum(log_effects) / k
    level = 1.0 - confidence
    sh = list(shared) if shared else [0.0] * k
    common = sum(s * s for s in sh) / k
    cdf = min(shared_dfs) if shared_dfs else math.inf
    parts: list[tuple[float, float]] = [(common, cdf)]
    if k < MIN_SPREAD_CELLS:
        # each cell's own part of the mean's variance (its shared part is counted once, in common)
        parts += [(max(s * s - c * c, 0.0) / (k * k), d) for s, c, d in zip(ses, sh, dfs, strict=True)]
    else:
        parts.append((sum((x - mean) ** 2 for x in log_effects) / (k - 1) / k, float(k - 1)))
    var = sum(v for v, _d in parts)
    den = sum(v * v / d for v, d in parts if v > 0 and not math.isinf(d) and d > 0)
    df = var * var / den if den > 0 else math.inf
    if k >= MIN_SPREAD_CELLS:  # never more df than the spread's own: a known shared part cannot add them
        df = min(df, float(k - 1))
    hw = critical_value(level, df) * math.sqrt(var)
    return math.expm1(mean), math.expm1(max(mean - hw, -30.0)), math.expm1(min(mean + hw, 30.0))
