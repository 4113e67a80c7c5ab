"""Arrival schedules for open-loop load: absolute offsets, so loop overhead never drifts the rate."""

from __future__ import annotations

import math

import numpy as np

from specsweep.errors import UsageError


def arrival_offsets(n: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """Seconds from the start at which each of ``n`` requests is due.

    ``rate`` = inf: all at once (closed loop when a concurrency limit is set). Otherwise gaps are
    gamma-distributed with shape ``burstiness`` and mean 1/rate (burstiness 1 = Poisson), as in
    vLLM's client; the schedule is absolute (cumulative sum), not sleep-after-send.
    """
    if n <= 0:
        return []
    if rate <= 0 or math.isnan(rate):
        raise UsageError(f"--request-rate must be > 0 (or inf), got {rate}")
    if burstiness <= 0:
        raise UsageError(f"--burstiness must be > 0, got {burstiness}")
    if math.isinf(rate):
        return [0.0] * n
    rng = np.random.default_rng(seed)
    theta = 1.0 / (rate * burstiness)
    gaps = rng.gamma(shape=burstiness, scale=theta, size=n)
    gaps[0] = 0.0
    return [float(x) for x in np.cumsum(gaps)]
