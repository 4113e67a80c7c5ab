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
import re
from typing import Any

import orjson

from specsweep.importers.common import is_metric_key

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
NAMES = {
    "sglang": "an sglang.bench_serving", "vllm": "a vLLM (vllm bench serve / benchmark_serving)",
    "aiperf": "an AIPerf (profile_export_aiperf.json)", "genai-perf": "a genai-perf (profile_export_genai_perf.json)",
    "guidellm": "a GuideLLM (benchmarks.json)", "llmperf": "an LLMPerf (*_summary.json)",
}  # fmt: skip

# Fields of a result that describe the workload: runs differing in any of them are different cells.
WORKLOAD_KEYS = (
    "burstiness", "dataset_name", "dataset_path", "random_input_len", "random_output_len",
    "random_range_ratio", "random_prefix_len", "sharegpt_output_len", "sonnet_input_len",
    "sonnet_output_len", "input_len", "output_len", "num_prompts", "file_max_concurrency",
)  # fmt: skip
# Keys that differ between repeats of one run, or say what a row is, never which server ran it.
RUN_KEYS = frozenset(
    {
        "date", "timestamp", "run_number", "tag", "label", "name", "version", "benchmark_id", "start_time",
        "end_time", "request_rate", "max_concurrency", "computed_keys", "import_notes", "benchmark_index",
    }
)  # fmt: skip


def producer(obj: dict[str, Any]) -> tuple[str | None, list[str]]:
    """(the client that wrote ``obj`` | None, the keys that tell) from an object's keys."""
    if "aiperf_version" in obj or ("was_cancelled" in obj and "input_config" in obj):
        return "aiperf", sorted(k for k in ("aiperf_version", "was_cancelled", "records") if k in obj)
    bench: list[Any] = obj["benchmarks"] if isinstance(obj.get("benchmarks"), list) else []
    gl = bool(bench) and (isinstance(obj.get("metadata"), dict) or "args" in obj)
    if gl and any(
        isinstance(b, dict) and ("metrics" in b or b.get("type_") == "generative_benchmark") for b in bench
    ):
        return "guidellm", ["benchmarks"]
    if "num_concurrent_requests" in obj and any(k.startswith("results_") for k in obj):
        return "llmperf", ["num_concurrent_requests", "results_*"]
    cfg = obj.get("input_config")
    if isinstance(cfg, dict) and any(isinstance(obj.get(k), dict) and "avg" in obj[k] for k in
                                     ("request_throughput", "time_to_first_token", "request_latency")):  # fmt: skip
        return "genai-perf", ["input_config", "request_throughput.avg"]
    v = sorted(VLLM_KEYS.intersection(obj))
    s = sorted(SGLANG_KEYS.intersection(obj))
    if v and not s:
        return "vllm", v
    if s and not v:
        return "sglang", s
    return None, []


def wrong_importer(kind: str, obj: dict[str, Any]) -> str | None:
    """The refusal message when ``obj`` was written by another client, else None."""
    who, keys = producer(obj)
    if who is None or who == kind:
        return None
    shown = ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")
    return f"this is {NAMES[who]} result (keys {shown}): use `specsweep import {who}`, not `import {kind}`"


# What makes two servers different servers, in sglang's ``server_info`` (its /get_server_info: the
# ServerArgs, the engine version): parallelism, quantization and dtypes, speculative settings.
_SERVER_SETTING = re.compile(
    r"^((tp|dp|pp|ep|moe_ep|moe_tp|moe_dp|attn_tp|attention_tp)_size|quantization|dtype|kv_cache_dtype"
    r"|enable_dp_attention|speculative_[a-z_]+|version|model_path)$"
)


def server_settings(info: Any) -> dict[str, Any]:
    """The settings of sglang's ``server_info`` that tell servers apart (:data:`_SERVER_SETTING`),
    the version as ``engine_version``; scalars only, None (not set) left out."""
    if not isinstance(info, dict):
        return {}
    out = {}
    for k, v in info.items():
        if isinstance(k, str) and _SERVER_SETTING.match(k) and isinstance(v, (str, bool, int, float)):
            out["engine_version" if k == "version" else k] = v
    return out


