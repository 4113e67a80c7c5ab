"""Score profiles against measured result rows: per-cell errors, median errors, winner agreement.

Predictions run the real engine through ``predict.simulate`` (not the fit's linear shortcut) and the
bench metrics code, replaying each row's realised mean prompt/output lengths when the row has token
totals (``replay=True``) or the scenario's plain length sample otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from specsweep.sim.observed import METRICS, ObservedCell, rows_to_cells
from specsweep.sim.predict import conditioned_lengths, run_metrics, simulate
from specsweep.sim.profile import Profile


def predict_for_cell(
    profile: Profile, cell: ObservedCell, *, replay: bool = True, seed: int = 0
) -> dict[str, Any]:
    lengths = None
    if replay:
        lengths = conditioned_lengths(cell.scenario, cell.num_prompts, seed, cell.mean_in, cell.mean_out)
    res = simulate(profile, cell.scenario, cell.concurrency, num_prompts=cell.num_prompts, seed=seed,
                   lengths=lengths)  # fmt: skip
    return run_metrics(res.records)


def score(
    profile: Profile, rows: Iterable[dict[str, Any]], *, replay: bool = True, seed: int = 0
) -> list[dict[str, Any]]:
    """One entry per row: scenario, concurrency, and obs / pred / err (pred/obs - 1) per metric."""
    out = []
    for cell in rows_to_cells(rows):
        pred = predict_for_cell(profile, cell, replay=replay, seed=seed)
        row: dict[str, Any] = {"scenario": cell.scenario.name, "concurrency": cell.concurrency}
        for m in METRICS:
            if m in cell.obs and pred.get(m):
                row[m] = {
                    "obs": cell.obs[m],
                    "pred": float(pred[m]),
                    "err": float(pred[m]) / cell.obs[m] - 1.0,
                }
        out.append(row)
    return out


def median_abs_pct(scored: list[dict[str, Any]], metric: str) -> float:
    errs = [abs(r[metric]["err"]) for r in scored if metric in r]
    return 100.0 * float(np.median(errs)) if errs else float("nan")


def winners(
    a: list[dict[str, Any]], b: list[dict[str, Any]], metric: str = "total_throughput"
) -> dict[str, Any]:
    """Cells (scenario, concurrency) in both; how often the predicted winner (higher metric) is the measured one."""
    ia = {(r["scenario"], r["concurrency"]): r[metric] for r in a if metric in r}
    ib = {(r["scenario"], r["concurrency"]): r[metric] for r in b if metric in r}
    keys = sorted(set(ia) & set(ib))
    agree: list[tuple[str, int]] = []
    miss: list[tuple[str, int]] = []
    for key in keys:
        obs_a = ia[key]["obs"] > ib[key]["obs"]
        pred_a = ia[key]["pred"] > ib[key]["pred"]
        (agree if obs_a == pred_a else miss).append(key)
    return {"cells": len(keys), "agree": len(agree), "miss": miss}


def best_of(
    a: list[dict[str, Any]], b: list[dict[str, Any]], metric: str = "total_throughput"
) -> list[dict[str, Any]]:
    """Per cell, the better of two setups: measured best vs predicted best (the reports' "DSpark best st")."""
    ib = {(r["scenario"], r["concurrency"]): r for r in b}
    out = []
    for r in a:
        other = ib.get((r["scenario"], r["concurrency"]))
        if other is None or metric not in r or metric not in other:
            continue
        obs = max(r[metric]["obs"], other[metric]["obs"])
        pred = max(r[metric]["pred"], other[metric]["pred"])
        out.append({"scenario": r["scenario"], "concurrency": r["concurrency"],
                    metric: {"obs": obs, "pred": pred, "err": pred / obs - 1.0}})  # fmt: skip
    return out
