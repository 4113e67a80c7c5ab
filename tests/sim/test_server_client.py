"""The project's own client against a sim server process: its measurements agree with the truth file."""

from __future__ import annotations

import statistics
from pathlib import Path

import orjson
import pytest

from specsweep.client.bench import BenchConfig, run_bench
from specsweep.sim.serve import SubprocessServer
from specsweep.workload.scenarios import Scenario

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # client lag behind the server's writes: runs alone

SC = Scenario(name="t", input_len=24, output_len=40, range_ratio=1.0)


@pytest.mark.parametrize("backend", ["sglang", "vllm"])
def test_client_records_match_ground_truth(backend: str, tmp_path: Path) -> None:
    truth = tmp_path / "truth.jsonl"
    with SubprocessServer(
        "--profile", "toy", "--port", "0", "--time-scale", "0.25", "--truth", str(truth)
    ) as srv:
        cfg = BenchConfig(base_url=srv.url, scenario=SC, backend=backend, num_prompts=8, max_concurrency=4,
                          scrape_metrics=True, quiet=True)  # fmt: skip
        out = run_bench(cfg)
    recs = [r for r in out.records if not r.is_warmup]
    assert len(recs) == 8 and all(r.ok for r in recs), [r.error for r in recs]
    served = [orjson.loads(line) for line in truth.read_text().splitlines()]
    served = [t for t in served if t["endpoint"] != "/health_generate"]
    assert sorted(sum(c["tokens"] for c in t["chunks"]) for t in served) == sorted(
        r.output_tokens for r in recs
    )
    lags_ms = []
    for r in recs:
        # the server's record of this request: same tokens per chunk, written just before the client saw it
        cands = [
            t for t in served
            if [c["tokens"] for c in t["chunks"]] == r.chunk_tokens and t["chunks"][0]["mono_ns"] <= r.chunk_ns[0]
        ]  # fmt: skip
        assert cands, (r.chunk_tokens, r.chunk_ns[:2])
        t = max(cands, key=lambda t: t["chunks"][0]["mono_ns"])
        for c, seen_ns in zip(t["chunks"], r.chunk_ns, strict=True):
            assert seen_ns >= c["mono_ns"]
            lags_ms.append((seen_ns - c["mono_ns"]) / 1e6)
        assert r.prompt_tokens_server == t["prompt_tokens"]
    assert statistics.median(lags_ms) < 25.0, lags_ms  # ~0.1-0.5 ms on an idle machine, more on a busy one
