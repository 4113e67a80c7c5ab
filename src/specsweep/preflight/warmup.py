"""Warmup: enough warmup requests in the experiment, and - from a finished run's records - whether the
first measured requests were still slow (warmup too short, or a JIT compile stall such as SGLang's
DeepGEMM kernels compiling on first use)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from specsweep.experiment.config import Plan
from specsweep.measure.records import RequestRecord
from specsweep.preflight.engines import argv_of, engine_of
from specsweep.preflight.host import Host
from specsweep.preflight.model import Check

PROBE_FIRST = 4  # first measured requests compared with the rest
STALL_RATIO = 3.0  # their median TTFT over the rest's median that reads as a stall


def check_warmup_config(plan: Plan, host: Host) -> list[Check]:
    """At least one full batch of the highest level: a warmup shorter than the batch leaves CUDA graphs
    and kernels of larger batches to the measured requests. A simulated engine has nothing to warm (no
    graphs, no compiles, no caches to fill): its levels do not count."""
    n = plan.experiment.client.warmup_requests
    real = [cfg for cfg in plan.configs if engine_of(cfg, argv_of(cfg)) != "sim"]
    if not real:
        return [Check("warmup", None, "pass", f"{n} warmup request(s): simulated engines have nothing to warm "
                      "(no CUDA graphs, compiles or caches)")]  # fmt: skip
    c_max = max((c.max_concurrency for cfg in real for c in plan.cells.get(cfg.label) or []), default=1)
    if n == 0:
        return [Check("warmup", None, "warn", "no warmup requests: the first measured requests pay for compiles "
                      "and cache fills", f"client: warmup_requests: {max(c_max, 8)} (the reference runs used 100)")]  # fmt: skip
    if n < c_max:
        return [Check("warmup", None, "warn", f"{n} warmup request(s) < highest concurrency {c_max}: the largest "
                      "batches are first seen by measured requests", f"client: warmup_requests: {c_max} or more")]  # fmt: skip
    return [Check("warmup", None, "pass", f"{n} warmup requests >= highest concurrency {c_max}")]


def _ttft_ms(r: RequestRecord) -> float | None:
    return r.ttft_ns / 1e6 if r.ok and r.ttft_ns is not None else None


def first_requests_probe(records: Sequence[RequestRecord], label: str, cell: str) -> Check:
    """TTFT of the first measured requests (by send time) against the rest, and against the last warmups."""
    meas = sorted(
        (r for r in records if not r.is_warmup and _ttft_ms(r) is not None), key=lambda r: r.send_ns or 0
    )
    warm = sorted(
        (r for r in records if r.is_warmup and _ttft_ms(r) is not None), key=lambda r: r.send_ns or 0
    )
    if len(meas) < 2 * PROBE_FIRST:
        return Check("first_requests", label, "pass", f"{cell}: too few requests to probe ({len(meas)})")
    first = statistics.median(_ttft_ms(r) or 0.0 for r in meas[:PROBE_FIRST])
    rest = statistics.median(_ttft_ms(r) or 0.0 for r in meas[PROBE_FIRST:])
    last_warm = statistics.median(_ttft_ms(r) or 0.0 for r in warm[-PROBE_FIRST:]) if warm else None
    seen = f"{cell}: first {PROBE_FIRST} measured TTFT median {first:.0f} ms vs rest {rest:.0f} ms"
    if last_warm is not None:
        seen += f", last warmups {last_warm:.0f} ms"
    if rest > 0 and first > STALL_RATIO * rest:
        return Check("first_requests", label, "warn", seen + ": the first requests stalled (warmup too short or "
                     "JIT compiles)", "raise client.warmup_requests; for SGLang precompile DeepGEMM "
                     "(python3 -m sglang.compile_deep_gemm)")  # fmt: skip
    return Check("first_requests", label, "pass", seen)
