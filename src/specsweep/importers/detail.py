"""Per-request detail in result files: what the importers use of it, and what is never kept.

The clients can save every request with the summary: vLLM's ``--save-detailed`` and sglang's
``--output-details`` write per-request lists (``ttfts``, ``itls``, ``generated_texts``, ``errors``,
``input_lens``, ``output_lens``), GuideLLM every request record (``benchmarks[i].requests``). Such a
file can be hundreds of MB, and held as Python objects it took several times that (a 211 MB GuideLLM
file took 1.5 GB). The importers use only a little of it, so the reader keeps only that:

* :data:`DROP`: members never built (the generated texts, GuideLLM's request records);
* :data:`FOLD`: list items reduced as soon as each is read: a request's ``itls`` gaps to their sum
  (what vLLM's E2E is derived from, :mod:`vllm`), an ``errors`` item to whether there was an error.

The same rules hold whether a file is parsed whole (:func:`prune`) or streamed
(:mod:`stream`), so a result has one content hash whichever way it was read. Paths are ijson
prefixes: keys joined by ``.``, ``item`` for every item of a list.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def gaps_sum(gaps: Any) -> float | None:
    """A request's inter-token gaps (seconds) as their sum; None unless a list of numbers (no bools)."""
    if not isinstance(gaps, list):
        return None
    if any(isinstance(g, bool) or not isinstance(g, (int, float)) for g in gaps):
        return None
    return float(sum(gaps))


def had_error(e: Any) -> bool:
    """An ``errors`` item (an error text, "" for none) as whether the request failed."""
    return bool(e)


DROP: frozenset[str] = frozenset({"generated_texts", "benchmarks.item.requests"})
FOLD: dict[str, Callable[[Any], Any]] = {"itls.item": gaps_sum, "errors.item": had_error}

# Infinity and NaN as the streamed text spells them (strict JSON parsers have no such literal)
SENTINELS = {
    "\x00specsweep:Infinity": math.inf,
    "\x00specsweep:-Infinity": -math.inf,
    "\x00specsweep:NaN": math.nan,
}


def rules(top_list: bool) -> tuple[frozenset[str], dict[str, Callable[[Any], Any]]]:
    """(DROP, FOLD) as prefixes of a streamed value: under ``item.`` when it is a list of results."""
    if not top_list:
        return DROP, FOLD
    return frozenset(f"item.{p}" for p in DROP), {f"item.{p}": f for p, f in FOLD.items()}


def prune(obj: Any) -> Any:
    """``obj`` (one result, parsed whole) with :data:`DROP` removed and :data:`FOLD` applied, in place."""
    for path in DROP:
        _apply(obj, path.split("."), None)
    for path, fn in FOLD.items():
        _apply(obj, path.split("."), fn)
    return obj


def _apply(obj: Any, parts: list[str], fn: Callable[[Any], Any] | None) -> None:
    head, rest = parts[0], parts[1:]
    if head == "item":
        if not isinstance(obj, list):
            return
        if not rest:
            if fn is not None:
                obj[:] = [fn(x) for x in obj]
            return
        for x in obj:
            _apply(x, rest, fn)
        return
    if not isinstance(obj, dict) or head not in obj:
        return
    if not rest:
        if fn is None:
            del obj[head]
        return
    _apply(obj[head], rest, fn)
