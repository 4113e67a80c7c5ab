import os
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The reference data shipped in the repository (src/specsweep/data/reference); never skipped:
    a checkout without it is broken, and the tests say so."""
    d = REPO / "src" / "specsweep" / "data" / "reference"
    assert (d / "seed-results.csv").is_file(), f"reference data missing from the repository: {d}"
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that need a real engine or a browser are slow too: plain ``pytest`` (the quick tier,
    ``-m "not slow"`` in pyproject.toml) leaves them out; ``scripts/test.sh`` runs everything."""
    for item in items:
        if item.get_closest_marker("engine") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
