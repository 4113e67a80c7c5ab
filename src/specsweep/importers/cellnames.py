"""How imported results become cells: one scenario name per workload, the same in every import.

A cell is (config label, scenario, level). Each imported summary row records what its cell is made
of, so the name can be decided from all rows seen together (one import, or every run dir a report
reads) and never from what else one import happened to hold:

* ``scenario_base``: the name the workload was given (``--scenario``, the file's tag, or a name
  derived from its dataset and lengths);
* ``workload``: the fields that describe the workload (dataset, requested lengths, number of
  prompts, measured tokens per request when one config's runs had to be told apart by them);
* ``request_rate`` and the level: open-loop runs (a finite request rate, or ``inf`` with no
  concurrency limit) are cells by rate; their level is the concurrency limit, 0 when there was none.

:func:`assign` names every row ``base`` + the workload fields that tell two rows at the same
(base, level, rate) apart - for every row of that base, so one workload keeps one name at every
level - + the offered rate for open-loop rows: ``rnd[random_input_len=512] @ rate 4 req/s``.

Runs are repeats only when their workload agrees within :data:`TOKEN_TOLERANCE` in tokens per
request (:func:`apart`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

TOKEN_TOLERANCE = 0.2
"""Two workloads whose mean input (or output) tokens per request differ by more than 20% of the
smaller are different workloads. Runs of one workload with other seeds or EOS stops stay well within
it (a 100-prompt draw of uniform lengths has a sd of its mean near 6%); the defects it catches are 2x
(sglang's range ratio 0 draws about half the nominal length; ShareGPT vs fixed-length prompts)."""

UNBOUNDED = 0  # the level of an open-loop run with no concurrency limit


def apart(a: float | None, b: float | None, tol: float = TOKEN_TOLERANCE) -> bool:
    """Whether two token counts per request differ by more than ``tol`` of the smaller (unknown: no)."""
    if a is None or b is None or a <= 0 or b <= 0:
        return False
    lo, hi = min(a, b), max(a, b)
    return hi > lo * (1.0 + tol)


def tokens_per_request(row: dict[str, Any]) -> tuple[float | None, float | None]:
    """(input, output) tokens per request of a summary row: the file's means
    (``input_tokens_per_request``), else totals / completed; None where unknown."""
    done = row.get("completed")
    out: list[float | None] = []
    for side in ("input", "output"):
        v = row.get(f"{side}_tokens_per_request")
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            total = row.get(f"total_{side}_tokens")
            ok = isinstance(total, (int, float)) and isinstance(done, (int, float)) and done > 0
            v = float(total) / float(done) if ok else None  # type: ignore[arg-type]
        out.append(float(v) if v is not None and math.isfinite(v) and v > 0 else None)
    return out[0], out[1]


def is_open_loop(rate: Any, level: int) -> bool:
    """A finite request rate, or all requests at once (``inf``) with no concurrency limit."""
    if rate is None:
        return False
    if rate == "inf" or (isinstance(rate, float) and math.isinf(rate)):
        return level == UNBOUNDED
    return True


def rate_text(rate: Any) -> str:
    """``rate 4 req/s``, ``rate 0.5 req/s``, ``rate inf`` (all requests at once)."""
    if rate == "inf" or (isinstance(rate, float) and math.isinf(rate)):
        return "rate inf"
    return f"rate {float(rate):g} req/s"


def _shown(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    text = str(v)
    return text if len(text) <= 40 else text[:39] + "…"


def suffix(fields: dict[str, Any]) -> str:
    """``[random_input_len=512,num_prompts=50]``; empty when there is nothing to tell apart."""
    if not fields:
        return ""
    return "[" + ",".join(f"{k}={_shown(v)}" for k, v in fields.items()) + "]"


@dataclass(frozen=True)
class Placed:
    """What a row's cell is made of (see the module docstring)."""

    base: str
    workload: tuple[tuple[str, Any], ...]  # sorted (field, value) pairs, None values left out
    rate: Any  # None | "inf" | float
    level: int

    @classmethod
    def of(cls, base: str, workload: dict[str, Any], rate: Any, level: int) -> Placed:
        return cls(base, tuple(sorted((k, v) for k, v in workload.items() if v is not None)), rate, level)


def differing(placed: Iterable[Placed]) -> dict[str, list[str]]:
    """Per base scenario, the workload fields with two different values among rows at one point. A
    field one row does not record is unknown, not different: clients record different fields (sglang
    its ``random_input_len``, vLLM often none), and tokens per request tell their workloads apart."""
    at: dict[tuple[str, Any, int], set[tuple[tuple[str, Any], ...]]] = {}
    for p in placed:
        at.setdefault((p.base, _rate_key(p.rate), p.level), set()).add(p.workload)
    out: dict[str, list[str]] = {}
    for (base, _r, _l), sigs in at.items():
        fields = out.setdefault(base, [])
        if len(sigs) < 2:
            continue
        dicts = [dict(s) for s in sigs]
        for k in sorted({k for d in dicts for k in d}):
            if len({repr(d[k]) for d in dicts if d.get(k) is not None}) > 1 and k not in fields:
                fields.append(k)
    return out


def name(p: Placed, differ: dict[str, list[str]]) -> str:
    """The scenario name of a row placed at ``p``, given :func:`differing` over all rows."""
    wl = dict(p.workload)
    out = p.base + suffix({k: wl.get(k) for k in differ.get(p.base, [])})
    return f"{out} @ {rate_text(p.rate)}" if is_open_loop(p.rate, p.level) else out


def assign(placed: Sequence[Placed]) -> list[str]:
    """The scenario name of every row, decided over all of them together."""
    differ = differing(placed)
    return [name(p, differ) for p in placed]


def _rate_key(rate: Any) -> Any:
    return "inf" if rate == "inf" or (isinstance(rate, float) and math.isinf(rate)) else rate
