"""The design's decisions (pure): per pair and cell, from the observations so far, with an error
guarantee that holds however often the data are looked at (docs/statistics.md, "The adaptive design").

Every pair of configs in a cell is judged by the sequential rule of :mod:`specsweep.stats.sequential`: one
look per sample size (look 0 on the assumed noise in the first pass, look j once both sides have j
runs with measured noise), weighted Bonferroni spending over the looks, Benjamini-Hochberg over the
grid's pairs (winners at ``settings.level``; equivalence within +-margin by TOST, its own family).
The report of a design run calls the same functions on the same rows, so the two always agree.

A config decided behind another config in a cell is out of that cell (no more runs there). A cell is
*decided* when one config is left, *equivalent* when the configs left are all shown within the
margin, and otherwise keeps running until a pair cannot be resolved by ``max_repeats`` even if its
present estimate were the truth (*futile*: more runs would not decide it), or the limits stop it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from specsweep.analysis.core import METRICS
from specsweep.design.types import Observation, PairStatus, Point
from specsweep.experiment.adaptive import DesignSettings
from specsweep.stats.compare import PairTest
from specsweep.stats.noise import NoiseModel
from specsweep.stats.sequential import (
    Decisions,
    PairKey,
    Runs,
    SeqPair,
    decide_families,
    look_weights,
    sequential,
)

FUTILITY = 0.1  # a pair stops when its present estimate gives it less chance than this to be resolved
PLAN_NOISE = 0.05  # a run's noise the schedule plans with before any is measured (never used to decide)
POWER = 0.8  # "about N more runs per config would decide a gap of X%": at this power


def runs_of(obs: Sequence[Observation], metric: str) -> Runs:
    """The observations with a value as the sequential rule's runs: oriented log values, their rank in
    the run order (seq) as the position, rounds as time blocks, a config's round as one launch."""
    hib = METRICS[metric].higher_is_better if metric in METRICS else True
    ok = sorted((o for o in obs if o.value is not None and o.value > 0), key=lambda o: (o.seq, o.round))
    y = np.array([math.log(o.value) if hib else -math.log(o.value) for o in ok if o.value is not None])
    # a config's runs of a round share one launch (stats_launch): the launch noise is in every look
    return Runs(tuple(o.label for o in ok), tuple(o.point for o in ok), y, np.arange(len(ok), dtype=float),
                np.array([o.round for o in ok], dtype=int),
                launches=tuple(f"{o.label}|{o.round}" for o in ok))  # fmt: skip


def pair_keys(configs: Sequence[str], points: Sequence[Point]) -> list[PairKey]:
    return [
        (p, configs[i], configs[j])
        for p in points
        for i in range(len(configs))
        for j in range(i + 1, len(configs))
    ]


@dataclass(frozen=True)
class Assessment:
    """The rules' reading of the data: each pair's looks, the grid's decisions, each cell's configs
    still in the running, and the latest noise model."""

    seq: dict[PairKey, SeqPair]
    decisions: Decisions
    contenders: dict[Hashable, tuple[str, ...]]
    runs: dict[tuple[str, Point], int]
    model: NoiseModel | None
    last_round: int = -1

    def winner(self, k: PairKey) -> str | None:
        return self.decisions.winner.get(k)

    def equivalent(self, k: PairKey) -> bool:
        return k in self.decisions.equivalent

    def resolved(self, k: PairKey) -> bool:
        return k in self.decisions.winner or k in self.decisions.equivalent

    def family(self, k: PairKey, settings: DesignSettings) -> tuple[int, int, int]:
        """(pairs, winners, equivalent pairs) of ``k``'s BH family so far."""
        f = settings.family(k[1], k[2])
        keys = [x for x in self.seq if settings.family(x[1], x[2]) == f]
        return (len(keys), sum(1 for x in keys if x in self.decisions.winner),
                sum(1 for x in keys if x in self.decisions.equivalent))  # fmt: skip


def assess(
    obs: Sequence[Observation],
    configs: Sequence[str],
    points: Sequence[Point],
    settings: DesignSettings,
    prior: Assessment | None = None,
) -> Assessment:
    """The rules' reading of ``obs``; ``prior``: the reading of the same observations' earlier rounds
    (only the later rounds' looks are computed: the same result, sooner)."""
    runs = runs_of(obs, settings.metric)
    keys = pair_keys(configs, points)
    old, after = (prior.seq, prior.last_round) if prior is not None else (None, -1)
    seq = (sequential(runs, keys, max_repeats=settings.max_repeats, margin=settings.margin, prior=old, after=after)
           if runs.y.size else {})  # fmt: skip
    dec = decide_families(seq, settings.level, lambda k: settings.family(k[1], k[2]))
    n: dict[tuple[str, Point], int] = {}
    for c, q in zip(runs.configs, runs.cells, strict=True):
        pt = cast(Point, q)
        n[(c, pt)] = n.get((c, pt), 0) + 1
    contenders: dict[Hashable, tuple[str, ...]] = {}
    for p in points:
        present = [c for c in configs if n.get((c, p), 0) > 0]
        behind = {lab for k, w in dec.winner.items() if k[0] == p for lab in (k[1], k[2]) if lab != w}
        contenders[p] = tuple(c for c in present if c not in behind)
    model = runs.model() if runs.y.size else None
    return Assessment(seq, dec, contenders, n, model, int(runs.rounds.max()) if runs.rounds.size else -1)


