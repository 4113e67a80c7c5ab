"""Shipped profiles: they load, say where they come from, and meet their calibration targets.

The targets (docs/simulator.md) are computed here from the shipped profiles and the reference CSV
(src/specsweep/data/reference/seed-results.csv, shipped with the package), with the
real engine, replaying each run's realised mean lengths - the same scoring as
scripts/fit_reference_profiles.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specsweep.errors import ConfigError, UsageError
from specsweep.sim.profile import list_profiles, load_profile

SHIPPED = ("toy", "v4flash-dspark-st3", "v4flash-dspark-st5", "v4flash-eagle", "v4flash-nospec")


def test_shipped_profiles_load() -> None:
    assert set(SHIPPED) <= set(list_profiles())
    for name in SHIPPED:
        p = load_profile(name)
        assert p.name == name
        assert len(p.survival) == p.k
    assert load_profile("v4flash-dspark-st3").k == 3
    assert load_profile("v4flash-dspark-st5").k == 5
    eagle = load_profile("v4flash-eagle")
    assert eagle.spec_method == "eagle" and eagle.k == 3 and eagle.draft_steps == 3
    nospec = load_profile("v4flash-nospec")
    assert nospec.k == 0 and nospec.spec_method is None


@pytest.mark.parametrize("name", [n for n in SHIPPED if n != "toy"])
def test_fitted_profiles_record_provenance_and_errors(name: str) -> None:
    p = load_profile(name)
    prov = p.provenance
    assert prov["command"].startswith("specsweep sim fit ")
    assert prov["date"] and "seed-results.csv" in prov["data"][0]
    assert prov["script"] == "python3 scripts/fit_reference_profiles.py"
    assert set(p.fit["train_median_abs_err_pct"]) == {"total_throughput", "mean_tpot_ms", "mean_ttft_ms"}
    # the two DSpark profiles (and nospec) share one fitted cost model
    if name.startswith("v4flash-dspark") or name == "v4flash-nospec":
        ref = load_profile("v4flash-dspark-st3")
        assert p.cost_vector() == ref.cost_vector()
        assert p.admit_delay_steps == ref.admit_delay_steps and p.prefill_chunk == ref.prefill_chunk


def test_load_by_path_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(load_profile("toy").model_copy(update={"name": "mine"}).to_yaml(), encoding="utf-8")
    assert load_profile(str(path)).name == "mine"
    with pytest.raises(UsageError, match="toy"):
        load_profile("no-such-profile")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nk: 2\nsurvival: [0.5]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="survival"):
        load_profile(str(bad))
    bad.write_text("name: x\nk: 2\nsurvival: [0.5, 0.7]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="non-increasing"):
        load_profile(str(bad))


@pytest.fixture(scope="module")
def scored(request: pytest.FixtureRequest) -> dict[str, list[dict[str, Any]]]:
    ref = request.getfixturevalue("reference_dir")
    from specsweep.sim.calibration import score
    from specsweep.sim.reference import reference_rows

    rows = reference_rows(ref / "seed-results.csv")
    labels = {
        "v4flash-dspark-st3": "dspark-st3",
        "v4flash-dspark-st5": "dspark-st5",
        "v4flash-eagle": "eagle",
    }
    return {
        name: score(load_profile(name), [r for r in rows if r["label"] == lab])
        for name, lab in labels.items()
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["v4flash-dspark-st3", "v4flash-dspark-st5"])
def test_dspark_in_sample_error_targets(scored: dict[str, list[dict[str, Any]]], name: str) -> None:
    from specsweep.sim.calibration import median_abs_pct

    s = scored[name]
    assert len(s) == 18
    assert median_abs_pct(s, "total_throughput") <= 8.0
    assert median_abs_pct(s, "mean_tpot_ms") <= 8.0
    # the fit's own (linear) figures are what the engine gives
    stored = load_profile(name).fit["train"]
    mine = {(r["scenario"], r["concurrency"]): r for r in s}
    for r in stored:
        if r["k"] == load_profile(name).k:
            got = mine[(r["scenario"], r["concurrency"])]["total_throughput"]["pred"]
            assert got == pytest.approx(r["total_throughput"]["pred"], rel=1e-3)


@pytest.mark.slow
def test_eagle_error_is_what_the_docs_say(scored: dict[str, list[dict[str, Any]]]) -> None:
    from specsweep.sim.calibration import median_abs_pct

    # EAGLE misses the 8% target (docs/simulator.md says why); guard against it getting worse
    assert median_abs_pct(scored["v4flash-eagle"], "total_throughput") <= 20.0
    assert median_abs_pct(scored["v4flash-eagle"], "mean_tpot_ms") <= 16.0


@pytest.mark.slow
def test_winner_targets(scored: dict[str, list[dict[str, Any]]]) -> None:
    from specsweep.sim.calibration import best_of, winners

    w = winners(scored["v4flash-dspark-st3"], scored["v4flash-dspark-st5"])
    assert w["cells"] == 18 and w["agree"] >= 14, w
    best = best_of(scored["v4flash-dspark-st3"], scored["v4flash-dspark-st5"])
    we = winners(best, scored["v4flash-eagle"])
    assert we == {"cells": 18, "agree": 18, "miss": []}
