"""Every third-party module that src/ imports (at module level or inside a function) is declared
where a user gets it: deptry reads pyproject.toml, where the test extra counts as the tests' own
(a module declared only there but imported by src/ is an error, DEP004, as scipy was), and fails on
a missing (DEP001) or transitive-only (DEP003) dependency."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_deptry_is_clean() -> None:
    exe = shutil.which("deptry")
    assert exe, "deptry is in the test extra: pip install -e '.[test]'"
    p = subprocess.run([exe, "src"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
