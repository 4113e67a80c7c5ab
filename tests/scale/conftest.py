"""Shared pieces for the scale tests: the firehose server (benchmarks/firehose.py) as a fixture."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCALING = Path(__file__).resolve().parents[2] / "benchmarks" / "client_scaling.py"
GAP_MS = 20.0
CHUNKS = 12


@pytest.fixture(scope="module")
def firehose() -> Iterator[str]:
    """A fast streaming server: every stream sends CHUNKS chunks, one every GAP_MS (so TPOT is
    GAP_MS by construction and TTFT is at most one GAP_MS plus the client's overhead)."""
    p = subprocess.Popen(
        # benchmarks/firehose.py's server on the standard asyncio loop (see start_firehose there)
        [
            sys.executable,
            str(SCALING),
            "--serve-burst",
            "1",
            "--chunks",
            str(CHUNKS),
            "--sat-gap-ms",
            str(GAP_MS),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None
        yield p.stdout.readline().strip().rsplit(" ", 1)[-1]
    finally:
        p.terminate()
        p.wait(10)
