"""Issue 38, defect 9: the reaper read every sibling manifest whole; a sparse 1.5 GB manifest.json
made every ``run --results-dir`` take 1.6 GB. Now a manifest is read in pieces and at most
``MAX_MANIFEST_BYTES``; one larger is never parsed (and a run dir's own is refused, clearly)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specsweep.errors import DataError
from specsweep.store.inputs import MAX_MANIFEST_BYTES
from specsweep.store.run_dir import RunDir

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc"),
]
SIZE = 400 * 2**20  # sparse: no disk, but a whole read takes this much memory


def _planted(tmp_path: Path) -> Path:
    d = tmp_path / "results" / "planted"
    d.mkdir(parents=True)
    m = d / "manifest.json"
    with m.open("wb") as f:
        f.write(b'{"config": {}, "servers": {}, ')
        f.truncate(SIZE)
    return tmp_path / "results"


def test_a_huge_sibling_manifest_is_not_read_whole(tmp_path: Path) -> None:
    results = _planted(tmp_path)
    code = (  # VmHWM: this process's own peak (ru_maxrss keeps the forking pytest's across exec)
        "import re, sys\n"
        "from specsweep.servers.reap import reap_results_dir\n"
        "reap_results_dir(sys.argv[1])\n"
        "status = open('/proc/self/status').read()\n"
        "print(int(re.search(r'VmHWM:\\s+(\\d+)', status).group(1)) // 1024)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(results)], capture_output=True, text=True, timeout=60,
                       check=True, env={**os.environ})  # fmt: skip
    peak_mb = int(p.stdout.split()[-1])
    assert peak_mb < 200, f"peak RSS {peak_mb} MB reading a {SIZE >> 20} MB sparse manifest"


def test_a_run_dirs_own_huge_manifest_is_one_clear_error(tmp_path: Path) -> None:
    results = _planted(tmp_path)
    with pytest.raises(DataError, match=f"larger than {MAX_MANIFEST_BYTES:,} bytes"):
        _ = RunDir.open(results / "planted").manifest
