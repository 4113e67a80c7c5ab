import os
import signal
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

# A shell that starts the tests in the background (`cmd &`, nohup, some CI runners) leaves SIGINT
# ignored, and an ignored signal stays ignored in every child: the Ctrl-C tests would then test
# nothing (the grid never sees the signal). Give this process Python's handler; children started
# from it get the default disposition, as under a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
