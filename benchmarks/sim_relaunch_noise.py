"""Run-to-run noise of the simulated engine across launches: what repeats in rounds measure on it.

Runs a small grid with ``repeats: N`` in interleaved rounds (so every repeat is a fresh `sim serve`
launch running each cell once, with the same client seed: the same prompts) twice: with each
launch's own fresh seed (the default since issue 25) and with every launch on seed 0 (the old
default). Prints per cell the sd of log total throughput over the N launches (one run's noise, as
the verdicts estimate it) and the mean acceptance length's spread.

    python3 benchmarks/sim_relaunch_noise.py --repeats 5

Before the fix, the seed-0 column was what every simulated repeat in rounds measured.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import yaml

CELLS = {"chat_short": [1, 16], "stress_standard": [64]}


def experiment(profile: str, repeats: int, seed: int | None) -> dict[str, Any]:
    srv: dict[str, Any] = {"name": "sim", "kind": "sim", "profile": profile, "time_scale": 1.0}
    if seed is not None:
        srv["params"] = {"seed": seed}
    return {
        "name": f"relaunch-{'fixed' if seed is not None else 'fresh'}",
        "servers": [srv],
        "workloads": [{"scenarios": [s], "concurrency": cs, "rounds": 2} for s, cs in CELLS.items()],
        "client": {"backend": "vllm", "warmup_requests": 4, "warmup_sleep_s": 0.2, "seed": 1},
        "repeats": repeats,
        "report": {"enabled": False},
    }


def sd_log(xs: list[float]) -> float:
    return statistics.stdev(math.log(x) for x in xs) if len(xs) > 1 else float("nan")


def measure(
    profile: str, repeats: int, seed: int | None, work: Path
) -> dict[tuple[str, int], list[dict[str, Any]]]:
    f = work / f"exp-{seed}.yaml"
    f.write_text(yaml.safe_dump(experiment(profile, repeats, seed)), encoding="utf-8")
    res = work / f"res-{seed}"
    subprocess.run([sys.executable, "-m", "specsweep", "run", str(f), "--results-dir", str(res), "--quiet"],
                   check=True, capture_output=True)  # fmt: skip
    (run,) = list(res.iterdir())
    rows: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for line in (run / "summary.jsonl").read_bytes().splitlines():
        r = orjson.loads(line)
        if r.get("status") in ("ok", "invalid"):
            rows[(r["scenario"], r["max_concurrency"])].append(r)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="v4flash-dspark-st3")
    ap.add_argument("--repeats", type=int, default=5, help="launches (rounds) per variant")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sim-relaunch-") as tmp:
        fresh = measure(args.profile, args.repeats, None, Path(tmp))
        fixed = measure(args.profile, args.repeats, 0, Path(tmp))
    print(
        f"profile {args.profile}, {args.repeats} launches per variant, client seed 1, rounds: 2, time_scale 1\n"
    )
    print("| cell | noise per run, fresh seed per launch | noise per run, seed 0 every launch (before) | "
          "accept length, fresh (min-max) | accept length, seed 0 (min-max) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    for key in fresh:
        a, b = fresh[key], fixed.get(key, [])
        la, lb = [r["accept_length"] for r in a], [r["accept_length"] for r in b]
        print(f"| {key[0]} c={key[1]} | {sd_log([r['total_throughput'] for r in a]):.1%} | "
              f"{sd_log([r['total_throughput'] for r in b]):.1%} | {min(la):.3f}-{max(la):.3f} | "
              f"{min(lb):.3f}-{max(lb):.3f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
