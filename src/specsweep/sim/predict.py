"""``sim predict``: run the engine in virtual time against a scenario and compute bench metrics.

The client model is sglang.bench_serving's: a fixed number of in-flight requests (closed loop) or an
absolute arrival schedule (open loop, gamma inter-arrivals, burstiness 1 = Poisson) bounded by the
concurrency limit; the schedule is ``workload.arrivals.arrival_offsets`` with the run's seed, the
one ``specsweep bench`` sends with the same seed. A request is sent the moment it is due and a slot is
free; the engine sees it at the start of its next iteration, and every emission reaches the client at
the end of its iteration (no network delay). Prompt/output lengths come from ``sample_lengths(scenario, n, seed)``.
"""

from __future__ import annotations

import contextlib
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specsweep.measure.per_category import per_category
from specsweep.measure.records import RequestRecord
from specsweep.measure.steady import steady_state, waves
from specsweep.sim.engine import Counters, Engine
from specsweep.sim.profile import Profile
from specsweep.workload.arrivals import arrival_offsets
from specsweep.workload.datasets import FILE_DATASETS
from specsweep.workload.lengths import length_bounds, sample_lengths
from specsweep.workload.prompts import generate
from specsweep.workload.scenarios import Scenario, default_num_prompts
from specsweep.workload.tokenizer import BuiltinTokenizer

NS = 1_000_000_000


@dataclass
class Trace:
    """Everything a closed-loop simulation did, in step units (independent of the cost parameters).

    ``feats[j]`` is step j's feature vector; a request is sent at the end of step ``send_step`` (-1: at
    time 0), gets its first token at the end of ``first_step`` and its last at ``last_step``.
    """

    feats: np.ndarray  # (steps, F)
    send_step: np.ndarray
    first_step: np.ndarray
    last_step: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    counters: Counters


@dataclass
class SimResult:
    records: list[RequestRecord]
    counters: Counters
    duration_s: float
    trace: Trace | None = None


def conditioned_lengths(
    scenario: Scenario, n: int, seed: int, mean_in: float | None = None, mean_out: float | None = None
) -> tuple[list[int], list[int]]:
    """``sample_lengths`` rescaled so the sample means equal the given means (within the bounds).

    Used to replay a measured run whose realised token totals are known (sglang's ``total_input_tokens``
    / ``total_output_tokens``): with 32 prompts the sampled mean alone varies by +-10%.
    """
    ins, outs = sample_lengths(scenario, n, seed)
    lo_i, hi_i = length_bounds(scenario.input_len, scenario.range_ratio, scenario.range_mode)
    lo_o, hi_o = length_bounds(scenario.output_len, scenario.range_ratio, scenario.range_mode)
    return _rescale(ins, mean_in, lo_i, hi_i), _rescale(outs, mean_out, lo_o, hi_o)


def _rescale(xs: list[int], mean: float | None, lo: int, hi: int) -> list[int]:
    if mean is None or not xs:
        return xs
    arr = np.asarray(xs, dtype=np.float64)
    target = min(max(mean, lo), hi)
    for _ in range(8):  # clipping moves the mean; a few rounds converge
        arr = np.clip(arr * (target / arr.mean()), lo, hi)
    return [int(x) for x in np.clip(np.rint(arr), lo, hi)]


def _lengths(scenario: Scenario, n: int, seed: int, pool: int | None) -> tuple[list[int], list[int]]:
    """``sample_lengths``, as the client's ``generate`` draws them (the first n of ``pool``)."""
    if pool is None or pool <= n:
        return sample_lengths(scenario, n, seed)
    ins, outs = sample_lengths(scenario, pool, seed)
    return ins[:n], outs[:n]


