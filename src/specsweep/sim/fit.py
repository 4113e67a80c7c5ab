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
per-position rate) when present, else from the ``--acceptance`` prior.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import math
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specsweep.errors import DataError, UsageError, one_of
from specsweep.sim.profile import COST_PARAMS, Profile, load_profile, parse_acceptance
from specsweep.workload.scenarios import BUILTIN, Scenario, default_num_prompts

METRICS = ("total_throughput", "mean_tpot_ms", "mean_ttft_ms")
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
_BOOL_FIELDS = ("mixed_prefill", "graph_counts_prefill")
_ALIASES = {"total_throughput": ("total_throughput", "total_token_throughput")}
_K_KEYS = ("spec_tokens", "num_speculative_tokens", "spec_num_tokens", "draft_max", "k")


@dataclass
class Cell:
    """One observed result row, reduced to what the fit needs."""

    scenario: Scenario
    concurrency: int
    k: int
    num_prompts: int
    method: str | None
    obs: dict[str, float]
    accept_length: float | None = None
    label: str = ""
    mean_in: float | None = None  # realised mean prompt / output tokens of the run, when known
    mean_out: float | None = None
    accept_per_pos: list[float] | None = None  # P(first i drafts accepted), from spec counters
    # filled by prepare(): linear forms of duration (ms), mean TTFT, mean TPOT in theta; total tokens
    design: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None

    @property
    def key(self) -> str:
        return f"{self.method or 'none'}/k={self.k}/{self.scenario.name}/c={self.concurrency}"


@dataclass
class FitResult:
    profile: Profile
    theta: np.ndarray
    train: list[dict[str, Any]] = field(default_factory=list)
    holdout: list[dict[str, Any]] = field(default_factory=list)


# ---- reading results -------------------------------------------------------------------------
def row_k(row: dict[str, Any]) -> int:
    """Draft tokens verified per step, from a result row's params (0 without speculation)."""
    method = row.get("method")
    if method in (None, "", "none", "nospec", "baseline"):
        return 0
    params = row.get("params") or {}
    for src in (params, row):
        for key in _K_KEYS:
            if src.get(key) not in (None, ""):
                return int(src[key])
        # SGLang: the draft-token count includes the root token of the chain (topk 1)
        for key in ("speculative_num_draft_tokens", "num_draft_tokens", "draft_tokens"):
            if src.get(key) not in (None, ""):
                return int(src[key]) - 1
        for key in ("speculative_num_steps", "num_steps"):
            if src.get(key) not in (None, ""):
                return int(src[key])
    raise DataError(
        f"row {row.get('label') or row.get('cell_id')!r} of method {method!r} names no spec tokens"
    )


def rows_to_cells(rows: Iterable[dict[str, Any]], scenarios: dict[str, Scenario] | None = None) -> list[Cell]:
    catalog = {**BUILTIN, **(scenarios or {})}
    cells: list[Cell] = []
    for row in rows:
        if row.get("status", "ok") not in ("ok", None):
            continue
        name = row.get("scenario")
        if name not in catalog:
            raise DataError(f"row names scenario {name!r}; known: {', '.join(sorted(catalog))}")
        conc = row.get("max_concurrency") or row.get("concurrency")
        if conc is None:
            raise DataError(f"row {row.get('label')!r} has no max_concurrency / concurrency")
        conc = round(float(conc))
        obs: dict[str, float] = {}
        for m in METRICS:
            for key in _ALIASES.get(m, (m,)):
                v = row.get(key)
                if v is not None and isinstance(v, (int, float)) and math.isfinite(v) and v > 0:
                    obs[m] = float(v)
                    break
        if not obs:
            continue
        acc = row.get("accept_length") or row.get("spec_accept_length")
        per_pos = row.get("spec_accept_per_pos")
        n = row.get("num_prompts") or row.get("completed") or default_num_prompts(conc)
        done = row.get("completed") or n
        tin, tout = row.get("total_input_tokens"), row.get("total_output_tokens")
        cells.append(
            Cell(
                scenario=catalog[str(name)], concurrency=conc, k=row_k(row), num_prompts=int(n),
                method=row.get("method"), obs=obs, accept_length=float(acc) if acc else None,
                label=str(row.get("label") or ""),
                mean_in=float(tin) / done if tin else None, mean_out=float(tout) / done if tout else None,
                accept_per_pos=[float(x) for x in per_pos] if isinstance(per_pos, list) and per_pos else None,
            )
        )  # fmt: skip
    return cells


def load_cells(paths: Sequence[str | Path]) -> list[Cell]:
    from specsweep.store import find_run_dirs

    cells: list[Cell] = []
    for rd in find_run_dirs(paths):
        cells.extend(rows_to_cells(rd.summary(), _run_scenarios(rd.manifest)))
    if not cells:
        raise DataError(f"no result rows with throughput / TPOT / TTFT in {', '.join(map(str, paths))}")
    return cells


