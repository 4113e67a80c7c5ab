"""Per-cell figures a plan is built from: measured where the results hold the cell, else predicted by
the simulator (``specsweep.sim.predict``) with the profile that matches the config, marked as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from specsweep.analysis.data import Dataset
from specsweep.analysis.recommend import spec_tokens
from specsweep.errors import ConfigError, UsageError, one_of
from specsweep.sim.predict import predict_cell
from specsweep.sim.profile import Profile, list_profiles, load_profile
from specsweep.workload.scenarios import BUILTIN, Scenario

Source = Literal["measured", "simulated"]
# in-flight levels simulated between measured ones (about +-20% apart)
GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
FIGURE_KEYS = ("request_throughput", "total_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
               "p99_tpot_ms", "mean_e2e_latency_ms")  # fmt: skip


@dataclass(frozen=True)
class Figures:
    """One (config, scenario, concurrency) cell: request rate, tokens per request, latency tails."""

    request_throughput: float  # req/s
    tokens_per_request: float  # input + output tokens
    mean_ttft_ms: float
    p99_ttft_ms: float
    mean_tpot_ms: float
    p99_tpot_ms: float
    mean_e2e_ms: float
    source: Source


def _figures(row: dict[str, Any], source: Source) -> Figures | None:
    try:
        rt = float(row["request_throughput"])
        tt = float(row["total_throughput"])
        return Figures(rt, tt / rt, float(row["mean_ttft_ms"]), float(row["p99_ttft_ms"]),
                       float(row["mean_tpot_ms"]), float(row["p99_tpot_ms"]),
                       float(row["mean_e2e_latency_ms"]), source)  # fmt: skip
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def match_profile(method: str, params: dict[str, Any]) -> str | None:
    """The shipped simulator profile of the same speculative method and k, if exactly one matches
    (calibrated profiles - those with a recorded fit - first)."""
    k = spec_tokens(method, params)
    found = []
    for name in list_profiles():
        p = load_profile(name)
        if (p.spec_method or "").lower() == method.lower() and (k is None or p.k == k):
            found.append((name, bool(p.fit)))
    fitted = [n for n, f in found if f]
    for group in (fitted, [n for n, _ in found]):
        if len(group) == 1:
            return group[0]
    return None


class CellSource:
    """Figures per cell, cached; unmeasured cells simulated once each (seed fixed: reproducible)."""

    def __init__(self, ds: Dataset, profiles: dict[str, str] | None = None, seed: int = 0) -> None:
        self.ds = ds
        self.seed = seed
        self._cache: dict[tuple[str, str, int], Figures | None] = {}
        self._sim_cache: dict[tuple[str, str, int], Figures | None] = {}
        self._profiles: dict[str, Profile | None] = {}
        given = profiles or {}
        for lab in given:
            if lab not in ds.configs:
                raise ConfigError(f"profiles: {one_of(lab, ds.configs)}", path=f"profiles.{lab}")
        for lab, meta in ds.configs.items():
            name = given.get(lab) or match_profile(meta.method, meta.params)
            self._profiles[lab] = load_profile(name) if name else None

    def profile(self, label: str) -> Profile | None:
        return self._profiles.get(label)

    def profile_name(self, label: str) -> str | None:
        p = self._profiles.get(label)
        return p.name if p is not None else None

    def sim_error(self, label: str) -> float | None:
        """The profile's own fit error on total throughput (median |error|, a fraction), if recorded."""
        p = self._profiles.get(label)
        fit = p.fit if p is not None and isinstance(p.fit, dict) else {}
        err = (fit.get("train_median_abs_err_pct") or {}).get("total_throughput")
        return float(err) / 100 if isinstance(err, (int, float)) else None

    def scenario(self, name: str) -> Scenario:
        sc = self.ds.scenario_defs.get(name) or BUILTIN.get(name)
        if sc is None:
            raise UsageError(f"scenario {name!r} is neither built in nor defined in the results' manifests")
        return sc

    def measured_levels(self, label: str, scenario: str) -> list[int]:
        return sorted(c for (lab, s, c) in self.ds.cells if lab == label and s == scenario)

    def snap(self, label: str, scenarios: tuple[str, ...], c: float) -> int:
        """The level nearest ``c`` (in log) among the measured levels of these cells and :data:`GRID`:
        figures are looked up (or simulated) on that finite set of levels only."""
        levels = set(GRID)
        for s in scenarios:
            levels.update(self.measured_levels(label, s))
        x = max(c, 1.0)
        return min(sorted(levels), key=lambda lv: abs(math.log(lv / x)))

    def get(self, label: str, scenario: str, c: int) -> Figures | None:
        key = (label, scenario, c)
        if key not in self._cache:
            self._cache[key] = self._compute(label, scenario, c)
        return self._cache[key]

    def get_sim(self, label: str, scenario: str, c: int) -> Figures | None:
        """The simulator's figures for the cell, measured or not (None without a profile)."""
        key = (label, scenario, c)
        if key not in self._sim_cache:
            prof = self._profiles.get(label)
            row = predict_cell(prof, self.scenario(scenario), c, seed=self.seed) if prof else None
            self._sim_cache[key] = _figures(row, "simulated") if row else None
        return self._sim_cache[key]

    def _compute(self, label: str, scenario: str, c: int) -> Figures | None:
        cell = self.ds.get(label, scenario, c)
        if cell is not None and cell.ok:
            means = {k: cell.mean(k) for k in FIGURE_KEYS}
            f = _figures(means, "measured")
            if f is not None:
                return f
        return self.get_sim(label, scenario, c)
