"""Steps in the host: a change of level at one point of the run order (a neighbour's job starts, a
clock is capped, a driver update between two sessions of one run dir).

Neither a line nor the round levels model a step inside a round: there it falls between one
config's launch and the next, and every cell of the later launch carries it. So, per order domain:

1. *Where*: the residuals of the noise model after the config x cell means, the linear drift and the
   session offsets (not the round levels, which would hide a step at a round's edge and halve one
   inside a round), each in units of its config's noise, averaged per launch (per run when launches
   are not known) and put in run order. The single most likely change point of that series is
   located by ``ruptures`` (binary segmentation, least-squares cost: the split that most reduces the
   squared deviations from the two segments' means).
2. *Whether*: a CUSUM test (the largest absolute partial sum of the series' deviations from its
   mean; Page 1954, Ploberger and Kraemer 1992), its p by permutation: a config's launches (or, with
   no launches known, a group's runs) are exchangeable in time when the host has no step, so each
   config's launch means are shuffled among that config's places in the run order (PERMUTATIONS
   times, a fixed seed: a report reads the same twice). The statistic is a maximum over every split,
   so where the search puts the split does not inflate the level. (The Brownian-bridge law of the
   OLS-CUSUM test, statsmodels ``breaks_cusumolsresid``, was tried first and rejected: residuals
   after the config x cell means are not independent, each group's sum to zero, and it found a step
   in half of plain-noise grids with 3 rounds.) A step is found at STEP_LEVEL.
3. *Then*: a step found becomes one more column of the drift design (0 before the split, 1 after,
   in its domain), estimated like the drift from within-group variation only: from groups measured
   on both sides of it (interleaved rounds: every group). So a config's difference is never taken
   for a step (a config's runs are all in its own groups) and the step is taken out of every mean
   with its estimate's variance added to every comparison across it. Where few groups straddle it
   (blocked order), that variance is large: the comparisons across it widen, and the report says
   the step could not be separated well (``Step.identified``). The search runs before the drift's
   line is fitted (a line fitted first would swallow half of a step), so a linear drift can look
   like a step: a step whose fitted size beside the line and the round levels is under KEEP_Z
   standard errors is dropped again (``Step.kept``), and the line alone stays.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

STEP_LEVEL = 0.05  # a step is found when the CUSUM test's p is at most this
MIN_UNITS = 6  # launches (or runs) of a domain from which a step is looked for
MIN_SEGMENT = 2  # units on each side of a step
KEEP_Z = 3.0  # a step found is kept when its fitted size is this many standard errors (Step.kept)
PERMUTATIONS = 199  # the CUSUM test's permutations (p >= 1/200: STEP_LEVEL is reachable)


@dataclass(frozen=True)
class Step:
    """A step found in ``domain``: every run at ``at`` or later in its run order is shifted by
    ``size`` (log; 0 until fitted) with standard error ``se``; ``after``/``units`` the share of the
    domain's units (launches or runs) after it; ``p`` the CUSUM test's."""

    domain: str
    at: float
    after: int
    units: int
    p: float
    size: float = 0.0
    se: float = math.inf

    @property
    def kept(self) -> bool:
        """Its fitted size is at least KEEP_Z standard errors beside the line and the round levels:
        a step, not a drift the search cut in two (a step that is not is dropped, the line stays)."""
        return self.se > 0 and abs(self.size) >= KEEP_Z * self.se

    @property
    def identified(self) -> bool:
        """Its estimate is at least twice its standard error: taken out cleanly. Otherwise it is
        still taken out, but its variance (large) widens every comparison across it."""
        return self.se > 0 and abs(self.size) >= 2.0 * self.se


def _units(
    r: np.ndarray, pos: np.ndarray, strata: np.ndarray, launches: Sequence[Hashable] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean residual, first position, stratum) per unit (a launch, else a run), in run order."""
    if launches is None:
        o = np.argsort(pos, kind="stable")
        return r[o], pos[o], strata[o]
    by: dict[str, list[int]] = {}
    for i, k in enumerate(str(x) for x in launches):
        by.setdefault(k, []).append(i)
    rows = sorted((float(pos[ix].min()), float(r[ix].mean()), str(strata[ix[0]]))
                  for ix in map(np.asarray, by.values()))  # fmt: skip
    return (np.array([m for _p, m, _s in rows]), np.array([p for p, _m, _s in rows]),
            np.array([s for _p, _m, s in rows], dtype=object))  # fmt: skip


