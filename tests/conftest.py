import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    d = SHARED / "reference"
    if not (d / "seed-results.csv").is_file():
        pytest.skip(f"reference data not found at {d} (../shared/reference beside the checkout)")
    return d


@pytest.fixture
def specsweep_cmd() -> list[str]:
    return [sys.executable, "-m", "specsweep"]


os.environ.setdefault("PYTHONUNBUFFERED", "1")
