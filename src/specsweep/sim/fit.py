"""``sim fit``: calibrate a profile's cost model to benchmark results.

Why it is cheap: in a closed loop (the client re-sends the moment a request finishes) the sequence of
engine iterations - who is admitted, prefilled and decoded in which step, how many drafts each accepts
(seeded) - does not depend on the cost parameters, only on lengths, limits and acceptance. So each
result cell is simulated ONCE (``predict.simulate(keep_trace=True)``) and its duration, mean TTFT and
mean TPOT are linear forms in the cost vector theta (``predict.trace_design``). The fit then minimises,
with a robust loss (soft_l1 by default, scale 0.05 in log units), the log errors

    log(total_throughput_pred / obs), log(mean_tpot_pred / obs), log(mean_ttft_pred / obs)

over theta >= 0 with scipy's ``least_squares``. Predictions are exactly what ``sim predict`` gives for
the fitted profile with the same seed (tested).

With one k per method, acceptance and step time are not separately identifiable: the survival profile
comes from the results' spec metrics (``accept_length`` / ``spec_accept_length``, turned into a constant
per-position rate) when present, else from the ``--acceptance`` prior (``observed.survival_for``).
Reading results: ``observed.py``; the command line: ``fit_cli.py``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specsweep.errors import DataError, UsageError, one_of
from specsweep.sim.observed import METRICS, ObservedCell, const_rate_for, survival_for
from specsweep.sim.profile import COST_PARAMS, Profile, parse_acceptance

# structural profile fields that change the event sequence (or, moe_n0, the shape of a feature);
# ``--scan`` tries candidates. mixed_prefill and graph_counts_prefill take 0/1.
SCAN_FIELDS = (
    "admit_delay_steps",
    "prefill_chunk",
    "max_batch",
    "graph_cap",
    "kv_tokens",
    "moe_n0",
    "mixed_prefill",
    "graph_counts_prefill",
)
BOOL_FIELDS = ("mixed_prefill", "graph_counts_prefill")  # scanned as 0/1, stored as booleans


@dataclass
class FitResult:
    profile: Profile
    theta: np.ndarray
    train: list[dict[str, Any]] = field(default_factory=list)
    holdout: list[dict[str, Any]] = field(default_factory=list)


# ---- the fit ---------------------------------------------------------------------------------
def prepare(
    cells: list[ObservedCell], base: Profile, prior: str | None, seed: int = 0, replicates: int = 1
) -> None:
    """Simulate each cell (closed loop) and keep its linear design. With ``replicates`` R > 1 the cell
    is simulated with seeds seed..seed+R-1 and the designs pooled: the predictions are the mean TTFT and
    mean TPOT of the R runs and the total tokens over their total duration (less sampling noise from
    small cells, R times the work)."""
    from specsweep.sim.predict import conditioned_lengths, simulate, trace_design

    if replicates < 1:
        raise UsageError(f"bad replicates {replicates}; expected a positive integer")
    for cell in cells:
        prof = base.model_copy(update={"k": cell.k, "survival": survival_for(cell, prior)})
        parts = []
        for s in range(seed, seed + replicates):
            lengths = conditioned_lengths(cell.scenario, cell.num_prompts, s, cell.mean_in, cell.mean_out)
            res = simulate(prof, cell.scenario, cell.concurrency, seed=s, lengths=lengths, keep_trace=True)
            assert res.trace is not None
            parts.append(trace_design(res.trace))
        d = np.sum([p[0] for p in parts], axis=0)
        a = np.mean([p[1] for p in parts], axis=0)
        b = np.mean([p[2] for p in parts], axis=0)
        cell.design = (d, a, b, float(sum(p[3] for p in parts)))


def predict_from_design(cell: ObservedCell, theta: np.ndarray) -> dict[str, float]:
    assert cell.design is not None
    d, a, b, tokens = cell.design
    return {
        "total_throughput": tokens / max(float(d @ theta), 1e-9) * 1000.0,
        "mean_ttft_ms": float(a @ theta),
        "mean_tpot_ms": float(b @ theta),
    }


def _system(cells: list[ObservedCell], pair_weight: float = 0.0) -> tuple[np.ndarray, ...]:
    """Every residual as r = w * (s1 * log(M1 @ theta) + s2 * log(M2 @ theta) + c).

    One row per observed metric of a cell (s2 = 0), plus, with ``pair_weight``, one row per two cells
    that differ only in k (same method, scenario, concurrency): the log error of their total-throughput
    RATIO - what deciding between the two setups depends on.
    """
    m1, m2, s1, s2, const, wt = [], [], [], [], [], []
    for cell in cells:
        assert cell.design is not None
        d, a, b, tokens = cell.design
        for m, vec in (("total_throughput", d), ("mean_ttft_ms", a), ("mean_tpot_ms", b)):
            if m not in cell.obs:
                continue
            m1.append(vec)
            m2.append(np.zeros_like(vec))
            s2.append(0.0)
            wt.append(1.0)
            if m == "total_throughput":  # tokens / (d @ theta ms) * 1000
                s1.append(-1.0)
                const.append(math.log(tokens * 1000.0) - math.log(cell.obs[m]))
            else:
                s1.append(1.0)
                const.append(-math.log(cell.obs[m]))
    if pair_weight > 0:
        groups: dict[tuple[Any, ...], list[ObservedCell]] = {}
        for cell in cells:
            if "total_throughput" in cell.obs:
                groups.setdefault((cell.method, cell.scenario.name, cell.concurrency), []).append(cell)
        for group in groups.values():
            for x, y in itertools.combinations(sorted(group, key=lambda c: c.k), 2):
                if x.k == y.k:
                    continue
                assert x.design is not None and y.design is not None
                m1.append(x.design[0])
                m2.append(y.design[0])
                s1.append(-1.0)
                s2.append(1.0)
                const.append(
                    math.log(x.design[3] / y.design[3])
                    - math.log(x.obs["total_throughput"] / y.obs["total_throughput"])
                )
                wt.append(pair_weight)
    return tuple(np.asarray(v) for v in (m1, m2, s1, s2, const, wt))


def _resid(sys_: tuple[np.ndarray, ...], theta: np.ndarray) -> np.ndarray:
    m1, m2, s1, s2, const, wt = sys_
    t2 = np.where(s2 != 0, np.maximum(m2 @ theta, 1e-12), 1.0)
    return wt * (s1 * np.log(np.maximum(m1 @ theta, 1e-12)) + s2 * np.log(t2) + const)


def residuals(cells: list[ObservedCell], theta: np.ndarray, pair_weight: float = 0.0) -> np.ndarray:
    """Log errors log(pred/obs) of every observed metric of every cell (and of k-pair ratios)."""
    return _resid(_system(cells, pair_weight), theta)


def fit_theta(
    cells: list[ObservedCell],
    start: np.ndarray,
    free: Sequence[bool],
    *,
    loss: str = "soft_l1",
    f_scale: float = 0.05,
    pair_weight: float = 0.0,
) -> np.ndarray:
    """Robust least squares over theta = exp(phi) (positive; every parameter on a relative scale)."""
    from scipy.optimize import least_squares

    free_idx = np.asarray([i for i, f in enumerate(free) if f], dtype=np.int64)
    if free_idx.size == 0:
        return start.copy()
    sys_ = _system(cells, pair_weight)
    m1, m2, s1, s2, _, wt = sys_

    def full(phi: np.ndarray) -> np.ndarray:
        th = start.copy()
        th[free_idx] = np.exp(phi)
        return th

    def fun(phi: np.ndarray) -> np.ndarray:
        return _resid(sys_, full(phi))

    def jac(phi: np.ndarray) -> np.ndarray:
        th = full(phi)
        t1 = np.maximum(m1 @ th, 1e-12)
        t2 = np.where(s2 != 0, np.maximum(m2 @ th, 1e-12), 1.0)
        g = (s1 / t1)[:, None] * m1[:, free_idx] + (s2 / t2)[:, None] * m2[:, free_idx]
        return wt[:, None] * g * th[free_idx][None, :]

    x0 = np.log(np.maximum(start[free_idx], 1e-6))
    best = None
    for jitter in (0.0, 1.0, -1.0, 2.0):  # a few starts; the problem is small
        sol = least_squares(fun, x0 + jitter, jac=jac, loss=loss, f_scale=f_scale, bounds=(-25.0, 10.0),
                            max_nfev=2000)  # fmt: skip
        if best is None or sol.cost < best.cost:
            best = sol
    assert best is not None
    th = full(best.x)
    th[free_idx] = np.where(th[free_idx] < 1e-7, 0.0, th[free_idx])
    return th


def error_rows(cells: list[ObservedCell], theta: np.ndarray) -> list[dict[str, Any]]:
    """Per cell: observed, predicted and relative error (pred/obs - 1) of each metric."""
    out = []
    for cell in cells:
        pred = predict_from_design(cell, theta)
        row: dict[str, Any] = {"cell": cell.key, "scenario": cell.scenario.name, "concurrency": cell.concurrency,
                               "k": cell.k, "method": cell.method}  # fmt: skip
        for m in METRICS:
            if m in cell.obs:
                row[m] = {"obs": round(cell.obs[m], 3), "pred": round(pred[m], 3),
                          "err": round(pred[m] / cell.obs[m] - 1.0, 4)}  # fmt: skip
        out.append(row)
    return out


def median_abs_errors(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Median absolute relative error per metric, in percent."""
    out = {}
    for m in METRICS:
        errs = [abs(r[m]["err"]) for r in rows if m in r]
        if errs:
            out[m] = round(100.0 * float(np.median(errs)), 2)
    return out


