"""GuideLLM ``benchmarks.json`` results (``guidellm benchmark --outputs json``): several benchmarks in a
file, one per strategy of the profile (a sweep, or several rates), each a row here.

Each metric is a distribution split by request status, ``metrics.<name>.successful.{mean, median,
std_dev, percentiles.p99, ..}``; ``request_latency`` is in seconds, the ``*_ms`` ones in ms.
Mapping (GuideLLM's metrics docs and ``benchmark/schemas``): ``time_to_first_token_ms`` -> TTFT;
``inter_token_latency_ms``, per request (latency - TTFT) / (output tokens - 1), -> TPOT (GuideLLM's
own ``time_per_output_token_ms`` is latency / output tokens, TTFT included: not our TPOT, not
imported); ``request_latency`` -> E2E; ``requests_per_second``, ``output_tokens_per_second`` and
``tokens_per_second`` (their successful-request means) -> request, output and total throughput;
``request_concurrency`` -> the measured mean concurrency. Load from the strategy: ``synchronous`` is
c=1, ``concurrent`` its streams, ``throughput`` its concurrency limit, ``constant``/``poisson``
cells by request rate.
"""

from __future__ import annotations

import json
from typing import Any

from specsweep.importers.blocks import Where, dig, latency_block
from specsweep.importers.common import DETAILED_MAX, normalise

CLIENT = "guidellm"
CLIENT_EXTRA: dict[str, Any] = {}
FILES = ("*benchmarks*.json",)
MAX_BYTES = DETAILED_MAX
TOO_BIG = "save fewer request records (`--output-sampling N`), or one file per benchmark"

LATENCIES = {
    "time_to_first_token_ms": ("ttft", 1.0), "inter_token_latency_ms": ("tpot", 1.0),
    "request_latency": ("e2e_latency", 1000.0),
}  # fmt: skip
RATES = {
    "requests_per_second": "request_throughput", "output_tokens_per_second": "output_throughput",
    "tokens_per_second": "total_throughput", "request_concurrency": "concurrency",
}  # fmt: skip


def _load(b: dict[str, Any], w: Where, field: str) -> tuple[Any, Any]:
    """(concurrency limit, request rate) of a benchmark's strategy."""
    st = dig(b, "config", "strategy") or dig(b, "args", "strategy") or {}
    kind = st.get("type_") or st.get("type")
    if kind == "synchronous":
        return 1, None
    if kind == "concurrent":
        return st.get("streams", st.get("max_concurrency")), None
    if kind == "throughput":
        return st.get("max_concurrency"), "inf"
    if kind in ("constant", "poisson", "async"):
        return dig(b, "config", "profile", "max_concurrency"), st.get("rate")
    raise w.error(f"unknown GuideLLM strategy {kind!r} (known: synchronous, concurrent, throughput, "
                  "constant, poisson)", f"{field}.config.strategy.type_")  # fmt: skip


def _data(data: Any) -> dict[str, Any]:
    """The workload of ``args.data``: a file, or a synthetic spec ``{"prompt_tokens": 256, ..}``."""
    first = data[0] if isinstance(data, list) and data else data
    if isinstance(first, str):
        try:
            spec = json.loads(first)
        except ValueError:
            spec = None
        if isinstance(spec, dict):
            return {"dataset_name": "synthetic", "input_len": spec.get("prompt_tokens"),
                    "output_len": spec.get("output_tokens")}  # fmt: skip
        return {"dataset_path": first}
    return {}


def to_rows(obj: dict[str, Any], file: str, line: int) -> list[dict[str, Any]]:
    rows = []
    args: dict[str, Any] = obj["args"] if isinstance(obj.get("args"), dict) else {}
    for i, b in enumerate(obj.get("benchmarks") or []):
        if not isinstance(b, dict):
            continue
        field = f"benchmarks[{i}]"
        w = Where(file, line)
        m: dict[str, Any] = b["metrics"] if isinstance(b.get("metrics"), dict) else {}
        flat: dict[str, Any] = {}
        for name, (ours, scale) in LATENCIES.items():
            latency_block(
                dig(m, name, "successful"), ours, flat, w, f"{field}.metrics.{name}.successful", scale
            )
        for name, ours in RATES.items():
            flat[ours] = w.number(
                dig(m, name, "successful", "mean"), f"{field}.metrics.{name}.successful.mean"
            )
        totals: dict[str, Any] = m["request_totals"] if isinstance(m.get("request_totals"), dict) else {}
        flat.update(
            completed=totals.get("successful"),
            failed=totals.get("errored"),
            incomplete=totals.get("incomplete"),
        )
        for name, ours in (("prompt_token_count", "input"), ("output_token_count", "output")):
            flat[f"total_{ours}_tokens"] = dig(m, name, "successful", "total_sum")
            flat[f"{ours}_tokens_per_request"] = dig(m, name, "successful", "mean")
        start, end = (
            dig(b, "run_stats", "start_time") or b.get("start_time"),
            dig(b, "run_stats", "end_time") or b.get("end_time"),
        )
        dur = b.get("duration")
        if dur is None and isinstance(start, (int, float)) and isinstance(end, (int, float)):
            dur = end - start
        conc, rate = _load(b, w, field)
        model = dig(b, "config", "backend", "model") or args.get("model")
        flat.update(
            duration=dur, max_concurrency=conc, request_rate=rate, model=model, **_data(args.get("data"))
        )
        row = normalise(flat, file, line, w.notes)
        row["benchmark_index"] = i
        row["server_params"] = {
            "model": model,
            "backend": args.get("backend"),
            "request_format": args.get("request_format"),
        }
        rows.append(row)
    return rows
