"""Decisions that stay valid however often the data are looked at: a group-sequential rule with a
fixed schedule of looks, weighted Bonferroni spending over the looks, Benjamini-Hochberg over the
grid (docs/statistics.md, "The adaptive design").

A pair (two configs in one cell) is *looked at* once per look index: look 0 while a side's noise is
not measured (the first pass: the assumed noise, which only large gaps pass), then look ``j`` the
first time both sides have ``j`` runs with measured noise (j in 1, 2, max_repeats: the sizes the
design's rounds take a cell to). Look ``k`` spends the share ``w[k]`` of the level (fixed in
advance, summing to 1; 0 for a size the design never stops at). The look at single runs is skipped
when the measured noise has heavy tails (excess kurtosis >= SINGLE_TAILS): a skipped look is a p of 1. The pair's sequential p value is
``P = min_k p_k / w[k]`` over the looks it had: by the union bound ``P`` is a valid p value whatever
the stopping (a look never made counts as p = 1, and the look at ``j`` runs a side is the test a
fixed design of ``j`` runs would make). ``P`` only falls as looks are added, and BH is monotone in
its p values, so BH over every pair's current ``P`` decides a pair once and for all, and the union
of the decisions along the way is BH on the final values: the false-discovery rate over the grid
stays at ``level``.

Equivalence within +-margin is the same construction on TOST p values (both one-sided tests of
|difference| >= log(1 + margin)), judged only with 2 or more runs a side, with its own BH family.
Intervals are repeated confidence intervals: the intersection over looks of each look's interval at
level ``level_eff * w[k]``, so an interval excludes 0 exactly when the pair is decided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from specsweep.stats import basic as stats
from specsweep.stats.compare import PairTest, compare
from specsweep.stats.launch import LaunchPrior
from specsweep.stats.noise import NoiseModel, fit

ASSUMED_SHARE = 0.1  # share of the level spent on the first pass (assumed noise: only large gaps)
SINGLE_TAILS = 1.0  # no look at single runs when the measured noise's excess kurtosis reaches this


def look_sizes(max_repeats: int) -> tuple[int, ...]:
    """The runs a side at which a pair is looked at with measured noise: 1, 2 and max_repeats (the
    design's rounds take a running cell from 1 run to 2, then to max_repeats in one launch)."""
    if max_repeats < 1:
        raise ValueError(f"max_repeats must be >= 1, got {max_repeats}")
    return tuple(sorted({1, min(2, max_repeats), max_repeats}))


def look_weights(max_repeats: int) -> np.ndarray:
    """w[0] for the assumed-noise look, w[j] for j = 1..max_repeats runs a side (measured noise);
    fixed in advance, summing to 1: ASSUMED_SHARE for look 0, the rest over look_sizes in proportion
    to the runs (later looks decide the close cells), 0 for sizes the design never stops at."""
    sizes = look_sizes(max_repeats)
    w = np.zeros(max_repeats + 1)
    w[0] = ASSUMED_SHARE
    for j in sizes:
        w[j] = (1.0 - ASSUMED_SHARE) * j / sum(sizes)
    return w


@dataclass(frozen=True)
class Runs:
    """Runs as the noise model sees them, one entry per run with a value: ``y`` the oriented log value,
    ``pos`` its place in its order domain's run order, ``rounds`` its round (time blocks in
    ``block_domains``). The design's runs are one domain whose rounds are blocks."""

    configs: tuple[str, ...]
    cells: tuple[Hashable, ...]
    y: np.ndarray
    pos: np.ndarray
    rounds: np.ndarray
    domains: tuple[str, ...] = ()  # one per run; empty: one domain, "run"
    block_domains: frozenset[str] = frozenset({"run"})
    launches: tuple[str, ...] = ()  # one per run: its server launch (empty: launches not modelled)
    sessions: tuple[str, ...] = ()  # one per run: its session (empty: one session)
    launch_prior: LaunchPrior | None = None

    def upto(self, r: int) -> Runs:
        idx = np.flatnonzero(self.rounds <= r)

        def sub(t: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(t[i] for i in idx) if t else ()

        return Runs(tuple(self.configs[i] for i in idx), tuple(self.cells[i] for i in idx), self.y[idx],
                    self.pos[idx], self.rounds[idx], sub(self.domains), self.block_domains,
                    sub(self.launches), sub(self.sessions), self.launch_prior)  # fmt: skip

    def model(self, diagnostics: bool = False) -> NoiseModel:
        doms = self.domains or ("run",) * self.y.size
        return fit(self.configs, self.cells, self.y, pos=self.pos, domain=doms, rounds=self.rounds,
                   block_domains=self.block_domains, diagnostics=diagnostics,
                   launches=self.launches or None, sessions=self.sessions or None,
                   launch_prior=self.launch_prior)  # fmt: skip


PairKey = tuple[Hashable, str, str]  # (cell, a, b)


@dataclass(frozen=True)
class Look:
    round: int
    index: int  # 0: assumed noise; j: j runs a side, measured
    test: PairTest
    p: float
    p_eq: float


@dataclass(frozen=True)
class SeqPair:
    key: PairKey
    looks: tuple[Look, ...]
    weights: tuple[float, ...]

    @property
    def last(self) -> Look:
        return self.looks[-1]

    def _w(self, lk: Look, p: float) -> float:
        w = self.weights[lk.index]
        return min(1.0, p / w) if w > 0 else 1.0

    @property
    def p_seq(self) -> float:
        return min(self._w(lk, lk.p) for lk in self.looks)

    @property
    def p_eq_seq(self) -> float:
        return min(self._w(lk, lk.p_eq) for lk in self.looks)

    @property
    def deciding(self) -> Look:
        """The look with the smallest weighted p value (its sign is the decision's direction)."""
        return min(self.looks, key=lambda lk: self._w(lk, lk.p))

    def interval(self, level: float) -> tuple[float, float]:
        """The repeated confidence interval (log) at overall ``level``: the intersection of the looks'
        intervals at ``level * w[k]``; the last look's if the intersection is empty."""
        lo, hi = -30.0, 30.0
        for lk in self.looks:
            if self.weights[lk.index] <= 0:
                continue
            h = lk.test.half_width(level * self.weights[lk.index])
            lo, hi = max(lo, lk.test.log_effect - h), min(hi, lk.test.log_effect + h)
        if lo > hi:
            h = self.last.test.half_width(level * max(self.weights[self.last.index], 1e-12))
            lo, hi = self.last.test.log_effect - h, self.last.test.log_effect + h
        return lo, hi


def tost_p(test: PairTest, margin: float) -> float:
    """p value of "the configs differ by less than +-margin" (both one-sided t tests); 1.0 with a single
    run on a side or an unmeasured noise (equivalence is never claimed from an assumption)."""
    from scipy import special

    if min(test.n_a, test.n_b) < 2 or not (test.measured_a and test.measured_b) or test.se <= 0:
        return 1.0
    m = math.log1p(margin)

    def sf(z: float) -> float:
        return float(special.ndtr(-z)) if math.isinf(test.df) else float(special.stdtr(test.df, -z))

    return max(sf((test.log_effect + m) / test.se), sf((m - test.log_effect) / test.se))


def look_index(test: PairTest, max_repeats: int) -> int:
    if not (test.measured_a and test.measured_b):
        return 0
    return min(test.n_a, test.n_b, max_repeats)


def sequential(
    runs: Runs,
    pairs: Sequence[PairKey],
    *,
    max_repeats: int,
    margin: float,
    upto: int | None = None,
    prior: dict[PairKey, SeqPair] | None = None,
    after: int = -1,
) -> dict[PairKey, SeqPair]:
    """Every pair's looks, round by round (data of rounds <= r at round r's look). ``prior`` and
    ``after``: the looks already made up to round ``after`` (the same runs' earlier rounds), extended
    with the later rounds only - the same result, computed once."""
    w = tuple(float(x) for x in look_weights(max_repeats))
    looks: dict[PairKey, list[Look]] = {k: list(v.looks) for k, v in (prior or {}).items()}
    last = int(runs.rounds.max()) if runs.rounds.size else -1
    for r in range(after + 1, (last if upto is None else min(upto, last)) + 1):
        sub = runs.upto(r)
        if not np.any(sub.rounds == r):
            continue
        model = sub.model()
        for key in pairs:
            cell, a, b = key
            t = compare(model, (a, cell), (b, cell))
            if t is None:
                continue
            k = look_index(t, max_repeats)
            if k == 1 and model.kurtosis >= SINGLE_TAILS:
                continue  # heavy tails: single runs are not judged (docs/statistics.md); the look is skipped
            seen = looks.setdefault(key, [])
            if any(lk.index == k for lk in seen) or (seen and k < seen[-1].index):
                continue
            seen.append(Look(r, k, t, t.p_value, tost_p(t, margin)))
    return {k: SeqPair(k, tuple(v), w) for k, v in looks.items() if v}


@dataclass(frozen=True)
class Decisions:
    """BH over the grid: ``winner`` pairs (direction from the deciding look), ``equivalent`` pairs, and
    the per-comparison level the winner decisions amount to (for the intervals)."""

    winner: dict[PairKey, str]
    equivalent: frozenset[PairKey]
    level_eff: float
    p_adjusted: dict[PairKey, float]
    level_by: dict[PairKey, float] | None = None  # per pair, when families were adjusted apart

    def level_of(self, k: PairKey) -> float:
        """The per-comparison level the decisions of ``k``'s family amount to (its intervals)."""
        return self.level_by.get(k, self.level_eff) if self.level_by else self.level_eff


def decide(seq: dict[PairKey, SeqPair], level: float, n_family: int | None = None) -> Decisions:
    keys = sorted(seq, key=repr)
    m = max(n_family or 0, len(keys))
    p = [seq[k].p_seq for k in keys] + [1.0] * (m - len(keys))
    adj = stats.adjust(p, "bh")
    eff = stats.effective_level(p, level, "bh")
    winner = {}
    for k, pa in zip(keys, adj, strict=False):
        lk = seq[k].deciding
        if pa <= level and lk.test.log_effect != 0:
            winner[k] = k[1] if lk.test.log_effect > 0 else k[2]
    pe = [seq[k].p_eq_seq for k in keys] + [1.0] * (m - len(keys))
    adj_eq = stats.adjust(pe, "bh")
    eq = frozenset(k for k, pa in zip(keys, adj_eq, strict=False) if pa <= level and k not in winner)
    return Decisions(winner, eq, eff, {k: float(a) for k, a in zip(keys, adj, strict=False)})


def decide_families(seq: dict[PairKey, SeqPair], level: float, family: Callable[[PairKey], str]) -> Decisions:
    """:func:`decide` within each family (``family(k)`` names it), every family at ``level``."""
    groups: dict[str, dict[PairKey, SeqPair]] = {}
    for k, sp in seq.items():
        groups.setdefault(family(k), {})[k] = sp
    winner: dict[PairKey, str] = {}
    eq: set[PairKey] = set()
    adj: dict[PairKey, float] = {}
    level_by: dict[PairKey, float] = {}
    for g in groups.values():
        d = decide(g, level)
        winner.update(d.winner)
        eq.update(d.equivalent)
        adj.update(d.p_adjusted)
        level_by.update(dict.fromkeys(g, d.level_eff))
    eff = min(level_by.values(), default=level)
    return Decisions(winner, frozenset(eq), eff, adj, level_by)


def log_values(values: Sequence[float], higher_is_better: bool) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    return np.log(x) if higher_is_better else -np.log(x)
