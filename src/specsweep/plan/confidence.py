"""How sure a plan is: the analysis verdicts (``specsweep.analysis.core``) behind each config choice.

For every scenario an option serves with a different config than the single-config option, the verdict
between the two configs is read at the measured level nearest the option's in-flight per instance.
The option's gain interval adds, weighted by each scenario's share of the option's tokens, the verdict
interval (log half-width) and, for simulated cells, the profile's own fit error.
"""

from __future__ import annotations

import math
from typing import Any

from specsweep.analysis.core import (
    PRIMARY,
    Column,
    Entry,
    Table,
    VerdictList,
    find_verdict,
    measure_noise,
    oriented,
)
from specsweep.analysis.data import Dataset
from specsweep.analysis.verdicts import all_verdicts
from specsweep.plan.cells import CellSource
from specsweep.plan.options import Option


def config_verdicts(ds: Dataset) -> VerdictList:
    """Pairwise total-throughput verdicts between every two configs at every measured cell."""
    cols = [Column(m.label, m.label, m.method, m.params, [m.label]) for m in ds.configs.values()]
    pts = sorted({(s, c) for (_lab, s, c) in ds.cells})
    entries = {(col.label, s, c): Entry(col.label, s, c, col.label, ds.get(col.label, s, c))
               for col in cols for s, c in pts}  # fmt: skip
    t = Table("sweep", cols, pts, entries, None, ds)
    return all_verdicts(t, PRIMARY, measure_noise(ds))


def assess(
    opt: Option, ref: Option | None, cells: CellSource, vs: VerdictList, floor: float
) -> dict[str, Any]:
    """Gain over ``ref`` with an interval, and the verdicts behind every changed config choice.

    Per scenario the option's cell (config, in-flight per instance) is compared with the reference's:
    the same cell adds no uncertainty; two measured cells at one level add the analysis verdict's
    interval; otherwise each cell adds its own: the simulator profile's fit error when simulated, the
    noise floor when measured. Half-widths (log) are weighted by the scenario's share of tokens.
    """
    if ref is None or opt is ref:
        return {"gain_vs_single": 0.0, "interval": [0.0, 0.0], "confidence": "reference", "verdicts": []}
    ref_cell = {s: (pr.pool.config, pr.concurrency_per_instance, f.source)
                for pr in ref.result.pools for s, f in pr.per_scenario.items()}  # fmt: skip
    total = opt.result.total_throughput or 1.0
    hw = 0.0
    rows = []
    simulated = False
    for pr in opt.result.pools:
        c_run = pr.concurrency_per_instance
        for s, thr in pr.throughput.items():
            cfg, src = pr.pool.config, pr.per_scenario[s].source
            other = ref_cell.get(s)
            if other is None or (other[0], other[1]) == (cfg, c_run):
                continue
            row: dict[str, Any] = {"scenario": s, "config": cfg, "in_flight": c_run, "vs": other[0],
                                   "vs_in_flight": other[1]}  # fmt: skip
            v = find_verdict(vs, s, c_run, cfg, other[0]) if cfg != other[0] else None
            if v is not None and other[1] == c_run and src == other[2] == "measured":
                e, lo, hi, verdict = oriented(v, cfg)
                h = (math.log1p(hi) - math.log1p(lo)) / 2
                row.update(verdict={"a": "better", "b": "worse"}.get(verdict, "tie"), effect=round(e, 4),
                           ci=[round(lo, 4), round(hi, 4)], basis=v.basis)  # fmt: skip
            else:
                ua = (cells.sim_error(cfg) or floor) if src == "simulated" else floor
                ub = (cells.sim_error(other[0]) or floor) if other[2] == "simulated" else floor
                h = math.sqrt(ua * ua + ub * ub)
                simulated = simulated or "simulated" in (src, other[2])
                row.update(verdict="modelled", half_width=round(h, 4), sources=[src, other[2]])
            hw += thr / total * h
            rows.append(row)
    gain = total / ref.result.total_throughput - 1 if ref.result.total_throughput else math.nan
    lo, hi = math.expm1(math.log1p(gain) - hw), math.expm1(math.log1p(gain) + hw)
    if not rows:
        conf = "same as single"
    elif lo > 0 or hi < 0:
        conf = "medium" if simulated else "high"
    else:
        conf = "low (interval includes 0)"
    return {"gain_vs_single": round(gain, 4), "interval": [round(lo, 4), round(hi, 4)], "confidence": conf,
            "verdicts": rows}  # fmt: skip
