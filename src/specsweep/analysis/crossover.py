"""Crossovers: where, as concurrency rises, one config stops beating another.

Per scenario and pair, the verdicts over the measured levels (trend outliers left out) form a
sequence of states a / tie / b. Each change between neighbouring levels is a crossover, placed by
linear interpolation in log-concurrency: where the effect crosses 0 when its sign changes, else
where it crosses the boundary the verdict crossed (the smallest difference the two levels' tests
could decide). The interval is the two bracketing
levels - the data say nothing finer.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from specsweep.analysis.core import Noise, PairVerdict, Table, find_verdict, oriented
from specsweep.stats import basic as stats


@dataclass(frozen=True)
class CrossoverData:
    scenario: str
    a: str
    b: str
    metric: str
    concurrency: float
    low: float
    high: float
    kind: str
    before: str
    after: str


def crossovers(
    t: Table, vs: list[PairVerdict], noise: Noise, skip: set[tuple[str, int]] | None = None
) -> list[CrossoverData]:
    skip = skip or set()
    labels = [c.label for c in t.columns]
    base = {c.label for c in t.columns if c.is_baseline}
    out = []
    for s in t.scenarios():
        for i in range(len(labels)):
            for j in range(i + 1, len(labels)):
                a, b = labels[i], labels[j]
                if a in base:  # the baseline always on the b side
                    a, b = b, a
                seq = []
                for c in t.levels(s):
                    if (s, c) in skip or c <= 0:  # 0: open loop, no concurrency axis to cross on
                        continue
                    v = find_verdict(vs, s, c, a, b)
                    if v is None:
                        continue
                    e, _lo, _hi, verdict = oriented(v, a)
                    seq.append((c, math.log1p(e), verdict, v.metric, math.log1p(v.detectable_effect)))
                for (c1, y1, s1, metric, d1), (c2, y2, s2, _m, d2) in itertools.pairwise(seq):
                    if s1 == s2:
                        continue
                    bound = (d1 + d2) / 2
                    level = 0.0 if (y1 > 0) != (y2 > 0) else bound if y1 > 0 else -bound
                    x = stats.log_interp_crossing(c1, y1, c2, y2, level)
                    kind = "baseline" if b in base else "pair"
                    out.append(CrossoverData(s, a, b, metric, x, float(c1), float(c2), kind, s1, s2))
    return out
