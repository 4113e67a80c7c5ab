"""The adaptive design, second generation (``DesignSettings.race``): race on short first looks, choose
the length of the later runs, launch each config at most ``DesignSettings.launches`` times (2 or 3;
docs/statistics.md, "Racing").

Pure and deterministic, like :mod:`specsweep.design.schedule`, and called the same way
(``step(observations, configs, points, settings, launch_s)``):

- **Round 0 (look 0)**: one launch per config, a *short* run of every cell (``short_fraction`` of
  the cell's reference length, whole waves, at least ``min_waves``: the steady-state minimum,
  three). Each pair is judged on the assumed run noise (stats.DEFAULT_RUN_NOISE), both launches'
  levels (``launch_sd``) and the short runs' bias (``short_bias``), spending W0 of the level. A
  config decided behind gets nothing more in the cell. A pair whose short-run difference lies far
  off the same pair's differences in its other cells (more than OUT_K robust sds from their median:
  one run hit by a heavy tail) is not decided at look 0, and its short runs are left out of the
  later looks.
- **Round 1 (look 1)**: one relaunch of each config still in a cell, holding all its remaining runs
  (every pending cell). Their time is a share of one full-length pass of the open cells
  (race_plan.RELAUNCH_PASS), shared out by the Neyman rule (a cell's time ~ the square root of its
  shortest run's cost); per cell, the length (``LENGTHS``) whose runs in that time give the least
  error (race_plan.allocate). The verdict combines the short and the long runs with the weight that minimises the
  error, with the noise measured inside the relaunch (every cell's repeats, pooled per config), the
  launch levels (``launch_sd``, with ``launch_df`` degrees of freedom where it was calibrated:
  Welch-Satterthwaite) and the short runs' bias (the prior, or the bias measured across cells from
  the short against the relaunch's runs, the larger) in its variance. Each launch's runs of a cell enter by a
  Huber M-estimate (HUBER_C measured sds; a heavy-tailed run moves it by at most that much) and a
  short run that disagrees with the long runs by more than OUT_Z sds is left out.
- **Round 2 (look 2; ``launches: 3``)**: a third launch of the configs still in a cell that is open
  after look 1 and could still be decided: the cell's observed gap plus one standard error reaches
  what the best round-2 plan (planned with the *measured* noise) could decide. Its runs join the
  long runs (each launch's level weighted by its share of them).

A pair's sequential p value is min(p_k / W_k) (union bound over the fixed looks; W = SHARES[launches]),
and the grid's pairs are adjusted by Benjamini-Hochberg within the families of
``DesignSettings.family``, as the first generation does. Equivalence (TOST within +-margin) is judged
at the looks after the first, splitting its level the same way. The launch count is the design's
cap: a cell still open after the last round says "undecided" (``stopped_by``: ``max_repeats``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from specsweep.analysis.core import METRICS
from specsweep.design.types import Observation, Point
from specsweep.experiment.adaptive import DesignSettings
from specsweep.stats.basic import DEFAULT_RUN_NOISE
from specsweep.stats.sequential import PairKey

# the level's shares of look 0 (short runs, assumed noise), look 1 (measured) and look 2, by the
# most launches a config gets
SHARES = {2: (0.05, 0.95), 3: (0.05, 0.65, 0.3)}
W0 = 0.1
OUT_K = 5.0  # look 0: a pair's difference this many robust sds off its other cells' median is held
OUT_Z = 3.5  # later looks: a short run this many sds off the long runs is left out
HUBER_C = 1.5  # each launch's runs of a cell: a Huber M-estimate clipping at this many measured sds
HUBER_VAR = 1.04  # its variance against the mean's at normal noise (efficiency ~96%)
MIN_OUT_CELLS = 5  # cells a pair needs before look 0 tells a far-off difference
OUT_FLOOR = 0.05  # look 0's robust sd at least this (a run's noise): quiet grids hold no ordinary run
LENGTHS = (0.125, 0.25, 0.5, 1.0)  # the run lengths round 1 chooses from (shares of the reference)
RELAX = 1.15  # round 1: the cheapest plan within this factor of the best reachable standard error
REF_SHORT = 0.125  # short_bias is stated at this length
MIN_BIAS_CELLS = 4  # cells with both looks before the short runs' bias is measured from the data
MIN_LEVER = 0.5  # a cell tells the bias only where its later runs take off this share of look 0's lever


def g(f: float) -> float:
    """How a run of length ``f`` (share of the reference) is biased, relative to an eighth: 0 at full
    length, 1 at an eighth (the ramp and drain's share of a run falls as 1/length)."""
    f = min(max(f, 1e-3), 1.0)
    return (1.0 / f - 1.0) / (1.0 / REF_SHORT - 1.0)


def run_prompts(fraction: float, num_prompts: int, concurrency: int, min_waves: int) -> int:
    """The prompts of a run of ``fraction`` of a cell's reference length (``num_prompts``): whole waves
    of ``concurrency`` requests, at least ``min_waves`` of them, never more than the reference."""
    c = max(concurrency, 1)
    waves = max(min_waves, round(fraction * num_prompts / c))
    return max(1, min(num_prompts, waves * c))


def _sf_t(z: float, df: float) -> float:
    from scipy import special  # at a look, not at import: a broken install keeps the first pass

    return float(special.ndtr(-z)) if math.isinf(df) or df > 1e6 else float(special.stdtr(df, -z))


@dataclass(frozen=True)
class Side:
    """One config in one cell: its round-0 (short) oriented log values, and its later ones with each
    run's length and round (a round is a launch)."""

    y0: tuple[float, ...]
    f0: float
    y1: tuple[float, ...]
    l1: tuple[float, ...] = ()  # per later run, its length (empty: 1.0 each)
    r1: tuple[int, ...] = ()  # per later run, its round (empty: one round)

    @staticmethod
    def planned(f0: float, k: int, f: float, before: Side | None = None, rnd: int = 1) -> Side:
        """A side for planning: one short run at ``f0`` (or ``before``'s runs) and ``k`` more at ``f``."""
        b = before or Side((0.0,), f0, ())
        return Side(b.y0, b.f0, b.y1 + (0.0,) * k, b.lengths + (f,) * k, b.rounds + (rnd,) * k)

    @property
    def lengths(self) -> tuple[float, ...]:
        return self.l1 or (1.0,) * len(self.y1)

    @property
    def rounds(self) -> tuple[int, ...]:
        return self.r1 or (1,) * len(self.y1)

    @property
    def f1(self) -> float:
        return float(np.mean(self.lengths)) if self.y1 else 1.0

    @property
    def g1(self) -> float:
        """The later runs' mean bias lever (each run weighs 1/n in their estimate)."""
        return float(np.mean([g(f) for f in self.lengths])) if self.y1 else 0.0

    @property
    def inv_len(self) -> float:
        """Sum of 1/length over the later runs over n^2: their request sampling in units of q^2."""
        n = len(self.y1)
        return sum(1.0 / max(f, 1e-3) for f in self.lengths) / (n * n) if n else 0.0

    @property
    def launch_share(self) -> float:
        """Sum over the later launches of (their runs' share)^2: the later estimate's launch variance
        in units of launch_sd^2 (1 for one launch, 1/2 for two equal ones)."""
        n = len(self.y1)
        counts: dict[int, int] = {}
        for r in self.rounds:
            counts[r] = counts.get(r, 0) + 1
        return sum((c / n) ** 2 for c in counts.values()) if n else 1.0

    @property
    def huber_factor(self) -> float:
        """The later estimate's noise variance against the plain mean's: HUBER_VAR for a launch's runs
        that enter by the Huber estimate (3 or more), 1 for those that enter by their mean."""
        counts: dict[int, int] = {}
        for r in self.rounds:
            counts[r] = counts.get(r, 0) + 1
        n = len(self.y1)
        return sum(c * (HUBER_VAR if c >= 3 else 1.0) for c in counts.values()) / n if n else 1.0

    def center(self, scale: float) -> float:
        """The later runs' estimate: each launch's runs by a Huber M-estimate at ``scale`` (its own
        mean with fewer than 3 runs), the launches weighted by their runs."""
        groups: dict[int, list[float]] = {}
        for y, r in zip(self.y1, self.rounds, strict=True):
            groups.setdefault(r, []).append(y)
        n = len(self.y1)
        return sum(len(v) / n * huber(v, scale) for v in groups.values())


def huber(ys: Sequence[float], scale: float) -> float:
    """A Huber M-estimate of location with a known ``scale`` (clipping at HUBER_C x scale), from the
    median; the plain mean with fewer than 3 values (nothing to tell an outlier by)."""
    y = np.asarray(ys, dtype=float)
    if y.size < 3 or scale <= 0:
        return float(y.mean())
    mu = float(np.median(y))
    c = HUBER_C * scale
    for _ in range(50):
        nxt = float(np.clip(y, mu - c, mu + c).mean())
        if abs(nxt - mu) < 1e-10:
            break
        mu = nxt
    return mu


@dataclass(frozen=True)
class RaceLook:
    index: int  # 0: short runs, assumed noise; 1, 2: short and later runs, measured noise
    d: float  # log effect, > 0 favours the pair's a
    se: float
    df: float
    p: float
    p_eq: float = 1.0


@dataclass(frozen=True)
class RacePair:
    key: PairKey
    looks: tuple[RaceLook, ...]
    n_a: int
    n_b: int
    shares: tuple[float, ...] = SHARES[2]

    def share(self, lk: RaceLook) -> float:
        return self.shares[min(lk.index, len(self.shares) - 1)]

    def _w(self, lk: RaceLook) -> float:
        return min(1.0, lk.p / self.share(lk))

    @property
    def p_seq(self) -> float:
        return min(self._w(lk) for lk in self.looks)

    @property
    def p_eq_seq(self) -> float:
        """Equivalence at the looks after the first, its level split as theirs (union bound)."""
        later = sum(self.shares[1:])
        return min((min(1.0, lk.p_eq * later / self.share(lk)) for lk in self.looks if lk.index > 0),
                   default=1.0)  # fmt: skip

    @property
    def deciding(self) -> RaceLook:
        return min(self.looks, key=self._w)

    def interval(self, level: float) -> tuple[float, float]:
        """The intersection of the looks' intervals at ``level`` x their share (log)."""
        lo, hi = -30.0, 30.0
        for lk in self.looks:
            h = _quantile(level * self.share(lk) / 2, lk.df) * lk.se
            lo, hi = max(lo, lk.d - h), min(hi, lk.d + h)
        if lo > hi:
            lk = self.looks[-1]
            h = _quantile(level * self.share(lk) / 2, lk.df) * lk.se
            lo, hi = lk.d - h, lk.d + h
        return lo, hi


def _quantile(p: float, df: float) -> float:
    from scipy import special

    p = min(max(p, 1e-15), 0.5)
    return float(-special.ndtri(p)) if math.isinf(df) or df > 1e6 else float(-special.stdtrit(df, p))


@dataclass(frozen=True)
class Noise:
    """Per config: the within-launch run noise (log sd) of a full-length run and its df (0: not
    measured, the assumed noise stands in); and the short runs' bias scale in use (per config, at an
    eighth)."""

    h: dict[str, tuple[float, float]]
    bias: float

    def of(self, label: str) -> tuple[float, float]:
        return self.h.get(label, (DEFAULT_RUN_NOISE, 0.0))


def sides(obs: Sequence[Observation], metric: str) -> dict[tuple[str, Point], Side]:
    hib = METRICS[metric].higher_is_better if metric in METRICS else True
    acc: dict[tuple[str, Point], tuple[list[float], list[float], list[float], list[float], list[int]]] = {}
    for o in obs:
        if o.value is None or o.value <= 0:
            continue
        y = math.log(o.value) if hib else -math.log(o.value)
        ys0, fs0, ys1, fs1, rs1 = acc.setdefault((o.label, o.point), ([], [], [], [], []))
        if o.round == 0:
            ys0.append(y)
            fs0.append(o.length)
        else:
            ys1.append(y)
            fs1.append(o.length)
            rs1.append(o.round)
    return {k: Side(tuple(a), float(np.mean(b)) if b else 1.0, tuple(c), tuple(d), tuple(r))
            for k, (a, b, c, d, r) in acc.items()}  # fmt: skip


def measured_noise(
    s: Mapping[tuple[str, Point], Side], settings: DesignSettings
) -> dict[str, tuple[float, float]]:
    """Per config, the run noise inside a launch (log sd, request sampling at the runs' length taken
    out) pooled over every cell's launches with 2 or more later runs, and its df."""
    ss: dict[str, list[float]] = {}
    for (lab, _p), sd in s.items():
        groups: dict[int, list[tuple[float, float]]] = {}
        for val, f, r in zip(sd.y1, sd.lengths, sd.rounds, strict=True):
            groups.setdefault(r, []).append((val, f))
        for v in groups.values():
            if len(v) >= 2:
                ys = np.asarray([x for x, _f in v])
                acc = ss.setdefault(lab, [0.0, 0.0, 0.0])
                acc[0] += float(((ys - ys.mean()) ** 2).sum())
                acc[1] += ys.size - 1
                acc[2] += (ys.size - 1) * settings.request_sd**2 / float(np.mean([f for _x, f in v]))
    return {lab: (math.sqrt(max(a / d - r / d, 1e-8)), d) for lab, (a, d, r) in ss.items() if d > 0}


def components(
    a: Side, b: Side, ha: float, hb: float, settings: DesignSettings
) -> tuple[float, float, float, float]:
    """(A0, A1, bias lever of short, bias lever of long): the variances of the short and the later
    estimates' difference (noise, its Huber factor, and launches), and the bias lengths' g."""
    q2, tau2 = settings.request_sd**2, settings.launch_sd**2
    a0 = (ha**2 + q2 / a.f0) / max(len(a.y0), 1) + (hb**2 + q2 / b.f0) / max(len(b.y0), 1) + 2 * tau2
    a1 = sum(x.huber_factor * h * h / max(len(x.y1), 1) + q2 * x.inv_len + tau2 * x.launch_share
             for x, h in ((a, ha), (b, hb)))  # fmt: skip
    return a0, a1, (g(a.f0) + g(b.f0)) / 2, (a.g1 + b.g1) / 2


def best_weight(a0: float, a1: float, g0: float, g1: float, bias: float) -> tuple[float, float]:
    """(w, variance): the short runs' weight in w x short + (1 - w) x long that minimises the error,
    noise, launches and the worst-aligned bias (2 bias^2 (w g0 + (1 - w) g1)^2) together."""
    best = (0.0, math.inf)
    for w in np.linspace(0.0, 1.0, 21):
        v = w * w * a0 + (1 - w) ** 2 * a1 + 2 * bias**2 * (w * g0 + (1 - w) * g1) ** 2
        if v < best[1]:
            best = (float(w), float(v))
    return best


def look0(a: Side, b: Side, settings: DesignSettings, bias: float, held: bool = False) -> RaceLook:
    """Look 0 on the short runs; ``held``: the pair's difference is far off its other cells' (p = 1)."""
    s2 = 2 * DEFAULT_RUN_NOISE**2 + 2 * settings.launch_sd**2 + 2 * (bias * (g(a.f0) + g(b.f0)) / 2) ** 2
    d = float(np.mean(a.y0) - np.mean(b.y0))
    se = math.sqrt(s2)
    df = satterthwaite(s2, 0.0, 2 * settings.launch_sd**2, settings.launch_df)
    return RaceLook(0, d, se, df, 1.0 if held else min(1.0, 2 * _sf_t(abs(d) / se, df)))


def satterthwaite(v: float, runs_den: float, launch_part: float, launch_df: float | None) -> float:
    """The degrees of freedom of a variance ``v`` whose measured run-noise parts give ``runs_den``
    (sum of part^2 / df; 0: none measured) and whose launch part is ``launch_part``, estimated with
    ``launch_df`` (None: taken as known). inf where nothing in it was estimated."""
    den = runs_den + (launch_part**2 / launch_df if launch_df else 0.0)
    return v * v / den if den > 0 else math.inf


def held_at_look0(
    s: Mapping[tuple[str, Point], Side], configs: Sequence[str], points: Sequence[Point]
) -> set[tuple[Point, str, str]]:
    """The pairs (point, a, b) whose short-run difference lies more than OUT_K robust sds (1.4826 x
    the median absolute deviation, at least OUT_FLOOR) off the median of the same pair's differences
    in the other cells: one short run hit by a heavy tail, which look 0's assumed noise does not
    cover. Needs MIN_OUT_CELLS cells a pair."""
    held: set[tuple[Point, str, str]] = set()
    for i, x in enumerate(configs):
        for y in configs[i + 1 :]:
            ds = {p: float(np.mean(s[(x, p)].y0) - np.mean(s[(y, p)].y0)) for p in points
                  if (x, p) in s and (y, p) in s and s[(x, p)].y0 and s[(y, p)].y0}  # fmt: skip
            if len(ds) < MIN_OUT_CELLS:
                continue
            v = np.asarray(list(ds.values()))
            med = float(np.median(v))
            scale = 1.4826 * float(np.median(np.abs(v - med)))
            for p, d in ds.items():
                if abs(d - med) > OUT_K * max(scale, OUT_FLOOR):
                    held.add((p, x, y))
    return held


def look1(a: Side, b: Side, na: tuple[float, float], nb: tuple[float, float], settings: DesignSettings,
          bias: float, use_short: bool = True, index: int = 1) -> RaceLook:  # fmt: skip
    """The look after round ``index``: the later runs (Huber per launch) and the short runs, weighted
    for the least error; the short runs left out when ``use_short`` is false or they disagree with
    the later runs by more than OUT_Z sds."""
    (ha, dfa), (hb, dfb) = na, nb
    a0, a1, g0, g1 = components(a, b, ha, hb, settings)
    q2 = settings.request_sd**2
    d1 = a.center(math.sqrt(ha * ha + q2 / a.f1)) - b.center(math.sqrt(hb * hb + q2 / b.f1))
    short = use_short and bool(a.y0) and bool(b.y0)
    d0 = float(np.mean(a.y0) - np.mean(b.y0)) if short else 0.0
    if short and abs(d0 - d1) > OUT_Z * math.sqrt(a0 + a1 + 2 * bias**2 * (g0 - g1) ** 2):
        short = False
    w, v = best_weight(a0, a1, g0, g1, bias) if short else (0.0, a1 + 2 * bias**2 * g1**2)
    d = w * d0 + (1 - w) * d1
    ca = w * w / max(len(a.y0), 1) + (1 - w) ** 2 / len(a.y1)
    cb = w * w / max(len(b.y0), 1) + (1 - w) ** 2 / len(b.y1)
    measured = dfa > 0 and dfb > 0
    den = sum((c * h * h) ** 2 / df for c, h, df in ((ca, ha, dfa), (cb, hb, dfb))) if measured else 0.0
    tau2 = settings.launch_sd**2
    launch = tau2 * (w * w * 2 + (1 - w) ** 2 * (a.launch_share + b.launch_share))
    df = satterthwaite(v, den, launch, settings.launch_df)
    se = math.sqrt(v)
    p = min(1.0, 2 * _sf_t(abs(d) / se, df))
    p_eq = 1.0
    if measured and min(len(a.y1), len(b.y1)) >= 2:
        m = math.log1p(settings.margin)
        p_eq = max(_sf_t((d + m) / se, df), _sf_t((m - d) / se, df))
    return RaceLook(index, d, se, df, p, p_eq)


def measured_bias(s: Mapping[tuple[str, Point], Side], configs: Sequence[str], points: Sequence[Point],
                  noise: Noise, settings: DesignSettings) -> float | None:  # fmt: skip
    """The short runs' bias scale (per config, at an eighth) measured across cells from every pair's
    short-minus-long difference (the launches' levels, common to a pair's cells, taken out with the
    mean); None with fewer than MIN_BIAS_CELLS cells a pair whose later runs are long enough to
    tell (their bias lever at most 1 - MIN_LEVER of look 0's: in a cell whose later runs are as short
    as look 0's, the bias cancels and its lever is 0, which divided the spread by nothing)."""
    num = den = 0.0
    tau2 = settings.launch_sd**2
    for i, x in enumerate(configs):
        for y in configs[i + 1 :]:
            deltas, noises, levers = [], [], []
            for p in points:
                a, b = s.get((x, p)), s.get((y, p))
                if not a or not b or not (a.y0 and a.y1 and b.y0 and b.y1):
                    continue
                a0, a1, g0, g1 = components(a, b, noise.of(x)[0], noise.of(y)[0], settings)
                if g0 - g1 < MIN_LEVER * g0:
                    continue  # later runs about as short as look 0's: the bias cancels, nothing to tell
                deltas.append(float(np.mean(a.y0) - np.mean(b.y0) - np.mean(a.y1) + np.mean(b.y1)))
                noises.append(a0 + a1 - 2 * tau2 - tau2 * (a.launch_share + b.launch_share))
                levers.append((g0 - g1) ** 2)
            n = len(deltas)
            if n >= MIN_BIAS_CELLS:
                dv = np.asarray(deltas)
                num += float(((dv - dv.mean()) ** 2).sum()) * n / (n - 1) - sum(noises)
                den += 2 * sum(levers)
    if den <= 0:
        return None
    return math.sqrt(max(num / den, 0.0))
