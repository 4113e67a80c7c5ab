"""Time and peak memory of `specsweep import sglang` on big JSONL files: is it linear and streaming?

Writes N sglang.bench_serving result lines (the 2025 key set, every line distinct; 10 workloads so
there are several cells), imports them in a fresh `python -m specsweep` process and reports wall
time and the child's peak RSS. Memory should stay nearly flat as N grows (one line at a time plus
~16 bytes of content hash per line); time should grow linearly.

    python benchmarks/import_scale.py [--lines 10000 100000 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINE = {
    "tag": "chat", "backend": "sglang-oai", "dataset_name": "random", "request_rate": float("inf"),
    "max_concurrency": 8, "random_input_len": 512, "random_output_len": 128, "random_range_ratio": 1.0,
    "duration": 12.31, "completed": 100, "total_input_tokens": 51200, "total_output_tokens": 12800,
    "request_throughput": 8.12, "input_throughput": 4159.2, "output_throughput": 1039.8,
    "total_throughput": 5199.0, "mean_e2e_latency_ms": 981.4, "median_e2e_latency_ms": 960.2,
    "p99_e2e_latency_ms": 1201.0, "mean_ttft_ms": 48.1, "median_ttft_ms": 41.7, "p99_ttft_ms": 102.6,
    "mean_tpot_ms": 7.35, "median_tpot_ms": 7.3, "p99_tpot_ms": 8.9, "mean_itl_ms": 7.3,
    "median_itl_ms": 6.1, "p99_itl_ms": 17.4, "concurrency": 7.97, "accept_length": 2.61,
}  # fmt: skip


def write(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({**LINE, "max_concurrency": 1 << (i % 10), "duration": 12.31 + i * 1e-6}))
            fh.write("\n")


def run_one(n: int, work: Path) -> tuple[float, float, float]:
    src = work / f"in-{n}.jsonl"
    write(src, n)
    cmd = [sys.executable, "-m", "specsweep", "import", "sglang", str(src), "--label", f"L{n}"]
    cmd += ["--method", "m", "-o", str(work / f"res-{n}")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=os.environ.copy())
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the max over all waited-for children: run sizes in increasing order
    return wall, max(peak_kb, before) / 1024, src.stat().st_size / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = ap.parse_args()
    print(f"{'lines':>10} {'file MB':>8} {'wall s':>8} {'us/line':>8} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as d:
        for n in sorted(args.lines):
            wall, peak, size = run_one(n, Path(d))
            print(f"{n:>10,} {size:>8.0f} {wall:>8.1f} {wall / n * 1e6:>8.1f} {peak:>12.0f}", flush=True)


if __name__ == "__main__":
    main()
