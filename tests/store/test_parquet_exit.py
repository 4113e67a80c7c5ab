"""Reading Parquet never aborts the process at exit. pyarrow's scan of a Python file object can free
it on a pool thread after ``read_table`` returned; a thread that takes the GIL while the interpreter
exits aborts the process (exit 134, "terminate called without an active exception"), which a
command that reads records and then fails at once met in about one run of three
(`specsweep report` on a broken install; the report-phase test in CI). Records and Parquet datasets
are read from an in-memory copy that Arrow owns."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specsweep.measure.records import RequestRecord
from specsweep.store.run_dir import write_records_parquet

pytestmark = pytest.mark.slow

SCRIPT = """
import sys
from pathlib import Path
from specsweep.store.run_dir import read_records_parquet
from specsweep.workload.datasets.formats import _parquet_rows
files = sorted(Path(sys.argv[1]).glob("*.parquet"))
if sys.argv[2] == "datasets":
    assert all(len(list(_parquet_rows(f))) == 200 for f in files)
else:
    assert all(len(read_records_parquet(f)) == 200 for f in files)
sys.exit(3)  # at once after the last read, as a command that fails right after reading
"""


def test_a_process_that_exits_right_after_reading_parquet_exits_with_its_own_code(tmp_path: Path) -> None:
    for i in range(12):
        recs = [RequestRecord(index=j, is_warmup=False, worker=0, prompt_len=3, output_len=64, scheduled_ns=j,
                              chunk_ns=list(range(64)), chunk_tokens=[1] * 64, output_text="x" * 256)
                for j in range(200)]  # fmt: skip
        write_records_parquet(tmp_path / f"r{i}.parquet", recs)
    codes = []
    for what in ("records", "datasets"):
        for _ in range(4):  # the old records path aborted in about 9 runs of 10
            p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), what], capture_output=True,
                               text=True, timeout=60, check=False)  # fmt: skip
            codes.append((what, p.returncode, p.stderr[-300:]))
    assert all(c == 3 for _, c, _ in codes), codes