def simulate(
    profile: Profile,
    scenario: Scenario,
    concurrency: int,
    *,
    num_prompts: int | None = None,
    seed: int = 0,
    request_rate: float = float("inf"),
    burstiness: float = 1.0,
    lengths: tuple[Sequence[int], Sequence[int]] | None = None,
    keep_trace: bool = False,
    pool: int | None = None,
) -> SimResult:
    n = num_prompts if num_prompts is not None else default_num_prompts(concurrency)
    cats: list[str | None] | None = None
    ins: Sequence[int]
    outs: Sequence[int]
    if lengths is None and (scenario.dataset == "mix" or scenario.dataset in FILE_DATASETS):
        # real prompts: their lengths (built-in tokenizer, as the simulator counts) and categories
        specs = generate(scenario, n, BuiltinTokenizer(), seed, pool=pool)
        ins, outs, cats = (
            [s.prompt_len for s in specs],
            [s.output_len for s in specs],
            [s.category for s in specs],
        )
    else:
        ins, outs = lengths if lengths is not None else _lengths(scenario, n, seed, pool)
    n = len(ins)
    eng = Engine(profile, seed=seed)
    closed = math.isinf(request_rate)
    due = arrival_offsets(n, request_rate, burstiness, seed)  # the schedule `bench` sends
    slots = [0.0] * max(1, concurrency)  # times at which client slots became free (min-heap)
    heapq.heapify(slots)
    records: list[RequestRecord] = []
    for i in range(n):
        records.append(RequestRecord(index=i, is_warmup=False, worker=0, prompt_len=int(ins[i]),
                                     output_len=int(outs[i]), scheduled_ns=0,
                                     category=cats[i] if cats else None))  # fmt: skip
    send_step = np.full(n, -1, dtype=np.int64)
    first_step = np.zeros(n, dtype=np.int64)
    last_step = np.zeros(n, dtype=np.int64)
    feats: list[tuple[float, ...]] = []
    nxt = 0
    done = 0
    step_idx = -1
    while done < n:
        # send everything that is due and has a free slot
        while nxt < n and slots and due[nxt] <= eng.now:
            free_at = heapq.heappop(slots)
            t_send = max(due[nxt], free_at)
            rec = records[nxt]
            rec.send_ns = round(t_send * NS)
            rec.scheduled_ns = rec.send_ns if closed else round(due[nxt] * NS)
            send_step[nxt] = step_idx
            eng.add(nxt, rec.prompt_len, rec.output_len, rec.category)
            nxt += 1
        if eng.idle:
            if nxt >= n:
                break
            eng.advance_to(due[nxt] if slots else eng.now)
            continue
        st = eng.step()
        assert st is not None
        step_idx += 1
        if keep_trace:
            feats.append(st.features)
        t_ns = round(st.end * NS)
        for em in st.emissions:
            rid = int(em.rid)  # type: ignore[call-overload]
            rec = records[rid]
            rec.chunk_ns.append(t_ns)
            rec.chunk_tokens.append(em.n_tokens)
            if em.first:
                first_step[rid] = step_idx
            if em.finished:
                rec.output_tokens = sum(rec.chunk_tokens)
                if cats and eng.k:  # verify steps, as SGLang counts them: per-category acceptance
                    rec.spec_verify_ct = max(1, len(rec.chunk_tokens) - 1)
                rec.end_ns = t_ns
                rec.finish_reason = "length"
                rec.prompt_tokens_server = rec.prompt_len
                last_step[rid] = step_idx
                heapq.heappush(slots, st.end)
                done += 1
    duration = (
        max((r.end_ns for r in records), default=0) / NS - min((r.send_ns for r in records), default=0) / NS
    )
    trace = None
    if keep_trace:
        trace = Trace(
            feats=np.asarray(feats, dtype=np.float64),
            send_step=send_step,
            first_step=first_step,
            last_step=last_step,
            prompt_tokens=np.asarray(ins, dtype=np.float64),
            output_tokens=np.asarray(outs, dtype=np.float64),
            counters=eng.counters,
        )
    return SimResult(records, eng.counters, duration, trace)


def spec_summary(c: Counters) -> dict[str, Any]:
    """vLLM-style spec-decode figures from the engine counters."""
    if not c.num_drafts:
        return {"accept_length": None}
    out: dict[str, Any] = {
        "accept_length": 1.0 + c.num_accepted_tokens / c.num_drafts,
        "spec_accept_rate": c.num_accepted_tokens / max(1, c.num_draft_tokens),
        "spec_accept_per_pos": [a / c.num_drafts for a in c.accepted_per_pos],
        "spec_num_drafts": c.num_drafts,
    }
    return out


def run_metrics(records: list[RequestRecord]) -> dict[str, Any]:
    """The bench metrics (sglang keys) of simulated records: the same code as for real runs."""
    from specsweep.measure.metrics import compute_metrics

    return compute_metrics(records)


def predict_cell(
    profile: Profile,
    scenario: Scenario,
    concurrency: int,
    *,
    num_prompts: int | None = None,
    seed: int = 0,
    request_rate: float = float("inf"),
    burstiness: float = 1.0,
    pool: int | None = None,
) -> dict[str, Any]:
    """One JSON-able result line: sglang bench keys + what was simulated; ``pool``: the run is the
    first ``num_prompts`` requests of a run of ``pool`` (as the client sends a shorter run of a cell)."""
    res = simulate(
        profile, scenario, concurrency, num_prompts=num_prompts, seed=seed,
        request_rate=request_rate, burstiness=burstiness, pool=pool,
    )  # fmt: skip
    row: dict[str, Any] = {
        "backend": "sim",
        "profile": profile.name,
        "scenario": scenario.name,
        "max_concurrency": concurrency,
        "request_rate": None if math.isinf(request_rate) else request_rate,
        "num_prompts": len(res.records),
        "seed": seed,
    }
    row.update(run_metrics(res.records))
    row["waves"] = waves(len(res.records), concurrency)
    row.update(steady_state(res.records, concurrency))
    row.update(spec_summary(res.counters))
    if profile.spec_method:
        row["method"] = profile.spec_method
        row["spec_tokens"] = profile.k
    row["sim_steps"] = res.counters.steps
    if any(r.category for r in res.records):
        row["per_category"] = per_category(res.records, row.get("accept_length"))
    return row


