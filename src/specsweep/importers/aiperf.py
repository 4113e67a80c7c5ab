"""AIPerf ``profile_export_aiperf.json`` results (``aiperf profile``), both schemas seen in public:

* 2025 (0.1-0.3): ``{"records": {tag: {"tag", "unit", "header", "avg", "p50", ..}}, "input_config":
  {"loadgen": {"concurrency" | "request_rate", "request_count"}, ..}, "was_cancelled", ..}``;
  time to first token is tagged ``ttft`` (later ``time_to_first_token``);
* 2026 (0.8+, ``schema_version`` 1.x): the same blocks at the top level, ``aiperf_version``; the
  load in ``input_config.loadgen`` (0.8) or ``input_config.phases`` (0.10, the ``profiling`` phase).

Metric meaning (AIPerf's docs/metrics reference): ``inter_token_latency`` is per request
(request latency - TTFT) / (output tokens - 1) - what vLLM and sglang call TPOT - so it becomes TPOT;
``inter_chunk_latency`` (every gap between stream chunks, pooled) becomes ITL, as vLLM's client
counts it; ``request_latency`` is E2E. Output tokens are ``total_osl`` (reasoning tokens included):
AIPerf's ``output_token_throughput`` is computed from it.
"""

from __future__ import annotations

from typing import Any

from specsweep.importers.blocks import Where, dig, read_blocks
from specsweep.importers.common import SUMMARY_MAX, normalise

CLIENT = "aiperf"
CLIENT_EXTRA: dict[str, Any] = {}
FILES = ("profile_export_aiperf.json",)
MAX_BYTES = SUMMARY_MAX
TOO_BIG = "import the summary profile_export_aiperf.json, not the per-record profile_export.jsonl"

LATENCIES = {
    "time_to_first_token": "ttft", "ttft": "ttft", "inter_token_latency": "tpot",
    "inter_chunk_latency": "itl", "request_latency": "e2e_latency",
}  # fmt: skip
SCALARS = {
    "request_throughput": "request_throughput", "output_token_throughput": "output_throughput",
    "total_token_throughput": "total_throughput", "request_count": "completed",
    "error_request_count": "failed", "total_isl": "total_input_tokens", "total_osl": "total_output_tokens",
    "input_sequence_length": "input_tokens_per_request", "output_sequence_length": "output_tokens_per_request",
}  # fmt: skip


def _load(cfg: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(concurrency, request rate, requests) of the measured phase."""
    lg: dict[str, Any] = cfg["loadgen"] if isinstance(cfg.get("loadgen"), dict) else {}
    conc, rate, n = lg.get("concurrency"), lg.get("request_rate"), lg.get("request_count")
    phases = [p for p in cfg.get("phases") or [] if isinstance(p, dict) and not p.get("exclude_from_results")]
    if phases:
        p = next((p for p in phases if p.get("name") == "profiling"), phases[-1])
        conc = p.get("concurrency", conc)
        rate = p.get("request_rate", p.get("rate", rate))
        n = p.get("requests", p.get("request_count", n))
    return conc, rate, n


def _dataset(cfg: dict[str, Any]) -> dict[str, Any]:
    """The workload: a file (``input.file``, ``datasets[].path``), a public dataset AIPerf downloads
    (0.10: ``datasets[0] = {"type": "public", "dataset": "sharegpt"}``; 0.8: ``input.public_dataset``),
    else synthetic prompts of ``input.prompt`` lengths."""
    sets = [d for d in cfg.get("datasets") or [] if isinstance(d, dict)]
    files = [d for d in sets if d.get("path")]
    public = next((d.get("dataset") or d.get("name") for d in sets if d.get("type") == "public"), None)
    public = public or dig(cfg, "input", "public_dataset")
    path = dig(cfg, "input", "file") or (files[0]["path"] if files else None)
    prompt = dig(cfg, "input", "prompt") or {}
    if isinstance(public, str) and public.strip() and not path:
        return {"dataset_path": None, "dataset_name": public.strip(), "input_len": None, "output_len": None}
    return {
        "dataset_path": path,
        "dataset_name": (
            dig(cfg, "input", "custom_dataset_type") or (files[0].get("format") if files else None)
        )
        if path
        else "synthetic",
        "input_len": dig(prompt, "input_tokens", "mean"),
        "output_len": dig(prompt, "output_tokens", "mean"),
    }


def to_rows(obj: dict[str, Any], file: str, line: int) -> list[dict[str, Any]]:
    w = Where(file, line)
    blocks = obj["records"] if isinstance(obj.get("records"), dict) else obj
    flat = read_blocks(blocks, LATENCIES, SCALARS, w)
    if flat.get("failed") is None and isinstance(obj.get("error_summary"), list):
        flat["failed"] = sum(int(e.get("count") or 0) for e in obj["error_summary"] if isinstance(e, dict))
    cfg: dict[str, Any] = obj["input_config"] if isinstance(obj.get("input_config"), dict) else {}
    conc, rate, n = _load(cfg)
    models = dig(cfg, "endpoint", "model_names") or [m.get("name") for m in dig(cfg, "models", "items") or []
                                                     if isinstance(m, dict)]  # fmt: skip
    model = models[0] if models and isinstance(models[0], str) else None
    flat.update(max_concurrency=conc, request_rate=rate, num_prompts=n, model=model, **_dataset(cfg))
    row = normalise(flat, file, line, w.notes)
    row["server_params"] = {
        "model": model, "endpoint_type": dig(cfg, "endpoint", "type"), "streaming": dig(cfg, "endpoint", "streaming"),
    }  # fmt: skip
    return [row]
