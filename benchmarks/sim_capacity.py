"""How many concurrent streams (and chunks/s) one `sim serve` process serves on schedule.

For each concurrency C: start ``python -m specsweep.sim.serve`` (own process) with a profile whose every
step takes ``--step-ms`` virtual ms and room for C sequences, drive it from a separate load process
(C closed-loop aiohttp streams, /v1/completions, ``--max-tokens`` each, ignore_eos) for ``--duration`` s,
then read the server's --truth file: the emit-time error of a chunk is when it was written to its
socket minus when the engine scheduled it (both time.monotonic_ns in the server). Chunks of the first
``--warmup`` s are skipped. The capacity is the largest C whose p99 error stays under 1 ms.

    python3 benchmarks/sim_capacity.py --concurrency 64,128,256,512 --step-ms 20 --duration 8

Prints one JSON line per concurrency and a Markdown table (for docs/perf/sim_capacity.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _profile_yaml(step_ms: float, k: int, max_batch: int) -> str:
    surv = [round(0.8**i, 4) for i in range(1, k + 1)]
    return "\n".join(
        [
            "name: capacity",
            "model_name: sim-capacity",
            f"spec_method: {'dspark' if k else 'null'}",
            f"k: {k}",
            f"survival: {surv}",
            f"t0_ms: {step_ms}",
            "c_tok_ms: 0.0",
            "c_kv_ms: 0.0",
            "prefill_ms_per_tok: 0.0",
            "admit_ms: 0.0",
            "cliff_ms: 0.0",
            f"max_batch: {max_batch}",
            "kv_tokens: 100000000",
            "prefill_chunk: 1000000",
            "",
        ]
    )


# ---- load process ------------------------------------------------------------------------------
async def _load(url: str, conc: int, duration_s: float, max_tokens: int) -> dict[str, float]:
    import aiohttp

    body = json.dumps(
        {"prompt": "capacity test prompt", "max_tokens": max_tokens, "ignore_eos": True, "stream": True}
    ).encode()
    stop_at = time.monotonic() + duration_s
    done = errors = 0
    received = 0

    async def worker(s: aiohttp.ClientSession, i: int) -> None:
        nonlocal done, errors, received
        await asyncio.sleep(i * 0.002)  # stagger the starts
        while time.monotonic() < stop_at:
            try:
                async with s.post(
                    url + "/v1/completions", data=body, headers={"Content-Type": "application/json"}
                ) as r:
                    async for data in r.content.iter_any():
                        received += len(data)
                done += 1
            except aiohttp.ClientError:
                errors += 1

    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=None)) as s:
        await asyncio.gather(*(worker(s, i) for i in range(conc)))
    return {"requests": done, "errors": errors, "bytes": received}


# ---- one concurrency level -----------------------------------------------------------------------
def measure(
    conc: int,
    step_ms: float,
    k: int,
    duration_s: float,
    warmup_s: float,
    max_tokens: int,
    writer_threads: int = 0,
    pin: bool = False,
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        prof = Path(tmp) / "capacity.yaml"
        prof.write_text(_profile_yaml(step_ms, k, max(conc, 8)))
        truth = Path(tmp) / "truth.jsonl"
        srv = subprocess.Popen(
            [sys.executable, "-m", "specsweep.sim.serve", "--profile", str(prof), "--port", "0", "--truth", str(truth),
             "--writer-threads", str(writer_threads)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            if pin:  # server on CPU 1, load on CPU 0: neither migrates nor takes the other's core
                os.sched_setaffinity(srv.pid, {1})
            assert srv.stdout is not None
            url = srv.stdout.readline().split()[-1]
            t0 = time.monotonic_ns()
            load = subprocess.run(
                [sys.executable, __file__, "--client", url, "--concurrency", str(conc),
                 "--duration", str(duration_s), "--max-tokens", str(max_tokens), *(["--pin"] if pin else [])],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            client = json.loads(load.stdout.strip().splitlines()[-1])
        finally:
            srv.terminate()
            srv.wait(30)
        errs: list[int] = []
        steps: dict[int, list[int]] = {}  # scheduled time -> write times of that step's chunks
        n_chunks = 0
        t_lo = t0 + int(warmup_s * 1e9)
        t_hi = t0 + int(duration_s * 1e9)
        for line in truth.read_text().splitlines():
            for c in json.loads(line)["chunks"]:
                if t_lo <= c["sched_mono_ns"] <= t_hi:
                    errs.append(c["mono_ns"] - c["sched_mono_ns"])
                    steps.setdefault(c["sched_mono_ns"], []).append(c["mono_ns"])
                    n_chunks += 1
    if not errs:
        raise SystemExit(f"concurrency {conc}: no chunks in the window (client: {client})")
    e = np.asarray(errs, dtype=np.float64) / 1e6
    window_s = duration_s - warmup_s
    # per step: lateness of its first write (timer precision) and write time per chunk (the burst)
    first_late = [(min(w) - t) / 1e6 for t, w in steps.items()]
    per_chunk_us = [(max(w) - min(w)) / (len(w) - 1) / 1e3 for w in steps.values() if len(w) > 1]
    return {
        "concurrency": conc,
        "writer_threads": writer_threads,
        "step_ms": step_ms,
        "k": k,
        "chunks_per_s": round(n_chunks / window_s, 1),
        "tokens_per_chunk_mean": round(1 + sum(0.8**i for i in range(1, k + 1)), 3),
        "err_p50_ms": round(float(np.percentile(e, 50)), 3),
        "err_p99_ms": round(float(np.percentile(e, 99)), 3),
        "err_p999_ms": round(float(np.percentile(e, 99.9)), 3),
        "err_max_ms": round(float(e.max()), 3),
        "early_chunks": int((e < 0).sum()),
        "step_first_write_late_p50_ms": round(float(np.median(first_late)), 3),
        "step_first_write_late_p99_ms": round(float(np.percentile(first_late, 99)), 3),
        "write_us_per_chunk_p50": round(float(np.median(per_chunk_us)), 2) if per_chunk_us else None,
        "client_requests": client["requests"],
        "client_errors": client["errors"],
    }


# ---- CPU cost per chunk, without sockets --------------------------------------------------------------
def micro(conc: int, steps: int = 50) -> dict[str, float]:
    """Python work per emitted chunk (engine step, encoding, the emit loop) with no-op transports."""
    from specsweep.sim.faults import RequestFaults
    from specsweep.sim.profile import Profile
    from specsweep.sim.server import SimServer
    from specsweep.sim.settings import SimConfig
    from specsweep.sim.wire import CompletionsEncoder

    class NullTransport:
        def is_closing(self) -> bool:
            return False

        def write(self, data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    async def run() -> dict[str, float]:
        import yaml

        prof = Profile(**yaml.safe_load(_profile_yaml(20.0, 3, conc)))
        with tempfile.TemporaryDirectory() as tmp:
            srv = SimServer(SimConfig(profile=prof, truth=str(Path(tmp) / "t.jsonl")))
            await srv._on_startup(srv.app)
            srv.driver.cancel()  # steps are driven by hand below
            for i in range(conc):
                r = srv._admit(
                    "cmpl", "/v1/completions", prompt=f"p{i}", prompt_tokens=10, max_tokens=100_000,
                    ignore_eos=True, temperature=0.0, stream=True, rf=RequestFaults(),
                )  # fmt: skip
                r.enc = CompletionsEncoder("cmpl-" + r.rid, 0, "m", 10, True, True)
                r.transport = NullTransport()  # type: ignore[assignment]
                srv.driver.submit(r)
            eng = srv.engine
            t = {"engine_step": 0.0, "encode": 0.0, "emit_loop": 0.0}
            n = 0
            for i in range(steps + 3):
                t0 = time.perf_counter()
                st = eng.step()
                assert st is not None
                t1 = time.perf_counter()
                prepared = srv.driver.prepare(st, 0.0)
                t2 = time.perf_counter()
                srv.driver.emit(prepared, 0.0)
                t3 = time.perf_counter()
                if i >= 3:  # warm-up steps excluded
                    t["engine_step"] += t1 - t0
                    t["encode"] += t2 - t1
                    t["emit_loop"] += t3 - t2
                    n += len(st.emissions)
            await srv._on_shutdown(srv.app)
        return {f"{k}_us_per_chunk": round(v / n * 1e6, 2) for k, v in t.items()}

    return asyncio.run(run())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="64,128,256,512")
    ap.add_argument("--step-ms", type=float, default=20.0, help="virtual (= wall) ms per engine step")
    ap.add_argument("--k", type=int, default=3, help="draft tokens per step (survival 0.8^i)")
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--writer-threads", type=int, default=0, help="the server's --writer-threads")
    ap.add_argument("--micro", action="store_true", help="only the CPU cost per chunk (no sockets)")
    ap.add_argument(
        "--no-pin", action="store_true", help="do not pin the server to CPU 1 and the load to CPU 0"
    )
    ap.add_argument("--pin", action="store_true", help=argparse.SUPPRESS)  # internal: the load process pins
    ap.add_argument("--client", help=argparse.SUPPRESS)  # internal: run as the load process
    a = ap.parse_args()
    if a.micro:
        for c in (int(x) for x in a.concurrency.split(",")):
            print(json.dumps({"concurrency": c, **micro(c)}), flush=True)
        return 0
    if a.client:
        if a.pin:
            os.sched_setaffinity(0, {0})
        out = asyncio.run(_load(a.client, int(a.concurrency), a.duration, a.max_tokens))
        print(json.dumps(out))
        return 0
    rows = []
    pin = not a.no_pin and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2
    for c in (int(x) for x in a.concurrency.split(",")):
        row = measure(c, a.step_ms, a.k, a.duration, a.warmup, a.max_tokens, a.writer_threads, pin)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(
        f"\n{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; step {a.step_ms} ms, k={a.k}, "
        f"{a.max_tokens} tokens per request, writer threads {a.writer_threads}; server pinned to CPU 1, "
        f"load to CPU 0: {pin}\n"
    )
    print(
        "| streams | chunks/s | err p50 ms | err p99 ms | err p99.9 ms | err max ms | step start late p99 ms | us/chunk in a burst |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['concurrency']} | {r['chunks_per_s']:,.0f} | {r['err_p50_ms']:.3f} | {r['err_p99_ms']:.3f} "
            f"| {r['err_p999_ms']:.3f} | {r['err_max_ms']:.3f} | {r['step_first_write_late_p99_ms']:.3f} "
            f"| {r['write_us_per_chunk_p50']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
