"""``vllm bench serve --save-result`` results: one JSON object per file (or JSON lines), and the
``bench sweep`` folders' ``run=N.json`` files and ``summary.json`` lists of them.

vLLM names: ``total_token_throughput``, ``{mean,median,std,pXX}_e2el_ms`` (``*_latency_ms`` in
<= 0.6), ``max_concurrency``, ``request_rate``, ``burstiness``, ``request_goodput``; per-request
lists (``ttfts``, ``itls``, ``input_lens``, ``output_lens``, ``errors``) when saved with details -
``errors`` gives ``failed``.
"""

from __future__ import annotations

from typing import Any

from specsweep.importers.common import normalise

CLIENT = "vllm bench serve"
CLIENT_EXTRA: dict[str, Any] = {}


def to_row(obj: dict[str, Any], file: str, line: int) -> dict[str, Any]:
    errors = obj.get("errors")
    flat = {k: v for k, v in obj.items() if not isinstance(v, (list, dict))}
    if "failed" not in flat and isinstance(errors, list):
        flat["failed"] = sum(1 for e in errors if e)
    if "tag" not in flat and isinstance(obj.get("metadata"), dict):
        tag = obj["metadata"].get("tag") or obj["metadata"].get("scenario")
        if isinstance(tag, str):
            flat["tag"] = tag
    row = normalise(flat, file, line)
    if row.get("backend") is None and isinstance(obj.get("endpoint_type"), str):
        row["backend"] = obj["endpoint_type"]
    return row
