"""Request length sampling with sglang's and vLLM's range-ratio semantics."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class LengthRule:
    """The inclusive token-length ranges requests are drawn from (uniform integers)."""

    input_lo: int
    input_hi: int
    output_lo: int
    output_hi: int
    ratio: float
    mode: str  # "sglang" | "vllm": which range-ratio meaning

    @property
    def fixed(self) -> bool:
        return self.input_lo == self.input_hi and self.output_lo == self.output_hi


def length_rule(input_len: int, output_len: int, ratio: float, mode: str = "sglang") -> LengthRule:
    """The rule ``--random-input-len``/``--random-output-len``/``--random-range-ratio`` give."""
    ilo, ihi = length_bounds(input_len, ratio, mode)
    olo, ohi = length_bounds(output_len, ratio, mode)
    return LengthRule(ilo, ihi, olo, ohi, ratio, mode)


def length_rule_text(rule: LengthRule) -> str:
    """One line for the console: the ranges, the mean output, and how to get fixed lengths.

    sglang's default range ratio is 0, so ``--random-output-len 64`` alone means uniform in [1, 64]
    (mean 32.5), about half the tokens one might expect (issue 19 item 15)."""
    if rule.fixed:
        return f"fixed: input {rule.input_lo}, output {rule.output_lo} tokens (range ratio {rule.ratio:g})"
    formula = "[max(floor(L*r), 1), L]" if rule.mode == "sglang" else "[floor(L*(1-r)), ceil(L*(1+r))]"
    return (
        f"uniform: input [{rule.input_lo}, {rule.input_hi}], output [{rule.output_lo}, {rule.output_hi}] "
        f"tokens (mean output {(rule.output_lo + rule.output_hi) / 2:g}); {rule.mode} range ratio "
        f"r={rule.ratio:g}: {formula}"
        + ("; --random-range-ratio 1 for fixed lengths" if rule.mode == "sglang" else "")
    )


def result_length_rule_text(res: Mapping[str, Any]) -> str | None:
    """The length rule of a bench result (sglang.bench_serving key names), None when the lengths
    came from a dataset's own texts rather than from ``--random-*-len``."""
    if res.get("dataset_name") not in (None, "random", "random-ids", "shared-prefix"):
        return None
    try:
        rule = length_rule(
            int(res["random_input_len"]),
            int(res["random_output_len"]),
            float(res.get("random_range_ratio") or 0.0),
            str(res.get("range_ratio_mode") or "sglang"),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return length_rule_text(rule)
