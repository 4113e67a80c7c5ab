"""Two configs in one cell, judged against both configs' measured noise (:mod:`specsweep.stats.noise`).

The effect is the difference of the two groups' drift-adjusted mean log values; its variance is
``sigma_a^2/n_a + sigma_b^2/n_b`` (each config its own noise, never another's) plus what the drift
estimate adds, with Welch-Satterthwaite degrees of freedom from each side's (kurtosis-cut) df. A side
with nothing measured uses the assumed noise (stats.DEFAULT_RUN_NOISE, infinite df) and says so.

A single run is one draw of the noise, not a mean, so a normal (or t) reference is only right when
the noise is normal: one run in ten 30% off gives far more large single-run differences than a
normal of the same variance. So when a side is a single run whose config is measured, the p value
is also taken from the measured residuals themselves (every pair of residuals for two single runs;
the single side's residuals convolved with the other side's normal mean otherwise), with the
(k + 1) / (N + 1) correction of a finite sample, and the larger of the two p values is used: a test
that holds its level if either reference is right. Intervals invert the same rule, so an interval
excludes 0 exactly when the p value is at or under its level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from specsweep.stats.basic import DEFAULT_RUN_NOISE, critical_value
from specsweep.stats.noise import Group, GroupEst, NoiseModel

MAX_RESIDUALS = 200  # residuals per side in the empirical reference (quantiles beyond that)


def _t_sf(z: float | np.ndarray, df: float) -> np.ndarray:
    """Upper tail of t (df) or the normal (df = inf): scipy.special's ufuncs (the stats objects' call
    overhead dominates a replayed design)."""
    from scipy import special

    if math.isinf(df):
        return np.asarray(special.ndtr(-np.asarray(z, dtype=float)), dtype=float)
    return np.asarray(special.stdtr(df, -np.asarray(z, dtype=float)), dtype=float)


@dataclass(frozen=True, eq=False)
class PairTest:
    """a vs b in one cell on log values (> 0 favours a). ``se``/``df``: the t reference; ``null``:
    the empirical reference's centres (residual differences), blurred by a normal of sd ``blur``,
    when a side is a single measured run (None otherwise)."""

    log_effect: float
    se: float
    df: float
    method: str  # welch_t | t_measured_noise | z_assumed_noise
    n_a: int
    n_b: int
    sigma_a: float
    sigma_b: float
    measured_a: bool
    measured_b: bool
    null: np.ndarray | None = None
    blur: float = 0.0
    blur_df: float = math.inf
    unaligned: bool = False  # the configs were measured in run orders with no common clock
    shared_var: float = 0.0  # the part of se^2 every cell's test shares (drift estimate, launches, sessions)
    launch_var: float = 0.0  # the part of se^2 from the configs' launch levels (stats_launch)
    session_var: float = 0.0  # the between-session allowance: the configs were measured in unlinked sessions
    shared_df: float = math.inf  # degrees of freedom of shared_var (the launch noise's, in launches)
    launch_sd: float = 0.0  # the launch noise (sd of one launch's level, log) the test used
    launch_source: str = ""  # measured | measured+calibrated | calibrated | assumed ("": not modelled)

    @property
    def unanchored(self) -> bool:
        """The two configs were measured only in different sessions that no config links: a
        difference between them cannot be told from a change of the host between the sessions."""
        return self.session_var > 0

    @property
    def effect(self) -> float:
        return math.expm1(self.log_effect)

    @property
    def sigma(self) -> float:
        """One run's noise as the planning aid sees it: the mean of the two configs' variances."""
        return math.sqrt((self.sigma_a**2 + self.sigma_b**2) / 2.0)

    def p_at(self, d: float) -> float:
        """Two-sided p value of a log difference ``d`` under this comparison's null."""
        d = abs(d)
        pt = min(1.0, 2.0 * float(_t_sf(d / self.se, self.df))) if self.se > 0 else float(d == 0)
        if self.null is None:
            return pt
        return max(pt, self._p_emp(d))

    def _p_emp(self, d: float) -> float:
        assert self.null is not None
        c = self.null
        if self.blur > 0:
            tail = _t_sf((d - c) / self.blur, self.blur_df) + _t_sf((d + c) / self.blur, self.blur_df)
        else:
            tail = (np.abs(c) >= d).astype(float)
        return float(min(1.0, float(np.mean(tail))))

    @cached_property
    def p_value(self) -> float:
        return self.p_at(self.log_effect)

    def half_width(self, level: float) -> float:
        """Half-width (log) of the (1 - level) interval: the smallest |d| with p <= level."""
        h = critical_value(level, self.df) * self.se
        if self.null is None:
            return h
        lo, hi = h, max(h, float(np.abs(self.null).max()) + 12.0 * max(self.blur, self.se) + 1e-9)
        if self._p_emp(hi) > level:
            return 30.0  # the measured residuals cannot resolve this level
        if self._p_emp(lo) <= level:
            return lo
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if self._p_emp(mid) <= level else (mid, hi)
        return hi

    def interval(self, level: float) -> tuple[float, float]:
        h = self.half_width(level)
        lo, hi = max(self.log_effect - h, -30.0), min(self.log_effect + h, 30.0)
        return math.expm1(lo), math.expm1(hi)


