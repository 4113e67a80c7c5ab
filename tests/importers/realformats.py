"""Result objects in the key sets the real clients write (values small and made up, keys real).

* ``SG_2024``: sglang.bench_serving mid-2024 - no ``max_concurrency``/``tag``/``total_throughput``.
* ``SG_2025``: sglang.bench_serving 2025-2026 - ``tag``, ``max_concurrency``, ``total_throughput``,
  ``accept_length``, ``max_output_tokens_per_s``, a measured ``concurrency``.
* ``VLLM_2024``: vLLM benchmarks/benchmark_serving.py 2024-2025 ``--save-result`` (``json.dump``
  without indent), per-request arrays, the ``request_goodput:`` key with its colon, ``*_e2el_ms``.
* ``VLLM_06``: vLLM <= 0.6 benchmark_serving: ``best_of``/``use_beam_search``, E2E as
  ``*_latency_ms``; ``VLLM_06_LATENCY``: the same without throughput keys.
* ``sweep_run``: a ``vllm bench sweep serve`` ``run=N.json`` (indent 4, ``run_number`` and the
  serve/bench overrides merged in); ``summary.json`` is the list of those objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

INF = float("inf")

SG_2024: dict[str, Any] = {
    "backend": "sglang", "dataset_name": "random", "request_rate": 4.0, "sharegpt_output_len": None,
    "random_input_len": 1024, "random_output_len": 256, "random_range_ratio": 0.0, "duration": 25.1,
    "completed": 100, "total_input_tokens": 51234, "total_output_tokens": 12811,
    "total_output_tokens_retokenized": 12790, "request_throughput": 3.98, "input_throughput": 2041.2,
    "output_throughput": 510.4, "mean_e2e_latency_ms": 2310.5, "median_e2e_latency_ms": 2201.0,
    "std_e2e_latency_ms": 640.2, "p99_e2e_latency_ms": 4100.7, "mean_ttft_ms": 61.2,
    "median_ttft_ms": 55.0, "std_ttft_ms": 20.1, "p99_ttft_ms": 140.3, "mean_tpot_ms": 17.6,
    "median_tpot_ms": 17.1, "std_tpot_ms": 2.2, "p99_tpot_ms": 25.9, "mean_itl_ms": 17.5,
    "median_itl_ms": 16.9, "std_itl_ms": 6.0, "p99_itl_ms": 41.0, "concurrency": 9.2,
}  # fmt: skip

SG_2025: dict[str, Any] = {
    "tag": "agg_n100_in512_out128_c8", "backend": "sglang-oai", "dataset_name": "random",
    "request_rate": INF, "max_concurrency": 8, "sharegpt_output_len": None, "random_input_len": 512,
    "random_output_len": 128, "random_range_ratio": 1.0, "duration": 12.31, "completed": 100,
    "total_input_tokens": 51200, "total_output_tokens": 12800, "total_output_tokens_retokenized": 12794,
    "request_throughput": 8.12, "input_throughput": 4159.2, "output_throughput": 1039.8,
    "total_throughput": 5199.0, "mean_e2e_latency_ms": 981.4, "median_e2e_latency_ms": 960.2,
    "std_e2e_latency_ms": 80.3, "p90_e2e_latency_ms": 1090.1, "p99_e2e_latency_ms": 1201.0,
    "mean_ttft_ms": 48.1, "median_ttft_ms": 41.7, "std_ttft_ms": 15.0, "p99_ttft_ms": 102.6,
    "mean_tpot_ms": 7.35, "median_tpot_ms": 7.3, "std_tpot_ms": 0.6, "p99_tpot_ms": 8.9,
    "mean_itl_ms": 7.3, "median_itl_ms": 6.1, "std_itl_ms": 3.3, "p95_itl_ms": 12.0, "p99_itl_ms": 17.4,
    "max_itl_ms": 30.2, "concurrency": 7.97, "accept_length": 2.61, "max_output_tokens_per_s": 1184.0,
    "max_concurrent_requests": 8,
}  # fmt: skip

VLLM_2024: dict[str, Any] = {
    "date": "20250312-101500", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 4, "request_rate": "inf",
    "burstiness": 1.0, "max_concurrency": 4, "duration": 2.5, "completed": 4, "total_input_tokens": 2048,
    "total_output_tokens": 512, "request_throughput": 1.6, "request_goodput:": None,
    "output_throughput": 204.8, "total_token_throughput": 1024.0,
    "input_lens": [512, 512, 512, 512], "output_lens": [128, 128, 128, 128],
    "ttfts": [0.041, 0.043, 0.05, 0.061], "itls": [[0.007, 0.008], [0.007], [0.009], [0.008]],
    "generated_texts": ["a", "b", "c", "d"], "errors": ["", "", "", ""],
    "mean_ttft_ms": 48.75, "median_ttft_ms": 46.5, "std_ttft_ms": 7.8, "p99_ttft_ms": 60.7,
    "mean_tpot_ms": 7.9, "median_tpot_ms": 7.8, "std_tpot_ms": 0.4, "p99_tpot_ms": 8.6,
    "mean_itl_ms": 7.9, "median_itl_ms": 7.8, "std_itl_ms": 0.9, "p99_itl_ms": 9.0,
    "mean_e2el_ms": 1051.0, "median_e2el_ms": 1040.0, "std_e2el_ms": 30.0, "p99_e2el_ms": 1100.0,
}  # fmt: skip

VLLM_06: dict[str, Any] = {
    "date": "20240915-120000", "backend": "vllm", "model_id": "meta-llama/Meta-Llama-3-8B",
    "tokenizer_id": "meta-llama/Meta-Llama-3-8B", "best_of": 1, "use_beam_search": False,
    "num_prompts": 200, "request_rate": "inf", "duration": 30.2, "completed": 200,
    "total_input_tokens": 43000, "total_output_tokens": 39000, "request_throughput": 6.62,
    "output_throughput": 1291.4, "total_token_throughput": 2715.2,
    "mean_ttft_ms": 210.4, "median_ttft_ms": 190.2, "p99_ttft_ms": 560.0,
    "mean_tpot_ms": 24.1, "median_tpot_ms": 23.0, "p99_tpot_ms": 41.2,
    "mean_itl_ms": 23.9, "median_itl_ms": 22.5, "p99_itl_ms": 60.1,
    "mean_latency_ms": 4900.5, "median_latency_ms": 4702.0, "p99_latency_ms": 9050.3,
}  # fmt: skip
VLLM_06_LATENCY = {
    k: v for k, v in VLLM_06.items()
    if not k.endswith("_throughput") and k not in ("duration", "completed", "total_input_tokens", "total_output_tokens")
}  # fmt: skip


_TOTALS = ("total_throughput", "total_token_throughput")


def consistent(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``obj`` with ``changes``, its rates then agreeing with its counts and duration as a real client's
    do (issue 38: an import holds them against each other). A total throughput in ``changes`` sets the
    duration ((input + output tokens) / throughput); every other rate follows from the duration."""
    out = {**obj, **changes}
    done, tin, tout = out.get("completed"), out.get("total_input_tokens"), out.get("total_output_tokens")
    given = next((changes[k] for k in _TOTALS if k in changes), None)
    if given:
        out["duration"] = (tin + tout) / given
    dur = out.get("duration")
    if not dur or done is None:
        return out
    for key, value in (("request_throughput", done / dur), ("input_throughput", tin / dur),
                       ("output_throughput", tout / dur), *((k, (tin + tout) / dur) for k in _TOTALS)):  # fmt: skip
        if key in out and out[key] is not None:
            out[key] = value
    out.update({k: changes[k] for k in _TOTALS if k in changes})  # as given, to the last digit
    if isinstance(out.get("concurrency"), float) and out.get("mean_e2e_latency_ms"):
        out["concurrency"] = out["mean_e2e_latency_ms"] * done / 1000.0 / dur
    return out