def final_level(settings: DesignSettings, decided: int, family: int) -> float:
    """The per-pair level of the last look if ``decided`` pairs of ``family`` are decided by then (BH's
    threshold for one more), spent at the last look's weight."""
    w = look_weights(settings.max_repeats)[-1]
    return settings.level * w * (decided + 1) / max(family, 1)


def chances(
    a: Assessment, k: PairKey, t: PairTest, n: int, settings: DesignSettings, noise: float | None = None
) -> float:
    """The chance pair ``k`` is resolved (a winner or equivalent, each in its own BH family) at the
    look with ``n`` runs a side, if its present estimate were the truth."""
    w = look_weights(settings.max_repeats)[min(n, settings.max_repeats)]
    size, won, eqs = a.family(k, settings)
    fam = max(size, 1)
    lw = settings.level * w * (won + 1) / fam
    le = settings.level * w * (eqs + 1) / fam
    return max(chance(t, n, lw, settings.margin, noise)[0], chance(t, n, le, settings.margin, noise)[1])


def _z(p: float) -> float:
    """The normal's upper ``p`` quantile."""
    from scipy import special

    return float(-special.ndtri(p))


def _sf(z: float) -> float:
    from scipy import special

    return float(special.ndtr(-z))


def chance(
    test: PairTest, n: int, level: float, margin: float, noise: float | None = None
) -> tuple[float, float]:
    """(winner, equivalence): the chance that the pair is resolved with ``n`` runs a side if its present
    estimate were the truth (``noise``: the run noise to plan with instead of the measured ones)."""
    va, vb = (noise**2, noise**2) if noise is not None else (test.sigma_a**2, test.sigma_b**2)
    se_n = math.sqrt((va + vb) / n)
    if se_n <= 0:
        return 1.0, 1.0
    d = abs(test.log_effect)
    win = _sf(_z(level / 2) - d / se_n)
    m = math.log1p(margin)
    eq = _sf(_z(level) - (m - d) / se_n) if m > 0 and n >= 2 else 0.0
    return win, eq


def more_runs(test: PairTest, gap: float, level: float) -> int | None:
    """About how many runs per config (in all) would decide a real ``gap`` with probability POWER at
    ``level``, at the pair's measured noise; None beyond 200."""
    delta = math.log1p(max(gap, 1e-6))
    k = (_z(level / 2) + _z(1 - POWER)) ** 2 * (test.sigma_a**2 + test.sigma_b**2) / delta**2
    return math.ceil(k) if k <= 200 else None


def pair_status(a: Assessment, k: PairKey, settings: DesignSettings, stopped: str | None) -> PairStatus:
    """A pair's state for the report and the log; ``stopped``: why its cell stopped, if it did."""
    p, x, y = cast(Point, k[0]), k[1], k[2]
    sp = a.seq.get(k)
    if sp is None:
        return PairStatus(
            p, x, y, "no_data", None, 0.0, 0.0, 0.0, a.runs.get((x, p), 0), a.runs.get((y, p), 0), 1.0
        )
    lo, hi = sp.interval(a.decisions.level_of(k))
    t = sp.last.test
    win = a.winner(k)
    status = (
        "decided"
        if win
        else "equivalent"
        if a.equivalent(k)
        else "budget"
        if stopped == "budget"
        else "undecided"
    )
    more = gap = None
    if status in ("undecided", "budget"):
        gap = max(abs(t.effect), settings.margin)
        size, won, _eq = a.family(k, settings)
        total = more_runs(t, gap, final_level(settings, won, size))
        more = None if total is None else max(total - min(t.n_a, t.n_b), 1)
    return PairStatus(p, x, y, status, win, t.effect, math.expm1(lo), math.expm1(hi), t.n_a, t.n_b,  # type: ignore[arg-type]
                      min(1.0, sp.p_seq), more, gap)  # fmt: skip


def open_pairs(a: Assessment, p: Hashable) -> list[PairKey]:
    """The cell's pairs among its contenders that are not resolved yet."""
    cs = a.contenders.get(p, ())
    out = []
    for i in range(len(cs)):
        for j in range(i + 1, len(cs)):
            k = (p, cs[i], cs[j])  # contenders keep the configs' order, as pair_keys does
            if not a.resolved(k):
                out.append(k)
    return out


def futile(a: Assessment, k: PairKey, settings: DesignSettings) -> bool:
    """Whether max_repeats runs a side leave the pair less than FUTILITY chance of being resolved if its
    present estimate were the truth (a pair with unmeasured noise is never futile yet). Stopping a
    cell never adds a false winner; it costs power on gaps the estimate under-states."""
    sp = a.seq.get(k)
    if sp is None:
        return False
    t = sp.last.test
    if not (t.measured_a and t.measured_b):
        return False
    return chances(a, k, t, settings.max_repeats, settings) < FUTILITY
