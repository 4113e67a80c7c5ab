"""The deployment options a plan compares: one config for everything, a fleet split by input length,
and a load-adaptive policy; each sized, evaluated with the fleet model and given its routing rules.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from specsweep.console import tracking
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


POOL_NAMES = {2: ("short", "long"), 3: ("short", "medium", "long")}
MAX_POOLS = 3


def compositions(n: int, k: int) -> list[tuple[int, ...]]:
    """Every way to give n instances to k pools, each at least one."""
    if k == 1:
        return [(n,)] if n >= 1 else []
    return [(a, *rest) for a in range(1, n - k + 2) for rest in compositions(n - a, k - 1)]


def split_options(cells: CellSource, configs: list[str], mix: dict[str, float], n: int, load: float,
                  slo: dict[str, float]) -> list[Option]:  # fmt: skip
    """Splits of the fleet into pools by input length (scenarios ordered by nominal input length):
    the best two-pool split at every cut between scenarios, and the best three-pool split (short /
    medium / long) over every pair of cuts, when the fleet has the instances. Configs and instance
    counts per pool are chosen by the fleet model; thresholds by :func:`length_cut`."""
    if n < 2 or len(mix) < 2:
        return []
    scs = sorted((cells.scenario(s) for s in mix), key=lambda sc: (sc.input_len, sc.name))
    cuts = [i for i in range(1, len(scs)) if scs[i - 1].input_len != scs[i].input_len]
    out = []
    ks = range(2, min(MAX_POOLS, n, len(cuts) + 1) + 1)
    evals = sum(math.comb(len(cuts), k - 1) * len(configs) ** k * len(compositions(n, k)) for k in ks)
    tracking.stage("split options", evals)
    for k in ks:
        found = []
        for cut in itertools.combinations(cuts, k - 1):
            bounds = [0, *cut, len(scs)]
            groups = [scs[bounds[j] : bounds[j + 1]] for j in range(k)]
            o = _best_split(cells, configs, mix, n, load, slo, groups)
            if o is not None:
                found.append(o)
        if k == 2:
            out += found
        elif found:  # one three-pool option: the best cut pair
            out.append(
                max(found, key=lambda o: (o.result.meets_slo, o.result.goodput, o.result.total_throughput))
            )
    return out


def _best_split(cells: CellSource, configs: list[str], mix: dict[str, float], n: int, load: float,
                slo: dict[str, float], groups: list[list[Scenario]]) -> Option | None:  # fmt: skip
    k = len(groups)
    names = POOL_NAMES[k]
    best: tuple[FleetResult, list[Pool]] | None = None
    for cfgs in itertools.product(configs, repeat=k):
        for sizes in compositions(n, k):
            pools = [Pool(names[j], cfgs[j], tuple(s.name for s in groups[j]), sizes[j]) for j in range(k)]
            r = evaluate(cells, pools, mix, load, slo)
            tracking.advance()
            if best is None or _better(r, best[0]):
                best = (r, pools)
    if best is None or not best[0].complete:
        return None
    r, pools = best
    cuts = [length_cut(groups[j], groups[j + 1], mix) for j in range(k - 1)]
    ts = [t for t, _m in cuts]
    if any(b <= a for a, b in itertools.pairwise(ts)):  # overlapping length ranges: no consistent rule
        return None
    mis = sum(m for _t, m in cuts)
    rules = []
    for j, p in enumerate(pools):
        match: dict[str, int] = {}
        if j > 0:
            match["input_tokens_min"] = ts[j - 1] + 1
        if j < k - 1:
            match["input_tokens_max"] = ts[j]
        rules.append({"match": match, "pool": p.name, "config": p.config, "scenarios": list(p.scenarios),
                      "instances": p.instances})  # fmt: skip
    at = " and ".join(str(t) for t in ts)
    o = Option(f"split at {at} input tokens: " + " + ".join(f"{p.config} x{p.instances}" for p in pools), "split",
               pools, rules, r, n)  # fmt: skip
    o.extra = {"threshold_input_tokens": ts[0] if k == 2 else ts, "misrouted_share": round(mis, 4)}
    if mis > 0:
        o.notes.append(f"the length rule sends {100 * mis:.1f}% of requests to another pool than their "
                       "scenario's (prompts of a scenario that fall in another pool's range): harmless for speed")  # fmt: skip
    return o


def resize_split(cells: CellSource, o: Option, mix: dict[str, float], n: int, load: float,
                 slo: dict[str, float]) -> Option | None:  # fmt: skip
    """The same split (cuts and configs) on ``n`` instances, best allocation."""
    if n < len(o.pools):
        return None
    best: Option | None = None
    for sizes in compositions(n, len(o.pools)):
        pools = [Pool(p.name, p.config, p.scenarios, sz) for p, sz in zip(o.pools, sizes, strict=True)]
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
