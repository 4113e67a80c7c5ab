"""The cell model: how a set of pools (config x instances x scenarios) serves a traffic mix, fast enough
to search configs and instance counts with; the figures a plan reports come from the options' whole
fleets on the engine model (module fleetsim, ``planner.refine``).

Closed loop with N requests in flight (Little's law): scenario s holds c_s = N * p_s * L_s / sum(p * L)
of them, p the request share and L the latency. A pool of n instances serving scenarios S runs each
instance at c = sum_{s in S} c_s / n requests in flight (snapped to the nearest measured or grid level,
CellSource.snap); scenario s then completes c_s * X_s(c) / c requests per second, X_s(c) the request
throughput of the (config, s, c) cell (measured, else simulated), so L_s = c / X_s(c) (Little's law in
the cell) and every scenario completes in proportion to its share. L depends on c, so the split is
iterated to a damped fixed point (a few rounds).

Tail latency of the mix: each scenario's TTFT (TPOT) is taken as log-normal with the cell's mean and p99,
and the p99 of the request-weighted mixture is solved for. Goodput counts the tokens/s of the scenarios
whose own p99 TTFT and TPOT meet the SLO.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from specsweep.plan.cells import CellSource, Figures

Z99 = 2.3263478740408408  # standard normal quantile at 0.99
ROUNDS = 6  # fixed-point rounds (damped: geometric mean of old and new latency)


@dataclass(frozen=True)
class Pool:
    name: str
    config: str
    scenarios: tuple[str, ...]
    instances: int


@dataclass
class PoolResult:
    pool: Pool
    concurrency_per_instance: int
    per_scenario: dict[str, Figures]
    in_flight: dict[str, float]
    throughput: dict[str, float]  # tokens/s per scenario


@dataclass
class FleetResult:
    pools: list[PoolResult]
    total_throughput: float
    goodput: float
    p99_ttft_ms: float
    p99_tpot_ms: float
    sources: set[str] = field(default_factory=set)
    meets_slo: bool = True
    complete: bool = True  # every cell had figures


def lognormal_params(mean: float, p99: float) -> tuple[float, float]:
    """(mu, sigma) of the log-normal with this mean and 99th percentile (sigma 0 if p99 <= mean)."""
    if mean <= 0 or p99 <= mean:
        return math.log(max(p99, mean, 1e-9)), 0.0
    r = math.log(p99 / mean)  # = Z99*s - s^2/2
    disc = Z99 * Z99 - 2 * r
    s = Z99 - math.sqrt(disc) if disc > 0 else Z99
    return math.log(p99) - Z99 * s, s


def mixture_p99(parts: list[tuple[float, float, float]]) -> float:
    """p99 of a mixture of log-normals given as (weight, mean, p99); bisection on the CDF."""
    comps = [(w, *lognormal_params(m, q)) for w, m, q in parts if w > 0]
    if not comps:
        return math.nan
    tot = sum(w for w, _, _ in comps)

    def cdf(x: float) -> float:
        acc = 0.0
        for w, mu, s in comps:
            if s == 0:
                acc += w * (x >= math.exp(mu))
            else:
                acc += w * 0.5 * (1 + math.erf((math.log(x) - mu) / (s * math.sqrt(2))))
        return acc / tot

    lo, hi = 1e-6, max(q for _, _, q in parts) * 1.0001
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if cdf(mid) >= 0.99:
            hi = mid
        else:
            lo = mid
    return hi


def evaluate(
    cells: CellSource,
    pools: list[Pool],
    mix: dict[str, float],
    in_flight: float,
    slo: dict[str, float] | None = None,
) -> FleetResult:
    """The fleet's throughput and tails at ``in_flight`` requests in flight over ``mix`` (shares)."""
    slo = slo or {}
    lat = dict.fromkeys(mix, 1.0)
    results: list[PoolResult] = []
    complete = True
    for rnd in range(ROUNDS):
        wsum = sum(mix[s] * lat[s] for s in mix)
        c_s = {s: in_flight * mix[s] * lat[s] / wsum for s in mix}
        results, complete = [], True
        for p in pools:
            load = sum(c_s[s] for s in p.scenarios)
            c = cells.snap(p.config, p.scenarios, load / p.instances)
            figs: dict[str, Figures] = {}
            for s in p.scenarios:
                f = cells.get(p.config, s, c)
                if f is None:
                    complete = False
                    continue
                figs[s] = f
                # Little's law inside the cell: what keeps completion rates in proportion to the shares
                lat[s] = (
                    math.sqrt(lat[s] * 1000 * c / f.request_throughput)
                    if rnd
                    else 1000 * c / f.request_throughput
                )
            thr = {s: c_s[s] * f.request_throughput / c * f.tokens_per_request for s, f in figs.items()}
            results.append(PoolResult(p, c, figs, {s: c_s[s] for s in p.scenarios}, thr))
    total = sum(sum(r.throughput.values()) for r in results)
    figs_all = {s: f for r in results for s, f in r.per_scenario.items()}
    ttft = mixture_p99([(mix[s], f.mean_ttft_ms, f.p99_ttft_ms) for s, f in figs_all.items()])
    tpot = mixture_p99([(mix[s], f.mean_tpot_ms, f.p99_tpot_ms) for s, f in figs_all.items()])
    good = 0.0
    for r in results:
        for s, f in r.per_scenario.items():
            if f.p99_ttft_ms <= slo.get("ttft_p99_ms", math.inf) and f.p99_tpot_ms <= slo.get(
                "tpot_p99_ms", math.inf
            ):
                good += r.throughput[s]
    meets = complete and ttft <= slo.get("ttft_p99_ms", math.inf) and tpot <= slo.get("tpot_p99_ms", math.inf)
    return FleetResult(
        results, total, good, ttft, tpot, {f.source for f in figs_all.values()}, meets, complete
    )
