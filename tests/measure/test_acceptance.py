"""One acceptance-length definition for every engine (issue 19 item 11): hand-computed cases, and
the console no longer prints meaningless figures for a server that streams one token per event."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from specsweep.console.bench_summary import print_bench_summary
from specsweep.measure.acceptance import fill, from_counters


def test_undrafted_steps_count() -> None:
    # 4 requests x 64 tokens: 4 prefill tokens, 252 decode tokens; 60 steps drafted k=3, all
    # accepted (180 tokens), 12 steps without a draft -> 72 decode steps
    out = from_counters(output_tokens=256, requests=4, accepted=180, drafts=60)
    assert out["accept_length"] == pytest.approx(1 + 180 / 72)  # 3.5 tokens per step
    assert out["spec_draft_coverage"] == pytest.approx(60 / 72)
    # the engines' own figure for the same run would be 1 + 180/60 = 4.0


def test_every_step_drafted_equals_the_engines_figure() -> None:
    out = from_counters(output_tokens=256, requests=4, accepted=189, drafts=63)
    assert out["accept_length"] == pytest.approx(1 + 189 / 63) and out["spec_draft_coverage"] == 1.0
    # accepted drafts past max_tokens (counted by the engine, never sent): steps would come out
    # below the drafts; the drafts count wins and nothing exceeds the engine's own figure
    out = from_counters(output_tokens=256, requests=4, accepted=200, drafts=63)
    assert out["accept_length"] == pytest.approx(1 + 200 / 63) and out["spec_draft_coverage"] == 1.0


@given(st.integers(1, 50), st.integers(2, 500), st.floats(0, 1), st.floats(0.01, 1))
def test_bounds(n: int, per_req: int, acc_share: float, cover: float) -> None:
    t = n * per_req
    decode = t - n
    accepted = int(decode * acc_share * 0.9)
    steps = decode - accepted
    drafts = max(1, int(steps * cover))
    out = from_counters(t, n, accepted, drafts)
    # between 1 and the per-drafted-step figure; never above it; coverage a share
    assert 1.0 <= out["accept_length"] <= 1 + accepted / drafts + 1e-9
    assert 0 < out["spec_draft_coverage"] <= 1.0


def test_fill_prefers_the_exact_per_request_figure() -> None:
    assert fill({"accept_length": 3.2, "spec_num_drafts": 10, "spec_num_accepted_tokens": 30}) == {
        "accept_length_basis": "spec_verify_ct"
    }
    got = fill(
        {"spec_num_drafts": 60, "spec_num_accepted_tokens": 180, "total_output_tokens": 256, "completed": 4}
    )
    assert got["accept_length"] == pytest.approx(3.5) and got["accept_length_basis"] == "metrics_counters"
    assert fill({"spec_num_drafts": 0, "spec_num_accepted_tokens": 0}) == {}


def test_console_names_both_figures_and_prints_no_fake_zeros() -> None:
    res = {
        "spec_num_drafts": 60, "spec_num_accepted_tokens": 180, "total_output_tokens": 256, "completed": 4,
        "spec_accept_length": 4.0, "mean_tokens_per_chunk": 1.0, "median_itl_ms": 0.004, "mean_itl_ms": 2.5,
    }  # fmt: skip
    res.update(fill(res))
    con = Console(record=True, width=200, file=io.StringIO())
    print_bench_summary(res, con)
    out = con.export_text()
    assert "Accept length (tokens per decode step)" in out and "3.50" in out
    assert "Accept length per drafted step" in out and "4.00" in out
    assert "Steps with a draft" in out and "83%" in out
    assert "no speculation signal" in out  # not "Tokens per chunk 1.00"
    assert "Median itl (ms)" in out and "0.004" in out  # not 0.00
    con = Console(record=True, width=200, file=io.StringIO())
    print_bench_summary({**res, "median_itl_ms": 0.0}, con)
    assert "0 (a step's tokens arrive together)" in con.export_text()


def test_counters_beyond_the_output_tokens_are_impossible() -> None:
    """Issue 38, defect 5: counters rising by 1e17 drafts (3e17 accepted) in a cell of 438 output
    tokens are consistent among themselves (acceptance 1.0, accept length 4.00) but cannot be."""
    from specsweep.measure import acceptance

    huge = {
        "spec_num_drafts": 10**17,
        "spec_num_draft_tokens": 3 * 10**17,
        "spec_num_accepted_tokens": 3 * 10**17,
    }
    assert acceptance.problems(huge, 3) == []  # what was trusted before
    found = acceptance.problems(huge, 3, output_tokens=438)
    assert len(found) == 2 and all("at most 438 output tokens" in f for f in found)
    honest = {"spec_num_drafts": 150, "spec_num_draft_tokens": 450, "spec_num_accepted_tokens": 280}
    assert acceptance.problems(honest, 3, output_tokens=438) == []
