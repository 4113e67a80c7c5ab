"""The launch as the unit of evidence (specsweep.stats.launch, docs/statistics.md "Launches and
sessions"): each rule of the launch noise, the sessions and the drift bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specsweep.stats.compare import compare
from specsweep.stats.launch import (
    ASSUMED,
    DEFAULT_LAUNCH_NOISE,
    LaunchPrior,
    fit_launches,
    launch_share,
)
from specsweep.stats.noise import fit


def _grid(rng: np.random.Generator, tau: float, sw: float, launches: int, cells: int = 12, per: int = 1,
          gap: float = 0.0) -> tuple[list[str], list[tuple[str, int]], np.ndarray, list[str]]:  # fmt: skip
    cfg, cel, y, lau = [], [], [], []
    for c in "ab":
        for k in range(launches):
            u = rng.normal(0.0, tau)
            for x in range(cells):
                for _ in range(per):
                    cfg.append(c)
                    cel.append(("s", x))
                    lau.append(f"{c}{k}")
                    y.append(0.1 * x + u + (gap if c == "a" else 0.0) + rng.normal(0.0, sw))
    return cfg, cel, np.array(y), lau


def test_launch_share_counts_launches_not_runs() -> None:
    assert launch_share(["x", "y", "z"]) == pytest.approx(1 / 3)
    assert launch_share(["x", "x", "x"]) == 1.0
    assert launch_share(["x", "x", "y", "y"]) == pytest.approx(0.5)


def test_measured_launch_noise_matches_the_launch_levels() -> None:
    rng = np.random.default_rng(0)
    taus = []
    for _ in range(30):
        cfg, cel, y, lau = _grid(rng, 0.03, 0.01, launches=4)
        lf = fit_launches(cfg, cel, y, lau)
        assert lf.source in ("measured", "measured+floor") and lf.df == 6.0 and not lf.failed
        taus.append(lf.var)
    assert math.sqrt(float(np.mean(taus))) == pytest.approx(0.03, rel=0.25)


def test_one_launch_a_config_takes_the_prior_assumed_or_calibrated() -> None:
    rng = np.random.default_rng(1)
    cfg, cel, y, lau = _grid(rng, 0.03, 0.01, launches=1, per=3)
    lf = fit_launches(cfg, cel, y, lau)
    assert (lf.tau, lf.source, lf.df) == (DEFAULT_LAUNCH_NOISE, "assumed", math.inf)
    cal = LaunchPrior(0.015, 9.0, "calibrated", "sim@host")
    lf = fit_launches(cfg, cel, y, lau, cal)
    assert (lf.tau, lf.source, lf.df) == (0.015, "calibrated", 9.0)


def test_a_calibration_is_pooled_with_the_measured_noise_as_a_prior() -> None:
    rng = np.random.default_rng(2)
    cfg, cel, y, lau = _grid(rng, 0.03, 0.01, launches=3)
    meas = fit_launches(cfg, cel, y, lau)
    cal = LaunchPrior(0.01, 8.0, "calibrated", "k")
    both = fit_launches(cfg, cel, y, lau, cal)
    df_m = sum(c.df_tau for c in meas.configs.values())  # the calibration replaces the floor
    tau2_m = sum(c.df_tau * c.tau2 for c in meas.configs.values()) / df_m
    assert both.source == "measured+calibrated" and both.df == df_m + 8.0
    assert both.var == pytest.approx((df_m * tau2_m + 8.0 * 0.01**2) / both.df)


def test_a_failed_fit_falls_back_on_at_least_the_prior_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import specsweep.stats.launch as sl

    def boom(*_a: object) -> tuple[float, float, bool]:
        raise np.linalg.LinAlgError("singular")

    monkeypatch.setattr(sl, "_mixedlm", boom)
    rng = np.random.default_rng(3)
    cfg, cel, y, lau = _grid(rng, 0.0, 0.01, launches=3)
    lf = fit_launches(cfg, cel, y, lau)
    assert lf.failed == ("a", "b") and lf.tau >= ASSUMED.sd and lf.source == "assumed"


def test_launch_levels_widen_a_comparison_and_count_its_df_in_launches() -> None:
    rng = np.random.default_rng(4)
    cfg, cel, y, lau = _grid(rng, 0.03, 0.01, launches=3)
    old = compare(fit(cfg, cel, y), ("a", ("s", 0)), ("b", ("s", 0)))
    new = compare(fit(cfg, cel, y, launches=lau), ("a", ("s", 0)), ("b", ("s", 0)))
    assert old is not None and new is not None
    assert new.launch_var > 0 and new.shared_var >= new.launch_var
    assert new.df < 20 < old.df  # counted in launches (4 launch df), not in runs (2 x 12 x 2)


def test_equal_configs_with_launch_levels_keep_the_level() -> None:
    """Each launch its own level (sd 3%), 2% run noise, 3 launches a side: the per-cell false-winner
    rate at 5%; the old rule (runs as the unit) names far more."""
    rng = np.random.default_rng(5)
    new_hits = old_hits = total = 0
    for _ in range(150):
        cfg, cel, y, lau = _grid(rng, 0.03, 0.02, launches=3, cells=6)
        rounds = [int(x[1:]) for x in lau]  # interleaved: launch k of each config is round k
        pos = np.argsort(np.argsort([r * 100 + i for i, r in enumerate(rounds)])).astype(float)
        order = {
            "pos": pos,
            "rounds": rounds,
            "domain": ["run"] * len(y),
            "block_domains": frozenset({"run"}),
        }
        m_new, m_old = fit(cfg, cel, y, launches=lau, **order), fit(cfg, cel, y, **order)  # type: ignore[arg-type]
        for x in range(6):
            tn = compare(m_new, ("a", ("s", x)), ("b", ("s", x)))
            to = compare(m_old, ("a", ("s", x)), ("b", ("s", x)))
            assert tn is not None and to is not None
            new_hits += tn.p_value <= 0.05
            old_hits += to.p_value <= 0.05
            total += 1
    assert new_hits / total <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 150)  # grids share their launches
    assert old_hits / total > 0.09, old_hits / total  # round levels took half the launch noise out


def test_unlinked_sessions_carry_a_between_session_term_and_an_anchor_links_them() -> None:
    rng = np.random.default_rng(6)
    cfg, cel, y, lau = _grid(rng, 0.0, 0.01, launches=1, per=3)
    ses = ["s1" if c == "a" else "s2" for c in cfg]
    t = compare(fit(cfg, cel, y, launches=lau, sessions=ses), ("a", ("s", 0)), ("b", ("s", 0)))
    assert t is not None and t.unanchored and t.session_var == pytest.approx(2 * DEFAULT_LAUNCH_NOISE**2)
    # an anchor: config a measured in both sessions (here: its cell 0 again in s2)
    cfg2, cel2 = [*cfg, "a", "a"], [*cel, ("s", 0), ("s", 0)]
    y2 = np.concatenate([y, y[:2]])
    lau2, ses2 = [*lau, "a-again", "a-again"], [*ses, "s2", "s2"]
    m = fit(cfg2, cel2, y2, launches=lau2, sessions=ses2)
    t2 = compare(m, ("a", ("s", 1)), ("b", ("s", 1)))
    assert t2 is not None and not t2.unanchored
    assert m.session_links["s1"] == m.session_links["s2"]


def test_the_between_session_allowance_carries_the_calibrations_df() -> None:
    """The allowance is the launch noise scaled: with a calibration of 10 launches (9 df) it is an
    estimate, and the comparison's df are the calibration's, not a known variance's (counted as
    known, a host 5% slower for the second of two files named a winner in 8.0% of all-equal grids)."""
    rng = np.random.default_rng(6)
    cfg, cel, y, lau = _grid(rng, 0.0, 0.01, launches=1, per=5)
    ses = ["s1" if c == "a" else "s2" for c in cfg]
    cal = LaunchPrior(0.03, 9.0, "calibrated", "sim@host")
    t = compare(
        fit(cfg, cel, y, launches=lau, sessions=ses, launch_prior=cal), ("a", ("s", 0)), ("b", ("s", 0))
    )
    assert t is not None and t.unanchored and t.session_var == pytest.approx(2 * 0.03**2)
    assert t.df < 10.0 and t.shared_df < 10.0, (t.df, t.shared_df)


def test_a_step_between_sessions_is_not_a_winner_without_an_anchor() -> None:
    """The host 5% slower in the second session, equal configs each measured in one: no winner at
    the per-cell level beyond 5% + 2 SE."""
    rng = np.random.default_rng(7)
    hits = total = 0
    for _ in range(100):
        cfg, cel, y, lau = _grid(rng, 0.0, 0.02, launches=1, per=3, cells=6)
        y = y - np.where(np.array(cfg) == "b", math.log(1.05), 0.0)
        ses = ["s1" if c == "a" else "s2" for c in cfg]
        m = fit(cfg, cel, y, launches=lau, sessions=ses)
        for x in range(6):
            t = compare(m, ("a", ("s", x)), ("b", ("s", x)))
            assert t is not None
            hits += t.p_value <= 0.05
            total += 1
    assert hits / total <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 100)


def _blocked(seed: int, drift: float = 0.0, order: str = "blocked") -> tuple[list[str], list[tuple[str, int]], np.ndarray, np.ndarray]:  # fmt: skip
    """18 cells x 2 configs x 5 repeats, 2% noise; blocked: each config's repeats back to back."""
    rng = np.random.default_rng(seed)
    runs = [(c, x, r) for c in "ab" for x in range(18) for r in range(5)]
    if order == "interleaved":
        runs = [(c, x, r) for r in range(5) for c in ("ab" if r % 2 == 0 else "ba") for x in range(18)]
    n = len(runs)
    y = np.array([0.1 * x + drift * i / n + rng.normal(0, 0.02) for i, (_c, x, _r) in enumerate(runs)])
    return [c for c, _x, _r in runs], [("s", x) for _c, x, _r in runs], y, np.arange(n, dtype=float)


