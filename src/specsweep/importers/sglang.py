"""``sglang.bench_serving --output-file`` results: JSON lines, one object per run (Python json:
``request_rate`` may be ``Infinity``, which strict JSON parsers reject).

Key sets differ across versions: old ones lack ``max_concurrency``, ``tag``, ``total_throughput``,
``request_throughput``, ``std_*`` or ``p90/p95`` keys; ``normalise`` computes what it can.
"""

from __future__ import annotations

from typing import Any

from specsweep.importers.common import DETAILED_MAX, normalise

CLIENT = "sglang.bench_serving"
# sglang.bench_serving sends ignore_eos unless --disable-ignore-eos (which its results do not record)
CLIENT_EXTRA: dict[str, Any] = {"ignore_eos": True}
FILES = ("*.jsonl",)
MAX_BYTES = DETAILED_MAX
TOO_BIG = "split the JSON lines into several files (one result per line), or run without `--output-details`"


def to_rows(obj: dict[str, Any], file: str, line: int) -> list[dict[str, Any]]:
    """One result line -> a summary row (per-request lists such as ``ttfts`` are not kept)."""
    return [normalise(obj, file, line)]
