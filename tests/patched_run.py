"""`specsweep run` in a subprocess through a small script that patches the library first (a report
that fails, a module gone missing, a signal in the report phase), the way the tests of the report
phase's failures drive it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml


def run_patched(
    tmp_path: Path, exp: dict[str, Any], script: str, timeout: float = 120
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Write ``exp`` and ``script`` under ``tmp_path`` and run ``script run EXP --results-dir ...
    --quiet``; the script ends in specsweep's CLI. Returns the process and the results folder."""
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    runner = tmp_path / "run.py"
    runner.write_text(script)
    results = tmp_path / "results"
    p = subprocess.run(
        [sys.executable, str(runner), "run", str(path), "--results-dir", str(results), "--quiet"],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    return p, results
