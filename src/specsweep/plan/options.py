"""The deployment options a plan compares: one config for everything, a fleet split by input length,
and a load-adaptive policy; each sized, evaluated with the fleet model and given its routing rules.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from specsweep.plan.cells import CellSource
from specsweep.plan.fleet import FleetResult, Pool, evaluate
from specsweep.workload.lengths import length_bounds
from specsweep.workload.scenarios import Scenario

MAX_INSTANCES = 64


@dataclass
class Option:
    name: str
    kind: str  # single | split | adaptive
    pools: list[Pool]
    rules: list[dict[str, Any]]
    result: FleetResult
    instances: int
    instances_needed: int | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def configs(self) -> list[str]:
        return list(dict.fromkeys(p.config for p in self.pools))


def _better(a: FleetResult, b: FleetResult | None) -> bool:
    if b is None:
        return True
    return (a.complete, a.meets_slo, a.goodput, a.total_throughput) > (
        b.complete, b.meets_slo, b.goodput, b.total_throughput,
    )  # fmt: skip


def best_single(cells: CellSource, configs: list[str], mix: dict[str, float], n: int, load: float,
                slo: dict[str, float]) -> tuple[str, FleetResult] | None:  # fmt: skip
    best: tuple[str, FleetResult] | None = None
    for cfg in configs:
        r = evaluate(cells, [Pool("all", cfg, tuple(mix), n)], mix, load, slo)
        if r.complete and (best is None or _better(r, best[1])):
            best = (cfg, r)
    return best


def single_option(cells: CellSource, configs: list[str], mix: dict[str, float], n: int, load: float,
                  slo: dict[str, float]) -> Option | None:  # fmt: skip
    b = best_single(cells, configs, mix, n, load, slo)
    if b is None:
        return None
    cfg, r = b
    return Option(f"single: {cfg}", "single", [Pool("all", cfg, tuple(mix), n)],
                  [{"match": "all", "pool": "all", "config": cfg}], r, n)  # fmt: skip


def length_cut(short: list[Scenario], long: list[Scenario], mix: dict[str, float]) -> tuple[int, float]:
    """Threshold T (route input_tokens <= T to the short pool) and the request share it misroutes.

    T is chosen among the groups' length bounds to misroute the least traffic, lengths taken as uniform
    over each scenario's bounds (sglang/vLLM "random" sampling).
    """

    def p_le(sc: Scenario, t: int) -> float:
        lo, hi = length_bounds(sc.input_len, sc.range_ratio, sc.range_mode)
        if t < lo:
            return 0.0
        return 1.0 if t >= hi else (t - lo + 1) / (hi - lo + 1)

    cands = sorted(
        {b for sc in short + long for b in length_bounds(sc.input_len, sc.range_ratio, sc.range_mode)}
    )
    best_t, best_m = cands[0], math.inf
    for t in cands:
        m = sum(mix[s.name] * (1 - p_le(s, t)) for s in short) + sum(mix[s.name] * p_le(s, t) for s in long)
        if m < best_m - 1e-12:
            best_t, best_m = t, m
    return best_t, best_m


def split_options(cells: CellSource, configs: list[str], mix: dict[str, float], n: int, load: float,
                  slo: dict[str, float]) -> list[Option]:  # fmt: skip
    """The best two-pool split per length cut (scenarios ordered by nominal input length)."""
    if n < 2 or len(mix) < 2:
        return []
    scs = sorted((cells.scenario(s) for s in mix), key=lambda sc: (sc.input_len, sc.name))
    out = []
    for i in range(1, len(scs)):
        short, long = scs[:i], scs[i:]
        if short[-1].input_len == long[0].input_len:
            continue
        best: tuple[FleetResult, list[Pool]] | None = None
        for ca, cb in itertools.product(configs, repeat=2):
            for na in range(1, n):
                pools = [Pool("short", ca, tuple(s.name for s in short), na),
                         Pool("long", cb, tuple(s.name for s in long), n - na)]  # fmt: skip
                r = evaluate(cells, pools, mix, load, slo)
                if best is None or _better(r, best[0]):
                    best = (r, pools)
        if best is None or not best[0].complete:
            continue
        r, pools = best
        t, mis = length_cut(short, long, mix)
        rules = [
            {"match": {"input_tokens_max": t}, "pool": "short", "config": pools[0].config,
             "scenarios": list(pools[0].scenarios), "instances": pools[0].instances},
            {"match": {"input_tokens_min": t + 1}, "pool": "long", "config": pools[1].config,
             "scenarios": list(pools[1].scenarios), "instances": pools[1].instances},
        ]  # fmt: skip
        o = Option(f"split at {t} input tokens: {pools[0].config} x{pools[0].instances} + "
                   f"{pools[1].config} x{pools[1].instances}", "split", pools, rules, r, n)  # fmt: skip
        o.extra = {"threshold_input_tokens": t, "misrouted_share": round(mis, 4)}
        if mis > 0:
            o.notes.append(f"the length rule sends {100 * mis:.1f}% of requests to the other pool than "
                           "their scenario's (short prompts of long-prompt scenarios): harmless for speed")  # fmt: skip
        out.append(o)
    return out


def resize_split(cells: CellSource, o: Option, mix: dict[str, float], n: int, load: float,
                 slo: dict[str, float]) -> Option | None:  # fmt: skip
    """The same split (cut and configs) on ``n`` instances, best allocation."""
    if n < 2:
        return None
    best: Option | None = None
    for na in range(1, n):
        pools = [Pool(p.name, p.config, p.scenarios, na if i == 0 else n - na) for i, p in enumerate(o.pools)]
        r = evaluate(cells, pools, mix, load, slo)
        if best is None or _better(r, best.result):
            best = Option(o.name, o.kind, pools, o.rules, r, n)
    return best


def load_threshold(cells: CellSource, configs: list[str], mix: dict[str, float],
                   levels: list[int]) -> tuple[str, str, int, list[dict[str, Any]]] | None:  # fmt: skip
    """(low-load config, high-load config, threshold T, per-level winners): the config with the highest
    modelled mix throughput on one instance at each measured level; T is the lowest level from which
    the high-load winner wins at every level. None when one config wins everywhere."""
    wins: list[dict[str, Any]] = []
    for c in levels:
        b = best_single(cells, configs, mix, 1, float(c), {})
        if b is not None:
            wins.append(
                {"concurrency": c, "config": b[0], "total_throughput": round(b[1].total_throughput, 1)}
            )
    if len(wins) < 2 or wins[0]["config"] == wins[-1]["config"]:
        return None
    high = str(wins[-1]["config"])
    t = int(wins[-1]["concurrency"])
    for w in reversed(wins):
        if w["config"] != high:
            break
        t = int(w["concurrency"])
    return str(wins[0]["config"]), high, t, wins


def adaptive_option(cells: CellSource, configs: list[str], mix: dict[str, float], n: int, load: float,
                    slo: dict[str, float], levels: list[int]) -> Option | None:  # fmt: skip
    lt = load_threshold(cells, configs, mix, levels)
    if lt is None:
        return None
    low, high, t, wins = lt
    per = load / n
    cfg = high if per >= t else low
    pools = [Pool("all", cfg, tuple(mix), n)]
    r = evaluate(cells, pools, mix, load, slo)
    rules = [
        {"match": {"in_flight_per_instance_below": t}, "pool": "all", "config": low},
        {"match": {"in_flight_per_instance_from": t}, "pool": "all", "config": high},
    ]
    o = Option(f"adaptive: {low} below {t} in flight per instance, {high} from {t}", "adaptive", pools,
               rules, r, n)  # fmt: skip
    o.extra = {"threshold_in_flight_per_instance": t, "winners_by_level": wins, "active_config": cfg,
               "in_flight_per_instance": round(per, 1)}  # fmt: skip
    return o


def needed(cells: CellSource, make: Any, slo: dict[str, float], start: int = 1) -> int | None:
    """The fewest instances for which ``make(n)`` returns an option meeting the SLO (None: not up to MAX)."""
    for n in range(start, MAX_INSTANCES + 1):
        o = make(n)
        if o is not None and o.result.meets_slo:
            return n
    return None
