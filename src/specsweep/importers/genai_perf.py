"""genai-perf ``profile_export_genai_perf.json`` results (``genai-perf profile``, perf_analyzer's LLM
front end): ``{metric: {"unit", "avg", "p25".."p99", "min", "max", "std"}, "input_config": {..}}``.

Mapping (genai-perf docs, "Metrics"): ``time_to_first_token`` -> TTFT; ``inter_token_latency``, per
request (request latency - TTFT) / (output tokens - 1), -> TPOT (vLLM's and sglang's name for it;
genai-perf has no per-chunk gap, so ITL stays empty); ``request_latency`` -> E2E;
``output_token_throughput``, ``request_throughput`` and ``benchmark_duration`` as they are. The load:
``input_config.concurrency`` / ``request_rate`` (``perf_analyzer.stimulus`` in newer configs).
Token counts come from genai-perf's own tokenizer run over the returned text, not the server's usage.
"""

from __future__ import annotations

from typing import Any

from specsweep.importers.blocks import Where, dig, read_blocks
from specsweep.importers.common import SUMMARY_MAX, normalise

CLIENT = "genai-perf"
CLIENT_EXTRA: dict[str, Any] = {}
FILES = ("*_genai_perf.json",)
MAX_BYTES = SUMMARY_MAX
TOO_BIG = "import the summary profile_export_genai_perf.json, not the per-request profile_export.json"

LATENCIES = {"time_to_first_token": "ttft", "inter_token_latency": "tpot", "request_latency": "e2e_latency"}
SCALARS = {
    "request_throughput": "request_throughput", "output_token_throughput": "output_throughput",
    "request_count": "completed", "input_sequence_length": "input_tokens_per_request",
    "output_sequence_length": "output_tokens_per_request",
}  # fmt: skip


def to_rows(obj: dict[str, Any], file: str, line: int) -> list[dict[str, Any]]:
    w = Where(file, line)
    flat = read_blocks(obj, LATENCIES, SCALARS, w)
    tput, isl = flat.get("request_throughput"), flat.get("input_tokens_per_request")
    if tput is not None and isl is not None:
        # total ISL / duration = (requests x mean ISL) / duration = request throughput x mean ISL
        flat["input_throughput"] = tput * isl
    cfg: dict[str, Any] = obj["input_config"] if isinstance(obj.get("input_config"), dict) else {}
    stim = dig(cfg, "perf_analyzer", "stimulus") or {}
    model = cfg.get("model") or cfg.get("model_names")
    model = ", ".join(str(m) for m in model) if isinstance(model, list) else model
    flat.update(
        max_concurrency=cfg.get("concurrency", stim.get("concurrency")),
        request_rate=cfg.get("request_rate", stim.get("request_rate")),
        model=model,
        dataset_name=cfg.get("prompt_source")  # both schemas: generated prompts are "synthetic"
        or (
            "synthetic"
            if cfg.get("synthetic_input_tokens_mean") or dig(cfg, "input", "synthetic_tokens")
            else None
        ),
        dataset_path=cfg.get("input_file") or cfg.get("input_dataset"),
        input_len=cfg.get("synthetic_input_tokens_mean", dig(cfg, "input", "synthetic_tokens", "mean")),
        output_len=cfg.get("output_tokens_mean", dig(cfg, "input", "output_tokens", "mean")),
    )
    if isinstance(flat["output_len"], (int, float)) and flat["output_len"] < 0:
        flat["output_len"] = None  # -1: not requested
    row = normalise(flat, file, line, w.notes)
    if "input_throughput" in flat:
        row["computed_keys"] = sorted({*row.get("computed_keys", []), "input_throughput"})
    row["server_params"] = {
        "model": model, "backend": cfg.get("backend"), "endpoint_type": cfg.get("endpoint_type"),
        "service_kind": cfg.get("service_kind"), "streaming": cfg.get("streaming"),
    }  # fmt: skip
    return [row]