def _cusum(z: np.ndarray) -> np.ndarray:
    """The largest absolute partial sum of each row's deviations from its mean."""
    return np.max(np.abs(np.cumsum(z - z.mean(axis=-1, keepdims=True), axis=-1)), axis=-1)


def permutation_p(z: np.ndarray, strata: np.ndarray, perms: int = PERMUTATIONS, seed: int = 0) -> float:
    """The CUSUM test's p by permutation: each stratum's units shuffled among that stratum's places in
    the run order (a config's launches, or a group's runs, are exchangeable when the host has no
    step; units of different configs or cells are not, so they are never swapped)."""
    rng = np.random.default_rng(seed)
    sims = np.tile(z, (perms, 1))
    for s in set(strata.tolist()):
        idx = np.flatnonzero(strata == s)
        if idx.size > 1:
            sims[:, idx] = rng.permuted(sims[:, idx], axis=1)
    obs = float(_cusum(z))
    return float((1 + np.sum(_cusum(sims) >= obs - 1e-12)) / (1 + perms))


def find_step(
    domain: str,
    r: np.ndarray,
    pos: np.ndarray,
    strata: np.ndarray,
    launches: Sequence[Hashable] | None = None,
) -> Step | None:
    """The step in one domain's standardised residuals ``r`` (run order ``pos``; each run's stratum:
    its config when ``launches`` are known, else its group), or None when the CUSUM test does not
    find one at STEP_LEVEL or the domain is too short to tell."""
    import ruptures as rpt

    ok = np.isfinite(pos) & np.isfinite(r)
    if launches is not None:
        launches = [x for x, k in zip(launches, ok, strict=True) if k]
    z, first, st = _units(r[ok], pos[ok], strata[ok], launches)
    if z.size < max(MIN_UNITS, 2 * MIN_SEGMENT) or float(np.ptp(z)) <= 0:
        return None
    p = permutation_p(z, st)
    if p > STEP_LEVEL:
        return None
    # where: on the runs themselves (a step inside a launch splits its cells), in run order
    o = np.argsort(pos[ok], kind="stable")
    rr, pp = r[ok][o], pos[ok][o]
    k = int(rpt.Binseg(model="l2", min_size=MIN_SEGMENT, jump=1).fit(rr.reshape(-1, 1)).predict(n_bkps=1)[0])
    if not MIN_SEGMENT <= k <= rr.size - MIN_SEGMENT:
        return None
    at = float(pp[k])
    return Step(domain, at, int(np.sum(first >= at)), int(z.size), p)


def step_column(step: Step, pos: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """The step's design column: 1 for the domain's runs at or after it, else 0."""
    return ((domain == step.domain) & np.isfinite(pos) & (pos >= step.at)).astype(float)


def detect_steps(
    r: np.ndarray,
    sd: np.ndarray,
    n: np.ndarray,
    pos: np.ndarray,
    dom: np.ndarray,
    launches: Sequence[Hashable] | None,
    cfg: np.ndarray,
    g: np.ndarray,
) -> tuple[Step, ...]:
    """The steps found per domain in the within-group residuals ``r`` (each run's config noise ``sd``,
    its group's runs ``n``; runs of groups with one run, or of a config with no noise measured, are
    left out), each residual scaled to one run's spread in units of its config's noise."""
    use = (sd > 0) & (n >= 2)
    z = np.full(r.shape, np.nan)
    z[use] = r[use] * np.sqrt(n[use] / (n[use] - 1.0)) / sd[use]
    out = []
    for d in sorted(set(dom.tolist())):
        m = (dom == d) & np.isfinite(z)
        lm = [launches[int(i)] for i in np.flatnonzero(m)] if launches is not None else None
        strata = cfg[m] if launches is not None else g[m]
        st = find_step(str(d), z[m], pos[m], np.asarray(strata, dtype=object), lm)
        if st is not None:
            out.append(st)
    return tuple(out)
