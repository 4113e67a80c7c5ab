"""Issue 38, defect 9 (import): a 211 MB GuideLLM file took 1.52 GB RSS, a 174 MB vLLM file 1.88 GB:
result files were parsed whole, per-request detail and all. Now a document or line over
``reader.STREAM_AT`` is streamed without the detail the importers do not use, so memory does not
grow with the file; and each format has a bound on a file's size, one clear error beyond it.
Measured in a fresh process by VmHWM (ru_maxrss keeps the forking pytest's peak across exec)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from specsweep.errors import DataError
from specsweep.importers import ImportOptions, run_import
from specsweep.importers.common import SUMMARY_MAX

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
ROOT = Path(__file__).resolve().parents[2]
MB = 24  # about this many MB of file: the code before grew by ~90 MB reading it, now by under 10
CHILD = """
import re, sys
from pathlib import Path
from specsweep.importers import IMPORTERS, identity
from specsweep.importers.reader import read_objects
def status(key):
    return int(re.search(key + r':\\s+(\\d+)', open('/proc/self/status').read()).group(1)) // 1024
base = status('VmRSS')
n = 0
for loc in read_objects(Path(sys.argv[2])):  # what an import's first pass does with each result
    identity.digest(loc.obj)
    n += len(IMPORTERS[sys.argv[1]].to_rows(loc.obj, sys.argv[2], loc.line))
print(n, status('VmHWM') - base)
"""


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_memory", ROOT / "benchmarks" / "import_memory.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["vllm", "sglang", "guidellm"])
def test_reading_a_large_detailed_file_does_not_grow_with_it(tmp_path: Path, kind: str) -> None:
    gen = _generator()
    path = tmp_path / gen.FILE_NAMES[kind]
    gen.WRITERS[kind](path, int(MB * 1e6 / gen.PER_REQUEST[kind]))
    size_mb = path.stat().st_size / 2**20
    assert size_mb > 16
    p = subprocess.run([sys.executable, "-c", CHILD, kind, str(path)], capture_output=True, text=True,
                       timeout=100, check=True, env={**os.environ})  # fmt: skip
    rows, grew_mb = (int(x) for x in p.stdout.split()[-2:])
    assert rows == (2 if kind == "sglang" else 1)
    assert grew_mb < 30, f"reading a {size_mb:.0f} MB {kind} file grew RSS by {grew_mb} MB"


def test_a_summary_format_over_its_bound_is_one_clear_error(tmp_path: Path) -> None:
    big = tmp_path / "x_summary.json"
    with big.open("wb") as f:  # sparse: no disk, and never read
        f.write(b'{"results_ttft_s_mean": 0.1, "x": "')
        f.truncate(SUMMARY_MAX + 1)
    with pytest.raises(DataError) as e:
        run_import("llmperf", [big], tmp_path / "res", ImportOptions(label="a", method="m"))
    msg = str(e.value)
    assert str(big) in msg and f"{SUMMARY_MAX + 1:,} bytes" in msg and "64 MiB" in msg
    assert "import the *_summary.json file" in msg
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())


def test_auto_refuses_a_file_over_every_bound_before_reading_it(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.write(b"{")
        f.truncate(3 * 2**30)
    p = subprocess.run([sys.executable, "-m", "specsweep", "import", "auto", str(huge), "--label", "a",
                        "--method", "m", "-o", str(tmp_path / "res")],
                       capture_output=True, text=True, timeout=60, env={**os.environ})  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert "3,221,225,472 bytes (3 GiB), over the 2 GiB" in p.stderr and "Traceback" not in p.stderr


def test_a_huge_sibling_manifest_is_not_read_whole_by_import(tmp_path: Path) -> None:
    """``import -o results`` reads the earlier imports' manifests: a planted sparse one is skipped."""
    planted = tmp_path / "results" / "planted"
    planted.mkdir(parents=True)
    with (planted / "manifest.json").open("wb") as f:
        f.write(b'{"source": "import", "files": [], "x": "')
        f.truncate(400 * 2**20)
    src = tmp_path / "r.jsonl"
    src.write_text(
        json.dumps({"backend": "sglang", "output_throughput": 10.0, "duration": 1.0, "max_concurrency": 4})
        + "\n"
    )
    code = (
        "import re, sys\n"
        "from specsweep.importers import ImportOptions, run_import\n"
        "run_import('sglang', [sys.argv[1]], sys.argv[2], ImportOptions(label='a', method='m'))\n"
        "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) // 1024)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path / "results")], capture_output=True,
                       text=True, timeout=100, check=True, env={**os.environ})  # fmt: skip
    assert int(p.stdout.split()[-1]) < 200, f"peak RSS {p.stdout.split()[-1]} MB beside a 400 MB manifest"
