"""A benchmark client in its own process, for tests that starve or stop it (test_starved.py).

    python -m tests.client.starved_client URL MODE [CPU]

Imports everything, prints ``ready``, waits for a line on stdin, then runs ``run_bench_async`` (kernel
stamps, one request at a time: 4 in MODE ``stop``, 3 in ``starve``). When the first measured request
has ended it prints ``first``, when the last has, ``last``; in MODE ``starve`` it first pins itself to
CPU and drops to nice 19, so that a busy process the test pinned there gets most of that CPU until
the test stops it (after ``last``). At the end it prints one JSON line: the result's
verdict and self-check, and per measured request its send time, chunk stamps and chunk bounds.
"""

from __future__ import annotations

import asyncio
import os
import sys

import orjson

from specsweep.client.bench_types import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.workload.scenarios import Scenario


def main() -> None:
    url, mode = sys.argv[1], sys.argv[2]
    cfg = BenchConfig(base_url=url, scenario=Scenario(name="t", input_len=16, output_len=11, range_ratio=1.0),
                      backend="vllm", num_prompts=4 if mode == "stop" else 3, max_concurrency=1, scrape_metrics=False, quiet=True)  # fmt: skip
    done = 0

    def on_request() -> None:
        nonlocal done
        done += 1
        if done == 1:
            if mode == "starve":
                os.sched_setaffinity(0, {int(sys.argv[3])})
                # nice 19: weight 15 against a nice-0 hog's 1024 (~1.5% of the CPU), so it waits for
                # the CPU tens of ms at a time on any host (nice 10, ~10%, waited only ~6 ms on a quiet one)
                os.nice(19 - os.nice(0))
            print("first", flush=True)
        if done == cfg.num_prompts:
            print("last", flush=True)  # the measured run is over: the test may stop starving it

    print("ready", flush=True)
    sys.stdin.readline()
    out = asyncio.run(run_bench_async(cfg, on_request=on_request))
    recs = sorted((r for r in out.records if not r.is_warmup), key=lambda r: r.send_ns)
    res = out.result
    print(orjson.dumps({
        "invalid": res["invalid"], "invalid_reason": res["invalid_reason"], "self_check": res["self_check"],
        "warnings": res["warnings"],
        "requests": [{"send_ns": r.send_ns, "chunk_ns": r.chunk_ns, "error": r.error,
                      "bounds": dict(out.stamp_bounds.get(r.index, []))} for r in recs],
    }, option=orjson.OPT_NON_STR_KEYS).decode(), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
