"""An option's whole fleet on the simulator's engine model, in virtual time: what ``--validate`` replays
over HTTP, without the HTTP.

Every instance is a :class:`specsweep.sim.engine.Engine` with its config's profile; one closed loop keeps
the load's requests in flight; each request goes to its pool by the option's rule (input tokens) and
to the instance of that pool with the fewest requests in flight. So a pool serving chat and RAG runs
them in one batch: chat requests wait behind RAG prefills (chunked prefill, FIFO) and decoding pauses
in prefill iterations, which per-scenario cells measured alone cannot show. Requests are drawn as
``replay.requests_for`` draws them (scenario by share, lengths by the scenario).

Figures follow the replay's: throughput over the steady state (until the first client slot has
nothing left to send), tails over the requests sent after the first ``in_flight`` (the start burst,
every slot sending at once, is the warmup).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import t as student_t

from specsweep.plan.cells import CellSource
from specsweep.sim.engine import Engine
from specsweep.sim.profile import Profile
from specsweep.workload.lengths import sample_lengths

if TYPE_CHECKING:
    from specsweep.plan.options import Option

PREDICT_SEEDS = 3  # virtual runs averaged (pooled) for a prediction
PREDICT_MIN_REQUESTS = 1500
PREDICT_PER_IN_FLIGHT = 10
SPREAD_SEEDS = 6  # virtual runs of the replay's size behind its stated spread


@dataclass
class Done:
    scenario: str
    pool: str
    prompt: int
    output: int
    t_send: float
    t_first: float
    t_end: float
    index: int


def run_fleet(
    pools: Sequence[tuple[str, Profile, int]],
    route: Callable[[int], str],
    reqs: Sequence[tuple[str, int, int]],
    in_flight: int,
    seed: int = 0,
) -> tuple[list[Done], float]:
    """Simulate ``reqs`` (scenario, input, output) through the fleet ``pools`` (name, profile,
    instances) with ``in_flight`` closed-loop clients. Returns the completed requests and the end of
    the steady state (virtual seconds: when the first client found nothing left to send)."""
    engines: list[tuple[str, Engine]] = []
    for name, prof, n in pools:
        for i in range(n):  # instance seeds: seed + (instances before this pool) + 2 i
            engines.append((name, Engine(prof, seed=seed + len(engines) + i)))
    by_pool: dict[str, list[int]] = {}
    for j, (name, _e) in enumerate(engines):
        by_pool.setdefault(name, []).append(j)
    busy = [0] * len(engines)
    slots = [0.0] * max(1, in_flight)
    nxt = 0
    steady_end = math.inf
    info: dict[int, tuple[int, float]] = {}  # request -> (engine, send time)
    first: dict[int, float] = {}
    done: list[Done] = []
    rejected = 0  # requests the engine can never hold (the server answers 400): the slot sends the next
    while len(done) + rejected < len(reqs):
        t_eng, j_eng = min(((e.now, j) for j, (_n, e) in enumerate(engines) if not e.idle),
                           default=(math.inf, -1))  # fmt: skip
        if slots and slots[0] <= t_eng:
            t = heapq.heappop(slots)
            if nxt >= len(reqs):
                steady_end = min(steady_end, t)
                continue
            sc, n_in, n_out = reqs[nxt]
            j = min(by_pool[route(n_in)], key=lambda x: busy[x])
            eng = engines[j][1]
            if eng.idle:
                eng.advance_to(t)
            nxt += 1
            try:
                eng.add(nxt - 1, n_in, n_out)
            except ValueError:
                rejected += 1
                heapq.heappush(slots, t)
                continue
            busy[j] += 1
            info[nxt - 1] = (j, t)
            continue
        if j_eng < 0:
            break
        st = engines[j_eng][1].step()
        assert st is not None
        for em in st.emissions:
            rid = int(em.rid)  # type: ignore[call-overload]
            if em.first:
                first[rid] = st.end
            if em.finished:
                j, t_send = info[rid]
                sc, n_in, n_out = reqs[rid]
                done.append(Done(sc, engines[j][0], n_in, n_out, t_send, first.get(rid, st.end), st.end, rid))
                busy[j] -= 1
                heapq.heappush(slots, st.end)
    if math.isinf(steady_end):
        steady_end = max((d.t_end for d in done), default=0.0)
    return done, steady_end


def figures(done: Sequence[Done], steady_end: float, warmup: int) -> dict[str, float]:
    """Total throughput (steady state), p99 TTFT and p99 TPOT (after the warmup), as the replay
    computes them from its HTTP timings."""
    steady = [d for d in done if d.t_end <= steady_end]
    t0 = min((d.t_send for d in done), default=0.0)
    span = max(steady_end - t0, 1e-9)
    tail = [d for d in done if d.index >= warmup] or list(done)
    ttft = [(d.t_first - d.t_send) * 1000 for d in tail]
    tpot = [(d.t_end - d.t_first) * 1000 / (d.output - 1) for d in tail if d.output > 1]
    return {
        "total_throughput": sum(d.prompt + d.output for d in steady) / span,
        "p99_ttft_ms": float(np.percentile(ttft, 99)) if ttft else math.nan,
        "p99_tpot_ms": float(np.percentile(tpot, 99)) if tpot else math.nan,
    }


def route(rules: Sequence[dict[str, Any]], default: str, n_input: int) -> str:
    """The pool a request goes to under the rules (input-token bounds; else ``default``)."""
    for r in rules:
        m = r["match"]
        if not isinstance(m, dict):
            return str(r["pool"])
        lo, hi = m.get("input_tokens_min", 0), m.get("input_tokens_max", math.inf)
        if ("input_tokens_min" in m or "input_tokens_max" in m) and lo <= n_input <= hi:
            return str(r["pool"])
    return default


def draw_requests(cells: CellSource, mix: dict[str, float], n: int, seed: int) -> list[tuple[str, int, int]]:
    """n (scenario, input tokens, output tokens), scenarios drawn by share, lengths by the scenario."""
    rng = np.random.default_rng(seed)
    names = list(mix)
    pick = rng.choice(len(names), size=n, p=np.asarray([mix[s] for s in names]))
    out = []
    for i, k in enumerate(pick):
        sc = cells.scenario(names[int(k)])
        ins, outs = sample_lengths(sc, 1, seed * 100_003 + i)
        out.append((sc.name, ins[0], outs[0]))
    return out


def _cell_ratios(cells: CellSource, opt: Option) -> tuple[dict[tuple[str, str], tuple[float, float]], float]:
    """Measured over simulated, per (pool, scenario) whose cell is measured: (p99 TTFT, p99 TPOT)
    ratios; and the option's total throughput over the same figure with every cell simulated."""
    ratios: dict[tuple[str, str], tuple[float, float]] = {}
    thr_sim = 0.0
    for pr in opt.result.pools:
        for s, f in pr.per_scenario.items():
            sim = cells.get_sim(pr.pool.config, s, pr.concurrency_per_instance)
            if sim is None or f.source != "measured":
                thr_sim += pr.throughput[s]
                continue
            ratios[(pr.pool.name, s)] = (f.p99_ttft_ms / sim.p99_ttft_ms, f.p99_tpot_ms / sim.p99_tpot_ms)
            rate, rate_sim = (
                f.request_throughput * f.tokens_per_request,
                sim.request_throughput * sim.tokens_per_request,
            )
            thr_sim += pr.throughput[s] * rate_sim / rate
    total = opt.result.total_throughput
    return ratios, (total / thr_sim if thr_sim > 0 else 1.0)


