"""The report's steady-state notes: every cell whose closed-loop runs were not at steady state (too
few waves of requests, too little of the run at the target concurrency; :mod:`specsweep.measure.steady`),
named with what that does to its figures, or one line saying every cell was."""

from __future__ import annotations

from typing import Any

from specsweep.analysis.data import Dataset
from specsweep.measure import steady
from specsweep.report.build import view as V


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
        return []
    return [V.Msg(key="steady.all_steady", args={"low": low[0], "low_cell": low[1], **limits})]
