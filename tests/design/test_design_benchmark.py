"""A reduced run of benchmarks/adaptive_design.py (the reference grid replayed in virtual time): its
costs are counted as documented, and the design decides the grid's large gaps for the right config."""

from __future__ import annotations

import math
from collections import Counter
from types import ModuleType

import pytest
from tests.benchmark_module import load_benchmark

from specsweep.experiment.adaptive import DesignSettings


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("adaptive_design")


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


def test_the_replay_draws_launch_levels_and_short_run_bias(bench: ModuleType) -> None:
    import numpy as np

    g = bench.reference_grid()
    noise = bench.Noise("n", 0.0, launch_sd=0.03, bias=0.04, request_sd=0.0)
    w = bench.World(g, noise, np.random.default_rng(0), 1.0)
    p = g.points[0]
    lab = bench.LABELS[0]
    truth = g.truth[(lab, p)]
    # one launch: one level shared by its runs; another launch: another level
    assert w.value(lab, p, 0.0, 0) == pytest.approx(w.value(lab, p, 0.0, 0))
    assert w.value(lab, p, 0.0, 0) != pytest.approx(w.value(lab, p, 0.0, 1))
    full, short = w.value(lab, p, 0.0, 0, 1.0), w.value(lab, p, 0.0, 0, 0.125)
    assert full / truth == pytest.approx(math.exp(w.levels[lab][0]))  # a full run has no length bias
    assert short / full == pytest.approx(math.exp(w.beta[(lab, p)]))  # an eighth: its bias, once
    # an eighth of a c=64 cell's 8 waves is one wave: run as three (the steady-state minimum)
    assert bench.length_of(("x", 64), 0.125, bench.RACE) == pytest.approx(0.375)


def test_racing_costs_come_from_its_parts_and_decide_the_large_gaps(bench: ModuleType) -> None:
    """Two launches a config (the default cap), launch_sd from a simulated calibration. Every run is
    at least three waves (the steady-state minimum): 27.7% at 300 s launches (issue 36's target:
    25%; with two-wave looks it was 24.0%) and 20.1% at 60 s (target 15%; 15.4% with two-wave looks),
    still under a first pass of full runs (33.3%); the third launch, for cells still open that could
    be decided, costs more (35.9% at 300 s: over a first pass) and varies."""
    g = bench.reference_grid()
    noise = bench.Noise("5%, launches 1%", 0.05, launch_sd=0.01)
    two = bench.measure(g, noise, 300.0, 3, 0, bench.RACE, bench.CALIBRATION_LAUNCHES)
    assert bench.measure(g, noise, 60.0, 2, 0, bench.RACE, bench.CALIBRATION_LAUNCHES).cost_mean <= 0.21
    assert two.cost_p95 <= 0.30 and two.cost_mean <= 0.28  # issue 36's p95 target; the mean's is 25%
    assert two.cost_mean == pytest.approx(sum(two.parts))  # look 0 + launches + later runs
    assert two.parts[1] == pytest.approx(5 * 300.0 / bench.baseline_cost(g, 300.0))  # 3 + 2 launches
    three = bench.measure(g, noise, 300.0, 3, 0, bench.RACE3, bench.CALIBRATION_LAUNCHES)
    assert three.cost_mean == pytest.approx(sum(three.parts)) and three.cost_mean > two.cost_mean
    assert three.parts[1] == pytest.approx(7 * 300.0 / bench.baseline_cost(g, 300.0))  # + the 2 DSpark
    assert two.cost_mean < two.floor < three.cost_mean  # two launches: under a first pass of full runs
    for row in (two, three):
        assert row.right >= 0.9 and row.wrong == 0.0
    assert (two.design, three.design) == ("racing, 2 launches", "racing, 3 launches")


def test_racing_holds_its_level_on_t3_tails_with_launch_levels(bench: ModuleType) -> None:
    """All-equal grids with Student-t(3) run noise and 3% launch levels: the robust rules (a far-off
    short run held at look 0, Huber per launch, a disagreeing short run left out) name a winner in
    at most one of these replays per family, the unit the level is kept in (before them, 16% of
    replays named one)."""
    g = bench.reference_grid().aa()
    noise = bench.Noise("t3", 0.05, "t3", launch_sd=0.03)
    rng = __import__("numpy").random.default_rng(1)
    base = bench.baseline_cost(bench.reference_grid(), 300.0)
    wins: Counter[str] = Counter()
    for _ in range(6):
        state, _obs = bench.replay_design(bench.World(g, noise, rng, base), bench.RACE, 300.0)
        wins.update({bench.RACE.family(ps.a, ps.b) for c in state.cells for ps in c.pairs if ps.winner})
    assert max(wins.values(), default=0) <= 1


def test_a_simulated_calibration_gives_the_racing_design_its_launch_sd_and_df(bench: ModuleType) -> None:
    import numpy as np

    noise = bench.Noise("n", 0.05, launch_sd=0.03)
    rng = np.random.default_rng(0)
    sds = [bench.calibrated(bench.RACE, noise, 10, rng) for _ in range(400)]
    assert all(s.launch_df == 9.0 for s in sds)
    assert np.mean([s.launch_sd**2 for s in sds]) == pytest.approx(0.03**2, rel=0.1)  # unbiased for tau^2
    assert len({s.launch_sd for s in sds}) == 400  # drawn anew each replay
    assert bench.calibrated(bench.RACE, noise, 0, rng) == bench.RACE  # 0: the prior as it is
    assert bench.calibrated(bench.DEFAULT, noise, 10, rng) == bench.DEFAULT  # the first generation: none


def test_the_short_run_bias_is_short_minus_full_on_the_same_prompts() -> None:
    """benchmarks/short_bias.py: at the reference length itself a pair's bias is exactly 0 (the same
    prompts both ways); at the racing design's shortest run it is not."""
    sb = load_benchmark("short_bias")
    full = DesignSettings(race=True, short_fraction=1.0)
    f, bias = sb.cell_bias("chat_short", 8, 2, full)
    assert f == 1.0 and all(m == 0.0 and se == 0.0 for m, se in bias.values())
    f, bias = sb.cell_bias("chat_short", 8, 2, DesignSettings(race=True))
    assert f == pytest.approx(3 / 16) and any(m != 0.0 for m, _se in bias.values())
