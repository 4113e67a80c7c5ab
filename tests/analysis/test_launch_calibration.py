"""A reduced run of benchmarks/launch_calibration.py (issue 35): grids as `specsweep run` and
`specsweep import` leave them, through the report's own functions. The control row's and a
launch-level row's A/A rate stay near their level (generous bounds: a few dozen grids), power at a
true 10% gap holds with plain noise, and imported files of two configs are marked unanchored."""

from __future__ import annotations

from types import ModuleType

import pytest
from tests.benchmark_module import load_benchmark

pytestmark = pytest.mark.slow  # ~5-10 s: 60 grids through the report's verdicts


@pytest.fixture(scope="module")
def calib() -> ModuleType:
    return load_benchmark("launch_calibration")


def _shape(calib: ModuleType, name: str, path: str = "native") -> object:
    return next(s for s in calib.shapes() if s.name.startswith(name) and s.path == path)


def test_control_and_launch_levels_keep_their_level(calib: ModuleType) -> None:
    which = [_shape(calib, "plain noise"), _shape(calib, "each launch its own level, sd 3%")]
    control, launch = calib.run(24, 1, 3, 1, which=which, repeats=(3,))
    assert control.aa_grids == 24 and control.any_winner <= 0.25, control
    assert control.power[0.10] >= 0.7, control.power  # one grid of 18 cells at a true 10% gap
    assert launch.any_winner <= 0.3, launch
    assert launch.cover >= 0.75, launch


def test_imported_files_of_two_configs_are_unanchored(calib: ModuleType) -> None:
    (row,) = calib.run(6, 1, 4, 1, which=[_shape(calib, "host 5% slower", "imported")], repeats=(3,))
    assert row.unanchored == 1.0 and row.below == 0, row
    assert "yes (unanchored)" in calib.markdown([row], "cmd")


def test_only_runs_the_shapes_named_and_says_so(
    calib: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert calib.main(["--grids", "2", "--power-grids", "1", "--procs", "1", "--repeats", "1",
                       "--only", "native | one launch per config (blocked), launch sd 3%, calibrated"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "--only 'native | one launch per config (blocked), launch sd 3%, calibrated' --repeats 1" in out
    assert out.count("| native |") == 1 and "unanchored" not in out.split("|---|")[-1]
    with pytest.raises(SystemExit):
        calib.main(["--only", "no such shape"])
