"""The adaptive design's rules and scheduler (specsweep.design.rules / schedule, specsweep.stats.sequential),
driven by a fake runner in virtual time: no wall clock, no server; every value is drawn from a seeded
generator and every cost is a number."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.design.costs import Costs, baseline
from specsweep.design.schedule import plan_next, target
from specsweep.design.types import DesignState, Observation, Point
from specsweep.experiment.adaptive import DesignSettings
from specsweep.stats.sequential import look_sizes, look_weights

POINTS: list[Point] = [("chat", c) for c in (1, 8, 32, 64, 96, 128)]
LABELS = ["A", "B", "C"]
LAUNCH = {lab: 300.0 for lab in LABELS}


def replay(
    truth: Callable[[str, Point], float],
    noise: float = 0.02,
    seed: int = 0,
    design: DesignSettings | None = None,
    cost: float = 30.0,
) -> tuple[list[DesignState], list[Observation]]:
    """The design in virtual time: each run's value is truth * exp(N(0, noise)), each costs ``cost``."""
    rng = np.random.default_rng(seed)
    s = design or DesignSettings(budget_fraction=None)
    obs: list[Observation] = []
    states = [plan_next(obs, LABELS, POINTS, s, LAUNCH)]
    count: Counter[tuple[str, Point]] = Counter()
    while states[-1].next is not None:
        batch = states[-1].next
        for la in batch.launches:
            for p in la.runs:
                v = truth(la.label, p) * math.exp(rng.normal(0.0, noise))
                obs.append(Observation(la.label, p, count[(la.label, p)], batch.round, len(obs), v, cost))
                count[(la.label, p)] += 1
        states.append(plan_next(obs, LABELS, POINTS, s, LAUNCH))
        assert len(states) < 20
    return states, obs


def clear(label: str, p: Point) -> float:
    """A beats B by 20% everywhere; C is a third of A (an EAGLE next to DSpark)."""
    return {"A": 1200.0, "B": 1000.0, "C": 400.0}[label] * p[1]


def test_look_schedule_is_fixed_and_spends_the_level_once() -> None:
    assert look_sizes(4) == (1, 2, 4) and look_sizes(2) == (1, 2) and look_sizes(1) == (1,)
    w = look_weights(4)
    assert w.sum() == pytest.approx(1.0) and w[3] == 0.0 and w[0] > 0 and w[4] > w[2] > w[1]
    s = DesignSettings()
    assert [target(n, s) for n in (1, 2, 3)] == [2, 4, 4]


def test_first_pass_then_the_clearly_behind_config_gets_no_more_runs() -> None:
    states, obs = replay(clear)
    first = states[0].next
    assert first is not None and first.round == 0
    assert [la.label for la in first.launches] == LABELS and all(
        la.runs == tuple(POINTS) for la in first.launches
    )
    # C is a third of A and B: decided behind from the first pass, on the assumed noise
    assert not [o for o in obs if o.label == "C" and o.round > 0]
    final = states[-1]
    assert final.next is None
    for cell in final.cells:
        assert cell.status == "decided" and cell.leader == "A" and cell.stopped_by == "decided"
        pairs = {(ps.a, ps.b): ps for ps in cell.pairs}
        assert pairs[("A", "B")].winner == "A" and pairs[("A", "C")].winner == "A"
        assert pairs[("A", "B")].ci_low > 0  # the interval it rests on excludes 0


def test_rounds_alternate_the_configs_and_run_a_configs_cells_in_one_launch() -> None:
    states, _obs = replay(clear)
    orders = [[la.label for la in s.next.launches] for s in states if s.next is not None and s.next.round > 0]
    assert orders and orders[0] == ["B", "A"]  # round 1 reverses round 0's order
    for s in states:
        if s.next is not None:
            labels = [la.label for la in s.next.launches]
            assert len(labels) == len(set(labels))  # one launch per config per round


