"""The adaptive design, second generation (``DesignSettings.race``): race on short first looks, choose
the length of the later runs, launch each config at most twice (docs/statistics.md, "Racing").

Pure and deterministic, like :mod:`specsweep.adaptive.schedule`, and called the same way
(``step(observations, configs, points, settings, launch_s)``):

- **Round 0 (look 0)**: one launch per config, a *short* run of every cell (``short_fraction`` of the
  cell's reference length, whole waves, at least ``min_waves``). Each pair is judged on the assumed
  run noise (stats.DEFAULT_RUN_NOISE), both launches' levels (``launch_sd``) and the short runs' bias
  (``short_bias``), spending W0 of the level. A config decided behind gets nothing more in the cell.
- **Round 1 (look 1)**: one relaunch of each config still in a cell, holding all its remaining runs
  (every pending cell). Per cell, the rules choose the run length and count (``LENGTHS`` x 2 ..
  ``max_repeats``) that reach the precision a gap of twice the margin needs at the least run time,
  or, when the launch levels make that unreachable, the cheapest within ``RELAX`` of the best
  precision. The verdict combines the short and the long runs with the weight that minimises the
  error, with the noise measured inside the relaunch (every cell's repeats, pooled per config), the
  launch levels and the short runs' bias (the prior, or the bias measured across cells from the
  short against the long runs, the larger) in its variance; it spends W1 of the level. Equivalence
  (TOST within +-margin) is judged at this look only.

A pair's sequential p value is min(p0 / W0, p1 / W1) (union bound over the two fixed looks), and the
grid's pairs are adjusted by Benjamini-Hochberg within the families of ``DesignSettings.family``, as
the first generation does. The launch count is the design's cap: after round 1 the design ends; a cell
still open says "undecided" (``stopped_by``: ``max_repeats``, the design's run limit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from specsweep.adaptive.types import (
    DesignSettings,
    Observation,
    Point,
)
from specsweep.analysis.core import METRICS
from specsweep.stats import DEFAULT_RUN_NOISE
from specsweep.stats_seq import PairKey

W0, W1 = 0.1, 0.9  # the level's shares of look 0 (short runs, assumed noise) and look 1 (measured)
LENGTHS = (0.125, 0.25, 0.5, 1.0)  # the run lengths round 1 chooses from (shares of the reference)
RELAX = 1.15  # round 1: the cheapest plan within this factor of the best reachable standard error
REF_SHORT = 0.125  # short_bias is stated at this length
MIN_BIAS_CELLS = 4  # cells with both looks before the short runs' bias is measured from the data
BASELINE_REPEATS = 3


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
    """One config in one cell: its round-0 (short) and round-1 (long) oriented log values."""

    y0: tuple[float, ...]
    f0: float
    y1: tuple[float, ...]
    f1: float


@dataclass(frozen=True)
class RaceLook:
    index: int  # 0: short runs, assumed noise; 1: short and long runs, measured noise
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

    def _w(self, lk: RaceLook) -> float:
        return min(1.0, lk.p / (W0 if lk.index == 0 else W1))

    @property
    def p_seq(self) -> float:
        return min(self._w(lk) for lk in self.looks)

    @property
    def p_eq_seq(self) -> float:
        return min(lk.p_eq for lk in self.looks)

    @property
    def deciding(self) -> RaceLook:
        return min(self.looks, key=self._w)

    def interval(self, level: float) -> tuple[float, float]:
        """The intersection of the looks' intervals at ``level`` x their share (log)."""
        lo, hi = -30.0, 30.0
        for lk in self.looks:
            w = W0 if lk.index == 0 else W1
            h = _quantile(level * w / 2, lk.df) * lk.se
            lo, hi = max(lo, lk.d - h), min(hi, lk.d + h)
        if lo > hi:
            lk = self.looks[-1]
            h = _quantile(level * W1 / 2, lk.df) * lk.se
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
    acc: dict[tuple[str, Point], tuple[list[float], list[float], list[float], list[float]]] = {}
    for o in obs:
        if o.value is None or o.value <= 0:
            continue
        y = math.log(o.value) if hib else -math.log(o.value)
        ys0, fs0, ys1, fs1 = acc.setdefault((o.label, o.point), ([], [], [], []))
        (ys0 if o.round == 0 else ys1).append(y)
        (fs0 if o.round == 0 else fs1).append(o.length)
    return {k: Side(tuple(a), float(np.mean(b)) if b else 1.0, tuple(c), float(np.mean(d)) if d else 1.0)
            for k, (a, b, c, d) in acc.items()}  # fmt: skip


def measured_noise(
    s: Mapping[tuple[str, Point], Side], settings: DesignSettings
) -> dict[str, tuple[float, float]]:
    """Per config, the run noise inside a launch (log sd, request sampling at the runs' length taken
    out) pooled over every cell with 2 or more round-1 runs, and its df."""
    ss: dict[str, list[float]] = {}
    for (lab, _p), sd in s.items():
        if len(sd.y1) >= 2:
            y = np.asarray(sd.y1)
            acc = ss.setdefault(lab, [0.0, 0.0, 0.0])
            acc[0] += float(((y - y.mean()) ** 2).sum())
            acc[1] += y.size - 1
            acc[2] += (y.size - 1) * settings.request_sd**2 / sd.f1
    return {lab: (math.sqrt(max(a / d - r / d, 1e-8)), d) for lab, (a, d, r) in ss.items() if d > 0}


