"""The reference reports' data (seed-results.csv) as sglang.bench_serving JSONL lines."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from specsweep.workload.scenarios import default_num_prompts

# CSV column -> sglang.bench_serving key
COLUMNS = {
    "duration_s": "duration",
    "request_throughput": "request_throughput",
    "output_throughput": "output_throughput",
    "total_throughput": "total_throughput",
    "mean_e2e_latency_ms": "mean_e2e_latency_ms",
    "p95_e2e_latency_ms": "p95_e2e_latency_ms",
    "p99_e2e_latency_ms": "p99_e2e_latency_ms",
    "mean_ttft_ms": "mean_ttft_ms",
    "p99_ttft_ms": "p99_ttft_ms",
    "mean_tpot_ms": "mean_tpot_ms",
    "p99_tpot_ms": "p99_tpot_ms",
}

# label, method, params, CSV filter
CONFIGS = [
    ("DSpark(st=3)", "dspark", {"spec_tokens": 3}, ("dspark", "3")),
    ("DSpark(st=5)", "dspark", {"spec_tokens": 5}, ("dspark", "5")),
    ("EAGLE", "eagle", {"num_steps": 3, "topk": 1, "draft_tokens": 4}, ("eagle", "")),
]


def seed_rows(reference_dir: Path) -> list[dict[str, str]]:
    with (reference_dir / "seed-results.csv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def to_sglang_line(row: dict[str, str]) -> dict[str, object]:
    c = int(row["concurrency"])
    out: dict[str, object] = {
        "backend": "vllm" if row["method"] == "dspark" else "sglang",
        "dataset_name": "random",
        "tag": row["scenario"],
        "max_concurrency": c,
        "request_rate": float("inf"),
        "completed": default_num_prompts(c),
    }
    for col, key in COLUMNS.items():
        if row.get(col):
            out[key] = float(row[col])
    return out


def write_jsonl(reference_dir: Path, out_dir: Path) -> dict[str, Path]:
    """One JSONL file per config label; returns label -> file."""
    rows = seed_rows(reference_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for i, (label, _method, _params, (m, st)) in enumerate(CONFIGS):
        p = out_dir / f"cfg{i}.jsonl"
        lines = [json.dumps(to_sglang_line(r)) for r in rows if r["method"] == m and r["spec_tokens"] == st]
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[label] = p
    return files


# what the reference reports' headers say about the servers
SERVERS = {
    "dspark": (
        "/data/models/DeepSeek-V4-Flash-DSpark",
        "vllm-dspark (TP=8, FP8 KV cache, spec-method=dspark)",
    ),
    "eagle": (
        "/data/models/DeepSeek-V4-Flash",
        "SGLang (TP=8, FP8 KV cache, speculative-algorithm=EAGLE, num_steps=3, topk=1, draft_tokens=4)",
    ),
}


def import_args(label: str, path: Path, results: Path) -> list[str]:
    _l, method, params, _f = next(c for c in CONFIGS if c[0] == label)
    model, backend = SERVERS[method]
    args = ["import", "sglang", str(path), "--label", label, "--method", method, "-o", str(results)]
    args += ["--warmup", "100", "--model", model, "--server-backend", backend]
    for k, v in params.items():
        args += ["--param", f"{k}={v}"]
    return args
