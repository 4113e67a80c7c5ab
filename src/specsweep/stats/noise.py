"""Run-to-run noise per config, measured from every repeat in the data, with the host's drift taken out.

The model (on log values ``y``, oriented so that higher is better; docs/statistics.md explains it)::

    y_i = mu[g(i)] + drift(i) + e_i,      e_i ~ (0, sigma[config(i)]^2)

- ``g`` is a group: one config in one cell (scenario, concurrency), over every run dir. Its runs are
  repeats (or A/A runs across run dirs); their spread around ``mu[g]`` is what a run-to-run noise is.
- ``drift``: per *order domain* (a run dir, or every row on one clock), a straight line in the run's
  position ``pos`` (in runs), plus, where rounds are blocks of time common to every config
  (interleaved or adaptive run order), one level per round. Both are estimated from within-group
  variation only (repeats of the same group at different times), so a config's difference is never
  mistaken for drift.
- ``sigma[c]``: pooled over the config's groups (never another config's), with degrees of freedom
  cut by the residuals' excess kurtosis (a heavy-tailed noise makes a variance estimate less sure:
  var(s^2) = sigma^4 (2/df + kurtosis/df), so df_eff = df * 2 / (2 + kurtosis)).

Weighted least squares (weights 1/sigma[c]^2, two passes) on the within-group transform; the drift
columns that no group varies along are dropped. Residuals are kept (scaled back to one run's spread)
for single-run comparisons, which are judged against the measured distribution, not a normal one
(:mod:`specsweep.stats.compare`). Runs far off their group (beyond ``OUTLIER_K`` robust sd) are
flagged, never dropped: they widen the measured noise, which is what keeps the tests' level.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from specsweep.stats.drift import Drift, drift_columns, drift_summary
from specsweep.stats.launch import (
    LaunchFit,
    LaunchPrior,
    fit_launches,
    launch_share,
    round_drift_p,
    session_columns,
    session_components,
)
from specsweep.stats.step import Step, detect_steps, step_column

OUTLIER_K = 4.5  # a run this many robust sd (MAD) off the rest of its group is flagged
MAX_KURTOSIS = 30.0  # excess kurtosis estimates are clipped to [0, this]

Group = tuple[str, Hashable]  # (config label, cell)


@dataclass(frozen=True)
class ConfigNoise:
    """One config's run-to-run noise: ``sigma`` (sd of one run's log value, pooled), its degrees of
    freedom (``df`` as counted, ``df_eff`` after the kurtosis cut), the scaled residuals and
    within-group differences it comes from, and whether its cells' variances differ beyond chance
    (Bartlett at HETERO_LEVEL: the report warns, the pooled noise would not hold for every cell)."""

    sigma: float
    df: float
    df_eff: float
    residuals: np.ndarray  # one run's deviation from its group's mean, scaled to one run's spread
    groups: int  # groups with 2 or more runs
    pair_diffs: np.ndarray  # within-group differences of two runs (drift-adjusted)
    heterogeneous: bool = False  # the cells' variances differ beyond chance (Bartlett, HETERO_LEVEL)

    @property
    def measured(self) -> bool:
        return self.df > 0 and self.sigma > 0

    def var_of(self, g: GroupEst) -> tuple[float, float]:
        """(variance of one run, its df) for this config in group ``g``: the pooled noise. (Switching
        to a cell's own repeats when Bartlett's test finds the cells' noise differs was measured and
        rejected: choosing the test after looking makes the cells whose repeats happen to agree
        closely win too often, 5.7% of all-A/A grids against 3.7%; docs/statistics.md.)"""
        return self.sigma**2, self.df_eff


@dataclass(frozen=True)
class GroupEst:
    """A group's drift-adjusted mean and what its variance needs: runs, their mean drift coordinates."""

    mean: float
    n: int
    xbar: np.ndarray  # mean of the group's drift columns (positions, round indicators)
    domains: frozenset[str]
    launch_share: float = 0.0  # sum over its launches of (runs there / n)^2 (stats_launch)
    sessions: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Outlier:
    config: str
    cell: Hashable
    index: int  # position in the input arrays
    departure: float  # exp(leave-one-out residual) - 1
    robust_sds: float