def robust_cost(r: np.ndarray, loss: str, f_scale: float) -> float:
    """scipy least_squares' objective for residuals r (0.5 * sum rho((r/f)^2) * f^2)."""
    z = (r / f_scale) ** 2
    if loss == "linear":
        rho = z
    elif loss == "soft_l1":
        rho = 2 * (np.sqrt(1 + z) - 1)
    elif loss == "huber":
        rho = np.where(z <= 1, z, 2 * np.sqrt(z) - 1)
    else:  # cauchy
        rho = np.log1p(z)
    return float(0.5 * f_scale**2 * rho.sum())


def fit(
    train: list[ObservedCell],
    base: Profile,
    *,
    k: int,
    acceptance: str | None,
    holdout: list[ObservedCell] | None = None,
    fixed: dict[str, float] | None = None,
    loss: str = "soft_l1",
    f_scale: float = 0.05,
    seed: int = 0,
    pair_weight: float = 0.0,
    scan: Mapping[str, Sequence[Any]] | None = None,
    replicates: int = 1,
) -> FitResult:
    """Fit the cost vector on ``train``; return a profile with ``k`` drafts and errors on both sets.

    ``scan``: candidate values of structural profile fields (``admit_delay_steps``, ``prefill_chunk``,
    ...). They change the event sequence, so each combination is simulated and fitted; the lowest
    robust training cost wins. ``replicates``: seeded simulations pooled per cell (see :func:`prepare`).
    """
    if not train:
        raise DataError("no training rows (check --method / --spec-tokens filters)")
    fixed = dict(fixed or {})
    for name in fixed:
        if name not in COST_PARAMS:
            raise UsageError(f"--fix {name}: not a cost parameter; expected one of: {', '.join(COST_PARAMS)}")
    scan = dict(scan or {})
    for name in scan:
        if name not in SCAN_FIELDS:
            raise UsageError(f"--scan {name}: {one_of(name, SCAN_FIELDS)}")
    names = list(scan)
    combos = list(itertools.product(*[scan[n] for n in names])) if names else [()]
    best: tuple[float, dict[str, Any], np.ndarray, list[bool]] | None = None
    scores: list[dict[str, Any]] = []
    for combo in combos:
        struct = {n: bool(v) if n in BOOL_FIELDS else v for n, v in zip(names, combo, strict=True)}
        b = base.model_copy(update=struct)
        prepare(train, b, acceptance, seed, replicates)
        start = np.asarray(b.cost_vector(), dtype=np.float64)
        for name, v in fixed.items():
            start[COST_PARAMS.index(name)] = v
        # a parameter whose feature never varies in the training rows cannot be fitted: keep it as given
        used = np.zeros(len(COST_PARAMS), dtype=bool)
        for c in train:
            assert c.design is not None
            used |= (np.abs(c.design[0]) > 0) | (np.abs(c.design[2]) > 0)
        free = [bool(used[i]) and COST_PARAMS[i] not in fixed for i in range(len(COST_PARAMS))]
        start = np.where(np.asarray(free) & (start <= 0), 1e-3, start)
        theta = fit_theta(train, start, free, loss=loss, f_scale=f_scale, pair_weight=pair_weight)
        cost = robust_cost(residuals(train, theta, pair_weight), loss, f_scale)
        scores.append({**struct, "cost": round(cost, 6)})
        if best is None or cost < best[0]:
            best = (cost, struct, theta, free)
    assert best is not None
    _, struct_best, theta, free = best
    theta = np.asarray([float(f"{x:.6g}") for x in theta])  # what the YAML stores is what is scored
    base = base.model_copy(update=struct_best)
    prepare(train, base, acceptance, seed, replicates)
    if holdout:
        prepare(holdout, base, acceptance, seed, replicates)

    tr_rows = error_rows(train, theta)
    ho_rows = error_rows(holdout, theta) if holdout else []
    accs = [c.accept_length for c in train if c.k == k and c.accept_length]
    if k == 0:
        survival: list[float] = []
    elif accs:
        a = const_rate_for(float(np.mean(accs)), k)
        survival = [a**i for i in range(1, k + 1)]
    elif acceptance:
        survival = parse_acceptance(acceptance, k)
    else:
        raise UsageError(f"cannot set the profile's survival for k={k}: no spec metrics; pass --acceptance")
    upd: dict[str, Any] = {name: float(theta[i]) for i, name in enumerate(COST_PARAMS)}
    upd.update(k=k, survival=[round(s, 6) for s in survival])
    upd["fit"] = {
        "loss": loss,
        "f_scale": f_scale,
        "pair_weight": pair_weight,
        "free": [COST_PARAMS[i] for i, f in enumerate(free) if f],
        "fixed": {COST_PARAMS[i]: float(theta[i]) for i, f in enumerate(free) if not f},
        "scan": scores,
        "seed": seed,
        "replicates": replicates,
        "train_rows": len(train),
        "holdout_rows": len(ho_rows),
        "train_median_abs_err_pct": median_abs_errors(tr_rows),
        "holdout_median_abs_err_pct": median_abs_errors(ho_rows) if ho_rows else {},
        "train": tr_rows,
        "holdout": ho_rows,
    }
    return FitResult(base.model_copy(update=upd), theta, tr_rows, ho_rows)