# the headline metrics whose run-to-run spread ``predict_repeated`` reports
SPREAD_METRICS = (
    "total_throughput",
    "output_throughput",
    "request_throughput",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p99_tpot_ms",
    "mean_e2e_latency_ms",
    "p99_e2e_latency_ms",
)
_IDENTITY = ("max_concurrency", "num_prompts", "seed", "spec_tokens", "request_rate")


def predict_repeated(
    profile: Profile,
    scenario: Scenario,
    concurrency: int,
    *,
    repeats: int,
    num_prompts: int | None = None,
    seed: int = 0,
    request_rate: float = float("inf"),
    burstiness: float = 1.0,
) -> dict[str, Any]:
    """``repeats`` runs of the cell with seeds seed, seed+1, ...: every numeric metric is the mean over
    the runs, and ``spread`` gives the headline metrics' standard deviation (ddof 1), min and max: how
    much one benchmark of this size varies from run to run (lengths and acceptance are sampled)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    rows = []
    for i in range(repeats):
        row = predict_cell(profile, scenario, concurrency, num_prompts=num_prompts, seed=seed + i,
                           request_rate=request_rate, burstiness=burstiness)  # fmt: skip
        rows.append(row)
    if repeats == 1:
        return rows[0]

    def numbers(key: str) -> list[float] | None:
        """The key's value in every run, if it is a number in every run."""
        vals = [r.get(key) for r in rows]
        nums = [float(x) for x in vals if isinstance(x, (int, float)) and not isinstance(x, bool)]
        return nums if len(nums) == len(vals) else None

    out = dict(rows[0])
    for key, v in rows[0].items():
        if key in _IDENTITY:
            continue
        nums = numbers(key)
        if nums is not None:
            out[key] = float(np.mean(nums))
        elif isinstance(v, list):
            lists = [r.get(key) for r in rows]
            if all(isinstance(x, list) and len(x) == len(v) for x in lists):
                with contextlib.suppress(TypeError, ValueError):  # not numbers: keep the first run's
                    out[key] = np.mean(np.asarray(lists, dtype=np.float64), axis=0).tolist()
    out["repeats"] = repeats  # seed (an identity key) stays the first run's: the given seed
    spread: dict[str, dict[str, float]] = {}
    for m in SPREAD_METRICS:
        nums = numbers(m)
        if nums is not None:
            spread[m] = {"sd": float(np.std(nums, ddof=1)), "min": min(nums), "max": max(nums)}
    out["spread"] = spread
    return out


def trace_metrics(tr: Trace, theta: np.ndarray) -> dict[str, float]:
    """Duration, total throughput, mean TTFT and mean TPOT of a closed-loop trace for cost vector theta.

    Exactly what ``predict_cell`` computes for the same run, but linear in theta (used by the fit).
    """
    t_ms = tr.feats @ theta
    end = np.concatenate([[0.0], np.cumsum(t_ms)])  # end[j+1] = end of step j
    send = end[tr.send_step + 1]
    first = end[tr.first_step + 1]
    last = end[tr.last_step + 1]
    dur_s = (last.max() - send.min()) / 1000.0
    multi = tr.output_tokens > 1
    return {
        "duration": dur_s,
        "total_throughput": float((tr.prompt_tokens.sum() + tr.output_tokens.sum()) / dur_s),
        "mean_ttft_ms": float((first - send).mean()),
        "mean_tpot_ms": float(((last - first)[multi] / (tr.output_tokens[multi] - 1)).mean()),
    }


def trace_design(tr: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Linear forms: duration_ms = d @ theta, mean TTFT = a @ theta, mean TPOT = b @ theta; total tokens."""
    cum = np.vstack([np.zeros(tr.feats.shape[1]), np.cumsum(tr.feats, axis=0)])
    send = cum[tr.send_step + 1]
    first = cum[tr.first_step + 1]
    last = cum[tr.last_step + 1]
    d = cum[tr.last_step.max() + 1] - cum[tr.send_step.min() + 1]
    a = (first - send).mean(axis=0)
    multi = tr.output_tokens > 1
    b = ((last - first)[multi] / (tr.output_tokens[multi] - 1)[:, None]).mean(axis=0)
    return d, a, b, float(tr.prompt_tokens.sum() + tr.output_tokens.sum())
