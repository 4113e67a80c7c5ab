"""The report's steady-state notes: every cell whose closed-loop runs were not at steady state (too
few waves of requests, too little of the run at the target concurrency; :mod:`specsweep.measure.steady`),
named with what that does to its figures, or one line saying every cell was; and every cell the racing
design measured only with short runs of few requests, whose figures are those few prompts'."""

from __future__ import annotations

from typing import Any

from specsweep.analysis.data import Dataset
from specsweep.measure import steady
from specsweep.report.build import view as V

# a run of fewer requests has the figures of its few prompts (benchmarks/prompt_sample.py: at c=1 in the
# simulator a few prompts' throughput moves by tens of percent from one sample to the next; docs/metrics.md)
FEW_PROMPTS = 12


def _run_state(row: dict[str, Any], c: int) -> tuple[float, float] | None:
    """(waves, share at target) of one closed-loop run's row; None where the row cannot say (an open-loop
    run, an import or a run dir from before these keys)."""
    if row.get("request_rate") is not None:
        return None
    share = row.get("at_target_share")
    waves = row.get("waves")
    if waves is None:
        waves = steady.waves(row.get("num_prompts"), row.get("max_concurrency") or c)
    if not isinstance(share, (int, float)) or not isinstance(waves, (int, float)):
        return None
    return float(waves), float(share)


def steady_notes(ds: Dataset) -> list[V.Msg]:
    """One note per (scenario, concurrency) with a config whose runs were not at steady state; else,
    when any run could say, one note that all were (with the lowest share)."""
    bad: dict[tuple[str, int], dict[str, Any]] = {}
    low: tuple[float, str] | None = None
    for (label, scenario, c), cell in sorted(ds.cells.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        for row in cell.ok:
            st = _run_state(row, c)
            if st is None:
                continue
            waves, share = st
            if low is None or share < low[0]:
                low = (share, f"{scenario} c={c}")
            if steady.is_steady(waves, share):
                continue
            b = bad.setdefault((scenario, c), {"configs": [], "waves": waves, "share": share})
            if label not in b["configs"]:
                b["configs"].append(label)
            b["waves"], b["share"] = min(b["waves"], waves), min(b["share"], share)
    limits = {"min_waves": steady.MIN_WAVES, "min_share": steady.MIN_AT_TARGET_SHARE}
    if bad:
        return [
            V.Msg(key="steady.not_steady", args={"scenario": s, "c": c, "configs": ", ".join(b["configs"]),
                                                  "waves": b["waves"], "share": b["share"], **limits})
            for (s, c), b in sorted(bad.items())
        ]  # fmt: skip
    if low is None:
        return few_prompts_notes(ds)
    return [V.Msg(key="steady.all_steady", args={"low": low[0], "low_cell": low[1], **limits}),
            *few_prompts_notes(ds)]  # fmt: skip


def few_prompts_notes(ds: Dataset) -> list[V.Msg]:
    """One note per (scenario, concurrency) where a config's runs were all shorter than the cell (the
    racing design's short runs, ``length`` < 1) and held fewer than FEW_PROMPTS requests each: its
    figures are those of the cell's first prompts, not its mix (the configs ran the same prompts: its verdicts
    compare like with like)."""
    few: dict[tuple[str, int], dict[str, Any]] = {}
    for (label, scenario, c), cell in sorted(ds.cells.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        rows = [r for r in cell.ok if isinstance(r.get("length"), (int, float))]
        if not rows or len(rows) < len(cell.ok) or any(float(r["length"]) >= 1.0 for r in rows):
            continue
        n = max(int(r.get("num_prompts") or 0) for r in rows)
        if not 0 < n < FEW_PROMPTS:
            continue
        f = few.setdefault((scenario, c), {"configs": [], "n": n})
        f["configs"].append(label)
        f["n"] = max(f["n"], n)
    return [
        V.Msg(key="steady.few_prompts", args={"scenario": s, "c": c, "configs": ", ".join(f["configs"]),
                                               "n": f["n"], "few": FEW_PROMPTS})
        for (s, c), f in sorted(few.items())
    ]  # fmt: skip
