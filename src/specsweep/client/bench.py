"""One benchmark run: workload -> client runner -> records -> metrics. The library call behind
``specsweep bench`` and behind every cell of ``specsweep run``.
"""

from __future__ import annotations

from collections.abc import Callable

from specsweep.client.bench_types import BenchConfig, BenchOutcome

__all__ = ["BenchConfig", "BenchOutcome", "run_bench"]


def run_bench(
    cfg: BenchConfig, *, ray_address: str | None = None, on_request: Callable[[], None] | None = None
) -> BenchOutcome:
    """Run one benchmark synchronously (owns its event loop); ``workers > 1`` splits the load over
    that many client processes (specsweep.client.multiworker)."""
    if cfg.workers > 1:
        from specsweep.client.multiworker import run_multiworker

        return run_multiworker(cfg, ray_address=ray_address)
    from specsweep.client import kstamp
    from specsweep.client.runner import run_bench_async

    return kstamp.run(run_bench_async(cfg, on_request))
