"""The host's drift over the run order, per order domain (:mod:`specsweep.stats.noise` fits it).

Per *order domain* (a run dir, or every row on one clock): a straight line in the run's position
(in runs) and, where rounds are blocks of time common to every config (interleaved or adaptive run
order), one level per round. This module decides which drift columns a domain gets
(:func:`drift_columns`), what a fitted drift is (:class:`Drift`: its size, its joint test, whether
it is found or refused as absurd for the data) and what the model leaves (a variogram check). The
estimation itself is the noise model's weighted least squares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DRIFT_LEVEL = 0.01  # a drift is "found" (and a nonlinear one warned about) at this level
MIN_DRIFT_GROUPS = 4  # a domain's drift is fitted only from at least this many groups with repeats
MAX_DRIFT = math.log(1.3)  # a drift over the run larger than 30% is refused (Drift.refused)
MAX_EXTRAPOLATION = 4.0  # a line drawn over more than 4x the run order its repeats span is refused


@dataclass(frozen=True)
class Drift:
    """The drift of one order domain: ``per_run`` (log per run, the linear part) with its standard
    error, ``span`` runs in the domain, ``size`` the range of the fitted drift over the domain's runs
    (log; linear part and round levels together), ``p`` the joint test of all its drift terms (found:
    ``p`` <= DRIFT_LEVEL). ``nonlinear_p``: a check of what the model leaves (squared differences of
    repeats against their distance in run order), small when the drift is not what the model says."""

    domain: str
    per_run: float
    se: float
    span: float
    size: float
    p: float
    rounds: bool  # round levels were fitted too
    nonlinear_p: float = 1.0
    lever: float = 0.0  # the run-order distance the repeats span (twice the largest within-group offset)

    @property
    def found(self) -> bool:
        return self.p <= DRIFT_LEVEL and not self.refused

    @property
    def refused(self) -> bool:
        """A drift the data cannot support: a straight line whose repeats span less than
        1/MAX_EXTRAPOLATION of the run order it would be drawn over (repeats back to back: the
        slope of a few neighbouring runs, extrapolated over the whole run), or one larger than
        MAX_DRIFT (log) over the run. Refused drifts are neither taken out nor reported as found;
        the report says one was refused."""
        if self.p > DRIFT_LEVEL:
            return False
        lin = not self.rounds and self.span > 0
        return self.size > MAX_DRIFT or (lin and self.span > MAX_EXTRAPOLATION * max(self.lever, 1e-9))

    @property
    def unexplained(self) -> bool:
        return self.nonlinear_p <= DRIFT_LEVEL


def drift_columns(
    pos: np.ndarray,
    domain: np.ndarray,
    rounds: np.ndarray,
    block_domains: frozenset[str],
    repeated: np.ndarray,
    g: np.ndarray,
    launched: bool = False,
) -> tuple[np.ndarray, list[tuple[str, str, int]], dict[str, float]]:
    """The drift design: per domain its position (centred, in runs) and, for domains whose rounds are
    time blocks, one indicator per round after the first. Rows with an unknown position get 0. A
    domain with fewer than MIN_DRIFT_GROUPS groups with repeats (``repeated``) gets none: a handful
    of repeats cannot tell a drift from noise, and would lose the degrees of freedom trying. ``launched``:
    rounds get no line (beside them a line is measured by the launch levels: round_drift_p)."""
    cols: list[np.ndarray] = []
    names: list[tuple[str, str, int]] = []
    span: dict[str, float] = {}
    for d in sorted(set(domain.tolist())):
        m = (domain == d) & np.isfinite(pos)
        if m.sum() < 2:
            continue
        span[d] = float(np.ptp(pos[m]) + 1.0)
        if len(set(g[m & repeated].tolist())) < MIN_DRIFT_GROUPS:
            continue
        if not (launched and d in block_domains and len(set(rounds[m].tolist())) > 1):
            cols.append(np.where(m, pos - pos[m].mean(), 0.0))
            names.append((d, "linear", 0))
        if d in block_domains:
            for r in sorted(set(rounds[m].tolist()))[1:]:
                cols.append(((domain == d) & (rounds == r)).astype(float))
                names.append((d, "round", int(r)))
    x = np.column_stack(cols) if cols else np.zeros((pos.size, 0))
    return x, names, span


def drift_summary(
    names: list[tuple[str, str, int]],
    beta: np.ndarray,
    v_beta: np.ndarray,
    x: np.ndarray,
    diagnostics: bool,
    span: dict[str, float],
    df: float,
    resid: np.ndarray,
    g: np.ndarray,
    pos: np.ndarray,
    dom: np.ndarray,
    cfg: np.ndarray,
    sig2: dict[str, float],
    xt: np.ndarray | None = None,
) -> tuple[Drift, ...]:
    from scipy import stats as st

    out = []
    for d in sorted({nm[0] for nm in names}):
        js = [j for j, nm in enumerate(names) if nm[0] == d]
        lin = (
            next(j for j in js if names[j][1] == "linear")
            if any(names[j][1] == "linear" for j in js)
            else None
        )
        b, v = beta[js], v_beta[np.ix_(js, js)]
        try:
            wald = float(b @ np.linalg.pinv(v, rcond=1e-10) @ b)
        except np.linalg.LinAlgError:
            wald = 0.0
        k = len(js)
        p = float(st.f.sf(wald / k, k, max(df, 1.0))) if wald > 0 else 1.0
        m = dom == d
        fitted = x[m][:, js] @ b
        size = float(np.ptp(fitted)) if fitted.size else 0.0
        se = math.sqrt(max(float(v_beta[lin, lin]), 0.0)) if lin is not None else 0.0
        per_run = float(beta[lin]) if lin is not None else 0.0
        rounds = any(names[j][1] == "round" for j in js)
        nl = _variogram_p(resid, g, pos, m, cfg, sig2) if diagnostics else 1.0
        lever = (
            2.0 * float(np.max(np.abs(xt[m, lin]))) if xt is not None and lin is not None and m.any() else 0.0
        )
        out.append(Drift(d, per_run, se, span.get(d, 0.0), size, p, rounds, nl, lever))
    return tuple(out)


def _variogram_p(
    resid: np.ndarray, g: np.ndarray, pos: np.ndarray, m: np.ndarray, cfg: np.ndarray, sig2: dict[str, float]
) -> float:
    """Drift the model left: within each group, squared differences of residuals (in units of the
    config's noise) against the runs' distance in order. Kendall's tau, one-sided (p small when far
    runs differ more than near ones). 1.0 when there are too few pairs to tell."""
    from scipy import stats as st

    dist, sq = [], []
    idx = np.flatnonzero(m & np.isfinite(pos))
    by: dict[int, list[int]] = {}
    for j in idx:
        by.setdefault(int(g[j]), []).append(int(j))
    for members in by.values():
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                i, k = members[a], members[b]
                s2 = sig2.get(str(cfg[i]), 0.0)
                if s2 > 0:
                    dist.append(abs(pos[i] - pos[k]))
                    sq.append((resid[i] - resid[k]) ** 2 / s2)
    if len(dist) < 8 or len(set(dist)) < 3:
        return 1.0
    res = st.kendalltau(dist, sq, alternative="greater")
    p = float(res.pvalue)
    return p if math.isfinite(p) else 1.0
