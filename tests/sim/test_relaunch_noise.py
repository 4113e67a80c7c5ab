"""A relaunched sim server is a second run, not a replay of the first (issue 25 item 3).

Before, `sim serve` seeded its acceptance sampling with 0 on every start: the same client (same
seed, same prompts) against a fresh server got the identical acceptance draws, so repeats in
rounds (a launch per round) measured a run-to-run noise of about 0.1% and every verdict on the
simulator rested on noise that was not there. Each start now draws a fresh seed (printed, and in
/server_info), unless ``--seed`` is given.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from specsweep.cli import main
from specsweep.errors import EXIT_INVALID_MEASUREMENT
from specsweep.sim.serve import SubprocessServer

pytestmark = pytest.mark.slow


def bench_chunks(url: str, out: Path) -> tuple[list[int], list[list[int]]]:
    rc = main(["bench", "--backend", "vllm", "--base-url", url, "--scenario", "chat_short",
               "--random-input-len", "64", "--random-output-len", "64", "--num-prompts", "4",
               "--max-concurrency", "1", "--warmup-requests", "0", "--seed", "1", "--records", str(out),
               "--quiet"])  # fmt: skip
    assert rc in (0, EXIT_INVALID_MEASUREMENT)  # a busy host may rule the timing invalid: not the point here
    rows = [r for r in pq.read_table(out).to_pylist() if not r["is_warmup"]]
    return [r["prompt_len"] for r in rows], [r["chunk_tokens"] for r in rows]


def serve(*extra: str) -> SubprocessServer:
    return SubprocessServer("--profile", "toy", "--port", "0", *extra)


def test_two_launches_are_two_runs(tmp_path: Path) -> None:
    runs = []
    for i in range(2):
        with serve() as srv:
            runs.append(bench_chunks(srv.url, tmp_path / f"r{i}.parquet"))
    (p0, c0), (p1, c1) = runs
    assert p0 == p1  # the same prompts (the client's seed) ...
    assert c0 != c1  # ... but the server's acceptance draws differ: a new run


def test_a_given_seed_replays(tmp_path: Path) -> None:
    runs = []
    for i in range(2):
        with serve("--seed", "7") as srv:
            runs.append(bench_chunks(srv.url, tmp_path / f"r{i}.parquet")[1])
    assert runs[0] == runs[1]
