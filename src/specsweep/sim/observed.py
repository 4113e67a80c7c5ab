"""The results ``sim fit`` and calibration learn from: benchmark result rows reduced to
:class:`ObservedCell` (scenario, concurrency, k, observed metrics, spec acceptance), and the acceptance
each implies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specsweep.errors import DataError, UsageError
from specsweep.sim.profile import parse_acceptance
from specsweep.workload.scenarios import BUILTIN, Scenario, default_num_prompts

METRICS = ("total_throughput", "mean_tpot_ms", "mean_ttft_ms")
_ALIASES = {"total_throughput": ("total_throughput", "total_token_throughput")}
_K_KEYS = ("spec_tokens", "num_speculative_tokens", "spec_num_tokens", "draft_max", "k")


@dataclass
class ObservedCell:
    """One observed result row (a benchmark cell), reduced to what the fit and calibration need."""

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


def rows_to_cells(
    rows: Iterable[dict[str, Any]], scenarios: dict[str, Scenario] | None = None
) -> list[ObservedCell]:
    catalog = {**BUILTIN, **(scenarios or {})}
    cells: list[ObservedCell] = []
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
            ObservedCell(
                scenario=catalog[str(name)], concurrency=conc, k=row_k(row), num_prompts=int(n),
                method=row.get("method"), obs=obs, accept_length=float(acc) if acc else None,
                label=str(row.get("label") or ""),
                mean_in=float(tin) / done if tin else None, mean_out=float(tout) / done if tout else None,
                accept_per_pos=[float(x) for x in per_pos] if isinstance(per_pos, list) and per_pos else None,
            )
        )  # fmt: skip
    return cells


def load_cells(paths: Sequence[str | Path]) -> list[ObservedCell]:
    from specsweep.store.run_dir import find_run_dirs

    cells: list[ObservedCell] = []
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


def survival_for(cell: ObservedCell, prior: str | None) -> list[float]:
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