def recorded_params(obj: dict[str, Any]) -> dict[str, Any]:
    """The server parameters a sglang / vLLM result records: every top-level scalar that is no
    metric, no workload field and no per-run key (``bench sweep`` merges its serve overrides such as
    ``max_num_seqs`` in, ``--metadata k=v`` adds strings, some harnesses add ``framework``), and the
    server settings of sglang's ``server_info`` (:func:`server_settings`)."""
    keep = {k: v for k, v in obj.items() if not (k in RUN_KEYS or k in WORKLOAD_KEYS or is_metric_key(k))}
    scalars = {k: v for k, v in keep.items() if isinstance(v, (str, bool, int, float))}
    return clean_params({**scalars, **server_settings(obj.get("server_info"))})


def clean_params(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as values a run dir's JSON keeps and a key can hash: scalars as they are, other
    values as their JSON text; None, non-finite numbers and integers beyond 64 bits left out."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            continue
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
            continue
        out[str(k)] = (
            v if isinstance(v, (str, bool, int, float)) else json.dumps(v, sort_keys=True, default=str)
        )
    return out


# Datasets of generated prompts of a requested length: a cell is named by the lengths alone, whatever
# the client calls them (sglang "random", AIPerf / genai-perf "synthetic", vLLM often nothing).
SYNTHETIC = frozenset({"random", "random-ids", "synthetic", "random_ids"})
# Fields each dataset kind uses; a client records the others too (sglang writes random_input_len on a
# ShareGPT run), and an unused field names nothing and separates nothing.
_USED_BY = {"random_": SYNTHETIC, "sharegpt_": frozenset({"sharegpt"}), "sonnet_": frozenset({"sonnet"})}


def _used(row: dict[str, Any], key: str) -> bool:
    name = row.get("dataset_name")
    for prefix, kinds in _USED_BY.items():
        if key.startswith(prefix):
            return not isinstance(name, str) or name.strip().lower() in kinds
    return True


def workload_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The declared workload of a row (:data:`WORKLOAD_KEYS` that are set and that its dataset uses),
    values made comparable."""
    return {k: _plain(row[k]) for k in WORKLOAD_KEYS if row.get(k) is not None and _used(row, k)}


def default_scenario(row: dict[str, Any]) -> str:
    """A scenario name from the workload actually sent when a result has no tag, the same for every
    client: a dataset file's stem (``nvfp4_agent``); a named dataset and the lengths it uses
    (``sharegpt``, ``sharegpt-out256``, ``sonnet-in550-out150``); generated prompts by their lengths
    alone (``in1024-out256``: sglang's random, AIPerf's and genai-perf's synthetic, vLLM's random),
    from the requested lengths, else from the tokens per request the file measured (:func:`_sent`)."""
    path = row.get("dataset_path")
    if isinstance(path, str) and path.strip():
        stem = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        return stem.rsplit(".", 1)[0] or stem
    name = row.get("dataset_name")
    named = isinstance(name, str) and name.strip() and name.strip().lower() not in SYNTHETIC
    lens = []
    for side, keys in (("in", ("random_input_len", "input_len", "sonnet_input_len")),
                       ("out", ("random_output_len", "output_len", "sonnet_output_len", "sharegpt_output_len"))):  # fmt: skip
        v = next((_plain(row[k]) for k in keys if row.get(k) not in (None, "") and _used(row, k)), None)
        if v is None and not named:  # generated prompts with no recorded length: the tokens sent
            per = row.get(f"{'input' if side == 'in' else 'output'}_tokens_per_request")
            total, done = (
                row.get(f"total_{'input' if side == 'in' else 'output'}_tokens"),
                row.get("completed"),
            )
            if (
                not isinstance(per, (int, float))
                and isinstance(total, (int, float))
                and isinstance(done, (int, float))
            ):
                per = total / done if done > 0 else None
            v = _sent(per)
        if v is not None:
            lens.append(f"{side}{v}")
    parts = ([str(name).strip()] if named else []) + lens
    return "-".join(parts) or "default"


def _sent(per: Any) -> int | None:
    """A measured mean length as a name: exact when every request had it (fixed lengths), else to 2
    significant digits, so that repeats whose EOS stops differ a little keep one name."""
    if not isinstance(per, (int, float)) or not math.isfinite(per) or per <= 0:
        return None
    return round(per) if abs(per - round(per)) < 1e-6 else int(float(f"{per:.2g}"))


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


def _plain(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "inf", "nan": hashable, equal to itself, survives JSON
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True, default=str)
    return v