def _run_scenarios(manifest: dict[str, Any]) -> dict[str, Scenario]:
    """User scenarios a run defined in its experiment config (built-ins need nothing)."""
    from specsweep.workload.scenarios import parse_scenarios

    config = manifest.get("config")
    data = config.get("scenarios") if isinstance(config, dict) else None
    if not data:
        return {}
    try:
        return parse_scenarios(data)
    except Exception:  # a run written by another version: rows naming built-ins still work
        return {}


# ---- acceptance ------------------------------------------------------------------------------
def const_rate_for(accept_length: float, k: int) -> float:
    """The constant per-token rate a with 1 + a + ... + a^k = accept_length (bisection)."""
    target = min(max(accept_length, 1.0), k + 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        e = sum(mid**i for i in range(k + 1))
        lo, hi = (mid, hi) if e < target else (lo, mid)
    return (lo + hi) / 2


def survival_for(cell: Cell, prior: str | None) -> list[float]:
    if cell.k == 0:
        return []
    if cell.accept_per_pos and len(cell.accept_per_pos) >= cell.k:
        return [min(1.0, max(0.0, x)) for x in cell.accept_per_pos[: cell.k]]
    if cell.accept_length:
        a = const_rate_for(cell.accept_length, cell.k)
        return [a**i for i in range(1, cell.k + 1)]
    if prior is None:
        raise UsageError(
            f"cell {cell.key} has no spec metrics (accept_length); name an acceptance prior with "
            "--acceptance, e.g. '0.58,0.45,0.32,0.24,0.16' or 'const:0.6'"
        )
    return parse_acceptance(prior, cell.k)


# ---- the fit ---------------------------------------------------------------------------------
def prepare(cells: list[Cell], base: Profile, prior: str | None, seed: int = 0, replicates: int = 1) -> None:
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


def predict_from_design(cell: Cell, theta: np.ndarray) -> dict[str, float]:
    assert cell.design is not None
    d, a, b, tokens = cell.design
    return {
        "total_throughput": tokens / max(float(d @ theta), 1e-9) * 1000.0,
        "mean_ttft_ms": float(a @ theta),
        "mean_tpot_ms": float(b @ theta),
    }


def _system(cells: list[Cell], pair_weight: float = 0.0) -> tuple[np.ndarray, ...]:
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
        groups: dict[tuple[Any, ...], list[Cell]] = {}
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


def residuals(cells: list[Cell], theta: np.ndarray, pair_weight: float = 0.0) -> np.ndarray:
    """Log errors log(pred/obs) of every observed metric of every cell (and of k-pair ratios)."""
    return _resid(_system(cells, pair_weight), theta)


def fit_theta(
    cells: list[Cell],
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


def error_rows(cells: list[Cell], theta: np.ndarray) -> list[dict[str, Any]]:
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
    train: list[Cell],
    base: Profile,
    *,
    k: int,
    acceptance: str | None,
    holdout: list[Cell] | None = None,
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
        struct = {n: bool(v) if n in _BOOL_FIELDS else v for n, v in zip(names, combo, strict=True)}
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


# ---- CLI -------------------------------------------------------------------------------------
def _filter(cells: list[Cell], method: str | None, ks: list[int] | None) -> list[Cell]:
    return [c for c in cells if (method is None or c.method == method) and (ks is None or c.k in ks)]


def _int_list(s: str | None) -> list[int] | None:
    if not s:
        return None
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError as e:
        raise UsageError(f"bad spec-token list {s!r}; expected comma-separated integers, e.g. 3,5") from e


def _print_errors(title: str, rows: list[dict[str, Any]]) -> None:
    w = sys.stdout.write
    w(f"{title} ({len(rows)} rows): median |err| % " + str(median_abs_errors(rows)) + "\n")
    for r in rows:
        parts = [f"{m.replace('_ms', '')} {100 * r[m]['err']:+6.1f}%" for m in METRICS if m in r]
        w(f"  {r['cell']:<48} " + "  ".join(parts) + "\n")


def parse_scan(items: Sequence[str]) -> dict[str, list[int]]:
    """``["prefill_chunk=1024,2048", "admit_delay_steps=3,4"]`` -> {name: [values]}."""
    out: dict[str, list[int]] = {}
    for item in items:
        name, _, vals = item.partition("=")
        name = name.strip()
        if name not in SCAN_FIELDS:
            raise UsageError(f"bad --scan {item!r}: {one_of(name, SCAN_FIELDS)}")
        try:
            out[name] = [int(v) for v in vals.split(",") if v.strip()]
        except ValueError as e:
            raise UsageError(
                f"bad --scan {item!r}; expected NAME=INT,INT,... e.g. prefill_chunk=2048,8192"
            ) from e
        if not out[name]:
            raise UsageError(f"bad --scan {item!r}; expected at least one value")
        if name in _BOOL_FIELDS and any(v not in (0, 1) for v in out[name]):
            raise UsageError(f"bad --scan {item!r}; {name} takes 0 (off) or 1 (on)")
    return out


def command_line(args: argparse.Namespace) -> str:
    """The canonical ``specsweep sim fit`` command for these arguments (recorded in the profile)."""
    parts = ["specsweep", "sim", "fit", *map(str, args.results), "-o", str(args.output)]
    for flag in ("name", "method", "spec_tokens", "holdout_spec_tokens", "k", "acceptance", "base",
                 "spec_method", "model_name", "draft_steps", "description"):  # fmt: skip
        v = getattr(args, flag, None)
        if v is not None:
            parts += ["--" + flag.replace("_", "-"), str(v)]
    for item in args.fix:
        parts += ["--fix", item]
    for item in args.scan:
        parts += ["--scan", item]
    if args.loss != "soft_l1":
        parts += ["--loss", args.loss]
    if args.f_scale != 0.05:
        parts += ["--f-scale", str(args.f_scale)]
    if args.seed:
        parts += ["--seed", str(args.seed)]
    if args.pair_weight:
        parts += ["--pair-weight", str(args.pair_weight)]
    if args.replicates != 1:
        parts += ["--replicates", str(args.replicates)]
    return " ".join(shlex.quote(p) for p in parts)


def with_domain_acceptance(profile: Profile, paths: Sequence[str | Path]) -> Profile:
    """The profile with per-category acceptance curves learned from the results (sim.domains)."""
    from specsweep.sim import domains

    pts = domains.category_points(domains.rows_of(paths), row_k)
    curves = domains.category_survival(pts, profile.k)
    if not curves:
        return profile
    for cat, curve in curves.items():
        sys.stdout.write(
            f"acceptance {cat}: E({profile.k}) = {1 + sum(curve):.2f} from {len(pts[cat])} row(s)\n"
        )
    return profile.model_copy(update={"category_survival": curves})


def fit_main(args: argparse.Namespace) -> int:
    if args.replicates < 1:
        raise UsageError(
            f"bad --replicates {args.replicates}; expected a positive integer (1 = one run per cell)"
        )
    cells = load_cells(args.results)
    train_ks = _int_list(args.spec_tokens)
    ho_ks = _int_list(args.holdout_spec_tokens)
    train = _filter(cells, args.method, train_ks)
    holdout = _filter(cells, args.method, ho_ks) if ho_ks else []
    ks = sorted({c.k for c in train})
    if args.k is None and len(ks) != 1:
        raise UsageError(f"training rows have spec tokens {ks}; name the profile's k with --k")
    k = args.k if args.k is not None else ks[0]
    base = load_profile(args.base) if args.base else Profile(name="fit")
    fixed: dict[str, float] = {}
    for item in args.fix:
        name, _, val = item.partition("=")
        try:
            fixed[name.strip()] = float(val)
        except ValueError as e:
            raise UsageError(f"bad --fix {item!r}; expected NAME=VALUE, e.g. cliff_ms=0") from e
    out = Path(args.output)
    name = args.name or out.stem
    upd: dict[str, Any] = {"name": name}
    if args.description:
        upd["description"] = args.description
    method = args.spec_method if args.spec_method is not None else (train[0].method if train else None)
    upd["spec_method"] = None if (k == 0 or method in ("none", "")) else method
    if args.model_name:
        upd["model_name"] = args.model_name
    if args.draft_steps is not None:
        upd["draft_steps"] = args.draft_steps
    base = base.model_copy(update=upd)
    res = fit(train, base, k=k, acceptance=args.acceptance, holdout=holdout, fixed=fixed,
              loss=args.loss, f_scale=args.f_scale, seed=args.seed, scan=parse_scan(args.scan),
              pair_weight=args.pair_weight, replicates=args.replicates)  # fmt: skip
    prov = {
        "data": [str(p) for p in args.results],
        "command": command_line(args),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "acceptance": "from results' accept_length"
        if any(c.accept_length for c in train)
        else args.acceptance,
        "method_filter": args.method,
        "train_spec_tokens": train_ks,
        "holdout_spec_tokens": ho_ks,
    }
    profile = res.profile.model_copy(update={"provenance": {**base.provenance, **prov}})
    profile = with_domain_acceptance(profile, args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(profile.to_yaml(), encoding="utf-8")
    sys.stdout.write(
        "fitted: " + ", ".join(f"{n}={res.theta[i]:.5g}" for i, n in enumerate(COST_PARAMS)) + "\n"
    )
    _print_errors("train", res.train)
    if res.holdout:
        _print_errors("hold-out", res.holdout)
    sys.stdout.write(f"wrote {out}\n")
    return 0
