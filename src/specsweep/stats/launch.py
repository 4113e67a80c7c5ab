"""Launch noise: the level each server launch (and each session) gives every run it makes.

The model, on oriented log values ``y`` after the host's drift (:mod:`specsweep.stats.noise`)::

    y_i = mu[config, cell] + u[launch(i)] + e_i,    u ~ (0, tau^2),  e_i ~ (0, sigma_w[config]^2)

A config's runs in one launch share its level ``u``; every cell measured in that launch carries the
same offset. So a group's mean (one config in one cell, n runs, n_L of them in launch L) has the
variance ``sigma_w^2 / n + tau^2 * sum_L (n_L / n)^2``: the launch part does not shrink with more
runs in the same launch, only with more launches. Its degrees of freedom are counted in launches.

Decision rules (docs/statistics.md, "Launches and sessions"):

1. *Measured*: each config with 2 or more launches is fitted on its own by a linear mixed model
   (statsmodels MixedLM, REML: its cells fixed, its launches a random intercept), which gives its
   run noise within a launch (``sigma_w``) and a launch variance with ``launches - 1`` degrees of
   freedom. The launch noise is a property of the engine and host, so the configs' launch variances
   are pooled (weighted by their degrees of freedom), as a config's run noise is pooled over cells.
   With no calibration, the assumed noise (rule 3) is a floor (source ``measured+floor`` where it
   binds): a fit of 3 launches a config that lands on 0 does not make it 0, and a measured noise
   above the assumed one is not pulled toward it. The df stay the launches' own.
2. *Prior*: a calibration stored by ``specsweep calibrate-noise`` (its sd and degrees of freedom) is
   pooled with the measured launch variance as a scaled-inverse-chi-square prior:
   ``tau^2 = (df_m tau_m^2 + df_p tau_p^2) / (df_m + df_p)``, with ``df_m + df_p`` degrees of
   freedom. With no launch measured, the calibration alone.
3. *Assumed*: neither measured nor calibrated: DEFAULT_LAUNCH_NOISE, taken as known (no df), and
   the report says it was assumed.
4. *A fit that fails* (an exception, or MixedLM not converged): the launch variance falls back to
   the larger of the prior (calibrated or assumed) and the config's launch means' own spread (a
   moment estimate that never goes under the data), with the prior's df, and the report says so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

# Launch-to-launch sd (log) assumed when nothing is measured or calibrated. Derivation
# (docs/statistics.md): freshly restarted vLLM servers on one H100 agreed "within about 3%" on
# throughput (vllm-project/vllm#42484): a typical |difference| of two launches of 3% is an sd of
# 3% / (sqrt(2) * 0.8) ~ 2.7% per launch if 3% is the mean difference, ~1.5% if it is the range of a
# few; the simulator relaunches with a fresh seed only (0%). 2% sits between the two readings.
DEFAULT_LAUNCH_NOISE = 0.02
MIN_LAUNCHES = 2  # launches of one config from which its launch variance is measured


@dataclass(frozen=True)
class LaunchPrior:
    """A launch noise known before the data: ``sd`` (log), ``df`` (inf: taken as known), where it
    came from (``calibrated``: a stored calibration, ``assumed``: the default) and its name."""

    sd: float
    df: float
    source: str  # calibrated | assumed
    name: str = ""


ASSUMED = LaunchPrior(DEFAULT_LAUNCH_NOISE, math.inf, "assumed", "default")
# a calibration's own fit (`specsweep calibrate-noise`): what its launches measure, neither floor nor prior
NO_PRIOR = LaunchPrior(0.0, math.inf, "assumed", "none")


@dataclass(frozen=True)
class ConfigLaunches:
    """One config's launch fit: its run noise within a launch (``sigma_w``, ``df_w``), its launch
    variance (``tau2``, ``df_tau`` = launches - 1) and its launches."""

    launches: int
    sigma_w: float
    df_w: float
    tau2: float
    df_tau: float
    converged: bool


@dataclass(frozen=True)
class LaunchFit:
    """The launch noise the verdicts use: ``tau`` (sd of one launch's level, log) with ``df``
    (inf: known or assumed), ``source`` (measured | measured+floor: the assumed noise as a floor |
    measured+calibrated | calibrated | assumed),
    ``failed``: configs whose MixedLM failed (the conservative fallback was used), and per config
    its own fit (configs with 2 or more launches)."""

    tau: float
    df: float
    source: str
    prior: LaunchPrior
    configs: dict[str, ConfigLaunches] = field(default_factory=dict)
    failed: tuple[str, ...] = ()

    @property
    def var(self) -> float:
        return self.tau * self.tau


def launch_share(launches: Sequence[Hashable]) -> float:
    """sum_L (n_L / n)^2 of a group's runs: the launch variance's multiplier in its mean's variance
    (1/n for n runs in n launches, 1 for n runs in one launch)."""
    n = len(launches)
    if n == 0:
        return 0.0
    _u, counts = np.unique(np.asarray([str(x) for x in launches]), return_counts=True)
    return float(np.sum((counts / n) ** 2))


def _mixedlm(y: np.ndarray, cells: np.ndarray, launches: np.ndarray) -> tuple[float, float, bool]:
    """(residual variance, launch variance, converged) of one config: cells fixed, launches random
    (statsmodels MixedLM, REML)."""
    import statsmodels.api as sm

    _cu, ci = np.unique(cells, return_inverse=True)
    x = np.zeros((y.size, int(ci.max()) + 1))
    x[np.arange(y.size), ci] = 1.0
    yc = y - float(np.mean(y))  # centred: the optimiser's start does not depend on the level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary and convergence warnings: read from the result
        # Powell then L-BFGS: the default gradient methods stop short of convergence in about a quarter
        # of small fits with the launch variance near 0 (measured: 180 fits of 6 cells x 3 launches)
        res = sm.MixedLM(yc, x, groups=launches).fit(reml=True, method=["powell", "lbfgs"])
    tau2 = float(np.asarray(res.cov_re).ravel()[0])
    scale = float(res.scale)
    ok = bool(res.converged) and math.isfinite(tau2) and math.isfinite(scale)
    return scale, max(tau2, 0.0), ok


def _moment_tau2(y: np.ndarray, cells: np.ndarray, launches: np.ndarray) -> float:
    """The spread of a config's launch means after its cell means (a fallback, never a decision
    alone): the variance of the launch means of the within-cell residuals."""
    r = y.copy()
    for c in np.unique(cells):
        m = cells == c
        r[m] -= r[m].mean()
    means = [float(r[launches == u].mean()) for u in np.unique(launches)]
    return float(np.var(means, ddof=1)) if len(means) > 1 else 0.0


def fit_launches(
    configs: Sequence[str],
    cells: Sequence[Hashable],
    y: Sequence[float] | np.ndarray,
    launches: Sequence[Hashable],
    prior: LaunchPrior | None = None,
) -> LaunchFit:
    """The launch noise of these runs (one entry per run; ``y`` drift-adjusted oriented log values),
    by the rules of this module's docstring."""
    prior = prior or ASSUMED
    yv = np.asarray(y, dtype=float)
    cfg = np.asarray([str(c) for c in configs], dtype=object)
    cel = np.asarray([repr(c) for c in cells], dtype=object)
    lau = np.asarray([str(x) for x in launches], dtype=object)
    per: dict[str, ConfigLaunches] = {}
    failed: list[str] = []
    for c in sorted(set(cfg.tolist())):
        m = cfg == c
        n_l = len(set(lau[m].tolist()))
        if n_l < MIN_LAUNCHES:
            continue
        n_cells = len(set(cel[m].tolist()))
        df_w = float(m.sum() - n_cells - (n_l - 1))
        try:
            s2, t2, ok = _mixedlm(yv[m], cel[m], lau[m])
        except Exception:  # a singular design, an optimiser error: the fallback below
            s2, t2, ok = math.nan, math.nan, False
        if not ok:
            failed.append(c)
            t2 = max(prior.sd**2, _moment_tau2(yv[m], cel[m], lau[m]))
        per[c] = ConfigLaunches(n_l, math.sqrt(s2) if ok and s2 > 0 else 0.0, max(df_w, 0.0), t2,
                                float(n_l - 1), ok)  # fmt: skip
    good = [x for c, x in per.items() if c not in failed]
    if failed:  # conservative: the largest of what the failed fits fell back on, at the prior's df
        tau2 = max(x.tau2 for c, x in per.items() if c in failed)
        if good:
            tau2 = max(tau2, sum(x.df_tau * x.tau2 for x in good) / sum(x.df_tau for x in good))
        return LaunchFit(math.sqrt(tau2), prior.df, prior.source, prior, per, tuple(failed))
    if not good:
        return LaunchFit(prior.sd, prior.df, prior.source, prior, per)
    df_m = sum(x.df_tau for x in good)
    tau2_m = sum(x.df_tau * x.tau2 for x in good) / df_m
    if prior.source == "calibrated" and prior.df > 0 and math.isfinite(prior.df):
        df = df_m + prior.df
        tau2 = (df_m * tau2_m + prior.df * prior.sd**2) / df
        return LaunchFit(math.sqrt(tau2), df, "measured+calibrated", prior, per)
    # the assumed noise is a floor, not data (rule 1): a measured launch noise under it is raised to
    # it, one over it is used as measured, with the launches' own df. (Pooled as a 2-df prior it
    # pulled a measured 3% toward 2%: the gain interval covered 91.8%, 3 rounds; docs/statistics.md.)
    if tau2_m < prior.sd**2:
        return LaunchFit(prior.sd, df_m, "measured+floor", prior, per)
    return LaunchFit(math.sqrt(tau2_m), df_m, "measured", prior, per)


