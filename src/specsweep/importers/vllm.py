"""``vllm bench serve --save-result`` results: one JSON object per file (or JSON lines), and the
``bench sweep`` folders' ``run=N.json`` files and ``summary.json`` lists of them.

vLLM names: ``total_token_throughput``, ``{mean,median,std,pXX}_e2el_ms`` (``*_latency_ms`` in
<= 0.6), ``max_concurrency``, ``request_rate``, ``burstiness``, ``request_goodput``; per-request
lists (``ttfts``, ``itls``, ``input_lens``, ``output_lens``, ``errors``) when saved with details -
``errors`` gives ``failed``.

E2E is not in a file by default (``--percentile-metrics`` defaults to ``ttft,tpot,itl``). When the
file has the per-request lists, it is derived from them exactly as vLLM measures it: a request's
latency is its last chunk minus its send time, and vLLM's ``ttft`` plus its ``itl`` gaps (every gap
after the first chunk) add up to that. Statistics over the successful requests, numpy's linear
percentiles and population std, as vLLM computes the others; the keys are listed in
``computed_keys``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specsweep.importers.common import DETAILED_MAX, normalise

CLIENT = "vllm bench serve"
CLIENT_EXTRA: dict[str, Any] = {}
FILES = ("*.json", "*.jsonl")
MAX_BYTES = DETAILED_MAX
TOO_BIG = "split it into one file per run (a `bench sweep` folder, or `--append-result` lines), or save without per-request detail (no `--save-detailed`)"


def _e2e_from_lists(obj: dict[str, Any]) -> dict[str, float]:
    """``{mean,median,std,p90,p95,p99}_e2e_latency_ms`` from ``ttfts`` + ``itls`` (seconds; each
    request's ``itls`` as the sum of its gaps, :func:`detail.gaps_sum`, as the reader gives it)."""
    ttfts, itls, errors = obj.get("ttfts"), obj.get("itls"), obj.get("errors")
    if not isinstance(ttfts, list) or not isinstance(itls, list) or len(ttfts) != len(itls) or not ttfts:
        return {}
    ok = (
        [not e for e in errors]
        if isinstance(errors, list) and len(errors) == len(ttfts)
        else [True] * len(ttfts)
    )
    lat = []
    for t, gaps, good in zip(ttfts, itls, ok, strict=True):
        if not good:
            continue
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not isinstance(gaps, float):
            return {}  # gaps: the sum of the request's list as read (detail.gaps_sum), None if no list
        lat.append(float(t) + gaps)
    if not lat:
        return {}
    a = np.asarray(lat) * 1000.0
    out = {"mean_e2e_latency_ms": float(a.mean()), "median_e2e_latency_ms": float(np.median(a)),
           "std_e2e_latency_ms": float(a.std())}  # fmt: skip
    for p in (90, 95, 99):
        out[f"p{p}_e2e_latency_ms"] = float(np.percentile(a, p))
    return out


def to_rows(obj: dict[str, Any], file: str, line: int) -> list[dict[str, Any]]:
    errors = obj.get("errors")
    flat = {k: v for k, v in obj.items() if not isinstance(v, (list, dict))}
    if "failed" not in flat and isinstance(errors, list):
        flat["failed"] = sum(1 for e in errors if e)
    if "tag" not in flat and isinstance(obj.get("metadata"), dict):
        tag = obj["metadata"].get("tag") or obj["metadata"].get("scenario")
        if isinstance(tag, str):
            flat["tag"] = tag
    row = normalise(flat, file, line)
    if row.get("mean_e2e_latency_ms") is None:
        derived = {k: v for k, v in _e2e_from_lists(obj).items() if row.get(k) is None}
        if derived:
            row.update(derived)
            row["computed_keys"] = sorted({*row.get("computed_keys", []), *derived})
    if row.get("backend") is None and isinstance(obj.get("endpoint_type"), str):
        row["backend"] = obj["endpoint_type"]
    return [row]