def simulate_option(
    cells: CellSource, opt: Option, mix: dict[str, float], in_flight: int, n: int, seed: int
) -> tuple[list[Done], float] | None:
    """One virtual-time run of the option's fleet (None if a config has no simulator profile)."""
    pools = []
    for p in opt.pools:
        prof = cells.profile(p.config)
        if prof is None:
            return None
        pools.append((p.name, prof, p.instances))
    default = opt.pools[0].name
    reqs = draw_requests(cells, mix, n, seed)
    return run_fleet(pools, lambda k: route(opt.rules, default, k), reqs, in_flight, seed)


def predict_option(
    cells: CellSource, opt: Option, mix: dict[str, float], in_flight: int, slo: dict[str, float],
    seeds: int = PREDICT_SEEDS,
) -> dict[str, Any] | None:  # fmt: skip
    """The option's figures from its whole fleet on the engine model, calibrated to measured cells.

    ``seeds`` runs of ``predict_requests(in_flight)`` requests; a request's TTFT (TPOT) is scaled by its
    (pool, scenario) cell's measured/simulated p99 ratio where the cell is measured, and the total
    throughput by the cell model's measured/simulated ratio. Per scenario p99s decide the goodput."""
    ratios, thr_cal = _cell_ratios(cells, opt)
    n = predict_requests(in_flight)
    runs = [simulate_option(cells, opt, mix, in_flight, n, seed) for seed in range(seeds)]
    if any(r is None for r in runs):
        return None
    ttft: dict[str, list[float]] = {}
    tpot: dict[str, list[float]] = {}
    raw_ttft: list[float] = []
    raw_tpot: list[float] = []
    thr = []
    for run in runs:
        assert run is not None
        done, steady_end = run
        thr.append(figures(done, steady_end, in_flight)["total_throughput"])
        for d in done:
            if d.index < in_flight:
                continue
            rt, rp = ratios.get((d.pool, d.scenario), (1.0, 1.0))
            raw_ttft.append((d.t_first - d.t_send) * 1000)
            ttft.setdefault(d.scenario, []).append(raw_ttft[-1] * rt)
            if d.output > 1:
                raw_tpot.append((d.t_end - d.t_first) * 1000 / (d.output - 1))
                tpot.setdefault(d.scenario, []).append(raw_tpot[-1] * rp)
    all_ttft = [x for v in ttft.values() for x in v]
    all_tpot = [x for v in tpot.values() for x in v]
    per = {
        s: {"p99_ttft_ms": float(np.percentile(ttft[s], 99)),
            "p99_tpot_ms": float(np.percentile(tpot[s], 99)) if tpot.get(s) else math.nan}
        for s in ttft
    }  # fmt: skip
    total = float(np.mean(thr)) * thr_cal
    good_share = sum(
        pr.throughput[s]
        for pr in opt.result.pools
        for s in pr.per_scenario
        if per.get(s, {}).get("p99_ttft_ms", math.inf) <= slo.get("ttft_p99_ms", math.inf)
        and per.get(s, {}).get("p99_tpot_ms", math.inf) <= slo.get("tpot_p99_ms", math.inf)
    ) / (opt.result.total_throughput or 1.0)
    return {
        "total_throughput": total,
        "goodput": total * good_share,
        "p99_ttft_ms": float(np.percentile(all_ttft, 99)),
        "p99_tpot_ms": float(np.percentile(all_tpot, 99)) if all_tpot else math.nan,
        "per_scenario": per,
        "throughput_calibration": thr_cal,
        "simulator_only": {
            "total_throughput": float(np.mean(thr)),
            "p99_ttft_ms": float(np.percentile(raw_ttft, 99)),
            "p99_tpot_ms": float(np.percentile(raw_tpot, 99)) if raw_tpot else math.nan,
        },
        "tail_calibration": {f"{p}/{s}": [round(a, 3), round(b, 3)] for (p, s), (a, b) in ratios.items()},
        "requests": n * seeds,
    }