@dataclass(frozen=True)
class NoiseModel:
    configs: dict[str, ConfigNoise]
    groups: dict[Group, GroupEst]
    beta: np.ndarray
    v_beta: np.ndarray
    drift: tuple[Drift, ...] = ()
    kurtosis: float = 0.0
    outliers: tuple[Outlier, ...] = ()
    domain_span: dict[str, float] = field(default_factory=dict)
    drift_df: float = math.inf  # degrees of freedom of the drift estimate's variance (the residual df)
    launch: LaunchFit | None = None  # the launch noise (None: launches not modelled, the old rule)
    session_links: dict[str, str] = field(default_factory=dict)  # session -> its connected component
    refused: tuple[Drift, ...] = ()  # drifts found but refused as absurd (bounds: _refuse)
    steps: tuple[Step, ...] = ()  # the host's steps found and taken out (stats_step)

    def noise(self, config: str) -> ConfigNoise | None:
        c = self.configs.get(config)
        return c if c is not None and c.measured else None

    def drift_rate(self) -> tuple[float, float] | None:
        """The pooled linear drift per run (precision-weighted over the domains where a drift is
        found) and its variance; None when none is."""
        ds = [d for d in self.drift if d.se > 0 and d.found]
        if not ds:
            return None
        w = np.array([1.0 / d.se**2 for d in ds])
        b = float(np.sum(w * np.array([d.per_run for d in ds])) / w.sum())
        return b, float(1.0 / w.sum())


def kurtosis_factor(n: np.ndarray) -> np.ndarray:
    """Excess kurtosis of a residual from a group of ``n`` runs relative to the noise's own:
    ((n-1)^2 + 1/(n-1)) / n^2 (1/2 for n = 2 and 3)."""
    m = np.maximum(n - 1.0, 1.0)
    return (m**2 + 1.0 / m) / n**2


def _group_index(configs: Sequence[str], cells: Sequence[Hashable]) -> tuple[np.ndarray, list[Group]]:
    keys: dict[Group, int] = {}
    idx = np.empty(len(configs), dtype=int)
    for i, k in enumerate(zip(configs, cells, strict=True)):
        idx[i] = keys.setdefault(k, len(keys))
    return idx, list(keys)


def _demean(v: np.ndarray, g: np.ndarray, ng: np.ndarray) -> np.ndarray:
    """``v`` minus its group means (rows of a matrix or a vector)."""
    if v.ndim == 1:
        return v - (np.bincount(g, weights=v, minlength=ng.size) / ng)[g]
    out = np.empty_like(v)
    for j in range(v.shape[1]):
        out[:, j] = v[:, j] - (np.bincount(g, weights=v[:, j], minlength=ng.size) / ng)[g]
    return out