def _compress(r: np.ndarray) -> np.ndarray:
    if r.size <= MAX_RESIDUALS:
        return r
    return np.quantile(r, (np.arange(MAX_RESIDUALS) + 0.5) / MAX_RESIDUALS)


def compare(
    model: NoiseModel,
    a: Group,
    b: Group,
    *,
    within: tuple[float, float] | None = None,
    assumed: float = DEFAULT_RUN_NOISE,
) -> PairTest | None:
    """The test of group ``a`` against group ``b`` (same cell, two configs); None if one is missing.
    ``within``: each side's own sampling error (log) from its per-request records, added for a side
    whose noise is assumed (a measured run-to-run noise already holds it)."""
    ga, gb = model.groups.get(a), model.groups.get(b)
    if ga is None or gb is None:
        return None
    na_, nb_ = model.noise(a[0]), model.noise(b[0])
    va, dfa = _run_var(model, a[0], ga) if na_ else (assumed**2, math.inf)
    vb, dfb = _run_var(model, b[0], gb) if nb_ else (assumed**2, math.inf)
    sa, sb = math.sqrt(va), math.sqrt(vb)
    qa, qb = va / ga.n, vb / gb.n
    extra = 0.0
    if within is not None:
        extra += (within[0] ** 2 if na_ is None else 0.0) + (within[1] ** 2 if nb_ is None else 0.0)
    dx = ga.xbar - gb.xbar if ga.xbar.size == gb.xbar.size else np.zeros(0)
    drift_var = float(dx @ model.v_beta @ dx) if dx.size else 0.0
    unaligned = _unaligned(model, ga.domains, gb.domains)
    if unaligned is not None:
        drift_var += unaligned
    lv, sv, ldf = _launch_terms(model, ga, gb)
    se2 = qa + qb + drift_var + extra + lv + sv
    # Welch-Satterthwaite over every estimated part: the drift's variance is estimated from the same
    # residuals (its df), the launch noise from the launches (its df); an assumed noise and an unaligned
    # run order's allowance are not. The between-session allowance is the launch noise scaled (a
    # calibrated or measured one: its df; the assumed one: known), so it is counted with the launch part
    parts = [(qa, dfa), (qb, dfb), (drift_var - (unaligned or 0.0), model.drift_df), (lv + sv, ldf)]
    den = sum(q * q / df for q, df in parts if q > 0 and not math.isinf(df))
    df = se2**2 / den if den > 0 else math.inf
    df = min(df, tail_df(model.kurtosis, [(qa, ga.n), (qb, gb.n)] if na_ and nb_ else []))
    d = ga.mean - gb.mean
    method = (
        "welch_t"
        if na_ and nb_ and min(ga.n, gb.n) >= 2
        else "t_measured_noise"
        if na_ or nb_
        else "z_assumed_noise"
    )
    null, blur, blur_df = None, 0.0, math.inf
    if na_ and nb_ and min(ga.n, gb.n) == 1:
        other = drift_var + extra + lv + sv
        if ga.n == 1 and gb.n == 1:
            # two single runs: the two configs' own A/A differences (e - e'), smoothed (Silverman)
            null = _compress(np.concatenate([na_.pair_diffs, nb_.pair_diffs]))
            blur = math.sqrt(other + _bandwidth(null) ** 2) if null.size else 0.0
        else:
            single, q, dfm = (na_.residuals, qb, dfb) if ga.n == 1 else (nb_.residuals, qa, dfa)
            null = _compress(single)
            blur = math.sqrt(q + other)
            blur_df = dfm if other == 0 else math.inf
        if null.size == 0:
            null = None
    return PairTest(d, math.sqrt(se2), df, method, ga.n, gb.n, sa, sb, na_ is not None, nb_ is not None,
                    null, blur, blur_df, unaligned is not None, drift_var + lv + sv, lv, sv,
                    _shared_df(drift_var, model.drift_df, lv + sv, ldf),
                    model.launch.tau if model.launch else 0.0, model.launch.source if model.launch else "")  # fmt: skip


