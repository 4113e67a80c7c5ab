"""specsweep.stats.basic: reference values (scipy, hand-computed fixtures) and hypothesis invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.stats import basic as stats

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


def test_single_runs_against_the_assumed_noise() -> None:
    # reference data, one run a side, assumed 3% run-to-run noise: z = log ratio / (sqrt(2) * 3%)
    t = stats.log_test_noise([15680.46], [15542.80], higher_is_better=True, sigma=0.03)
    assert t.method == "z_assumed_noise" and math.isinf(t.df)
    assert t.se == pytest.approx(math.sqrt(2) * 0.03)
    assert t.p_value == pytest.approx(
        2 * (1 - 0.5 * (1 + math.erf(abs(math.log(15680.46 / 15542.80)) / t.se / math.sqrt(2))))
    )
    assert t.p_value > 0.5  # 0.89% is nowhere near decidable
    # lower is better: the smaller latency favours a
    assert stats.log_test_noise([90.0], [100.0], higher_is_better=False, sigma=0.03).log_effect > 0
    with pytest.raises(ValueError, match="noise"):
        stats.log_test_noise([1.0], [1.0], higher_is_better=True, sigma=0.0)


def test_welch_t_on_logs_matches_scipy() -> None:
    from scipy import stats as sst

    a, b = [100.0, 101.0, 99.5, 100.5], [90.0, 91.0, 89.0, 90.5]
    t = stats.log_test_repeats(a, b, higher_is_better=True)
    ref = sst.ttest_ind(np.log(a), np.log(b), equal_var=False)
    assert t.p_value == pytest.approx(ref.pvalue) and t.log_effect > 0
    with pytest.raises(ValueError, match="2 runs"):
        stats.log_test_repeats([1.0], [1.0, 2.0], higher_is_better=True)


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
@given(finite, finite, st.floats(min_value=0.001, max_value=0.3), st.booleans())
def test_log_test_antisymmetric(a: float, b: float, sigma: float, hib: bool) -> None:
    t1 = stats.log_test_noise([a], [b], higher_is_better=hib, sigma=sigma)
    t2 = stats.log_test_noise([b], [a], higher_is_better=hib, sigma=sigma)
    assert t1.log_effect == pytest.approx(-t2.log_effect, abs=1e-12)
    assert t1.p_value == pytest.approx(t2.p_value, rel=1e-9)
    lo, hi = t1.interval(0.05)
    assert -1 < lo <= t1.effect <= hi
    assert (t1.p_value <= 0.05) == (not lo <= 0 <= hi) or abs(t1.p_value - 0.05) < 1e-9


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=-0.5, max_value=3.0), min_size=1, max_size=20))
def test_geo_mean_between_min_and_max(es: list[float]) -> None:
    g = stats.geo_mean_effect(es)
    assert min(es) - 1e-9 <= g <= max(es) + 1e-9


def test_vectorized_bootstrap_equals_the_per_resample_loop() -> None:
    """numpy statistics are applied to all resamples at once; any other callable one resample at a
    time. Both must give the same interval for the same seed."""
    import numpy as np

    from specsweep.stats.basic import bootstrap_ci, bootstrap_ratio_ci

    rng = np.random.default_rng(3)
    a, b = rng.gamma(2.0, 10.0, 200), rng.gamma(2.0, 11.0, 150)
    for stat in (np.mean, np.median):
        looped = lambda v, f=stat: f(v)  # noqa: E731 - not in the vectorized set
        fast, slow = bootstrap_ci(a, stat, seed=5), bootstrap_ci(a, looped, seed=5)
        assert fast == pytest.approx(slow, rel=1e-12, abs=1e-12)
        assert bootstrap_ratio_ci(a, b, stat, seed=5) == pytest.approx(
            bootstrap_ratio_ci(a, b, looped, seed=5), rel=1e-12, abs=1e-12
        )