def fit(
    configs: Sequence[str],
    cells: Sequence[Hashable],
    y: Sequence[float] | np.ndarray,
    *,
    pos: Sequence[float] | np.ndarray | None = None,
    domain: Sequence[str] | None = None,
    rounds: Sequence[int] | np.ndarray | None = None,
    block_domains: frozenset[str] = frozenset(),
    diagnostics: bool = True,
    launches: Sequence[Hashable] | None = None,
    sessions: Sequence[str] | None = None,
    launch_prior: LaunchPrior | None = None,
    steps: tuple[Step, ...] | None = None,
) -> NoiseModel:
    """The noise model of these runs (one entry per run; ``y`` = oriented log values). ``pos``: each
    run's position in its ``domain``'s run order (NaN: unknown, no drift is fitted for it);
    ``rounds``: its round, used as time blocks only in ``block_domains``. ``diagnostics``: also the
    checks only the report's notes need (drift the model leaves, outlier runs). ``launches``: each
    run's server launch (stats_launch: the launch noise is then part of every comparison);
    ``sessions``: each run's session (an offset per session is taken out where a group was measured
    in two sessions; pairs in sessions no group links carry a between-session term). ``steps``: the
    host's steps to take out (None: look for one per domain, :mod:`specsweep.stats.step`)."""
    yv = np.asarray(y, dtype=float)
    n = yv.size
    cfg = np.asarray(list(configs), dtype=object)
    g, keys = _group_index(list(configs), list(cells))
    ng = np.bincount(g, minlength=len(keys)).astype(float)
    posv = np.full(n, np.nan) if pos is None else np.asarray(pos, dtype=float)
    dom = np.asarray(list(domain) if domain is not None else [""] * n, dtype=object)
    rnd = np.zeros(n, dtype=int) if rounds is None else np.asarray(rounds, dtype=int)
    x, names, span = drift_columns(posv, dom, rnd, block_domains, ng[g] >= 2, g, launches is not None)
    ses = np.asarray(list(sessions) if sessions is not None else [""] * n, dtype=object)
    links = session_components(ses, g)
    x, names = session_columns(x, names, ses)
    steps_in = steps or ()
    for i, st in enumerate(steps_in):
        x = np.column_stack([x, step_column(st, posv, dom)])
        names.append((st.domain, "step", i))
    yt = _demean(yv, g, ng)
    xt = _demean(x, g, ng) if x.shape[1] else x
    keep = [j for j in range(xt.shape[1]) if float(np.dot(xt[:, j], xt[:, j])) > 1e-9]
    xt, x = xt[:, keep], x[:, keep]
    names = [names[j] for j in keep]
    labels = sorted(set(cfg.tolist()))
    rep = ng[g] >= 2  # runs whose group has a spread
    base_df = {c: float(np.sum((ng - 1)[[i for i, k in enumerate(keys) if k[0] == c]])) for c in labels}
    total_df = sum(base_df.values())
    w = np.ones(n)
    beta = np.zeros(xt.shape[1])
    v_beta = np.zeros((xt.shape[1], xt.shape[1]))
    sig2: dict[str, float] = {}
    rank = 0
    for _ in range(2):
        if xt.shape[1] and total_df > xt.shape[1]:
            sw = np.sqrt(w)
            xtw = xt * sw[:, None]
            a = xtw.T @ xtw
            v_beta = np.linalg.pinv(a, rcond=1e-10)
            beta = v_beta @ (xtw.T @ (yt * sw))
            rank = int(np.linalg.matrix_rank(a))
        e = yt - (xt @ beta if xt.shape[1] else 0.0)
        for c in labels:
            m = cfg == c
            dfc = base_df[c] - (rank * base_df[c] / total_df if total_df > 0 else 0.0)
            ss = float(np.sum(e[m] ** 2))
            sig2[c] = ss / dfc if dfc > 0 and ss > 0 else 0.0
        w = np.array([1.0 / sig2[c] if sig2.get(c, 0.0) > 0 else 1.0 for c in cfg.tolist()])
    # v_beta above is (X'WX)^-1 with W = 1/sigma^2: the variance of beta
    e = yt - (xt @ beta if xt.shape[1] else 0.0)
    if steps is None:  # look for a step in what the line, the sessions and the means leave
        lj = [j for j, nm in enumerate(names) if nm[1] == "session"]  # a step is looked for before a line
        r = yt - (xt[:, lj] @ np.linalg.lstsq(xt[:, lj], yt, rcond=None)[0] if lj else 0.0)
        sd = np.array([math.sqrt(sig2.get(c, 0.0)) for c in cfg.tolist()])
        found = detect_steps(r, sd, ng[g], posv, dom, launches, cfg, g)
        if found:
            kw: dict[str, Any] = {"pos": posv, "domain": list(dom), "rounds": rnd, "block_domains": block_domains,
                                  "diagnostics": diagnostics, "launches": launches, "sessions": sessions,
                                  "launch_prior": launch_prior}  # fmt: skip
            m2 = fit(configs, cells, yv, steps=found, **kw)
            ok = {(f.domain, f.at) for f in m2.steps if f.kept}  # a column no group varies along is gone
            kept_steps = tuple(s for s in found if (s.domain, s.at) in ok)
            return m2 if len(kept_steps) == len(found) else fit(configs, cells, yv, steps=kept_steps, **kw)
    scale = np.sqrt(np.where(ng[g] >= 2, ng[g] / np.maximum(ng[g] - 1.0, 1.0), 0.0))
    scaled = e * scale
    kurt = _kurtosis(e, ng[g], cfg, sig2, rep)
    keep_share = 1.0 - (rank / total_df if total_df > 0 else 0.0)  # df the drift terms took, spread evenly
    out_cfg: dict[str, ConfigNoise] = {}
    for c in labels:
        m = (cfg == c) & rep
        dfc = max(base_df[c] * keep_share, 0.0)
        s = math.sqrt(sig2[c]) if sig2[c] > 0 else 0.0
        mine = np.array([i for i, k in enumerate(keys) if k[0] == c and ng[i] >= 2], dtype=int)
        het = diagnostics and _bartlett_p(e, g, mine, ng) <= HETERO_LEVEL
        out_cfg[c] = ConfigNoise(s, dfc, dfc * 2.0 / (2.0 + kurt), scaled[m], int(mine.size),
                                 _pair_diffs(e, g, mine), het)  # fmt: skip
    dj = [j for j, nm in enumerate(names) if nm[1] not in ("session", "step")]
    drift = drift_summary([names[j] for j in dj], beta[dj], v_beta[np.ix_(dj, dj)], x[:, dj], diagnostics,
                           span, total_df - rank, e, g, posv, dom, cfg, sig2, xt[:, dj])  # fmt: skip
    refused = tuple(d for d in drift if d.refused)
    # the drift is taken out where rounds are time blocks (interleaved, adaptive: cheap and robust) or
    # where it is found; elsewhere (blocked order, repeats back to back) its estimate is too unsure to
    # correct with, and the report says the order cannot rule a drift out. A refused drift (absurd for
    # the data: _refuse) is never taken out. Session offsets always are (where a group links them).
    found_d = {d.domain for d in drift if d.found}
    no = {d.domain for d in refused}
    mask = np.array([1.0 if nm[1] in ("session", "step") or ((nm[0] in block_domains or nm[0] in found_d) and nm[0] not in no)
                     else 0.0 for nm in names])  # fmt: skip
    ests: dict[Group, GroupEst] = {}
    for i, k in enumerate(keys):
        m = g == i
        xb = x[m].mean(axis=0) * mask if x.shape[1] else np.zeros(0)
        mean = float(yv[m].mean() - (xb @ beta if x.shape[1] else 0.0))
        share = launch_share([launches[int(j)] for j in np.flatnonzero(m)]) if launches is not None else 0.0
        ests[k] = GroupEst(
            mean, int(ng[i]), xb, frozenset(dom[m].tolist()), share, frozenset(ses[m].tolist())
        )
    outl = _outliers(e, g, ng, keys, cfg, out_cfg) if diagnostics else ()
    lf = None
    if launches is not None:
        # less the line and the sessions, not the rounds (a round's level hides 1/K of K launch levels)
        lmask = mask * np.array([0.0 if nm[1] == "round" else 1.0 for nm in names])
        adj = yv - (x @ (beta * lmask) if x.shape[1] else 0.0)
        lf = fit_launches(list(configs), list(cells), adj, list(launches), launch_prior)
        if any(d.rounds and d.per_run == 0.0 for d in drift):  # rounds tested: launch noise within them
            lw = fit_launches(list(configs), list(cells), yv - x @ (beta * mask), list(launches), launch_prior)  # fmt: skip
            drift = tuple(replace(d, p=round_drift_p(d.domain, names, beta, v_beta, lw, cfg, dom, total_df - rank))
                          if d.rounds and d.per_run == 0.0 else d for d in drift)  # fmt: skip
    drift = tuple(d for d in drift if not d.refused)
    fitted = []
    for j, nm in enumerate(names):
        if nm[1] == "step":
            fitted.append(
                replace(steps_in[nm[2]], size=float(beta[j]), se=math.sqrt(max(float(v_beta[j, j]), 0.0)))
            )
    return NoiseModel(out_cfg, ests, beta, v_beta, drift, kurt, outl, span, max(total_df - rank, 1.0),
                      lf, links, refused, tuple(fitted))  # fmt: skip


