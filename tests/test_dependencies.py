"""Every third-party module that src/ imports (at module level or inside a function) is declared
where a user gets it: deptry reads pyproject.toml, where the test extra counts as the tests' own
(a module declared only there but imported by src/ is an error, DEP004, as scipy was), and fails on
a missing (DEP001) or transitive-only (DEP003) dependency."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_deptry_is_clean() -> None:
    exe = shutil.which("deptry")
    assert exe, "deptry is in the test extra: pip install -e '.[test]'"
    p = subprocess.run([exe, "src"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


def test_a_broken_install_is_one_error_not_a_traceback(tmp_path: Path) -> None:
    """A declared dependency gone missing (a broken environment) is named in one line, exit 2."""
    from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

    csv = find_reference_csv()
    assert csv is not None
    results = write_results_dir(reference_rows(csv), tmp_path / "results")  # two methods: verdicts need scipy
    script = tmp_path / "cli.py"
    script.write_text("import sys\nsys.modules['scipy'] = None\nfrom specsweep.cli import main\n"
                      "sys.exit(main(sys.argv[1:]))\n")  # fmt: skip
    p = subprocess.run([sys.executable, str(script), "report", str(results), "--kind", "compare"],
                       capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.count("error") == 1 and "'scipy'" in p.stderr, p.stderr
