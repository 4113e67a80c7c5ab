"""``specsweep plan``: from results and a traffic description to compared deployment options."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from specsweep.analysis.core import measure_noise
from specsweep.analysis.data import Dataset, load
from specsweep.analysis.recommend import engine_flags, scenario_class
from specsweep.console import tracking
from specsweep.errors import ConfigError, UsageError, one_of
from specsweep.plan import options as opts
from specsweep.plan.cells import CellSource
from specsweep.plan.confidence import assess, config_verdicts
from specsweep.plan.fleet import Pool, evaluate
from specsweep.plan.fleetsim import predict_option
from specsweep.plan.traffic import Traffic

RATE_ROUNDS = 4
# Requests in flight a plan may size for: the fleet simulation's cost grows with them (10,000 took 90 s
# on a busy 2-core box), and beyond MAX_INSTANCES x the highest measured level nothing is measured.
MAX_IN_FLIGHT = 8192


def in_flight_cap(levels: Sequence[int]) -> int:
    """The most requests in flight a plan sizes for: MAX_INSTANCES instances at the highest measured
    concurrency level, and at most MAX_IN_FLIGHT."""
    return min(MAX_IN_FLIGHT, opts.MAX_INSTANCES * max(levels, default=1))


def _too_much(traffic: Traffic, n_fl: float, cap: int, levels: Sequence[int] | None) -> ConfigError:
    """The error for a load past the cap (``levels``: the measured levels; None: not read yet)."""
    key = next(k for k in ("concurrency", "request_rate") if getattr(traffic, k) is not None)
    stated = f"{key} {getattr(traffic, key):,g}" + (" at the peak hour" if traffic.by_hour else "")
    why = ""
    if levels is not None and cap < MAX_IN_FLIGHT:
        why = (
            f": {opts.MAX_INSTANCES} instances at the highest measured concurrency, {max(levels, default=1)}"
        )
    if key == "request_rate":
        stated += f" means at least {n_fl:,.0f} requests in flight (Little's law at the lowest latency), and"
    else:
        stated += ":"
    return ConfigError(
        f"{stated} a plan sizes for at most {cap:,} requests in flight{why}; plan a share of the traffic, "
        "or measure higher concurrency levels",
        file=traffic.file,
        path="load",
    )


@dataclass
class Plan:
    traffic: Traffic
    mix: dict[str, float]  # scenario -> share
    in_flight: float
    slo: dict[str, float]
    options: list[opts.Option]
    assessments: dict[str, dict[str, Any]]
    recommended: str
    reason: str
    cells: CellSource
    day: dict[str, Any] | None = None  # the daily profile's hours and costs (day_profile)

    def option(self, name: str) -> opts.Option:
        return next(o for o in self.options if o.name == name)


def resolve_mix(ds: Dataset, traffic: Traffic) -> dict[str, float]:
    """Mix keys (scenarios or workload classes) -> shares per measured scenario."""
    scens = ds.scenarios()
    classes: dict[str, list[str]] = {}
    for s in scens:
        classes.setdefault(scenario_class(s, ds.scenario_defs), []).append(s)
    out: dict[str, float] = {}
    for key, share in traffic.mix.items():
        if key in scens:
            out[key] = out.get(key, 0.0) + share
        elif key in classes:
            for s in classes[key]:
                out[s] = out.get(s, 0.0) + share / len(classes[key])
        else:
            raise ConfigError(f"{one_of(key, scens + sorted(classes))} (scenarios and workload classes in the "
                              "results)", file=traffic.file, path=f"mix.{key}")  # fmt: skip
    return out


def _in_flight(
    cells: CellSource, cfg: str, mix: dict[str, float], n: int, traffic: Traffic, levels: Sequence[int]
) -> float:
    """Requests in flight: the given concurrency, or (request rate) Little's law on one config's fleet;
    a ConfigError past ``in_flight_cap`` (before anything is evaluated at such a load)."""
    cap = in_flight_cap(levels)
    if traffic.concurrency is not None:
        if traffic.concurrency > cap:
            raise _too_much(traffic, traffic.concurrency, cap, levels)
        return float(traffic.concurrency)
    rate = float(traffic.request_rate or 0.0)
    at_c1 = [cells.get(cfg, s, 1) for s in mix]
    if all(f is not None for f in at_c1):  # Little's law at the lowest latency (one request at a time)
        least = rate * sum(mix[s] * f.mean_e2e_ms for s, f in zip(mix, at_c1, strict=True) if f) / 1000
        if least > cap:
            raise _too_much(traffic, least, cap, levels)
    n_fl = min(max(1.0, rate), cap)
    for _ in range(RATE_ROUNDS):
        r = evaluate(cells, [Pool("all", cfg, tuple(mix), n)], mix, n_fl)
        lat = {s: f.mean_e2e_ms for p in r.pools for s, f in p.per_scenario.items()}
        n_fl = max(1.0, rate * sum(mix[s] * lat.get(s, 0.0) for s in mix) / 1000)
        if n_fl > cap:
            raise _too_much(traffic, n_fl, cap, levels)
    return n_fl


def make_plan(
    results: Sequence[str | Path],
    traffic: Traffic,
    *,
    gpus: int | None = None,
    slo: dict[str, float] | None = None,
) -> Plan:
    slo = slo or {}
    gpi = traffic.gpus_per_instance
    if traffic.concurrency is not None and traffic.concurrency > MAX_IN_FLIGHT:  # before the results are read
        raise _too_much(traffic, traffic.concurrency, MAX_IN_FLIGHT, None)
    if gpus is not None and gpus // gpi > opts.MAX_INSTANCES:
        raise UsageError(f"--gpus {gpus:,}: a plan has at most {opts.MAX_INSTANCES} instances of gpus_per_instance="
                         f"{gpi} GPU(s), {opts.MAX_INSTANCES * gpi:,} GPUs; give at most that many")  # fmt: skip
    tracking.stage("reading results")
    ds = load(results, with_records=False)
    mix = resolve_mix(ds, traffic)
    cells = CellSource(ds, traffic.profiles)
    configs = [lab for lab in ds.configs if all(cells.get(lab, s, 1) is not None for s in mix)]
    if not configs:
        raise UsageError("no config has figures for every scenario of the mix (measured, or a simulator "
                         "profile via 'profiles:' in the traffic file)")  # fmt: skip
    levels = sorted({c for (_l, s, c) in ds.cells if s in mix})
    if gpus is not None:
        if gpus < gpi:
            raise UsageError(f"--gpus {gpus}; expected at least gpus_per_instance={gpi}")
        n = gpus // gpi
    else:
        n = 1
    tracking.stage("single config")
    load_n = _in_flight(cells, configs[0], mix, n, traffic, levels)
    if gpus is None:
        fallback = max(1, math.ceil(load_n / max(levels)))
        if slo:
            found = opts.needed(cells, lambda k: opts.single_option(cells, configs, mix, k, load_n, slo), slo)
            n = found or fallback
        else:
            n = fallback
        load_n = _in_flight(cells, configs[0], mix, n, traffic, levels)
    single = opts.single_option(cells, configs, mix, n, load_n, slo)
    options: list[opts.Option] = [single] if single else []
    options += opts.split_options(cells, configs, mix, n, load_n, slo)
    tracking.stage("adaptive option")
    ad = opts.adaptive_option(cells, configs, mix, n, load_n, slo, levels)
    if ad is not None:
        options.append(ad)
    if not options:
        raise UsageError("no option could be evaluated: the results lack the mix's scenarios")
    if slo:
        tracking.stage("GPUs for the SLO", len(options))
        for o in options:
            tracking.advance()
            if o.kind == "single":
                o.instances_needed = opts.needed(cells, lambda k: opts.single_option(cells, configs, mix, k, load_n, slo), slo)  # fmt: skip
            elif o.kind == "split":
                o.instances_needed = opts.needed(cells, lambda k, o=o: opts.resize_split(cells, o, mix, k, load_n, slo), slo, start=len(o.pools))  # fmt: skip
            else:
                o.instances_needed = None
    memo: dict[Any, dict[str, Any] | None] = {}
    tracking.stage("engine model", len(options))
    for o in options:
        refine(cells, o, mix, load_n, slo, memo)
        tracking.advance()
        k = o.instances_needed
        if slo and k is not None and (k > o.instances) == o.result.meets_slo:
            o.notes.append(f"GPUs needed ({k * traffic.gpus_per_instance}) are the cell model's; on {o.instances * traffic.gpus_per_instance} GPUs the engine model "
                           f"{'meets' if o.result.meets_slo else 'misses'} the SLO")  # fmt: skip
    vs = config_verdicts(ds)
    floor = measure_noise(ds).floor
    assessments = {o.name: assess(o, single, cells, vs, floor) for o in options}
    rec, reason = _recommend(options, assessments, slo)
    plan = Plan(traffic, mix, load_n, slo, options, assessments, rec, reason, cells)
    if traffic.by_hour is not None:
        tracking.stage("daily profile")
        plan.day = day_profile(plan, configs[0], levels)
    return plan


def day_profile(plan: Plan, cfg0: str, levels: Sequence[int]) -> dict[str, Any]:
    """The daily profile: requests in flight per hour, and per option the GPU-hours of the fleet sized
    for the peak hour kept all day (``gpu_hours_fixed``) vs scaled per hour (``gpu_hours_scaled``: the
    fewest instances of the option's pools meeting the SLO at that hour's load by the cell model, or
    without an SLO the same in-flight per instance as at the peak; never more than the peak fleet).
    The adaptive option also gets the config its rule runs each hour on the peak fleet."""
    tr, cells, mix, slo = plan.traffic, plan.cells, plan.mix, plan.slo
    assert tr.by_hour is not None
    gpi = tr.gpus_per_instance
    loads: dict[float, float] = {}
    for v in set(tr.by_hour):
        if tr.concurrency is not None:
            loads[v] = v
        else:
            n0 = next(o.instances for o in plan.options)
            loads[v] = _in_flight(cells, cfg0, mix, n0, replace(tr, request_rate=v, by_hour=None), levels)
    in_flight = [loads[v] for v in tr.by_hour]
    peak = max(in_flight)
    out: dict[str, Any] = {"peak_hour": tr.peak_hour, "in_flight_by_hour": [round(x, 1) for x in in_flight],
                           "options": {}}  # fmt: skip
    for o in plan.options:
        n = o.instances
        least = len(o.pools)
        per_load: dict[float, int] = {}
        for x in set(in_flight):
            if slo:
                k_ok = n
                for k in range(least, n + 1):
                    pools = _resized(o, k)
                    if pools is not None and evaluate(cells, pools, mix, x, slo).meets_slo:
                        k_ok = k
                        break
                per_load[x] = k_ok
            else:
                per_load[x] = min(n, max(least, math.ceil(n * x / peak - 1e-9)))
        inst = [per_load[x] for x in in_flight]
        row: dict[str, Any] = {"gpus_by_hour": [k * gpi for k in inst], "gpu_hours_fixed": n * gpi * 24,
                               "gpu_hours_scaled": sum(inst) * gpi}  # fmt: skip
        if o.kind == "adaptive":
            t = int(o.extra["threshold_in_flight_per_instance"])
            low, high = o.rules[0]["config"], o.rules[1]["config"]
            row["config_by_hour"] = [high if x / n >= t else low for x in in_flight]
        out["options"][o.name] = row
    return out


def _resized(o: opts.Option, k: int) -> list[Pool] | None:
    """The option's pools on k instances in all, split in the peak fleet's proportions (each >= 1)."""
    if k < len(o.pools):
        return None
    n = o.instances
    sizes = [max(1, round(p.instances * k / n)) for p in o.pools]
    while sum(sizes) > k:
        sizes[sizes.index(max(sizes))] -= 1
    while sum(sizes) < k:
        sizes[sizes.index(min(sizes))] += 1
    return [Pool(p.name, p.config, p.scenarios, s) for p, s in zip(o.pools, sizes, strict=True)]


def refine(cells: CellSource, o: opts.Option, mix: dict[str, float], in_flight: float,
           slo: dict[str, float], memo: dict[Any, dict[str, Any] | None]) -> None:  # fmt: skip
    """Replaces the option's cell-model figures by its whole fleet on the engine model (module fleetsim:
    mixed pools' interference, misrouting, per-pool load swings), calibrated to the measured cells; the
    cell model's figures stay under ``cell_model``."""
    r = o.result
    bounds = tuple((str(x["pool"]), x["match"].get("input_tokens_min"), x["match"].get("input_tokens_max"))
                   for x in o.rules if isinstance(x["match"], dict))  # fmt: skip
    key = (tuple(o.pools), bounds)  # the adaptive option at its active config is the single one
    if key not in memo:
        memo[key] = predict_option(cells, o, mix, max(1, round(in_flight)), slo)
    pred = memo[key]
    if pred is None:
        o.extra["engine_model"] = "not run: a config has no simulator profile (cell model figures)"
        return
    o.extra["cell_model"] = {"total_throughput": round(r.total_throughput, 1), "goodput": round(r.goodput, 1),
                             "p99_ttft_ms": round(r.p99_ttft_ms, 1), "p99_tpot_ms": round(r.p99_tpot_ms, 2)}  # fmt: skip
    o.extra["engine_model"] = {k: pred[k] for k in ("simulator_only", "throughput_calibration", "tail_calibration",
                                                    "requests")}  # fmt: skip
    r.total_throughput, r.goodput = pred["total_throughput"], pred["goodput"]
    r.p99_ttft_ms, r.p99_tpot_ms = pred["p99_ttft_ms"], pred["p99_tpot_ms"]
    scale = r.total_throughput / (sum(sum(p.throughput.values()) for p in r.pools) or 1.0)
    for p in r.pools:
        p.throughput = {s: v * scale for s, v in p.throughput.items()}
    o.extra["per_scenario_p99"] = {
        s: {k: round(v, 2) for k, v in d.items()} for s, d in pred["per_scenario"].items()
    }
    r.meets_slo = (r.complete and r.p99_ttft_ms <= slo.get("ttft_p99_ms", math.inf)
                   and r.p99_tpot_ms <= slo.get("tpot_p99_ms", math.inf))  # fmt: skip


