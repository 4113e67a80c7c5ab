"""Long-run soak: one `specsweep run` over a sim grid with random faults, for a given duration.

Every server config gets its own random fault mix (errors, disconnects, malformed chunks, stalls,
crashes with restarts, slow starts), so the run keeps launching, restarting and stopping servers.
Meanwhile we sample the resident memory (VmRSS) and open file descriptors of the specsweep process
and of its sim servers. At the end the run gets a Ctrl-C (SIGINT to its process group) and we check:
the process ends by itself, no process is left, every stored cell reloads (summary + records) and
no cell is stored twice. Reported: least-squares slopes of RSS (MB/min) and fds (/min) after the
first 10% of the run, and the time each cell's store took, early versus late.

    python benchmarks/soak.py [--minutes 30] [--sample-s 5] [--seed 1] [--out soak.json]

Uses only /proc (Linux). Exit status 0 when every check passed and both slopes are flat.

Short mode, for the orchestrator's memory alone: ``--memory-cells N`` runs ``orchestrate.execute``
in this process over one sim server and N cells, with a stand-in benchmark that returns a
soak-sized summary row (~3.4 KB of JSON, fresh objects each cell) and 16 records, so only what the
orchestrator and the store keep can grow. It prints the RSS slope per 1,000 cells (seconds, not
minutes; exit 0 when below FLAT_MB_PER_1000_CELLS):

    python benchmarks/soak.py --memory-cells 3000
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import yaml

from specsweep.store.run_dir import RunDir

TAG_VAR = "SPECSWEEP_SOAK_TAG"
FAULTS = [
    "error_rate=0.1,error_status=503",
    "disconnect_rate=0.1,disconnect_after_tokens=3",
    "malformed_rate=0.1",
    "stall_after_tokens=2,stall_s=0.5,stall_rate=0.1",
    "slow_start_s=1",
]
# RSS growth below this over the whole run, and fd growth below this, count as flat.
FLAT_RSS_MB_PER_H = 20.0
FLAT_FDS_PER_H = 2.0
FLAT_MB_PER_1000_CELLS = 2.0


def make_experiment(n_servers: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    servers = []
    for i in range(n_servers):
        items = rng.sample(FAULTS, rng.choice([0, 0, 1, 1, 2]))
        if rng.random() < 0.25:
            items.append(f"crash_after={rng.randint(3, 40)}")
        params: dict[str, Any] = {"seed": i}
        if items:
            params["faults"] = ",".join(items)
        servers.append(
            {"name": f"s{i:04d}", "kind": "sim", "profile": "toy", "time_scale": 20, "params": params}
        )
    return {
        "name": "soak",
        "scenarios": {"tiny": {"input_len": 32, "output_len": 32, "range_ratio": 0.5}},
        "servers": servers,
        "workloads": [{"scenarios": ["tiny"], "concurrency": [1, 4], "num_prompts": 16}],
        "client": {"warmup_requests": 1, "warmup_sleep_s": 0, "request_timeout_s": 5},
        "timeouts": {"ready_s": 30, "stop_s": 3, "cell_s": 60},
        "max_restarts": 3,
    }


# ---- /proc -------------------------------------------------------------------------------------
def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def n_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def tagged(tag: str) -> list[int]:
    needle = f"{TAG_VAR}={tag}".encode()
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                env = Path(f"/proc/{d}/environ").read_bytes()
                state = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z" and needle in env.split(b"\0"):
                out.append(int(d))
    return out


def slope_per_min(t_s: list[float], y: list[float]) -> float:
    if len(t_s) < 3:
        return float("nan")
    return float(np.polyfit(np.asarray(t_s) / 60.0, np.asarray(y), 1)[0])


# ---- checks ------------------------------------------------------------------------------------
def check_run(rd: RunDir) -> dict[str, Any]:
    rows = rd.summary()
    keys = [(r["cell_id"], r["repeat"]) for r in rows]
    problems = []
    if len(keys) != len(set(keys)):
        problems.append("a cell stored twice")
    reloaded = 0
    for r in rows:
        if r["status"] == "failed":
            if not (r.get("error") or "").strip():
                problems.append(f"{r['cell_id']}: failed without an error")
            continue
        recs = [x for x in rd.read_records(r["cell_id"], r["repeat"]) if not x.is_warmup]
        if len(recs) != r["total"]:
            problems.append(f"{r['cell_id']}: {len(recs)} records, summary says {r['total']}")
        reloaded += 1
    errors = Counter(k for r in rows for k, n in (r.get("errors_by_kind") or {}).items() for _ in range(n))
    return {
        "cells": len(rows),
        "by_status": dict(Counter(r["status"] for r in rows)),
        "records_reloaded": reloaded,
        "request_errors_by_kind": dict(errors),
        "servers_launched": sum(
            len(s.get("launches") or []) for s in (rd.manifest.get("servers") or {}).values()
        ),
        "problems": problems,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--sample-s", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--servers", type=int, default=1500, help="server configs in the grid (more than it reaches)"
    )
    ap.add_argument("--results-dir", help="default: a temporary folder")
    ap.add_argument("--out", help="write the samples and figures here (JSON)")
    ap.add_argument(
        "--memory-cells", type=int, metavar="N", help="short mode: orchestrator memory over N cells"
    )
    a = ap.parse_args()
    if a.memory_cells:
        return memory_mode(a.memory_cells, a.results_dir, a.out)

    work = Path(a.results_dir or tempfile.mkdtemp(prefix="specsweep-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    exp_path = work / "soak.yaml"
    exp_path.write_text(yaml.safe_dump(make_experiment(a.servers, a.seed)))
    tag = uuid.uuid4().hex
    cmd = [
        sys.executable,
        "-m",
        "specsweep",
        "run",
        str(exp_path),
        "--results-dir",
        str(work / "results"),
        "--quiet",
    ]
    log = (work / "run.log").open("wb")
    t0 = time.monotonic()
    # SIGINT back to its default in the child: a shell's background job inherits it ignored
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, TAG_VAR: tag},
                            start_new_session=True, preexec_fn=_default_sigint)  # fmt: skip
    samples: list[dict[str, Any]] = []
    end = t0 + a.minutes * 60
    print(f"soak: {a.minutes:g} min, run log {work / 'run.log'}", flush=True)
    while time.monotonic() < end and proc.poll() is None:
        others = [p for p in tagged(tag) if p != proc.pid]
        summ = list(work.glob("results/*/summary.jsonl"))
        s = {
            "t_s": round(time.monotonic() - t0, 1),
            "rss_kb": rss_kb(proc.pid),
            "fds": n_fds(proc.pid),
            "servers": len(others),
            "servers_rss_kb": sum(rss_kb(p) for p in others),
            "servers_fds": sum(n_fds(p) for p in others),
            "cells": len(summ[0].read_bytes().splitlines()) if summ else 0,
            "summary_bytes": summ[0].stat().st_size if summ else 0,
        }
        samples.append(s)
        time.sleep(a.sample_s)
    ended_early = proc.poll() is not None
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at the end
    t_int = time.monotonic()
    try:
        rc = proc.wait(timeout=120)
        ended = True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc, ended = proc.wait(), False
    stop_s = time.monotonic() - t_int
    time.sleep(1.0)
    left = tagged(tag)
    for p in left:
        os.kill(p, signal.SIGKILL)
    rd = RunDir.open(next(work.glob("results/*")))
    checks = check_run(rd)

    skip = max(1, len(samples) // 10)
    body = samples[skip:]
    t = [x["t_s"] for x in body]
    # per-cell store cost: minutes per cell early vs late (a summary rewritten whole each cell grows)
    figures = {
        "minutes": a.minutes,
        "samples": len(samples),
        "rss_mb_first": samples[skip]["rss_kb"] / 1024 if len(samples) > skip else None,
        "rss_mb_last": samples[-1]["rss_kb"] / 1024 if samples else None,
        "rss_mb_max": max(x["rss_kb"] for x in samples) / 1024 if samples else None,
        "rss_slope_mb_per_min": slope_per_min(t, [x["rss_kb"] / 1024 for x in body]),
        "fds_first": samples[skip]["fds"] if len(samples) > skip else None,
        "fds_last": samples[-1]["fds"] if samples else None,
        "fds_max": max(x["fds"] for x in samples) if samples else None,
        "fds_slope_per_min": slope_per_min(t, [x["fds"] for x in body]),
        "server_rss_mb_max": max(x["servers_rss_kb"] for x in samples) / 1024 if samples else None,
        "server_fds_max": max(x["servers_fds"] for x in samples) if samples else None,
        "max_servers_at_once": max(x["servers"] for x in samples) if samples else None,
        "rss_mb_per_1000_cells": (
            (body[-1]["rss_kb"] - body[0]["rss_kb"])
            / 1024
            / max(1, body[-1]["cells"] - body[0]["cells"])
            * 1000
            if body
            else None
        ),
        "cells_per_min_first_half": _rate(samples, 0.1, 0.5),
        "cells_per_min_second_half": _rate(samples, 0.5, 1.0),
        "summary_mb": samples[-1]["summary_bytes"] / 1e6 if samples else None,
        "exit_code": rc,
        "ended_by_itself_after_ctrl_c": ended,
        "stop_s_after_ctrl_c": round(stop_s, 2),
        "ended_early": ended_early,
        "processes_left": left,
        "manifest_status": rd.manifest.get("status"),
        **checks,
    }
    flat_rss = abs(figures["rss_slope_mb_per_min"]) * 60 < FLAT_RSS_MB_PER_H
    flat_fds = abs(figures["fds_slope_per_min"]) * 60 < FLAT_FDS_PER_H
    figures["flat_rss"], figures["flat_fds"] = flat_rss, flat_fds
    # rc 130: stopped by the Ctrl-C; 0 or 1 (failed cells): the grid ran out first
    ok = ended and not left and not checks["problems"] and rc in (0, 1, 130) and flat_rss and flat_fds
    figures["passed"] = ok
    for k, v in figures.items():
        print(f"{k:32s} {v:.3f}" if isinstance(v, float) else f"{k:32s} {v}")
    if a.out:
        Path(a.out).write_bytes(
            orjson.dumps({"figures": figures, "samples": samples}, option=orjson.OPT_INDENT_2)
        )
    return 0 if ok else 1


def memory_mode(n_cells: int, results_dir: str | None, out: str | None) -> int:
    """RSS of this process while ``execute`` stores ``n_cells`` stand-in cells (see the docstring)."""
    import asyncio
    import gc

    from specsweep.client.bench import BenchConfig, BenchOutcome
    from specsweep.experiment.config import plan_experiment
    from specsweep.experiment.loader import parse_experiment
    from specsweep.measure.records import RequestRecord
    from specsweep.orchestrate import create_run_dir, execute

    row = orjson.dumps(_soak_like_row())
    conc = list(range(1, n_cells // 2 + 1))
    exp = make_experiment(1, 1)
    exp["servers"][0]["params"] = {"seed": 0}  # no faults: the stand-in never talks to it
    exp["workloads"] = [{"scenarios": ["tiny"], "concurrency": conc, "num_prompts": 16}]
    exp.update(repeats=2, report={"enabled": False}, timeouts={"ready_s": 60, "stop_s": 3})
    plan = plan_experiment(parse_experiment(exp))

    async def bench(cfg: BenchConfig) -> BenchOutcome:
        await asyncio.sleep(0)
        recs = [
            RequestRecord(
                index=i,
                is_warmup=False,
                worker=0,
                prompt_len=32,
                output_len=32,
                scheduled_ns=i,
                send_ns=i,
                chunk_ns=list(range(i, i + 32)),
                chunk_tokens=[1] * 32,
                end_ns=i + 32,
                output_tokens=32,
            )
            for i in range(16)
        ]
        return BenchOutcome(result=orjson.loads(row), records=recs)  # fresh objects, as a real cell

    samples: list[tuple[int, float]] = []
    done = [0]

    def observer(event: str, data: dict[str, Any]) -> None:
        if event == "cell_done":
            done[0] += 1
            if done[0] % max(1, n_cells // 40) == 0:
                gc.collect()
                samples.append((done[0], rss_kb(os.getpid()) / 1024))

    work = Path(results_dir or tempfile.mkdtemp(prefix="specsweep-soak-mem-"))
    t0 = time.monotonic()
    execute(plan, create_run_dir(plan, work, None), bench_fn=bench, observer=observer)
    body = samples[len(samples) // 10 :]  # after the first 10% (imports, caches warm up)
    slope = float(np.polyfit([c for c, _ in body], [m for _, m in body], 1)[0]) * 1000
    figures = {
        "cells": done[0],
        "seconds": round(time.monotonic() - t0, 1),
        "rss_mb_first": body[0][1],
        "rss_mb_last": body[-1][1],
        "rss_mb_per_1000_cells": slope,
        "flat": slope < FLAT_MB_PER_1000_CELLS,
    }
    for k, v in figures.items():
        print(f"{k:32s} {v:.3f}" if isinstance(v, float) else f"{k:32s} {v}")
    if out:
        Path(out).write_bytes(
            orjson.dumps({"figures": figures, "samples": samples}, option=orjson.OPT_INDENT_2)
        )
    return 0 if figures["flat"] else 1


def _soak_like_row() -> dict[str, Any]:
    """A benchmark result shaped like a soak cell's (the keys of sglang.bench_serving and ours)."""
    row: dict[str, Any] = {"backend": "vllm", "model": "sim-toy", "tokenizer": "builtin", "completed": 16,
                           "failed": 0, "total": 16, "errors_by_kind": {}, "duration": 0.02}  # fmt: skip
    for metric in ("ttft", "tpot", "itl", "e2e_latency", "chunk_latency", "queue"):
        for stat in ("mean", "std", "median", "p90", "p95", "p99"):
            row[f"{stat}_{metric}_ms"] = 0.123456789012345
    for k in ("request", "input", "output", "total"):
        row[f"{k}_throughput"] = 12345.678901234567
    row["tokens_per_chunk_hist"] = {str(i): i for i in range(64)}
    row["ttfts"] = [0.000123456789] * 16
    row["itls"] = [[0.0000123456789] * 31 for _ in range(2)]
    return row


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _rate(samples: list[dict[str, Any]], lo: float, hi: float) -> float | None:
    if len(samples) < 4:
        return None
    a, b = samples[int(lo * (len(samples) - 1))], samples[int(hi * (len(samples) - 1))]
    dt = (b["t_s"] - a["t_s"]) / 60
    return (b["cells"] - a["cells"]) / dt if dt > 0 else None


if __name__ == "__main__":
    sys.exit(main())
