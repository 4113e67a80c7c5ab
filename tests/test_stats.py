"""specsweep.stats: reference values (scipy, hand-computed fixtures) and hypothesis invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep import stats

finite = st.floats(min_value=0.1, max_value=1e6, allow_nan=False, allow_infinity=False)


def test_percentile_is_numpy_linear() -> None:
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert stats.percentile([10, 20], 99) == pytest.approx(19.9)


def test_bootstrap_matches_scipy_percentile_method() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    x = rng.lognormal(3, 0.5, size=200)
    lo, hi = stats.bootstrap_ci(x, np.mean, n_resamples=4000, seed=1)
    ref = scipy_stats.bootstrap(
        (x,), np.mean, n_resamples=4000, method="percentile", random_state=2
    ).confidence_interval
    # different resampling streams: the bounds agree to within Monte Carlo error
    width = ref.high - ref.low
    assert abs(lo - ref.low) < 0.08 * width and abs(hi - ref.high) < 0.08 * width


def test_bootstrap_of_p99_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(5)
    x = rng.exponential(100, size=500)
    p99 = lambda a, axis=-1: np.percentile(a, 99, axis=axis)  # noqa: E731
    lo, hi = stats.bootstrap_ci(x, lambda a: float(np.percentile(a, 99)), n_resamples=3000, seed=4)
    ref = scipy_stats.bootstrap(
        (x,), p99, n_resamples=3000, method="percentile", random_state=9
    ).confidence_interval
    width = ref.high - ref.low
    assert abs(lo - ref.low) < 0.15 * width and abs(hi - ref.high) < 0.15 * width


def test_bootstrap_single_value_and_empty() -> None:
    assert stats.bootstrap_ci([7.0]) == (7.0, 7.0)
    with pytest.raises(ValueError):
        stats.bootstrap_ci([])


def test_ratio_ci_covers_true_ratio() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(110, 5, size=300)
    b = rng.normal(100, 5, size=300)
    lo, hi = stats.bootstrap_ratio_ci(a, b, seed=0)
    assert lo < 0.10 < hi
    assert lo > 0.08 and hi < 0.12


def test_effect_direction() -> None:
    assert stats.effect_of(110, 100, True) == pytest.approx(0.10)
    assert stats.effect_of(90, 100, False) == pytest.approx(100 / 90 - 1)  # lower latency favours a
    with pytest.raises(ValueError):
        stats.effect_of(0, 1, True)


def test_single_run_verdicts_against_the_default_floor() -> None:
    # reference data: chat_standard c=64 (0.89%) is a tie; chat_short c=1 (9.20% for st=5) is a win for b
    v = stats.verdict_single(15680.46, 15542.80, higher_is_better=True)
    assert v.verdict == "tie" and round(v.gain * 100, 2) == 0.89
    v = stats.verdict_single(1002.30, 1094.51, higher_is_better=True)
    assert v.verdict == "b" and round(v.gain * 100, 2) == 9.20
    assert v.ci_low < v.effect < v.ci_high < 0
    # exactly symmetric in log space: +x% for a and the mirrored -x% for b get the same verdict
    assert stats.verdict_single(105.1, 100, higher_is_better=True).verdict == "a"
    assert stats.verdict_single(100, 105.1, higher_is_better=True).verdict == "b"
    assert stats.verdict_single(104.9, 100, higher_is_better=True).verdict == "tie"


def test_min_effect_turns_small_significant_wins_into_ties() -> None:
    r = stats.decide(0.03, (0.01, 0.05), min_effect=0.0)
    assert r.verdict == "a"
    assert stats.decide(0.03, (0.01, 0.05), min_effect=0.05).verdict == "tie"


def test_verdict_from_repeats() -> None:
    a = [100.0, 101.0, 99.5, 100.5]
    b = [90.0, 91.0, 89.0, 90.5]
    r = stats.verdict_repeats(a, b, higher_is_better=True)
    assert r.verdict == "a" and r.ci_low > 0
    r = stats.verdict_repeats([100.0, 120.0, 80.0], [101.0, 79.0, 119.0], higher_is_better=True)
    assert r.verdict == "tie"


def test_noise_floor_fixtures() -> None:
    # hand-computed: |15680.46/15225.66 - 1| = 2.99%, |15542.80/14942.17 - 1| = 4.02%
    f = stats.noise_floor_from_pairs([(15680.46, 15225.66), (15542.80, 14942.17)])
    assert f == pytest.approx(15542.80 / 14942.17 - 1)
    assert stats.noise_floor_from_pairs([]) is None
    assert stats.noise_floor_from_repeats([[100.0, 102.0, 101.0], [50.0]]) == pytest.approx(0.02)


def test_log_interp_crossing() -> None:
    # halfway in log space between 64 and 256 is 128
    assert stats.log_interp_crossing(64, -1.0, 256, 1.0) == pytest.approx(128)
    assert stats.log_interp_crossing(64, 0.0, 96, 0.0) == pytest.approx(math.sqrt(64 * 96))


def test_loo_residual() -> None:
    xs = [0.0, 1.0, 2.0, 3.0]
    ys = [0.0, 1.0, 5.0, 3.0]
    assert stats.loo_residual(xs, ys, 2) == pytest.approx(3.0)
    assert stats.loo_residual(xs, [0.0, 1.0, 2.0, 3.0], 1) == pytest.approx(0.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=2, max_size=40))
def test_bootstrap_interval_invariants(xs: list[float]) -> None:
    lo, hi = stats.bootstrap_ci(xs, n_resamples=200, seed=1)
    assert min(xs) - 1e-9 <= lo <= hi <= max(xs) + 1e-9
    # the same seed gives the same interval (reports are reproducible)
    assert stats.bootstrap_ci(xs, n_resamples=200, seed=1) == (lo, hi)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=1, max_size=50))
def test_percentiles_ordered(xs: list[float]) -> None:
    p50, p90, p99 = (stats.percentile(xs, q) for q in (50, 90, 99))
    assert min(xs) <= p50 <= p90 <= p99 <= max(xs)
    assert stats.percentile(list(reversed(xs)), 90) == p90


@settings(max_examples=100, deadline=None)
@given(finite, finite, st.floats(min_value=0.0, max_value=0.3), st.booleans())
def test_verdict_antisymmetric(a: float, b: float, floor: float, hib: bool) -> None:
    v1 = stats.verdict_single(a, b, higher_is_better=hib, floor=floor)
    v2 = stats.verdict_single(b, a, higher_is_better=hib, floor=floor)
    assert {v1.verdict, v2.verdict} in ({"tie"}, {"a", "b"})
    assert v1.gain == pytest.approx(v2.gain, rel=1e-9)
    assert v1.ci_low <= v1.effect <= v1.ci_high
    assert (v1.verdict == "tie") == (v1.ci_low <= 0 <= v1.ci_high or v1.effect == 0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=-0.5, max_value=3.0), min_size=1, max_size=20))
def test_geo_mean_between_min_and_max(es: list[float]) -> None:
    g = stats.geo_mean_effect(es)
    assert min(es) - 1e-9 <= g <= max(es) + 1e-9


def test_vectorized_bootstrap_equals_the_per_resample_loop() -> None:
    """numpy statistics are applied to all resamples at once; any other callable one resample at a
    time. Both must give the same interval for the same seed."""
    import numpy as np

    from specsweep.stats import bootstrap_ci, bootstrap_ratio_ci

    rng = np.random.default_rng(3)
    a, b = rng.gamma(2.0, 10.0, 200), rng.gamma(2.0, 11.0, 150)
    for stat in (np.mean, np.median):
        looped = lambda v, f=stat: f(v)  # noqa: E731 - not in the vectorized set
        fast, slow = bootstrap_ci(a, stat, seed=5), bootstrap_ci(a, looped, seed=5)
        assert fast == pytest.approx(slow, rel=1e-12, abs=1e-12)
        assert bootstrap_ratio_ci(a, b, stat, seed=5) == pytest.approx(
            bootstrap_ratio_ci(a, b, looped, seed=5), rel=1e-12, abs=1e-12
        )
