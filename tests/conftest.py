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


TIMING_HELP = (
    "timing: asserts on wall-clock measurements that hold only while nothing else competes for the"
    " CPU (client stamps, sim server schedules, real engines beside the client); scripts/test.sh runs"
    " these alone, serially, before the rest runs on pytest-xdist workers"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", TIMING_HELP)


@pytest.hookimpl(tryfirst=True)  # before -m deselects and xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers derived from others, and how the tests spread over pytest-xdist workers.

    - ``engine`` and ``browser`` tests are ``slow`` too: plain ``pytest`` (the quick tier,
      ``-m "not slow"`` in pyproject.toml) leaves them out; ``scripts/test.sh`` runs everything.
    - ``engine`` tests are ``timing`` too: a real engine and the client share the machine's cores,
      and what the cells measure (and whether the client's self-check accepts them) depends on it.
    - A module whose tests share a module-scoped fixture (a server, a browser, a run) keeps them on
      one worker (``xdist_group``, with ``--dist loadgroup``), so the fixture is set up once.
    - Each test's tier (timing / engine / browser / parallel) is a junit property:
      scripts/test_durations.py splits the suite's time by it.
    """
    grouping = config.pluginmanager.hasplugin("xdist")  # its marker; absent under -p no:xdist
    for item in items:
        if item.get_closest_marker("engine") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("engine"):
            item.add_marker(pytest.mark.timing)
        if grouping and not item.get_closest_marker("xdist_group") and _uses_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        item.user_properties.append(("tier", _tier(item)))


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)  # pytest's FuncFixtureInfo; absent on non-function items
    defs = getattr(info, "name2fixturedefs", {}) or {}
    return any(d.scope in ("module", "package") for ds in defs.values() for d in ds)


def _tier(item: pytest.Item) -> str:
    for name in ("engine", "browser", "timing"):
        if item.get_closest_marker(name):
            return name
    return "parallel"


@pytest.fixture(autouse=True)
def _timing_runs_alone(request: pytest.FixtureRequest) -> None:
    """A ``timing`` test on an xdist worker would share the CPU with the other workers' tests and
    fail on load, not on code: it is skipped there, saying how it runs (scripts/test.sh does so)."""
    if os.environ.get("PYTEST_XDIST_WORKER") and request.node.get_closest_marker("timing"):
        pytest.skip("measures time: runs alone, not on xdist workers (scripts/test.sh: pytest -m timing)")
