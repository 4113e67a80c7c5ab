"""Request length sampling with sglang's and vLLM's range-ratio semantics."""

from __future__ import annotations

import math

import numpy as np

from specsweep.workload.scenarios import Scenario


def length_bounds(nominal: int, ratio: float, mode: str = "sglang") -> tuple[int, int]:
    """Inclusive [low, high] of a length with range ratio ``ratio``.

    sglang: [max(floor(L*r), 1), L] (r=0 -> [1, L]); vllm: [max(floor(L*(1-r)), 1), ceil(L*(1+r))].
    """
    if mode == "vllm":
        return max(math.floor(nominal * (1 - ratio)), 1), math.ceil(nominal * (1 + ratio))
    return max(math.floor(nominal * ratio), 1), nominal


def sample_lengths(scenario: Scenario, n: int, seed: int) -> tuple[list[int], list[int]]:
    """Input and output lengths for ``n`` requests, uniform integers in the bounds (seeded)."""
    rng = np.random.default_rng(seed)
    lo_i, hi_i = length_bounds(scenario.input_len, scenario.range_ratio, scenario.range_mode)
    lo_o, hi_o = length_bounds(scenario.output_len, scenario.range_ratio, scenario.range_mode)
    ins = rng.integers(lo_i, hi_i + 1, size=n)
    outs = rng.integers(lo_o, hi_o + 1, size=n)
    return [int(x) for x in ins], [int(x) for x in outs]