def test_a_drift_drawn_far_beyond_its_repeats_is_refused() -> None:
    """Seed 150 of clean blocked grids (1 in 100 of them) fits a 58% "drift" from the slopes of
    repeats four runs apart, drawn over 180 runs: it was found and taken out, turning every interval
    into a near-certain tie. Now it is refused: not found, not taken out, and kept for the report."""
    cfg, cel, y, pos = _blocked(150)
    m = fit(cfg, cel, y, pos=pos, domain=["d"] * len(y))
    assert not any(d.found for d in m.drift)
    (r,) = m.refused
    assert math.expm1(r.size) > 0.3 and r.lever == 4.0 and r.span == 180.0
    t = compare(m, ("a", ("s", 0)), ("b", ("s", 0)))
    assert t is not None and t.se < 0.05  # the interval is the noise's, not a refused drift's


def test_a_real_drift_in_interleaved_rounds_is_still_found() -> None:
    cfg, cel, y, pos = _blocked(1, drift=math.log(1.05), order="interleaved")
    m = fit(cfg, cel, y, pos=pos, domain=["d"] * len(y))
    assert any(d.found for d in m.drift) and not m.refused


def test_launch_levels_in_interleaved_rounds_are_not_taken_for_a_line() -> None:
    """Interleaved rounds, one launch per config a round, launch sd 3%: beside the round levels, a
    line is measured only by where each launch sits inside its round, i.e. by the launch levels. It
    used to be "found" (p ~ 1e-28), taken out, and the launch noise then fitted at about 4x the
    truth. With launches modelled, the rounds' levels are the drift and the launch noise is right;
    and the round levels are tested against the launch noise too: launch levels alone are not a
    drift of the host (it was "found" in about 4 grids of 5)."""
    rng = np.random.default_rng(8)
    taus, lines, found = [], 0, 0
    for _ in range(30):
        cfg, cel, y, lau = _grid(rng, 0.03, 0.02, launches=3, cells=18)
        rounds = [int(x[1:]) for x in lau]
        first = {0: "a", 1: "b", 2: "a"}  # the order alternates round by round
        key = [
            r * 1000 + (0 if c == first[r] else 500) + i
            for i, (c, r) in enumerate(zip(cfg, rounds, strict=True))
        ]
        pos = np.argsort(np.argsort(key)).astype(float)
        m = fit(cfg, cel, y, launches=lau, pos=pos, rounds=rounds, domain=["run"] * len(y),
                block_domains=frozenset({"run"}))  # fmt: skip
        assert m.launch is not None and m.launch.source in ("measured", "measured+floor")
        taus.append(m.launch.var)
        lines += any(d.per_run != 0.0 for d in m.drift)
        found += any(d.found for d in m.drift)
    assert lines == 0 and found <= 4, found
    assert math.sqrt(float(np.mean(taus))) == pytest.approx(0.03, rel=0.3)


