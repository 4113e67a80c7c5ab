"""LLMPerf ``*_summary.json`` results (``token_benchmark_ray.py``): flat keys
``results_<metric>_<stat>``, latencies in seconds, ``num_concurrent_requests`` the concurrency.

Mapping (LLMPerf's ``token_benchmark_ray.py`` and its clients): ``ttft_s`` -> TTFT;
``end_to_end_latency_s`` -> E2E; ``results_mean_output_throughput_token_per_s`` -> output
throughput; ``results_num_completed_requests_per_min`` / 60 -> request throughput. LLMPerf's
``inter_token_latency_s`` is the sum of every gap *including TTFT* divided by the output tokens
(re-tokenized) - E2E per token, not TPOT or ITL - so it is not imported as either; TPOT and ITL stay
empty. The file records no duration: it is completed requests / request throughput (computed).
Prompts are lines of Shakespeare's sonnets cut to the requested length (dataset ``sonnet``).
"""

from __future__ import annotations

from typing import Any

from specsweep.importers.blocks import Where
from specsweep.importers.common import SUMMARY_MAX, normalise

CLIENT = "llmperf"
CLIENT_EXTRA: dict[str, Any] = {}
FILES = ("*_summary.json",)
MAX_BYTES = SUMMARY_MAX
TOO_BIG = "import the *_summary.json file, not the *_individual_responses.json"

LATENCIES = {"ttft_s": "ttft", "end_to_end_latency_s": "e2e_latency"}
STATS = {"mean": "mean", "quantiles_p50": "median", "quantiles_p90": "p90", "quantiles_p95": "p95",
         "quantiles_p99": "p99", "stddev": "std", "min": "min", "max": "max"}  # fmt: skip


def to_rows(obj: dict[str, Any], file: str, line: int) -> list[dict[str, Any]]:
    w = Where(file, line)
    flat: dict[str, Any] = {}
    for name, ours in LATENCIES.items():
        for stat, prefix in STATS.items():
            key = f"results_{name}_{stat}"
            v = w.number(obj.get(key), key)
            if v is not None:
                flat[f"{prefix}_{ours}_ms"] = v * 1000.0
    per_min = w.number(
        obj.get("results_num_completed_requests_per_min"), "results_num_completed_requests_per_min"
    )
    done = w.number(obj.get("results_num_completed_requests"), "results_num_completed_requests")
    tin = w.number(obj.get("results_number_input_tokens_mean"), "results_number_input_tokens_mean")
    tout = w.number(obj.get("results_number_output_tokens_mean"), "results_number_output_tokens_mean")
    flat.update(
        completed=done,
        failed=w.number(obj.get("results_number_errors"), "results_number_errors"),
        request_throughput=per_min / 60.0 if per_min is not None else None,
        output_throughput=w.number(obj.get("results_mean_output_throughput_token_per_s"),
                                   "results_mean_output_throughput_token_per_s"),
        input_tokens_per_request=tin,
        output_tokens_per_request=tout,
        max_concurrency=obj.get("num_concurrent_requests"),
        model=obj.get("model"),
        dataset_name="sonnet",
        input_len=obj.get("mean_input_tokens"),
        output_len=obj.get("mean_output_tokens"),
    )  # fmt: skip
    if done is not None and tin is not None:
        flat["total_input_tokens"] = tin * done
    if done is not None and tout is not None:
        flat["total_output_tokens"] = tout * done
    row = normalise(flat, file, line, w.notes)
    derived = [
        k
        for k in ("request_throughput", "total_input_tokens", "total_output_tokens")
        if row.get(k) is not None
    ]
    row["computed_keys"] = sorted({*row.get("computed_keys", []), *derived})
    row["server_params"] = {
        "model": obj.get("model"),
        "framework": obj.get("framework"),
        "api": obj.get("api"),
    }
    return [row]
