"""A reduced run of benchmarks/adaptive_design.py (the reference grid replayed in virtual time): its
costs are counted as documented, and the design decides the grid's large gaps for the right config."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from specsweep.adaptive.types import DesignSettings


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "adaptive_design.py"
    spec = importlib.util.spec_from_file_location("adaptive_design", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_reference_grid_and_its_costs(bench: ModuleType) -> None:
    g = bench.reference_grid()
    assert len(g.points) == 18 and len(g.truth) == 54 and len(g.cost) == 54
    runs = sum(g.cost.values())
    assert bench.baseline_cost(g, 300.0) == pytest.approx(3 * runs + 9 * 300.0)  # 3 rounds, 3 launches each
    assert bench.baseline_cost(g, 300.0, "blocked") == pytest.approx(3 * runs + 3 * 300.0)
    # the first pass is a third of the interleaved baseline, whatever a launch costs
    assert bench.first_pass_cost(g, 900.0) / bench.baseline_cost(g, 900.0) == pytest.approx(1 / 3)


def test_a_few_replays_decide_the_large_gaps_within_the_budget(bench: ModuleType) -> None:
    g = bench.reference_grid()
    row = bench.measure(g, bench.Noise("log-normal 3%", 0.03), 300.0, 3, 0, DesignSettings())
    assert row.floor == pytest.approx(1 / 3)
    budget = DesignSettings().budget_fraction or 1.0
    assert row.floor < row.cost_mean <= budget + 1e-9 and row.cost_p95 <= budget + 1e-9  # the default budget
    assert row.right >= 0.95 and row.wrong == 0.0  # gaps of 10% or more, at 3% noise
    assert row.n_big == 3 * 44  # 36 EAGLE pairs and 8 st=3 / st=5 cells per replay