def _run_var(model: NoiseModel, config: str, g: GroupEst) -> tuple[float, float]:
    """(variance of one run, its df) of ``config``: within a launch when its launches were fitted
    (stats_launch: the launch part is then added once per launch, not per run), else the pooled
    noise. The within-launch df is cut by the noise's kurtosis like the pooled one's."""
    n = model.noise(config)
    assert n is not None
    lf = model.launch
    c = lf.configs.get(config) if lf is not None else None
    if c is None or not c.converged or c.sigma_w <= 0 or c.df_w <= 0:
        return n.var_of(g)
    return c.sigma_w**2, c.df_w * 2.0 / (2.0 + model.kurtosis)


def _launch_terms(model: NoiseModel, ga: GroupEst, gb: GroupEst) -> tuple[float, float, float]:
    """(launch variance, between-session allowance, the launch variance's df) of a pair. The launch
    part is tau^2 times each side's sum of (runs per launch / runs)^2. The allowance: where the two
    groups share no session and no group links their sessions, the offset between the sessions is
    unknown; it is allowed for as one more launch-sized level a side (at least the prior's). Both are
    the launch noise scaled, so both carry its df (the launch fit's: launches - 1, a calibration's, or
    none where it is assumed): with a calibration of 10 launches counted as known, a host 5% slower
    for the second of two files made the gain interval cover 92.1% (docs/statistics.md)."""
    lf = model.launch
    if lf is None:
        return 0.0, 0.0, math.inf
    lv = lf.var * (ga.launch_share + gb.launch_share)
    links = model.session_links
    ca = {links.get(x, x) for x in ga.sessions}
    cb = {links.get(x, x) for x in gb.sessions}
    sv = 2.0 * max(lf.var, lf.prior.sd**2) if ca and cb and not (ca & cb) else 0.0
    return lv, sv, lf.df


def _shared_df(drift_var: float, drift_df: float, lv: float, ldf: float) -> float:
    """Welch-Satterthwaite df of the shared part (drift estimate + launch levels and the
    between-session allowance, which scale one launch noise estimate)."""
    tot = drift_var + lv
    den = sum(q * q / d for q, d in ((drift_var, drift_df), (lv, ldf)) if q > 0 and not math.isinf(d))
    return tot * tot / den if den > 0 else math.inf


def tail_df(kurtosis: float, parts: list[tuple[float, int]]) -> float:
    """The df of a t whose tails match the difference of means: a mean of n runs whose noise has
    excess kurtosis k has excess kurtosis k / n, a difference of independent means
    k * sum(q_i^2 / n_i) / (sum q_i)^2 (q_i: each side's variance of its mean), and a t with df v has
    6 / (v - 4). So v = 4 + 6 / that; inf for a normal noise. The variance's df (the kurtosis cut)
    cannot see a heavy-tailed numerator: a grid's adjustment reads exactly those tails."""
    tot = sum(q for q, _n in parts)
    if kurtosis <= 0 or tot <= 0:
        return math.inf
    k_d = kurtosis * sum(q * q / n for q, n in parts) / (tot * tot)
    return 4.0 + 6.0 / k_d if k_d > 0 else math.inf


def _bandwidth(x: np.ndarray) -> float:
    """Silverman's rule of thumb for a normal kernel: 0.9 min(sd, IQR/1.34) n^(-1/5)."""
    if x.size < 2:
        return 0.0
    sd = float(np.std(x, ddof=1))
    iqr = float(np.subtract(*np.percentile(x, [75, 25]))) / 1.34
    spread = min(sd, iqr) if iqr > 0 else sd
    return 0.9 * spread * x.size ** (-0.2)


def _unaligned(model: NoiseModel, da: frozenset[str], db: frozenset[str]) -> float | None:
    """Two groups each measured in one order domain, different ones, with a drift estimated: the
    offset between the domains is unknown (no common clock). Taking the domains as run back to back,
    the pooled drift per run over the distance between their centres bounds it; its square (plus the
    rate's variance) is added to the variance. None when the groups share a clock or no drift rate
    is estimated."""
    if len(da) != 1 or len(db) != 1 or da == db:
        return None
    rate = model.drift_rate()
    if rate is None:
        return None
    b, vb = rate
    (x,), (y,) = da, db
    dist = (model.domain_span.get(x, 0.0) + model.domain_span.get(y, 0.0)) / 2.0
    return (b * b + vb) * dist * dist