def _recommend(
    options: list[opts.Option], asm: dict[str, dict[str, Any]], slo: dict[str, float]
) -> tuple[str, str]:
    """Highest goodput (throughput without an SLO) among options meeting the SLO; a gain whose interval
    includes 0 is a tie, and a tie goes to the simpler option (fewer pools, no switching)."""
    ok = [o for o in options if o.result.meets_slo] or options
    key = (lambda o: o.result.goodput) if slo else (lambda o: o.result.total_throughput)
    best = max(ok, key=key)
    single = next((o for o in options if o.kind == "single"), None)
    if single is not None and best is not single and single in ok:
        lo, hi = asm[best.name]["interval"]
        if lo <= 0 <= hi:
            return single.name, (f"'{best.name}' leads by {100 * asm[best.name]['gain_vs_single']:+.1f}% but its "
                                 f"interval [{100 * lo:+.1f}%, {100 * hi:+.1f}%] includes 0: a tie, so the simpler "
                                 "single config")  # fmt: skip
    why = "meets the SLO with the highest goodput" if slo and best.result.meets_slo else "highest throughput"
    if best is not single and best.name in asm:
        g, (lo, hi) = asm[best.name]["gain_vs_single"], asm[best.name]["interval"]
        why += f"; {100 * g:+.1f}% over the best single config [{100 * lo:+.1f}%, {100 * hi:+.1f}%]"
    return best.name, why