MIN_BARTLETT_GROUPS = 3
HETERO_LEVEL = 0.01  # cells' variances differ (Bartlett) at this level: the report warns


def _pair_diffs(e: np.ndarray, g: np.ndarray, mine: np.ndarray) -> np.ndarray:
    """Every within-group difference of two runs (drift-adjusted): draws of e - e', the exact law of
    the difference of two single runs of this config, outliers at their full size."""
    out = []
    for i in mine:
        r = e[g == i]
        for a in range(r.size):
            out.extend(r[a] - r[a + 1 :])
    return np.asarray(out, dtype=float)


def _bartlett_p(e: np.ndarray, g: np.ndarray, mine: np.ndarray, ng: np.ndarray) -> float:
    """Bartlett's test that a config's groups share one variance (on the drift-adjusted residuals);
    1.0 with fewer than MIN_BARTLETT_GROUPS groups. It also answers "no" to a heavy-tailed noise,
    which is what it is used for too: either way, one pooled noise would not hold."""
    from scipy import stats as st

    groups = [e[g == i] for i in mine if ng[i] >= 2]
    groups = [x for x in groups if float(np.ptp(x)) > 0]
    if len(groups) < MIN_BARTLETT_GROUPS:
        return 1.0
    p = float(st.bartlett(*groups).pvalue)
    return p if math.isfinite(p) else 1.0


