"""The client's modules do not import the library entry point (no bench.py <-> client/ cycle)."""

from __future__ import annotations

import subprocess
import sys


def test_client_modules_do_not_import_bench() -> None:
    code = (
        "import sys, specsweep.client.runner, specsweep.client.multiworker, specsweep.client.result, "
        "specsweep.client.selfcheck, specsweep.client.transport; "
        "assert 'specsweep.client.bench' not in sys.modules, sorted(m for m in sys.modules if m.startswith('specsweep'))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