def option_source(o: opts.Option) -> str:
    s = o.result.sources
    return "mixed" if len(s) > 1 else next(iter(s), "simulated")


def to_json(plan: Plan) -> dict[str, Any]:
    gpi = plan.traffic.gpus_per_instance
    out = []
    for o in plan.options:
        r = o.result
        a = plan.assessments.get(o.name, {})
        out.append({
            "name": o.name, "kind": o.kind, "configs": o.configs, "rules": o.rules,
            "gpus": o.instances * gpi,
            "gpus_needed": o.instances_needed * gpi if o.instances_needed else None,
            "total_throughput": round(r.total_throughput, 1), "goodput": round(r.goodput, 1),
            "p99_ttft_ms": round(r.p99_ttft_ms, 1), "p99_tpot_ms": round(r.p99_tpot_ms, 2),
            "meets_slo": r.meets_slo, "source": option_source(o),
            "gain_vs_single": a.get("gain_vs_single"), "gain_interval": a.get("interval"),
            "confidence": a.get("confidence"), "verdicts": a.get("verdicts", []),
            "pools": [{"name": p.pool.name, "config": p.pool.config, "instances": p.pool.instances,
                       "in_flight_per_instance": p.concurrency_per_instance,
                       "scenarios": {s: {"share": round(plan.mix[s], 4), "source": f.source,
                                         "total_throughput": round(p.throughput[s], 1),
                                         "p99_ttft_ms": round(f.p99_ttft_ms, 1), "p99_tpot_ms": round(f.p99_tpot_ms, 2)}
                                     for s, f in p.per_scenario.items()},
                       "engine_flags": _flags(plan, p.pool.config)} for p in r.pools],
            "notes": o.notes, **o.extra,
        })  # fmt: skip
    if plan.day is not None:
        for o_view in out:
            o_view["day"] = plan.day["options"].get(o_view["name"])
    traffic: dict[str, Any] = {"mix": plan.mix, "in_flight": round(plan.in_flight, 1), "slo": plan.slo,
                               "gpus_per_instance": gpi}  # fmt: skip
    if plan.day is not None:
        traffic.update(peak_hour=plan.day["peak_hour"], in_flight_by_hour=plan.day["in_flight_by_hour"])
    return {"traffic": traffic, "options": out, "recommended": plan.recommended, "reason": plan.reason}


def _flags(plan: Plan, label: str) -> dict[str, str | None]:
    meta = plan.cells.ds.configs[label]
    return engine_flags(meta.method, meta.params)