def components(
    a: Side, b: Side, ha: float, hb: float, settings: DesignSettings
) -> tuple[float, float, float, float]:
    """(A0, A1, bias lever of short, bias lever of long): the variances of the short and the long
    means' difference (noise and launches), and the bias lengths' g."""
    q2, tau2 = settings.request_sd**2, settings.launch_sd**2
    a0 = (ha**2 + q2 / a.f0) / max(len(a.y0), 1) + (hb**2 + q2 / b.f0) / max(len(b.y0), 1) + 2 * tau2
    a1 = (ha**2 + q2 / a.f1) / max(len(a.y1), 1) + (hb**2 + q2 / b.f1) / max(len(b.y1), 1) + 2 * tau2
    return a0, a1, (g(a.f0) + g(b.f0)) / 2, (g(a.f1) + g(b.f1)) / 2


def best_weight(a0: float, a1: float, g0: float, g1: float, bias: float) -> tuple[float, float]:
    """(w, variance): the short runs' weight in w x short + (1 - w) x long that minimises the error,
    noise, launches and the worst-aligned bias (2 bias^2 (w g0 + (1 - w) g1)^2) together."""
    best = (0.0, math.inf)
    for w in np.linspace(0.0, 1.0, 21):
        v = w * w * a0 + (1 - w) ** 2 * a1 + 2 * bias**2 * (w * g0 + (1 - w) * g1) ** 2
        if v < best[1]:
            best = (float(w), float(v))
    return best


def look0(a: Side, b: Side, settings: DesignSettings, bias: float) -> RaceLook:
    s2 = 2 * DEFAULT_RUN_NOISE**2 + 2 * settings.launch_sd**2 + 2 * (bias * (g(a.f0) + g(b.f0)) / 2) ** 2
    d = float(np.mean(a.y0) - np.mean(b.y0))
    se = math.sqrt(s2)
    return RaceLook(0, d, se, math.inf, min(1.0, 2 * _sf_t(abs(d) / se, math.inf)))


def look1(
    a: Side, b: Side, na: tuple[float, float], nb: tuple[float, float], settings: DesignSettings, bias: float
) -> RaceLook:
    (ha, dfa), (hb, dfb) = na, nb
    a0, a1, g0, g1 = components(a, b, ha, hb, settings)
    w, v = best_weight(a0, a1, g0, g1, bias) if a.y0 and b.y0 else (0.0, a1 + 2 * bias**2 * g1**2)
    d = w * float(np.mean(a.y0) - np.mean(b.y0) if a.y0 and b.y0 else 0.0) + (1 - w) * float(
        np.mean(a.y1) - np.mean(b.y1)
    )
    ca = w * w / max(len(a.y0), 1) + (1 - w) ** 2 / len(a.y1)
    cb = w * w / max(len(b.y0), 1) + (1 - w) ** 2 / len(b.y1)
    den = sum((c * h * h) ** 2 / df for c, h, df in ((ca, ha, dfa), (cb, hb, dfb)) if df > 0)
    measured = dfa > 0 and dfb > 0
    df = v * v / den if den > 0 and measured else math.inf
    se = math.sqrt(v)
    p = min(1.0, 2 * _sf_t(abs(d) / se, df))
    p_eq = 1.0
    if measured and min(len(a.y1), len(b.y1)) >= 2:
        m = math.log1p(settings.margin)
        p_eq = max(_sf_t((d + m) / se, df), _sf_t((m - d) / se, df))
    return RaceLook(1, d, se, df, p, p_eq)


def measured_bias(s: Mapping[tuple[str, Point], Side], configs: Sequence[str], points: Sequence[Point],
                  noise: Noise, settings: DesignSettings) -> float | None:  # fmt: skip
    """The short runs' bias scale (per config, at an eighth) measured across cells from every pair's
    short-minus-long difference (the launches' levels, common to a pair's cells, taken out with the
    mean); None with fewer than MIN_BIAS_CELLS cells a pair."""
    num = den = 0.0
    for i, x in enumerate(configs):
        for y in configs[i + 1 :]:
            deltas, noises, levers = [], [], []
            for p in points:
                a, b = s.get((x, p)), s.get((y, p))
                if not a or not b or not (a.y0 and a.y1 and b.y0 and b.y1):
                    continue
                a0, a1, g0, g1 = components(a, b, noise.of(x)[0], noise.of(y)[0], settings)
                deltas.append(float(np.mean(a.y0) - np.mean(b.y0) - np.mean(a.y1) + np.mean(b.y1)))
                noises.append(a0 + a1 - 4 * settings.launch_sd**2)
                levers.append((g0 - g1) ** 2)
            n = len(deltas)
            if n >= MIN_BIAS_CELLS:
                dv = np.asarray(deltas)
                num += float(((dv - dv.mean()) ** 2).sum()) * n / (n - 1) - sum(noises)
                den += 2 * sum(levers)
    if den <= 0:
        return None
    return math.sqrt(max(num / den, 0.0))