def _kurtosis(
    e: np.ndarray, n: np.ndarray, cfg: np.ndarray, sig2: dict[str, float], rep: np.ndarray
) -> float:
    """Excess kurtosis of the noise from the residuals of every group with a spread: E r^4 =
    var(r)^2 (3 + kurtosis * kurtosis_factor(n)) with var(r) = sigma^2 (1 - 1/n), solved for kurtosis."""
    s2 = np.array([sig2.get(c, 0.0) for c in cfg.tolist()])
    m = rep & (s2 > 0)
    if m.sum() < 4:
        return 0.0
    v = s2[m] * (1.0 - 1.0 / n[m])
    num = float(np.sum(e[m] ** 4 / v**2)) - 3.0 * m.sum()
    den = float(np.sum(kurtosis_factor(n[m])))
    return float(min(max(num / den, 0.0), MAX_KURTOSIS)) if den > 0 else 0.0


def _outliers(
    e: np.ndarray,
    g: np.ndarray,
    ng: np.ndarray,
    keys: list[Group],
    cfg: np.ndarray,
    conf: dict[str, ConfigNoise],
) -> tuple[Outlier, ...]:
    """Runs of groups with 3 or more runs that lie beyond OUTLIER_K robust sd (1.4826 MAD of the
    config's scaled residuals) from their group's median (a median, so that one far run does not
    make its neighbours look far too); the median's own spread widens the scale:
    sd * sqrt(1 + (pi/2) / n)."""
    out = []
    scale = {c: 1.4826 * float(np.median(np.abs(n.residuals))) if n.residuals.size >= 6 else 0.0
             for c, n in conf.items()}  # fmt: skip
    order = np.argsort(g, kind="stable")
    bounds = np.searchsorted(g[order], np.arange(len(keys) + 1))
    for gi in np.flatnonzero(ng >= 3):
        members = order[bounds[gi] : bounds[gi + 1]]
        c = str(cfg[members[0]])
        s = scale.get(c, 0.0)
        if s <= 0:
            continue
        sd = s * math.sqrt(1.0 + (math.pi / 2) / members.size)
        mid = float(np.median(e[members]))
        for i in members:
            dev = float(e[i] - mid)
            if abs(dev) > OUTLIER_K * sd:
                out.append(Outlier(c, keys[gi][1], int(i), math.expm1(dev), abs(dev) / sd))
    return tuple(sorted(out, key=lambda o: o.index))
