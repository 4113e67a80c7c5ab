"""How many chunks/s one specsweep client process sustains, and its timestamp error at that load.

A firehose server (benchmarks/firehose.py, its own process, pinned to CPU 1) streams chunks whose
text carries the server's monotonic write time; the client (this process, pinned to CPU 0) runs a
closed loop at concurrency C with ``keep_text`` and we compare every chunk's arrival timestamp with
the write time in its text (same machine, same CLOCK_MONOTONIC). For each C we raise the offered
chunk rate (C / gap) until the client falls behind.

    python benchmarks/client_overhead.py [--concurrency 256 1024] [--out docs/perf/client_overhead.md]

"Sustained" = achieved chunks/s >= 95% of offered, TTFT error p99 < 2 ms and the run not invalid.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from specsweep.client import kstamp
from specsweep.client.bench import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.workload.scenarios import Scenario

HERE = Path(__file__).resolve().parent
_TS = re.compile(r"t(\d+)")


def start_firehose(chunks: int, gap_ms: float, cpu: int | None) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, str(HERE / "firehose.py"), "--chunks", str(chunks), "--gap-ms", str(gap_ms)]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    url = p.stdout.readline().strip().rsplit(" ", 1)[-1]
    return p, url


def measure(
    conc: int, gap_ms: float, chunks: int, rounds: int, cpu_server: int | None, loop: str = "floor"
) -> dict[str, Any]:
    proc, url = start_firehose(chunks, gap_ms, cpu_server)
    try:
        sc = Scenario(name="firehose", input_len=8, output_len=chunks, range_ratio=1.0)
        cfg = BenchConfig(base_url=url, scenario=sc, backend="vllm", model="firehose", num_prompts=conc * rounds,
                          max_concurrency=conc, keep_text=True, scrape_metrics=False, quiet=True)  # fmt: skip
        # floor: the loop specsweep measures on (kstamp.run: the ready-floor selector); plain: asyncio's
        out = kstamp.run(run_bench_async(cfg)) if loop == "floor" else asyncio.run(run_bench_async(cfg))
    finally:
        proc.terminate()
        proc.wait(10)
    recs = [r for r in out.records if r.ok and r.output_text]
    ttft_err, chunk_err = [], []
    n_chunks = 0
    for r in recs:
        server_ns = [int(x) for x in _TS.findall(r.output_text or "")]
        if len(server_ns) != len(r.chunk_ns):
            continue
        errs = [(c - s) / 1e6 for c, s in zip(r.chunk_ns, server_ns, strict=True)]
        ttft_err.append(errs[0])
        chunk_err.extend(errs)
        n_chunks += len(errs)
    res = out.result
    dur = res["duration"]
    return {
        "concurrency": conc,
        "gap_ms": gap_ms,
        "offered_chunks_per_s": conc * 1000.0 / gap_ms,
        "achieved_chunks_per_s": n_chunks / dur if dur else 0.0,
        "ttft_err_p50_ms": float(np.percentile(ttft_err, 50)) if ttft_err else float("nan"),
        "ttft_err_p99_ms": float(np.percentile(ttft_err, 99)) if ttft_err else float("nan"),
        "chunk_err_p99_ms": float(np.percentile(chunk_err, 99)) if chunk_err else float("nan"),
        "client_cpu": res["self_check"]["client_cpu_util"],
        "loop_lag_p99_ms": res["self_check"]["loop_lag_p99_ms"],
        "read_delay_p99_ms": res["self_check"].get("read_delay_p99_ms", float("nan")),
        "shared_stamp_frac": res["self_check"].get("shared_stamp_frac", float("nan")),
        "failed": res["failed"],
        "invalid": bool(res["invalid"]),
        "stamps": res.get("arrival_stamps", "read"),
        "loop": loop,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--gaps-ms", type=float, nargs="+", default=None, help="default: per concurrency sweep")
    ap.add_argument(
        "--rates", type=float, nargs="+", default=None, help="offered chunks/s ladder (instead of gaps)"
    )
    ap.add_argument("--repeats", type=int, default=1, help="runs per rung (each its own server)")
    ap.add_argument("--chunks", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None, help="write a Markdown table here")
    ap.add_argument("--loops", nargs="+", choices=["floor", "plain"], default=["floor"],
                    help="event loops to measure each rung on, alternating (plain: asyncio's own selector, "
                    "to see what the ready floor costs)")  # fmt: skip
    args = ap.parse_args()
    pin = hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2
    if pin:
        os.sched_setaffinity(0, {0})
    rows = []
    for c in args.concurrency:
        rates = args.rates or (5_000, 10_000, 20_000, 30_000, 40_000, 60_000)
        gaps = args.gaps_ms or [c / r * 1000 for r in rates]
        for g in gaps:
            for _ in range(args.repeats):
                for loop in args.loops:
                    row = measure(c, round(g, 3), args.chunks, args.rounds, 1 if pin else None, loop)
                    rows.append(row)
                    print(
                        " ".join(
                            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
                        ),
                        flush=True,
                    )
    best: dict[int, float] = {}
    for r in rows:
        ok = (r["achieved_chunks_per_s"] >= 0.95 * r["offered_chunks_per_s"] and r["ttft_err_p99_ms"] < 2.0
              and not r["invalid"] and r["failed"] == 0)  # fmt: skip
        if ok:
            best[int(r["concurrency"])] = max(
                best.get(int(r["concurrency"]), 0.0), r["achieved_chunks_per_s"]
            )
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} {os.cpu_count()} cores "
        f"({platform.python_version()}); client pinned to CPU 0, server to CPU 1: {pin}.",
        "",
        "Command: `python benchmarks/client_overhead.py " + " ".join(sys.argv[1:]) + "`",
        "",
        "| concurrency | offered chunks/s | achieved chunks/s | TTFT err p50 (ms) | TTFT err p99 (ms) | chunk err p99 (ms) | client CPU | loop lag p99 (ms) | read delay p99 (ms) | chunks sharing a read | invalid | arrival stamps | event loop |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:--|:--|:--|",
    ]
    for r in rows:
        lines.append(
            f"| {r['concurrency']} | {r['offered_chunks_per_s']:.0f} | {r['achieved_chunks_per_s']:.0f} | "
            f"{r['ttft_err_p50_ms']:.2f} | {r['ttft_err_p99_ms']:.2f} | {r['chunk_err_p99_ms']:.2f} | "
            f"{r['client_cpu']:.0%} | {r['loop_lag_p99_ms']:.2f} | {r['read_delay_p99_ms']:.2f} | "
            f"{r['shared_stamp_frac']:.2%} | {'yes' if r['invalid'] else 'no'} | {r['stamps']} | {r['loop']} |"
        )
    lines.append("")
    for c, v in sorted(best.items()):
        lines.append(f"- concurrency {c}: most chunks/s sustained with TTFT error p99 < 2 ms: **{v:,.0f}**")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
