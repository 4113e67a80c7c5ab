"""Does splitting the client over worker processes buy throughput, and do the numbers stay the same?

One firehose server (benchmarks/firehose.py: chunks whose text carries the server's monotonic write
time) per load level; against that same server we alternate runs with 1 worker (the in-process
runner) and N workers (specsweep.client.multiworker: processes, clocks measured and removed).

1. Saturation: a closed loop at concurrency C against a server offering more chunks/s than one client
   can take (the firehose writing ``--burst`` chunks per stream per write, so the server is cheaper
   per chunk than the client); achieved chunks/s = chunks received / run duration.
2. Same numbers: an open-loop (Poisson) load one worker sustains, split by arrival over N workers;
   median TTFT and TPOT of 1 vs N workers, and each chunk's timestamp error (arrival on the driver's
   clock - server write time; same host, so one CLOCK_MONOTONIC), which checks the clock-offset
   removal end to end. Open loop, so request timing does not depend on the client's turnaround.

    python benchmarks/client_scaling.py [--workers 2] [--repeats 3] [--out docs/perf/client_scaling.md]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from specsweep.client.bench import BenchConfig, BenchOutcome
from specsweep.client.multiworker import run_multiworker_async
from specsweep.client.runner import run_bench_async
from specsweep.workload.scenarios import Scenario

HERE = Path(__file__).resolve().parent
_TS = re.compile(r"t(\d+)")


def _firehose() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("firehose", HERE / "firehose.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def serve_burst(chunks: int, gap_ms: float, burst: int) -> None:
    """The firehose (benchmarks/firehose.py's Server); with ``burst`` > 1 it writes ``burst`` chunks
    (each stamped) per stream per tick in one write: a server that spends less CPU per chunk
    than the client, so that the client is what saturates. Prints ``firehose listening on URL``."""
    fh = _firehose()

    async def run() -> None:
        srv = fh.Server(chunks, gap_ms, 1, burst=burst)
        await fh.listen(srv)
        await srv.ticker()

    asyncio.run(run())


def start_firehose(chunks: int, gap_ms: float, burst: int = 1) -> tuple[subprocess.Popen[str], str]:
    """The firehose in its own process and session, on the standard asyncio loop."""
    cmd = [
        sys.executable,
        __file__,
        "--serve-burst",
        str(burst),
        "--chunks",
        str(chunks),
        "--sat-gap-ms",
        str(gap_ms),
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stdout is not None
    return p, p.stdout.readline().strip().rsplit(" ", 1)[-1]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(
    url: str, workers: int, conc: int, chunks: int, n: int, rate: float, server_pid: int, seed: int = 1
) -> dict[str, Any]:
    """Closed loop at ``conc`` when ``rate`` is inf, else open loop (Poisson) at ``rate`` req/s."""
    sc = Scenario(name="firehose", input_len=8, output_len=chunks, range_ratio=1.0)
    closed = math.isinf(rate)
    cfg = BenchConfig(base_url=url, scenario=sc, backend="vllm", model="firehose", num_prompts=n,
                      max_concurrency=conc if closed else None, request_rate=rate, warmup_requests=conc,
                      warmup_sleep_s=0.2, seed=seed, keep_text=True, scrape_metrics=False, quiet=True, workers=workers)  # fmt: skip
    srv0 = cpu_s(server_pid)
    out: BenchOutcome = asyncio.run(run_multiworker_async(cfg) if workers > 1 else run_bench_async(cfg))
    srv_cpu = cpu_s(server_pid) - srv0  # includes warmup: an upper bound on the measured part
    res = out.result
    n_chunks, chunk_err = 0, []
    for r in out.records:
        if r.is_warmup or not r.ok:
            continue
        n_chunks += len(r.chunk_ns)
        server_ns = [int(x) for x in _TS.findall(r.output_text or "")]
        if len(server_ns) == len(r.chunk_ns):
            chunk_err += [(c - s) / 1e6 for c, s in zip(r.chunk_ns, server_ns, strict=True)]
    per = res["self_check"].get("per_worker") or [res["self_check"]]
    client_cpu = sum(w["client_cpu_util"] for w in per) * res["duration"]
    return {
        "workers": workers,
        "chunks_per_s": n_chunks / res["duration"] if res["duration"] else 0.0,
        "median_ttft_ms": res["median_ttft_ms"],
        "median_tpot_ms": res["median_tpot_ms"],
        "p99_tpot_ms": res["p99_tpot_ms"],
        "ts_err_p50_ms": float(np.percentile(chunk_err, 50)) if chunk_err else math.nan,
        "ts_err_p99_ms": float(np.percentile(chunk_err, 99)) if chunk_err else math.nan,
        "cpu": [round(w["client_cpu_util"], 2) for w in per],
        "client_us_per_chunk": client_cpu / n_chunks * 1e6 if n_chunks else math.nan,
        "server_us_per_chunk": srv_cpu / n_chunks * 1e6 if n_chunks else math.nan,
        "lag_p99_ms": max(w["loop_lag_p99_ms"] for w in per),
        "clock_err_ms": res["self_check"].get("clock_error_max_ms", 0.0),
        "failed": res["failed"],
        "invalid": bool(res["invalid"]),
    }


def series(
    conc: int, gap_ms: float, chunks: int, n: int, rate: float, workers: int, repeats: int, burst: int = 1
) -> list[dict[str, Any]]:
    proc, url = start_firehose(chunks, gap_ms, burst)
    rows = []
    try:
        for rep in range(repeats):
            # Alternate the order (drift hits both alike); a new arrival schedule per repeat (seed), the
            # same for both, so a tick-based server's phase does not favour one side run after run.
            order = (1, workers) if rep % 2 == 0 else (workers, 1)
            for w in order:
                row = {"concurrency": conc, "gap_ms": gap_ms, "rate": rate, "repeat": rep,
                       **one_run(url, w, conc, chunks, n, rate, proc.pid, seed=1 + rep)}  # fmt: skip
                rows.append(row)
                print(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                      flush=True)  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(10)
    return rows


def med(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def spread(rows: list[dict[str, Any]], key: str, nd: int = 2) -> str:
    vals = [r[key] for r in rows]
    return f"{statistics.median(vals):,.{nd}f} ({min(vals):,.{nd}f}-{max(vals):,.{nd}f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sat-concurrency", type=int, default=512)
    ap.add_argument("--sat-gap-ms", type=float, default=10.0, help="offered = concurrency x burst / gap")
    ap.add_argument("--lat-rate", type=float, default=48.0, help="open-loop req/s of the latency check")
    ap.add_argument("--lat-gap-ms", type=float, default=20.0)
    ap.add_argument("--chunks", type=int, default=48)
    ap.add_argument("--burst", type=int, default=4, help="saturation server: chunks per stream per write")
    ap.add_argument("--serve-burst", type=int, default=0, help=argparse.SUPPRESS)  # internal: be the server
    ap.add_argument("--out", default=None, help="write a Markdown page here")
    args = ap.parse_args()
    if args.serve_burst:
        serve_burst(args.chunks, args.sat_gap_ms, args.serve_burst)
        return
    load0 = os.getloadavg()[0]
    t0 = time.time()
    c, n = args.sat_concurrency, args.workers
    sat = series(c, args.sat_gap_ms, args.chunks, 2 * c, math.inf, n, args.repeats, args.burst)
    plain = series(c, args.sat_gap_ms, args.chunks, 2 * c, math.inf, n, args.repeats)
    lat = series(16, args.lat_gap_ms, args.chunks, int(args.lat_rate * 6), args.lat_rate, n, args.repeats)
    wall = time.time() - t0
    load1 = os.getloadavg()[0]
    s1, sn = [r for r in sat if r["workers"] == 1], [r for r in sat if r["workers"] == n]
    l1, ln = [r for r in lat if r["workers"] == 1], [r for r in lat if r["workers"] == n]
    gain = med(sn, "chunks_per_s") / med(s1, "chunks_per_s")
    p1, pn = [r for r in plain if r["workers"] == 1], [r for r in plain if r["workers"] == n]
    client_us = med(p1, "client_us_per_chunk")
    per_core = 1e6 / client_us
    in_flight = args.lat_rate * args.chunks * args.lat_gap_ms / 1000
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
        f"{os.cpu_count()} cores shared with other work (load average {load0:.1f} at the start, "
        f"{load1:.1f} at the end), Python {platform.python_version()}; {wall:.0f} s in all. Server: "
        f"benchmarks/firehose.py (one process, its own session, not pinned), {args.chunks} chunks per "
        f"request, 1 token per chunk; client workers are processes in their own sessions. Medians over "
        f"{args.repeats} alternating repeats (range in brackets).",
        "",
        f"Command: `python benchmarks/client_scaling.py --workers {n} --repeats {args.repeats}`",
        "",
        f"## Saturation: closed loop, concurrency {c}, offered {c * args.burst * 1000 / args.sat_gap_ms:,.0f} "
        "chunks/s",
        "",
        f"The server here is the firehose writing {args.burst} chunks per stream per write every "
        f"{args.sat_gap_ms:g} ms (each chunk its own SSE event with its own stamp): it spends less CPU per "
        "chunk than the client, so the client is what saturates.",
        "",
        "| workers | achieved chunks/s | client CPU (share of a core, per worker) | client CPU µs/chunk | "
        "server CPU µs/chunk | loop lag p99 (ms) |",
        "|---:|---:|:--|---:|---:|---:|",
    ]
    for w, rows in ((1, s1), (n, sn)):
        lines.append(f"| {w} | {spread(rows, 'chunks_per_s', 0)} | {rows[0]['cpu']} | "
                     f"{med(rows, 'client_us_per_chunk'):.1f} | {med(rows, 'server_us_per_chunk'):.1f} | "
                     f"{med(rows, 'lag_p99_ms'):.1f} |")  # fmt: skip
    lines += [
        "",
        f"**{n} workers: {gain:.2f}x the chunks/s of one** against the same server (median of medians).",
        "",
        f"The plain firehose (one write per chunk, {c * 1000 / args.sat_gap_ms:,.0f} chunks/s offered) costs "
        "about as much CPU per chunk as the client; on 2 shared cores it saturates first, and a second "
        "worker can only take CPU from it:",
        "",
        "| workers | achieved chunks/s | client CPU µs/chunk | server CPU µs/chunk |",
        "|---:|---:|---:|---:|",
        *(
            f"| {w} | {spread(rows, 'chunks_per_s', 0)} | {med(rows, 'client_us_per_chunk'):.1f} | "
            f"{med(rows, 'server_us_per_chunk'):.1f} |"
            for w, rows in ((1, p1), (n, pn))
        ),
        "",
        f"## Same numbers: open loop {args.lat_rate:g} req/s (about {in_flight:.0f} in flight, "
        f"{in_flight * 1000 / args.lat_gap_ms:,.0f} chunks/s), chunk gap {args.lat_gap_ms:g} ms",
        "",
        "TPOT is the server's chunk gap by construction; TTFT is the wait for the server's next tick "
        f"(uniform in 0-{args.lat_gap_ms:g} ms) plus transport. Timestamp error = chunk arrival on the "
        "driver's clock (after removing each worker's measured offset) - the server's write time.",
        "",
        "| workers | median TTFT (ms) | median TPOT (ms) | p99 TPOT (ms) | timestamp err p50 (ms) | "
        "timestamp err p99 (ms) | clock offset error bound (ms) | invalid runs |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w, rows in ((1, l1), (n, ln)):
        lines.append(
            f"| {w} | {spread(rows, 'median_ttft_ms')} | {spread(rows, 'median_tpot_ms')} | "
            f"{spread(rows, 'p99_tpot_ms')} | {spread(rows, 'ts_err_p50_ms')} | {spread(rows, 'ts_err_p99_ms')} | "
            f"{med(rows, 'clock_err_ms'):.3f} | {sum(r['invalid'] for r in rows)}/{len(rows)} |"
        )
    lines += [
        "",
        "## Sizing",
        "",
        f"Against the plain firehose (one chunk per write, as an engine streams) one worker spent about "
        f"**{client_us:.0f} µs of CPU per chunk** near saturation, i.e. about **{per_core:,.0f} chunks/s per "
        "fully available core** (a busy shared VM; at low load a chunk costs more, as each read carries "
        "fewer chunks, but the total is then small). Run each worker at no more than half that, so its event-loop "
        "lag stays well under the 10 ms self-check, and give every worker its own core. A streaming "
        "request gets one chunk per decode step (a speculative step carries several tokens in one chunk):",
        "",
        "    chunks/s = concurrency x 1000 / chunk gap (ms)",
        "    workers  = ceil(chunks/s / (0.5 x chunks/s per core))",
        "",
        "| concurrency | chunk gap (ms) | chunks/s | tokens/s at 1 tok/chunk | tokens/s at 3 tok/chunk | workers |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for conc, gap in ((64, 20), (128, 15), (256, 10), (512, 10), (1024, 8), (2048, 5)):
        cps = conc * 1000 / gap
        lines.append(f"| {conc} | {gap} | {cps:,.0f} | {cps:,.0f} | {3 * cps:,.0f} | "
                     f"{max(1, math.ceil(cps / (0.5 * per_core)))} |")  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
