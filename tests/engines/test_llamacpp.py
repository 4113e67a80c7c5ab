"""Real llama-server (CPU) on the tiny cycling model: n-gram speculation is accepted end to end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specsweep.servers.process import ManagedServer
from tests.engines.helpers import (
    Engines,
    assert_follows_cycles,
    complete,
    llamacpp_spec,
    metric,
    run_bench,
    running_server,
    scrape,
)

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.timeout(600)]

# ngram-simple: look up the last 2 tokens in prompt + output, draft the 3 that followed them.
NGRAM = {"spec_type": "ngram-simple", "spec_ngram_simple_size_n": 2, "spec_ngram_simple_size_m": 3}


@pytest.fixture(scope="module")
def spec_server(engines: Engines, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedServer]:
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    with running_server(llamacpp_spec(engines, "llamacpp-ngram", NGRAM), log) as srv:
        yield srv


def test_greedy_output_repeats_the_cycle(spec_server: ManagedServer, engines: Engines) -> None:
    out = complete(spec_server.base_url, spec_server.model_id or "", "The module defines", 30)
    assert_follows_cycles(out["choices"][0]["text"], engines.cycles["successor"], min_words=25)


def test_ngram_drafts_are_accepted(spec_server: ManagedServer) -> None:
    before = scrape(spec_server.base_url)
    complete(spec_server.base_url, spec_server.model_id or "", "Each object has an identity", 40)
    after = scrape(spec_server.base_url)
    drafts = metric(after, "llamacpp:spec_decode_num_drafts_total") - metric(
        before, "llamacpp:spec_decode_num_drafts_total"
    )
    accepted = metric(after, "llamacpp:spec_decode_num_accepted_tokens_total") - metric(
        before, "llamacpp:spec_decode_num_accepted_tokens_total"
    )
    assert drafts > 0
    assert 1.0 + accepted / drafts > 2.0  # a cycle of 6: most 3-token drafts are right


def test_bench_reports_acceptance(spec_server: ManagedServer, engines: Engines, tmp_path: Path) -> None:
    res, recs = run_bench(spec_server, engines.need("TINY_MODEL_HF"), tmp_path)
    assert res["completed"] == 4
    assert res["spec_num_drafts"] > 0
    assert res["accept_length"] > 1.5
    assert all(r["error_kind"] is None and r["output_tokens"] == 48 for r in recs if not r["is_warmup"])


def test_accept_length_counts_every_decode_step(
    spec_server: ManagedServer, engines: Engines, tmp_path: Path
) -> None:
    """Issue 19 item 11: llama.cpp's num_drafts skips the steps where ngram found no draft, so its
    1 + accepted/drafts overstates tokens per step; accept_length counts every decode step."""
    res, _ = run_bench(spec_server, engines.need("TINY_MODEL_HF"), tmp_path)
    n, t, acc = res["completed"], res["total_output_tokens"], res["spec_num_accepted_tokens"]
    assert res["accept_length_basis"] == "metrics_counters"
    steps = t - n - acc  # every decode step yields 1 token + its accepted drafts; 1st token: prefill
    assert res["accept_length"] == pytest.approx(1 + acc / steps)
    assert res["spec_draft_coverage"] == pytest.approx(res["spec_num_drafts"] / steps)
    assert 1.5 < res["accept_length"] <= res["spec_accept_length"] + 1e-9
    if res["spec_draft_coverage"] < 1:  # the n-gram needs history: the first steps have no draft
        assert res["accept_length"] < res["spec_accept_length"]


def test_bench_survives_server_closing_connections(
    spec_server: ManagedServer, engines: Engines, tmp_path: Path
) -> None:
    # llama-server closes the connection after every streamed response without saying so: the client
    # must not lose the next request to a dead pooled connection.
    res, _ = run_bench(spec_server, engines.need("TINY_MODEL_HF"), tmp_path, num_prompts=4, max_concurrency=1)
    assert res["completed"] == 4, res["errors_by_kind"]


def test_no_speculation_reports_no_drafts(engines: Engines, tmp_path: Path) -> None:
    with running_server(llamacpp_spec(engines, "llamacpp-off", {}), tmp_path / "off.log") as srv:
        res, _ = run_bench(srv, engines.need("TINY_MODEL_HF"), tmp_path)
    assert res["completed"] == 4
    assert not res.get("spec_num_drafts")
    assert res.get("spec_accept_length") is None
