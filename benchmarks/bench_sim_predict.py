#!/usr/bin/env python3
"""Speed of the simulated engine: `sim predict` per reference cell, and `Engine.step()` at batch 512.

    python3 benchmarks/bench_sim_predict.py [--profile v4flash-dspark-st3] [--steps 2000]

A benchmark, not a test: it prints timings for this machine. `sim predict` should stay well under a
second per cell; `step()` is `sim serve`'s hot loop (concurrency 512 -> a 512-sequence batch).
"""

from __future__ import annotations

import argparse
import time

from specsweep.sim.engine import Engine
from specsweep.sim.predict import predict_cell
from specsweep.sim.profile import load_profile
from specsweep.workload.scenarios import get_scenario

REFERENCE_CELLS = [
    ("chat_short", c) for c in (1, 8, 16, 32, 64)
] + [("chat_standard", 64), ("decode_heavy", 1), ("decode_heavy", 32), ("generation_standard", 64),
     ("long_context_probe", 1), ("long_context_probe", 4), ("long_context_probe", 8), ("rag_medium", 1),
     ("rag_medium", 8), ("rag_medium", 32), ("stress_standard", 64), ("stress_standard", 96),
     ("stress_standard", 128)]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="v4flash-dspark-st3")
    ap.add_argument("--steps", type=int, default=2000, help="engine steps timed at batch 512")
    args = ap.parse_args()
    prof = load_profile(args.profile)
    total = 0.0
    worst = ("", 0, 0.0)
    for sc, c in REFERENCE_CELLS:
        t = time.perf_counter()
        row = predict_cell(prof, get_scenario(sc), c)
        dt = time.perf_counter() - t
        total += dt
        if dt > worst[2]:
            worst = (sc, c, dt)
        print(f"{sc:<20} c={c:<4} {dt * 1000:8.1f} ms  ({row['sim_steps']} steps)")
    print(
        f"{len(REFERENCE_CELLS)} cells: {total:.2f} s total, slowest {worst[0]} c={worst[1]} {worst[2]:.2f} s"
    )

    big = prof.model_copy(update={"max_batch": 512})
    eng = Engine(big, seed=0)
    for i in range(512):
        eng.add(i, 256, 5000)  # 512 x 5.3K tokens fit the 4M-token KV cache
    while eng.num_running < 512 or eng.num_waiting or eng.counters.generation_tokens_total < 512:
        eng.step()
    t = time.perf_counter()
    for _ in range(args.steps):
        eng.step()
    dt = (time.perf_counter() - t) / args.steps
    print(f"Engine.step() at batch 512, k={prof.k}: {dt * 1e6:.0f} us per step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