def replay_spread(
    cells: CellSource, opt: Option, mix: dict[str, float], in_flight: int, n: int, seeds: int = SPREAD_SEEDS
) -> dict[str, tuple[float, float]]:
    """What one replay of ``n`` requests gives, from ``seeds`` virtual runs of that size (other seeds
    than the prediction's): per figure (mean of the log figure, half-width as a fraction of the 95%
    prediction interval of one more run: Student-t, sd * t * sqrt(1 + 1/seeds)). A short replay (a few
    times the requests in flight) is mostly the start ramp: its mean differs from the long-run figure."""
    runs = [simulate_option(cells, opt, mix, in_flight, n, 1000 + seed) for seed in range(seeds)]
    out: dict[str, tuple[float, float]] = {}
    for k in ("total_throughput", "p99_ttft_ms", "p99_tpot_ms"):
        logs = []
        for run in runs:
            if run is not None:
                v = figures(run[0], run[1], in_flight)[k]
                if v > 0 and math.isfinite(v):
                    logs.append(math.log(v))
        if len(logs) < 2:
            out[k] = (math.nan, math.nan)
            continue
        sd = float(np.std(logs, ddof=1))
        hw = math.expm1(float(student_t.ppf(0.975, len(logs) - 1)) * sd * math.sqrt(1 + 1 / len(logs)))
        out[k] = (float(np.mean(logs)), hw)
    return out


def predict_requests(in_flight: int) -> int:
    """Requests per virtual run for a prediction: enough that the p99 rests on tens of requests."""
    return max(PREDICT_MIN_REQUESTS, PREDICT_PER_IN_FLIGHT * in_flight)