def session_components(ses: np.ndarray, g: np.ndarray) -> dict[str, str]:
    """Each session's linked component: two sessions are linked when a group (a config in a cell) was
    measured in both (its runs anchor the offset between them). The component's name is its first
    session's."""
    parent = {str(x): str(x) for x in set(ses.tolist())}

    def root(a: str) -> str:
        while parent[a] != a:
            a = parent[a]
        return a

    for gi in set(g.tolist()):
        ss = sorted({str(x) for x in ses[g == gi].tolist()})
        for other in ss[1:]:
            ra, rb = root(ss[0]), root(other)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return {k: root(k) for k in parent}


def session_columns(
    x: np.ndarray, names: list[tuple[str, str, int]], ses: np.ndarray
) -> tuple[np.ndarray, list[tuple[str, str, int]]]:
    """One indicator per session after the first: estimated, like the drift, from groups measured in
    more than one session only (a column no group varies along is dropped by the caller)."""
    kinds = sorted({str(v) for v in ses.tolist()})
    if len(kinds) < 2:
        return x, names
    cols = [(ses == k).astype(float) for k in kinds[1:]]
    return np.column_stack([x, *cols]), [*names, *((k, "session", 0) for k in kinds[1:])]


def round_drift_p(domain: str, names: list[tuple[str, str, int]], beta: np.ndarray, v_beta: np.ndarray,
                  within: LaunchFit, cfg: np.ndarray, dom: np.ndarray, df: float) -> float:  # fmt: skip
    """The joint test (F) that ``domain``'s round levels (its drift columns named "round") are 0 when
    each round holds one launch per config. A round's level is then the mean of its K configs' launch
    levels, so beside its variance from the run noise each carries tau^2 / K of launch variance
    against the first round's: ``V + tau^2 / K (I + J)``. ``tau^2`` comes from ``within``, the launch
    fit with the round levels taken out, which leaves (K - 1) / K of it (each launch less its round's
    mean): so a drift across rounds is not taken for launch noise, nor launch levels for a drift
    (without this term they read as one: "found" in 4 of 5 grids with a 3% launch sd, 3 rounds). Its
    df are the launches' ((rounds - 1)(K - 1): the K configs' fits share each round's mean)."""
    from scipy import stats as st

    js = [j for j, nm in enumerate(names) if nm[0] == domain and nm[1] == "round"]
    if not js:
        return 1.0
    b, k = beta[js], len(js)
    configs = len(set(cfg[dom == domain].tolist()))
    tau2, ddf = within.var, df
    good = [c for c in within.configs.values() if c.converged]
    if configs > 1 and good and not within.failed:  # the launches' own (no prior): each less its round
        df_m = sum(c.df_tau for c in good)
        tau2 = sum(c.df_tau * c.tau2 for c in good) / df_m * configs / (configs - 1)
        ddf = min(df, df_m * (configs - 1) / configs)
    vv = v_beta[np.ix_(js, js)] + tau2 / max(configs, 1) * (np.eye(k) + np.ones((k, k)))
    wald = float(b @ np.linalg.pinv(vv, rcond=1e-10) @ b)
    return float(st.f.sf(wald / k, k, max(ddf, 1.0))) if wald > 0 else 1.0
