"""``vllm bench serve --save-result`` results: one JSON object per file (or JSON lines).

vLLM names: ``total_token_throughput``, ``{mean,median,std,pXX}_e2el_ms``, ``max_concurrency``,
``request_rate``, ``burstiness``, ``request_goodput``; per-request lists (``ttfts``, ``itls``,
``input_lens``, ``output_lens``, ``errors``) when saved with details - ``errors`` gives ``failed``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specsweep.errors import DataError
from specsweep.importers.common import ParsedRun, normalise

CLIENT = "vllm bench serve"


def _one(obj: Any, path: Path, line: int) -> ParsedRun:
    if not isinstance(obj, dict):
        raise DataError(f"expected a JSON object, got {type(obj).__name__}", file=str(path), line=line)
    errors = obj.get("errors")
    flat = {k: v for k, v in obj.items() if not isinstance(v, (list, dict))}
    if "failed" not in flat and isinstance(errors, list):
        flat["failed"] = sum(1 for e in errors if e)
    if "tag" not in flat and isinstance(obj.get("metadata"), dict):
        tag = obj["metadata"].get("tag") or obj["metadata"].get("scenario")
        if isinstance(tag, str):
            flat["tag"] = tag
    row = normalise(flat, str(path), line)
    if row.get("backend") is None and isinstance(obj.get("endpoint_type"), str):
        row["backend"] = obj["endpoint_type"]
    return ParsedRun(str(path), line, row)


def parse(path: Path) -> list[ParsedRun]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    try:
        whole = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        whole = None
    if whole is not None:
        items = whole if isinstance(whole, list) else [whole]
        return [_one(o, path, 1) for o in items]
    out = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:  # bytes: json guesses UTF-8/16/32
            raise DataError(f"not valid JSON ({e})", file=str(path), line=lineno) from e
        out.append(_one(obj, path, lineno))
    if not out:
        raise DataError("no result objects (expected vllm bench serve result JSON)", file=str(path))
    return out