def test_equal_configs_stop_without_a_winner() -> None:
    """A/A: every pair undecided or equivalent, never a winner; cells stop (futile or max_repeats)."""
    for seed in range(3):
        states, obs = replay(lambda lab, p: 1000.0 * p[1], seed=seed)
        final = states[-1]
        assert final.next is None
        assert not [ps for c in final.cells for ps in c.pairs if ps.winner]
        assert {c.stopped_by for c in final.cells} <= {"futile", "max_repeats", "equivalent"}
        assert max(Counter((o.label, o.point) for o in obs).values()) <= 4


@pytest.mark.parametrize("seed", [0, 1])
def test_an_undecided_cell_says_how_many_more_runs_would_decide_it(seed: int) -> None:
    """4% apart at c=1 with 4% noise: 4 runs a side cannot decide it; the cell says about how many more
    runs per config would decide a gap of the margin (or the observed one, if larger)."""
    gap = {1: 1.04}  # 4% apart at c=1, 20% elsewhere

    def truth(lab: str, p: Point) -> float:
        return (1000.0 * gap.get(p[1], 1.2) if lab == "A" else 1000.0) * (0.4 if lab == "C" else 1.0)

    states, _obs = replay(truth, noise=0.04, seed=seed)
    cell = next(c for c in states[-1].cells if c.point == ("chat", 1))
    ab = next(ps for ps in cell.pairs if (ps.a, ps.b) == ("A", "B"))
    assert cell.status == "undecided" and cell.stopped_by in ("futile", "max_repeats")
    assert ab.status == "undecided" and ab.more_runs is not None and ab.more_runs > 0
    assert ab.gap is not None and ab.gap >= 0.05


def test_the_budget_stops_the_design_and_says_so() -> None:
    s = DesignSettings(budget_fraction=None, budget_s=3 * 6 * 30 + 900 + 10)  # the first pass and no more
    states, obs = replay(lambda lab, p: 1000.0 * (1.03 if lab == "A" else 1.0) * p[1], design=s)
    assert {o.round for o in obs} == {0}
    final = states[-1]
    assert final.next is None and final.spent_s == pytest.approx(3 * 6 * 30 + 900)
    assert any(c.status == "budget" and c.stopped_by == "budget" for c in final.cells)


def test_costs_count_a_launch_per_config_per_round_and_the_baseline_is_three_interleaved_rounds() -> None:
    states, obs = replay(clear)
    launches = {(o.round, o.label) for o in obs}
    assert states[-1].spent_s == pytest.approx(30.0 * len(obs) + 300.0 * len(launches))
    c = Costs(obs, LAUNCH)
    assert baseline(LABELS, POINTS, c) == pytest.approx(3 * (3 * 6 * 30.0 + 3 * 300.0))
    assert states[-1].baseline_s == pytest.approx(3 * (3 * 6 * 30.0 + 3 * 300.0))


def test_the_rules_are_deterministic() -> None:
    _states, obs = replay(clear, seed=4)
    s = DesignSettings(budget_fraction=None)
    a = plan_next(obs[:60], LABELS, POINTS, s, LAUNCH)
    b = plan_next(list(obs[:60]), LABELS, POINTS, s, LAUNCH)
    assert a == b


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_a_decided_pair_stays_decided(seed: int) -> None:
    """BH over sequential p values that only fall: a pair decided after one round is decided after every
    later round, for the same winner."""
    states, _obs = replay(
        lambda lab, p: 1000.0 * {"A": 1.08, "B": 1.0, "C": 0.97}[lab] * p[1], noise=0.03, seed=seed
    )
    seen: dict[tuple[Point, str, str], str] = {}
    for s in states[1:]:
        for c in s.cells:
            for ps in c.pairs:
                k = (ps.point, ps.a, ps.b)
                if k in seen:
                    assert ps.winner == seen[k]
                elif ps.winner:
                    seen[k] = ps.winner