def test_a_drift_across_interleaved_rounds_is_still_found_beside_launch_levels() -> None:
    rng = np.random.default_rng(9)
    cfg, cel, y, lau = _grid(rng, 0.01, 0.02, launches=5, cells=18)
    rounds = [int(x[1:]) for x in lau]
    y = y - 0.03 * np.array(rounds)  # the host 3% slower each round
    m = fit(cfg, cel, y, launches=lau, pos=np.arange(len(y), dtype=float), rounds=rounds,
            domain=["run"] * len(y), block_domains=frozenset({"run"}))  # fmt: skip
    assert [d.found for d in m.drift] == [True]


def test_a_launch_fit_on_the_boundary_keeps_the_assumed_noise_as_a_floor() -> None:
    """3 launches a config whose levels happen to agree: REML puts the launch variance at 0. With
    nothing calibrated, the assumed 2% is a floor (a 0 made the gain interval cover 91% with a 1%
    launch sd, 5 rounds); its df stay the launches' own (4)."""
    rng = np.random.default_rng(13)  # both configs' fits on the boundary (about 1 seed in 4)
    cfg, cel, y, lau = _grid(rng, 0.0, 0.02, launches=3, cells=18)
    lf = fit_launches(cfg, cel, y, lau)
    assert all(c.tau2 < 1e-9 for c in lf.configs.values())  # the fit itself lands on the boundary
    assert (lf.source, lf.df, lf.tau) == ("measured+floor", 4.0, DEFAULT_LAUNCH_NOISE)


def test_a_measured_launch_noise_above_the_assumed_one_is_not_pulled_toward_it() -> None:
    """Launch sd 3%, 3 launches a config: the launch noise is what the launches measure, not pooled
    with the assumed 2% (pooled as a 2-df prior, it pulled a measured 3% toward 2% and the gain
    interval covered 91.8%, 3 rounds; docs/statistics.md)."""
    rng = np.random.default_rng(5)
    for _ in range(10):
        cfg, cel, y, lau = _grid(rng, 0.03, 0.02, launches=3, cells=18)
        lf = fit_launches(cfg, cel, y, lau)
        good = list(lf.configs.values())
        tau2_m = sum(c.df_tau * c.tau2 for c in good) / sum(c.df_tau for c in good)
        assert lf.df == 4.0
        if tau2_m > DEFAULT_LAUNCH_NOISE**2:
            assert (lf.source, lf.tau) == ("measured", pytest.approx(math.sqrt(tau2_m)))
        else:
            assert (lf.source, lf.tau) == ("measured+floor", DEFAULT_LAUNCH_NOISE)
