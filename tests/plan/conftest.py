"""The reference data (seed-results.csv) imported as a results dir, through specsweep.sim.reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def reference_rows_() -> list[dict]:
    csv = find_reference_csv()
    assert csv is not None, "the shipped reference data (seed-results.csv) is missing"
    return reference_rows(csv)


@pytest.fixture(scope="session")
def reference_results(reference_rows_: list[dict], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_results_dir(reference_rows_, tmp_path_factory.mktemp("ref"))
