"""How scripts/test.sh splits the suite (tests/conftest.py): ``timing`` tests (and ``engine`` ones)
never run on an xdist worker, a module's shared fixture keeps its tests on one worker, and
scripts/test_durations.py reads the stages' junit files into the split CONTRIBUTING.md shows.

Each case runs a small suite with a copy of tests/conftest.py in a pytest subprocess, as CI does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DURATIONS = REPO / "scripts" / "test_durations.py"

pytestmark = pytest.mark.slow  # pytest subprocesses with workers: a few seconds

SUITE = """
import json, os, time
import pytest

LOG = os.environ["SPLIT_LOG"]

def note(kind, name):
    with open(LOG, "a") as f:
        f.write(json.dumps({"kind": kind, "name": name, "worker": os.environ.get("PYTEST_XDIST_WORKER", "-")}) + "\\n")
"""

SHARED = (
    SUITE
    + """
@pytest.fixture(scope="module")
def server():
    note("setup", "server")
    yield "url"

@pytest.mark.parametrize("i", range(6))
def test_uses_the_server(server, i):
    time.sleep(0.05)
    note("test", f"shared{i}")
"""
)

ALONE = (
    SUITE
    + """
@pytest.mark.parametrize("i", range(6))
def test_plain(i):
    time.sleep(0.05)
    note("test", f"plain{i}")

@pytest.mark.timing
def test_measures_time():
    note("test", "timing")

@pytest.mark.engine
def test_real_engine():
    note("test", "engine")
"""
)


Run = tuple[subprocess.CompletedProcess[str], list[dict[str, str]]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Run]]:
    """The small suite run as scripts/test.sh's two stages, and once more as `pytest -n 1 -m timing`."""
    suite = tmp_path_factory.mktemp("split")
    (suite / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    (suite / "test_shared.py").write_text(SHARED)
    (suite / "test_alone.py").write_text(ALONE)
    stages = {
        "timing": ("-m", "timing", "-p", "no:xdist"),
        "parallel": ("-m", "not timing", "-n", "2", "--dist", "loadgroup"),
        "timing_on_workers": ("-m", "timing", "-n", "1"),
    }
    return suite, {name: _pytest(suite, name, *args) for name, args in stages.items()}


def _pytest(suite: Path, name: str, *args: str) -> Run:
    log = suite / f"{name}.jsonl"
    # not this run's own xdist worker id (PYTEST_XDIST_WORKER) nor its options
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["SPLIT_LOG"] = str(log)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", f"--junitxml={name}.xml",
                        *args], cwd=suite, env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    lines = log.read_text().splitlines() if log.exists() else []
    return p, [json.loads(x) for x in lines]


def test_timing_tests_run_alone_and_never_on_workers(runs: tuple[Path, dict[str, Run]]) -> None:
    serial, ran = runs[1]["timing"]
    assert serial.returncode == 0, serial.stdout[-2000:]
    assert sorted(x["name"] for x in ran) == ["engine", "timing"]  # an engine test is a timing test
    assert {x["worker"] for x in ran} == {"-"}
    # on a worker (someone runs `pytest -n 4` with everything): skipped, saying how they run
    par, ran = runs[1]["timing_on_workers"]
    assert par.returncode == 0, par.stdout[-2000:]
    assert ran == []
    assert "2 skipped" in par.stdout and "measures time: runs alone" in par.stdout, par.stdout[-2000:]


def test_a_module_fixture_keeps_its_module_on_one_worker(runs: tuple[Path, dict[str, Run]]) -> None:
    p, ran = runs[1]["parallel"]
    assert p.returncode == 0, p.stdout[-2000:]
    shared = [x for x in ran if x["name"].startswith("shared")]
    setups = [x for x in ran if x["kind"] == "setup"]
    assert len(shared) == 6 and len(setups) == 1, ran  # the fixture was set up once
    assert {x["worker"] for x in shared} == {setups[0]["worker"]} != {"-"}
    plain = [x for x in ran if x["name"].startswith("plain")]
    assert len(plain) == 6 and len({x["worker"] for x in plain}) > 1  # the rest spreads


def test_durations_split_the_stages_by_tier(runs: tuple[Path, dict[str, Run]]) -> None:
    suite = runs[0]
    out = subprocess.run([sys.executable, str(DURATIONS), str(suite / "timing.xml"), str(suite / "parallel.xml")],
                         capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    assert "engine: 1," in rows["timing"] and "timing: 1," in rows["timing"] and "| 2 |" in rows["timing"]
    assert "parallel: 12," in rows["parallel"] and "| 12 |" in rows["parallel"]
    assert "| 14 |" in rows["all stages"]
    assert "slowest 10 tests" in out and "test_uses_the_server" in out
    # a one-stage run without tiers (an older checkout's `pytest --junitxml`), split by the same tiers
    plain = suite / "serial.xml"
    plain.write_text(
        '<testsuites><testsuite name="pytest" tests="3" time="9.0" timestamp="t" hostname="h">'
        '<testcase classname="test_alone" name="test_measures_time" time="1.5"/>'
        '<testcase classname="test_alone" name="test_plain[0]" time="2.0"/>'
        '<testcase classname="test_gone" name="test_old" time="4.0"/></testsuite></testsuites>'
    )
    args = [
        str(plain),
        "--tiers-from",
        str(suite / "timing.xml"),
        "--tiers-from",
        str(suite / "parallel.xml"),
    ]
    out = subprocess.run([sys.executable, str(DURATIONS), *args], capture_output=True, text=True, timeout=60,
                         check=True).stdout  # fmt: skip
    assert "| serial | t | 9.0 s | 3 | parallel: 1, 2 s; timing: 1, 2 s; untiered: 1, 4 s |" in out, out
