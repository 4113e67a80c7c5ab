"""Reading the summary statistics the other clients write, into our key names and units.

AIPerf and genai-perf write a metric as a block ``{"unit": "ms", "avg": .., "p50": .., "p99": ..,
"std": ..}``; GuideLLM as ``{"mean": .., "median": .., "std_dev": .., "percentiles": {"p99": ..}}``;
LLMPerf as flat keys ``results_ttft_s_mean``, ``results_ttft_s_quantiles_p99``. Each becomes our
summary-row keys ``mean_ttft_ms``, ``median_ttft_ms``, ``p99_ttft_ms``, ``std_ttft_ms`` (sglang's
names), latencies in ms: a block's ``unit`` (or the key's ``_s``) says how to convert, and a unit we
do not know is an error naming the field, never a silent guess.
"""

from __future__ import annotations

import math
from typing import Any

from specsweep.errors import DataError

# our stat prefix <- the client's stat name
STATS = {"avg": "mean", "mean": "mean", "p50": "median", "median": "median", "p90": "p90", "p95": "p95",
         "p99": "p99", "std": "std", "std_dev": "std", "stddev": "std", "min": "min", "max": "max"}  # fmt: skip
TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "secs": 1000.0, "seconds": 1000.0, "us": 1e-3, "ns": 1e-6}


class Where:
    """The place of a value in a file, for errors: file, line and the path of keys to it."""

    def __init__(self, file: str, line: int) -> None:
        self.file, self.line = file, line
        self.notes: list[str] = []  # values dropped as no measurement, for the row's import_notes

    def dropped(self, field: str, v: Any, why: str) -> None:
        if len(self.notes) < 20:
            self.notes.append(f"{field}: {_shown(v)} in the file {why}; dropped")

    def error(self, msg: str, field: str) -> DataError:
        return DataError(msg, file=self.file, line=self.line, field=field)

    def number(self, v: Any, field: str) -> float | None:
        """``v`` as a float (None stays None); text or a bool is an error naming ``field``."""
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.error(f"expected a number, got {v!r}", field)
        return float(v)


def dig(obj: Any, *path: str | int) -> Any:
    """``obj[path[0]][path[1]]...``, None where a step is missing or of the wrong kind."""
    cur = obj
    for p in path:
        if isinstance(p, int):
            cur = cur[p] if isinstance(cur, list) and -len(cur) <= p < len(cur) else None
        else:
            cur = cur.get(p) if isinstance(cur, dict) else None
        if cur is None:
            return None
    return cur


def scale_of(unit: Any, where: Where, field: str) -> float:
    """The factor from a latency block's unit to ms."""
    u = str(unit).strip().lower() if unit is not None else "ms"
    if u not in TO_MS:
        raise where.error(f"unknown time unit {unit!r} (known: {', '.join(TO_MS)})", f"{field}.unit")
    return TO_MS[u]


def latency_block(
    block: Any, ours: str, out: dict[str, Any], where: Where, field: str, scale: float | None = None
) -> None:
    """A latency block -> ``{stat}_{ours}_ms`` keys in ``out`` (``scale``: to ms, else from its unit)."""
    if not isinstance(block, dict):
        if block is not None:
            where.dropped(field, block, 'is not a statistics block (expected {"avg": .., "p99": ..})')
        return
    factor = scale if scale is not None else scale_of(block.get("unit"), where, field)
    stats = dict(block)
    pct = block.get("percentiles")
    if isinstance(pct, dict):  # GuideLLM: {"percentiles": {"p50": .., "p99": ..}}
        stats.update({k: v for k, v in pct.items() if k in STATS and k not in stats})
    for name, v in stats.items():
        prefix = STATS.get(name)
        if prefix is None:
            continue
        f = where.number(v, f"{field}.{name}")
        if f is not None and math.isfinite(f):
            out.setdefault(f"{prefix}_{ours}_ms", f * factor)
        elif f is not None:
            where.dropped(f"{field}.{name}", f, "is not a measurement")


def value(block: Any, stat: str, where: Where, field: str) -> float | None:
    """One number of a block (``avg`` of ``{"unit": .., "avg": ..}``), None when absent."""
    if not isinstance(block, dict):
        if block is not None:
            where.dropped(field, block, "is not a statistics block")
        return None
    return where.number(block.get(stat), f"{field}.{stat}")


def read_blocks(
    blocks: dict[str, Any], latencies: dict[str, str], scalars: dict[str, str], where: Where
) -> dict[str, Any]:
    """AIPerf's and genai-perf's ``{metric: {"unit", "avg", "p99", ..}}`` blocks -> our keys: each of
    ``latencies`` (their name -> ours) as ``{stat}_{ours}_ms``, each of ``scalars`` as its ``avg``,
    ``benchmark_duration`` as ``duration`` (s). The first block found for a key wins."""
    flat: dict[str, Any] = {}
    for name, ours in latencies.items():
        latency_block(blocks.get(name), ours, flat, where, name)
    for name, ours in {**scalars, "benchmark_duration": "duration"}.items():
        v = value(blocks.get(name), "avg", where, name)
        if v is not None:
            flat.setdefault(ours, v)
    return flat


def _shown(v: Any) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    text = repr(v)
    return text if len(text) <= 60 else text[:59] + "…"


def per_request(total: Any, completed: Any) -> float | None:
    """Tokens per request from a total and the completed count (None when either is unknown)."""
    if isinstance(total, (int, float)) and isinstance(completed, (int, float)) and completed > 0:
        return float(total) / float(completed)
    return None
