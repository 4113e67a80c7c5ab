"""The adaptive design's second generation (specsweep.design.race / race_plan): short first looks,
run length chosen per cell, at most two launches per config; driven in virtual time."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from specsweep.design import race, race_plan
from specsweep.design.schedule import plan_next
from specsweep.design.types import DesignState, Observation, Point
from specsweep.experiment.adaptive import DesignSettings

POINTS: list[Point] = [("chat", c) for c in (1, 8, 32, 64, 96, 128)]
LABELS = ["A", "B", "C"]
LAUNCH = dict.fromkeys(LABELS, 300.0)
RACE = DesignSettings(race=True, budget_fraction=None)


def replay(
    truth: Callable[[str, Point], float], noise: float = 0.02, seed: int = 0, settings: DesignSettings = RACE,
    launch_sd: float = 0.0, bias: Callable[[str, Point], float] = lambda c, p: 0.0,
) -> tuple[list[DesignState], list[Observation]]:  # fmt: skip
    """Each run: truth x exp(N(0, noise) + its launch's level + bias(c, p) x g(length)), 100 s a full run."""
    rng = np.random.default_rng(seed)
    obs: list[Observation] = []
    states = [plan_next(obs, LABELS, POINTS, settings, LAUNCH)]
    count: Counter[tuple[str, Point]] = Counter()
    while states[-1].next is not None:
        batch = states[-1].next
        for la in batch.launches:
            level = rng.normal(0.0, launch_sd)
            for i, p in enumerate(la.runs):
                f = la.length(i)
                v = truth(la.label, p) * math.exp(
                    rng.normal(0.0, noise) + level + bias(la.label, p) * race.g(f)
                )
                obs.append(
                    Observation(la.label, p, count[(la.label, p)], batch.round, len(obs), v, 100.0 * f, f)
                )
                count[(la.label, p)] += 1
        states.append(plan_next(obs, LABELS, POINTS, settings, LAUNCH))
    return states, obs


def test_run_length_is_whole_waves_and_never_a_single_burst() -> None:
    assert race.run_prompts(0.125, 32, 1, 2) == 4  # an eighth of 32 waves
    assert race.run_prompts(0.125, 512, 64, 2) == 128  # an eighth is one wave: two waves
    assert race.run_prompts(0.125, 64, 64, 2) == 64  # never more than the reference
    assert race.run_prompts(0.3, 1024, 128, 2) == 256  # 2.4 waves -> 2
    assert race.g(1.0) == 0.0 and race.g(0.125) == pytest.approx(1.0) and race.g(0.0625) > 2


def test_the_shortest_run_is_at_steady_state_by_the_reports_own_rule() -> None:
    """The design's shortest run is the steady-state minimum of waves (measure.steady.MIN_WAVES,
    what the report checks every run against), not two waves: an eighth of an 8-wave cell is three
    waves, which the report's rule calls steady."""
    from specsweep.measure import steady

    s = DesignSettings()
    assert s.min_waves == steady.MIN_WAVES
    n = race.run_prompts(s.short_fraction, 768, 96, s.min_waves)
    assert n == 3 * 96
    assert steady.is_steady(steady.waves(n, 96), 0.9)
    assert not steady.is_steady(steady.waves(2 * 96, 96), 0.9)


def test_the_bias_is_not_measured_where_the_later_runs_are_as_short_as_look_0() -> None:
    """Later runs of look 0's own length tell nothing of the short runs' bias (it cancels): the
    measurement stands aside and the prior stays. Their lever was 0 up to rounding (the mean of equal
    lengths off in the last bit), and the spread divided by it read as a bias of 10^15, which made
    every verdict of the grid undecided."""
    rng = np.random.default_rng(3)
    obs: list[Observation] = []
    s = replace(RACE, request_sd=0.0)
    for c in ("A", "B"):
        for p in POINTS:
            y0 = rng.normal(0, 0.02) + (rng.normal(0, 0.1) if c == "A" else 0.0)  # far off, cell by cell
            obs.append(Observation(c, p, 0, 0, len(obs), 1000.0 * math.exp(y0), 37.5, 0.375))
            for i in range(3):
                v = 1000.0 * math.exp(rng.normal(0, 0.02))
                obs.append(Observation(c, p, 1 + i, 1, len(obs), v, 37.5, 0.375))  # 3 waves of 8
    a = race_plan.assess(obs, ["A", "B"], POINTS, s)
    assert a.noise.bias == pytest.approx(race_plan.prior_bias(s))


def test_look_0_is_a_short_run_of_every_config_in_every_cell() -> None:
    s = plan_next([], LABELS, POINTS, RACE, LAUNCH)
    assert s.next is not None and s.next.round == 0
    assert [la.label for la in s.next.launches] == LABELS
    for la in s.next.launches:
        assert la.runs == tuple(POINTS) and la.lengths == (RACE.short_fraction,) * len(POINTS)


@pytest.mark.parametrize("cap", [2, 3])
def test_a_config_far_behind_at_look_0_gets_nothing_more_and_each_config_launches_at_most_its_cap(
    cap: int,
) -> None:
    s = replace(RACE, launches=cap)
    states, obs = replay(lambda c, p: 300.0 if c == "C" else 1000.0 * (1.1 if c == "A" else 1.0), settings=s)
    assert all(o.label != "C" for o in obs if o.round >= 1)  # C: a third of the others, out at look 0
    launches = Counter(lab for lab, _r in {(o.label, o.round) for o in obs})
    assert max(launches.values()) <= cap and states[-1].next is None
    cells = {c.point: c for c in states[-1].cells}
    assert all(c.leader == "A" for c in cells.values())
    assert sum(c.status == "decided" for c in cells.values()) >= 5  # 10% gaps at 2% noise


def test_later_runs_length_follows_the_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quiet runs and loud launch levels: the relaunch's runs are short (the launch dominates anyway);
    a strong short-run bias: longer runs, where the relaunch's time allows 3 of them (here: two
    passes' time; at the default half pass only the shortest fit MIN_RUNS)."""
    monkeypatch.setattr(race_plan, "RELAUNCH_PASS", 2.0)
    quiet = DesignSettings(race=True, budget_fraction=None, launch_sd=0.03, short_bias=0.0)
    biased = DesignSettings(race=True, budget_fraction=None, launch_sd=0.005, short_bias=0.10)
    lengths = {}
    for name, s in (("quiet", quiet), ("biased", biased)):
        states, _obs = replay(lambda c, p: 1000.0 * (1.03 if c == "A" else 1.0), settings=s)
        nxt = states[1].next
        assert nxt is not None and nxt.round == 1
        lengths[name] = max(f for la in nxt.launches for f in la.lengths)
    assert lengths["quiet"] < lengths["biased"]


def test_the_best_weight_splits_launch_noise_and_avoids_bias() -> None:
    w, v = race.best_weight(0.01, 0.01, 1.0, 0.0, 0.0)  # launch-dominated, no bias: half and half
    assert w == pytest.approx(0.5) and v == pytest.approx(0.005)
    w2, _v = race.best_weight(0.01, 0.01, 1.0, 0.0, 0.2)  # a large short-run bias: the long runs
    assert w2 == pytest.approx(0.1)  # argmin of 0.01 w^2 + 0.01 (1 - w)^2 + 0.08 w^2


def test_launch_noise_and_bias_widen_look_0() -> None:
    a = race.Side((math.log(1.3),), 0.125, (), 1.0)
    b = race.Side((0.0,), 0.125, (), 1.0)
    p_plain = race.look0(a, b, DesignSettings(launch_sd=0.0), 0.0).p
    p_launch = race.look0(a, b, DesignSettings(launch_sd=0.05), 0.0).p
    p_bias = race.look0(a, b, DesignSettings(launch_sd=0.0), 0.05).p
    assert p_plain < p_launch and p_plain < p_bias


def test_a_bias_larger_than_the_prior_is_measured_from_short_against_long_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(race_plan, "RELAUNCH_PASS", 2.0)  # time for longer runs: a lever on the bias
    rng = np.random.default_rng(1)
    beta = {(c, p): rng.normal(0.0, 0.2) for c in LABELS for p in POINTS}
    # as this world, with a bias prior that makes the relaunch's runs longer than the short look's
    s = DesignSettings(race=True, budget_fraction=None, launch_sd=0.005, request_sd=0.0, short_bias=0.1)
    _states, obs = replay(
        lambda c, p: 1000.0, noise=0.005, settings=s, bias=lambda c, p: beta[(c, p)], seed=2
    )
    assert {o.length for o in obs if o.round == 1} != {s.short_fraction}  # longer runs: a lever on the bias
    a = race_plan.assess(obs, LABELS, POINTS, s)
    assert a.noise.bias > race_plan.prior_bias(s) * 1.5  # the world: 0.2, the prior 0.07


@pytest.mark.parametrize("launch_sd", [0.0, 0.03])
def test_equal_configs_rarely_name_a_winner(launch_sd: float) -> None:
    wins = 0
    for seed in range(40):
        states, _obs = replay(lambda c, p: 1000.0, noise=0.05, seed=seed, launch_sd=launch_sd,
                              settings=DesignSettings(race=True, budget_fraction=None, launch_sd=0.03))  # fmt: skip
        wins += any(ps.winner for c in states[-1].cells for ps in c.pairs)
    assert wins <= 6  # 5% a replay (one family); 40 replays: 2 expected, 6 is beyond 3 SE


def test_costs_count_full_length_runs_for_the_baseline() -> None:
    states, obs = replay(lambda c, p: 1000.0)
    s = states[-1]
    # the baseline: 3 x (a full run, 100 s, of every config and cell + a launch per config)
    assert s.baseline_s == pytest.approx(3 * (100.0 * len(POINTS) * 3 + 900.0))
    launches = {(o.label, o.round) for o in obs}
    assert s.spent_s == pytest.approx(sum(o.cost_s for o in obs) + 300.0 * len(launches))
    assert s.spent_s < 0.5 * s.baseline_s


def _short_pass(values: dict[tuple[str, Point], float]) -> list[Observation]:
    return [Observation(c, p, 0, 0, i, v, 12.5, 0.125) for i, ((c, p), v) in enumerate(values.items())]


def test_a_short_run_far_off_its_pairs_other_cells_decides_nothing_at_look_0() -> None:
    """One heavy-tailed short run (A reads half its value at chat c=1) is held for the later looks;
    a gap every cell shows is decided at look 0 as before."""
    rng = np.random.default_rng(3)
    vals = {(c, p): 1000.0 * math.exp(rng.normal(0.0, 0.02)) * (0.3 if c == "C" else 1.0)
            for c in LABELS for p in POINTS}  # fmt: skip
    vals[("A", POINTS[0])] *= 0.5
    a = race_plan.assess(_short_pass(vals), LABELS, POINTS, RACE)
    k = (POINTS[0], "A", "B")
    assert a.held == {k, (POINTS[0], "A", "C")}
    assert a.pairs[k].looks[0].p == 1.0 and k not in a.winner  # no decision from the one far-off run
    assert a.pairs[(POINTS[0], "B", "C")].looks[0].p < 1e-6 and a.winner[(POINTS[0], "B", "C")] == "B"
    assert "A" in a.contenders[POINTS[0]]  # still in the cell: the relaunch judges it
    vals[("A", POINTS[0])] *= 2.0
    assert not race_plan.assess(_short_pass(vals), LABELS, POINTS, RACE).held


def test_each_launchs_runs_enter_by_a_huber_estimate() -> None:
    assert race.huber([0.0, 0.01, -0.01, 0.5], 0.05) == pytest.approx(0.0, abs=0.03)  # the mean: 0.125
    assert race.huber([0.0, 0.5], 0.05) == pytest.approx(0.25)  # two runs: nothing to tell, the mean
    s = race.Side((0.0,), 0.125, (0.0, 0.02, 0.6, 0.1, 0.12), (0.125,) * 5, (1, 1, 1, 2, 2))
    assert s.center(0.05) == pytest.approx(0.6 * race.huber([0.0, 0.02, 0.6], 0.05) + 0.4 * 0.11)
    assert s.launch_share == pytest.approx(0.6**2 + 0.4**2)  # two launches: less launch variance
    assert race.Side((), 1.0, (0.0, 0.0)).launch_share == 1.0


def test_a_short_run_that_disagrees_with_the_later_runs_is_left_out_at_look_1() -> None:
    s = DesignSettings(race=True, launch_sd=0.01, request_sd=0.0)
    b = race.Side((0.0,), 0.125, (0.0, 0.0, 0.0), (0.125,) * 3)
    noise = (0.02, 40.0)
    for y0, used in ((0.02, True), (0.6, False)):
        a = race.Side((y0,), 0.125, (0.01, 0.01, 0.01), (0.125,) * 3)
        lk = race.look1(a, b, noise, noise, s, 0.0)
        assert (lk.d == pytest.approx(0.01)) is not used  # left out: the later runs' difference alone
        held = race.look1(a, b, noise, noise, s, 0.0, use_short=False)
        assert held.d == pytest.approx(0.01)


def test_the_third_launch_goes_to_open_cells_that_could_still_be_decided() -> None:
    """A 6% gap at 3% noise and 3% launch levels: open after the relaunch, relaunched a third time;
    all-equal configs: hopeless cells are left (futile), so the third launch costs less there."""
    s = DesignSettings(race=True, budget_fraction=None, launches=3)
    states, obs = replay(lambda c, p: 1000.0 * (1.06 if c == "A" else 1.0), noise=0.03, settings=s, seed=4)
    assert max(o.round for o in obs) == 2
    r2 = [o for o in obs if o.round == 2]
    assert {o.label for o in r2} <= {"A", "B", "C"} and r2
    assert all(ps.n_a <= 1 + 2 * s.max_repeats for c in states[-1].cells for ps in c.pairs)
    eq_states, eq_obs = replay(lambda c, p: 1000.0, noise=0.03, settings=s, seed=4)
    futile = [c for c in eq_states[-1].cells if c.stopped_by == "futile"]
    assert futile and len({o.point for o in eq_obs if o.round == 2}) < len(POINTS)
    two = replace(s, launches=2)
    _st2, obs2 = replay(lambda c, p: 1000.0 * (1.06 if c == "A" else 1.0), noise=0.03, settings=two, seed=4)
    assert max(o.round for o in obs2) == 1


def test_equivalence_splits_its_level_over_the_later_looks() -> None:
    lk1 = race.RaceLook(1, 0.0, 0.01, 50.0, 1.0, 0.01)
    lk2 = race.RaceLook(2, 0.0, 0.01, 50.0, 1.0, 0.01)
    three = race.RacePair((POINTS[0], "A", "B"), (lk1, lk2), 5, 5, race.SHARES[3])
    sh = race.SHARES[3]
    assert three.p_eq_seq == pytest.approx(
        0.01 * sum(sh[1:]) / sh[1]
    )  # look 1's part of the later looks' share
    two = race.RacePair((POINTS[0], "A", "B"), (lk1,), 5, 5, race.SHARES[2])
    assert two.p_eq_seq == pytest.approx(0.01)


def test_the_launch_cap_is_an_adaptive_key_of_2_or_3() -> None:
    from specsweep.errors import ConfigError
    from specsweep.experiment.adaptive import AdaptiveOptions

    assert AdaptiveOptions().settings().launches == 2
    assert AdaptiveOptions.model_validate({"race": True, "launches": 2}).settings().launches == 2
    with pytest.raises((ValueError, ConfigError), match="launches"):
        AdaptiveOptions.model_validate({"launches": 4})


def test_a_calibrated_launch_sd_carries_its_df_into_each_verdict() -> None:
    """launch_df (a calibration's launches - 1): the launch part of a look's variance is an estimate,
    so its df fall from inf (look 0) or the run noise's (look 1), and the p value grows."""
    a = race.Side((0.25,), 0.125, (0.1, 0.12, 0.11), (0.125,) * 3)
    b = race.Side((0.0,), 0.125, (0.0, 0.01, -0.01), (0.125,) * 3)
    known = DesignSettings(race=True, launch_sd=0.03)
    est = replace(known, launch_df=3.0)
    assert race.look0(a, b, known, 0.0).df == math.inf
    assert (
        race.look0(a, b, est, 0.0).df < 1e4 and race.look0(a, b, est, 0.0).p > race.look0(a, b, known, 0.0).p
    )
    n = (0.02, 40.0)
    lk_known, lk_est = race.look1(a, b, n, n, known, 0.0), race.look1(a, b, n, n, est, 0.0)
    assert lk_est.df < lk_known.df and lk_est.p > lk_known.p
    assert lk_est.se == pytest.approx(lk_known.se)  # the same variance, less sure of it
    assert race.satterthwaite(1.0, 0.0, 0.0, 5.0) == math.inf  # no launch part: nothing estimated


def test_the_relaunch_shares_its_time_by_the_neyman_rule() -> None:
    """Round 1's runs take RELAUNCH_PASS of one full pass of the open cells; a cheap cell gets more
    runs than a dear one (time ~ sqrt(run cost)); a cell whose share is under MIN_RUNS runs gets
    MIN_RUNS (a Huber estimate's least), the others share what is left."""
    dear, cheap = POINTS[0], POINTS[1:]
    full = {p: 800.0 if p == dear else 50.0 for p in POINTS}
    obs = [Observation(c, p, 0, 0, i, 1000.0, full[p] * 0.125, 0.125)
           for i, (c, p) in enumerate((c, p) for c in ("A", "B") for p in POINTS)]  # fmt: skip
    a = race_plan.assess(obs, ["A", "B"], POINTS, RACE)
    costs = race_plan.FullCosts(obs, {"A": 300.0, "B": 300.0})
    plan = race_plan.allocate(a, POINTS, RACE, costs)
    assert plan[dear] == (0.125, race_plan.MIN_RUNS)  # its Neyman share: 2.3 runs
    assert all(plan[p][1] > race_plan.MIN_RUNS for p in cheap)
    spent = sum(f * k * 2 * full[p] for p, (f, k) in plan.items())
    assert spent <= race_plan.RELAUNCH_PASS * 2 * sum(full.values()) + 1e-6
    assert race_plan.allocate(a, [], RACE, costs) == {}


def test_the_bias_is_measured_from_the_relaunch_alone() -> None:
    """A third launch in some cells only, with its own level: the short-minus-long differences would
    carry that level in those cells and read it as bias; measured on the relaunch alone, they do not."""
    rng = np.random.default_rng(5)
    obs: list[Observation] = []
    s = replace(RACE, launches=3, request_sd=0.0, short_bias=0.0)
    for c in ("A", "B"):
        for p in POINTS:
            obs.append(
                Observation(c, p, 0, 0, len(obs), 1000.0 * math.exp(rng.normal(0, 0.002)), 12.5, 0.125)
            )
            for r in (1, 1, 2, 2):
                lvl = 0.3 if (c == "A" and r == 2) else 0.0  # A's third launch reads 35% high
                if r == 2 and p not in POINTS[:3]:
                    continue  # the third launch in half the cells
                v = 1000.0 * math.exp(rng.normal(0, 0.002) + lvl)
                obs.append(Observation(c, p, 1, r, len(obs), v, 25.0, 0.25))
    a = race_plan.assess(obs, ["A", "B"], POINTS, s)
    assert a.noise.bias < 0.01


def test_only_runs_that_enter_by_the_huber_estimate_pay_its_variance() -> None:
    """A launch's 2 runs enter by their mean (nothing to tell an outlier by): no Huber factor on
    their variance; 3 or more: HUBER_VAR."""
    assert race.Side((0.0,), 0.125, (0.0, 0.1)).huber_factor == 1.0
    assert race.Side((0.0,), 0.125, (0.0, 0.1, 0.2)).huber_factor == pytest.approx(race.HUBER_VAR)
    mixed = race.Side((0.0,), 0.125, (0.0, 0.1, 0.2, 0.3, 0.4), (0.125,) * 5, (1, 1, 1, 2, 2))
    assert mixed.huber_factor == pytest.approx((3 * race.HUBER_VAR + 2) / 5)
    two = race.Side((0.0,), 0.125, (0.0, 0.1), (0.125,) * 2)
    s = DesignSettings(race=True, launch_sd=0.0, request_sd=0.0)
    assert race.components(two, two, 0.05, 0.05, s)[1] == pytest.approx(2 * 0.05**2 / 2)