def sweep_run(run_number: int, throughput: float) -> dict[str, Any]:
    out = {k: v for k, v in VLLM_2024.items() if k not in ("input_lens", "output_lens", "ttfts", "itls")}
    out.update(
        run_number=run_number, max_num_seqs=64, max_concurrency=4, random_input_len=512, random_output_len=128
    )
    return consistent(out, total_token_throughput=throughput)


def half_length_pair(tmp: Path) -> Path:
    """A results dir with one sglang and one vLLM config in the cell ``in1024`` c=8 that ran
    different workloads: sglang's ``--random-range-ratio 0`` drew ~506 input tokens per request,
    vLLM sent exactly 1,024 (issue 26 defect 2)."""
    from specsweep.importers import ImportOptions, run_import

    sg = consistent(SG_2025, tag="in1024", random_input_len=1024, random_range_ratio=0.0, completed=100,
                    total_input_tokens=50600, total_output_tokens=12800, total_throughput=9000.0)  # fmt: skip
    vl = {k: v for k, v in VLLM_2024.items() if not isinstance(v, list)}
    vl = consistent(vl, completed=100, total_input_tokens=102400, total_output_tokens=12800, max_concurrency=8,
                    total_token_throughput=16446.0)  # fmt: skip
    res = tmp / "res"
    run_import("sglang", [jsonl(tmp / "sg.jsonl", sg)], res, ImportOptions(label="sglang", method="a"))
    run_import(
        "vllm",
        [document(tmp / "v.json", vl)],
        res,
        ImportOptions(label="vLLM", method="b", scenario="in1024"),
    )
    return res


def jsonl(path: Path, *objs: dict[str, Any]) -> Path:
    """One object a line, Python json (Infinity literals), as sglang writes."""
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def document(path: Path, obj: Any, indent: int | None = None) -> Path:
    path.write_text(json.dumps(obj, indent=indent), encoding="utf-8")
    return path
