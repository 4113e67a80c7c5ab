"""``sglang.bench_serving --output-file`` results: JSON lines, one object per run (Python json:
``request_rate`` may be ``Infinity``, which strict JSON parsers reject).

Key sets differ across versions: old ones lack ``max_concurrency``, ``tag``, ``total_throughput``,
``request_throughput``, ``std_*`` or ``p90/p95`` keys; ``normalise`` computes what it can.
"""

from __future__ import annotations

import json
from pathlib import Path

from specsweep.errors import DataError
from specsweep.importers.common import ParsedRun, normalise

CLIENT = "sglang.bench_serving"


def parse(path: Path) -> list[ParsedRun]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    out: list[ParsedRun] = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:  # bytes: json guesses UTF-8/16/32
            raise DataError(f"not valid JSON ({e})", file=str(path), line=lineno) from e
        if not isinstance(obj, dict):
            raise DataError(f"expected a JSON object, got {type(obj).__name__}", file=str(path), line=lineno)
        out.append(ParsedRun(str(path), lineno, normalise(obj, str(path), lineno)))
    if not out:
        raise DataError("no result lines (expected sglang.bench_serving JSONL output)", file=str(path))
    return out
