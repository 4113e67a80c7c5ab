"""How much a run's few prompts move its figures: ``sim predict`` of one cell at several run sizes, each
over many seeds (each seed another sample of the scenario's prompts), the spread of its throughput
from one sample to the next (the sd of log total tok/s) and its mean against the reference-length run.

    python3 benchmarks/prompt_sample.py                      # chat_short and rag_medium at c=1
    python3 benchmarks/prompt_sample.py --scenarios chat_short --concurrency 16 --sizes 48,128

A racing run is at least three waves (docs/statistics.md, "Racing on short first looks"): three
requests at c=1. Every config of a cell runs the same prompts, so a comparison is not moved by which
prompts they were; a cell's absolute figures are (the report notes cells measured only by runs of
few requests: specsweep.report.build.steady_notes). Prints a Markdown table (docs/metrics.md).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from specsweep.sim.predict import predict_cell  # noqa: E402
from specsweep.sim.profile import load_profile  # noqa: E402
from specsweep.workload.scenarios import default_num_prompts, get_scenario  # noqa: E402

PROFILES = ("v4flash-dspark-st5", "v4flash-eagle")


@functools.cache
def log_tput(profile: str, scenario: str, c: int, n: int, seed: int, metric: str = "total_throughput",
             pool: int | None = None) -> float:  # fmt: skip
    """log total tok/s of ``sim predict`` of one cell run of ``n`` prompts (seeded: the same prompts);
    ``metric``: the run's figure (``steady_total_throughput``: over its steady window); ``pool``: the
    run is the first ``n`` of ``pool`` prompts (as the client sends a shorter run of a cell)."""
    row = predict_cell(load_profile(profile), get_scenario(scenario), c, num_prompts=n, seed=seed, pool=pool)
    return math.log(row[metric])


def spread(profile: str, scenario: str, c: int, n: int, seeds: int) -> tuple[float, float]:
    """(sd of log total tok/s over ``seeds`` samples of ``n`` prompts, mean / the reference run's - 1)."""
    ys = [log_tput(profile, scenario, c, n, s) for s in range(seeds)]
    ref = [log_tput(profile, scenario, c, default_num_prompts(c), s) for s in range(3)]
    return float(np.std(ys, ddof=1)), math.expm1(float(np.mean(ys)) - float(np.mean(ref)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="chat_short,rag_medium")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--sizes", default="3,12,32", help="run sizes (requests), comma-separated")
    ap.add_argument("--seeds", type=int, default=12, help="prompt samples per size")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",") if x.strip()]
    if a.seeds < 2 or not sizes or min(sizes) < 1:
        ap.error(f"--seeds must be >= 2 and --sizes positive, got {a.seeds} and {a.sizes}")
    head = " | ".join(f"{n} requests: sd; mean vs reference" for n in sizes)
    print(f"| profile | cell | {head} |")
    print("|---|---|" + "---|" * len(sizes))
    for sc in [s.strip() for s in a.scenarios.split(",") if s.strip()]:
        for prof in PROFILES:
            cells = [spread(prof, sc, a.concurrency, n, a.seeds) for n in sizes]
            body = " | ".join(f"{sd:.0%}; {m:+.0%}" for sd, m in cells)
            print(f"| `{prof}` | {sc} c={a.concurrency} | {body} |")
    print(f"\n{a.seeds} samples a size (seeds 0-{a.seeds - 1}); the reference: "
          f"{default_num_prompts(a.concurrency)} prompts, seeds 0-2.")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
