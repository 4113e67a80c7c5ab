"""What a result object is: which client wrote it, which workload it measured, and its content hash.

* Producer: ``sglang.bench_serving`` and ``vllm bench serve`` name the same metrics differently
  (``total_throughput`` / ``total_token_throughput``, ``*_e2e_latency_ms`` / ``*_e2el_ms``). An
  object whose keys belong to one client only is that client's; one with neither (very old files)
  or both is taken as the importer named. Importing under the wrong name would record wrong
  provenance (``ignore_eos`` is sglang's default, not vLLM's), so it is refused.
* Workload: the fields that make two results different cells, never repeats of one (request rate,
  dataset, input/output lengths, concurrency).
* Content hash: a result imported twice (the same line twice, a sweep's ``summary.json`` beside its
  ``run=N.json`` files) has the same canonical JSON, hence the same hash.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import orjson

VLLM_KEYS = frozenset(
    {
        "total_token_throughput", "model_id", "tokenizer_id", "burstiness", "request_goodput",
        "mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p99_e2el_ms", "best_of", "use_beam_search",
        "mean_latency_ms", "median_latency_ms", "p99_latency_ms", "run_number", "endpoint_type",
    }
)  # fmt: skip
SGLANG_KEYS = frozenset(
    {
        "total_throughput", "mean_e2e_latency_ms", "median_e2e_latency_ms", "std_e2e_latency_ms",
        "p99_e2e_latency_ms", "total_output_tokens_retokenized", "output_throughput_retokenized",
        "accept_length", "sharegpt_output_len", "random_range_ratio", "concurrency",
    }
)  # fmt: skip
NAMES = {"sglang": "an sglang.bench_serving", "vllm": "a vLLM (vllm bench serve / benchmark_serving)"}

# Fields of a result that describe the workload: lines differing in any of them are different cells.
WORKLOAD_KEYS = (
    "request_rate", "burstiness", "dataset_name", "dataset_path", "random_input_len",
    "random_output_len", "random_range_ratio", "random_prefix_len", "sharegpt_output_len",
    "sonnet_input_len", "sonnet_output_len", "input_len", "output_len", "file_max_concurrency",
)  # fmt: skip


def producer(obj: dict[str, Any]) -> tuple[str | None, list[str]]:
    """("sglang" | "vllm" | None, the keys that tell) from an object's keys."""
    v = sorted(VLLM_KEYS.intersection(obj))
    s = sorted(SGLANG_KEYS.intersection(obj))
    if v and not s:
        return "vllm", v
    if s and not v:
        return "sglang", s
    return None, []


def wrong_importer(kind: str, obj: dict[str, Any]) -> str | None:
    """The refusal message when ``obj`` was written by the other client, else None."""
    who, keys = producer(obj)
    if who is None or who == kind:
        return None
    shown = ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")
    return f"this is {NAMES[who]} result (keys {shown}): use `specsweep import {who}`, not `import {kind}`"


def digest(obj: Any) -> bytes:
    """A 16-byte hash of the object's canonical JSON (key order and whitespace do not matter).

    Infinity and NaN hash like null (orjson's spelling): two results equal in every other value,
    durations and throughputs to the last digit included, are the same result anyway.
    """
    try:
        data = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (orjson.JSONEncodeError, TypeError):  # integers beyond 64 bits, lone surrogates
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


def workload(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(_plain(row.get(k)) for k in WORKLOAD_KEYS)


def _plain(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "inf", "nan": hashable, equal to itself, survives JSON
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True, default=str)
    return v


def cell_suffix(values: dict[str, Any]) -> str:
    """``[request_rate=4,random_input_len=512]`` for the fields that tell cells of a group apart."""
    parts = []
    for k, v in values.items():
        if isinstance(v, float) and math.isinf(v):
            v = "inf"
        parts.append(f"{k.removeprefix('file_')}={'-' if v is None else v}")
    return "[" + ",".join(parts) + "]"
