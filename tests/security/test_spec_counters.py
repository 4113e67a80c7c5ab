"""Issue 27, defect 5: spec-decode figures outside their physical bounds are not believed.

A server's /metrics counters that go backwards, accept more draft tokens than were drafted, draft
more tokens per step than k, or give an accept length above k + 1 make every acceptance figure of
the run invalid: dropped from the result line, with ``acceptance_invalid_reason`` and a warning.
Honest counters, up to the bounds themselves, pass. Checked on the rule (``acceptance.problems``),
and through the client against a real localhost server whose /metrics lie.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from specsweep.client.bench import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.client.server_info import parse_spec_counters, spec_delta
from specsweep.measure import acceptance
from specsweep.workload.scenarios import Scenario

from .hostile_counts_server import serve


def _result(
    before: tuple[float, float, float], after: tuple[float, float, float], **extra: Any
) -> dict[str, Any]:
    keys = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
    r: dict[str, Any] = {"total_output_tokens": 1000, "completed": 10, **extra}
    r.update(spec_delta(dict(zip(keys, before, strict=True)), dict(zip(keys, after, strict=True))))
    r.update(acceptance.fill(r))
    return r


def test_the_issues_inflated_counters_are_refused() -> None:
    """1 draft, 3 draft tokens, 7,000,000 accepted: a rate of 2,333,333, an accept length of 7,000,001."""
    r = _result((10, 30, 20), (11, 33, 7_000_020))
    assert r["spec_acceptance_rate"] == pytest.approx(7e6 / 3) and r["spec_accept_length"] == 7_000_001
    why = acceptance.problems(r, 3)
    assert "more draft tokens accepted (7,000,000) than drafted (3)" in why
    assert any(w.startswith("accept_length 7,000,001.00 outside [1, 4] (k = 3)") for w in why), why
    acceptance.invalidate(r, why)
    for key in acceptance.FIGURES:
        assert r.get(key) is None, key
    assert r["spec_num_accepted_tokens"] == 7_000_000  # the raw deltas stay, as facts
    assert "than drafted" in r["acceptance_invalid_reason"]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_counters_that_go_backwards_are_refused(which: int) -> None:
    after = [110.0, 330.0, 200.0]
    after[which] = -1.0
    why = acceptance.problems(_result((100, 300, 150), tuple(after)), None)  # type: ignore[arg-type]
    assert why and why[0].startswith("the server's spec-decode counters went backwards"), why


def test_drafts_longer_than_k_are_refused_and_k_bounds_the_accept_length() -> None:
    r = _result((0, 0, 0), (10, 50, 40))  # 5 draft tokens a draft, 4 accepted a draft: accept length 5
    assert acceptance.problems(r, 5) == []
    assert acceptance.problems(r, None) == []  # within what any engine does
    why = acceptance.problems(r, 3)
    assert any("5.00 draft tokens per draft, more than k = 3" in w for w in why), why
    assert "spec_accept_length 5.00 outside [1, 4] (k = 3)" in why
    huge = _result((0, 0, 0), (1, 1000, 1000))
    assert any(
        f"more than {acceptance.MAX_SPEC_TOKENS} (any engine's)" in w for w in acceptance.problems(huge)
    )


def test_honest_counters_pass_up_to_the_bounds() -> None:
    every = _result((0, 0, 0), (100, 300, 300))  # every draft token accepted: accept length k + 1
    assert every["spec_accept_length"] == 4.0 and acceptance.problems(every, 3) == []
    none = _result((0, 0, 0), (100, 300, 0))
    assert acceptance.problems(none, 3) == []
    # SGLang's per-request figure also counts each request's prefill token: up to k + 2
    assert acceptance.problems({"accept_length": 4.9, "accept_length_basis": "spec_verify_ct"}, 3) == []
    why = acceptance.problems({"accept_length": 5.1, "accept_length_basis": "spec_verify_ct"}, 3)
    assert why == ["accept_length 5.10 outside [1, 5] (k = 3)"]
    assert acceptance.problems({"accept_length": 0.5, "accept_length_basis": "spec_verify_ct"}, 3)


def test_a_per_position_share_above_one_is_refused() -> None:
    r = _result((0, 0, 0), (10, 30, 20))
    r["spec_accept_per_pos"] = [0.9, 1.5, 0.1]
    assert any("per-position" in w for w in acceptance.problems(r, 3))


def _counters(drafts: float, drafted: float, accepted: float) -> str:
    return (f"vllm:spec_decode_num_drafts_total {drafts}\nvllm:spec_decode_num_draft_tokens_total {drafted}\n"
            f"vllm:spec_decode_num_accepted_tokens_total {accepted}\n")  # fmt: skip


@pytest.mark.parametrize(
    ("metrics", "why"),
    [
        ((_counters(10, 30, 20), _counters(11, 33, 7_000_020)), "than drafted"),
        ((_counters(1000, 3000, 2000), _counters(10, 30, 20)), "went backwards"),
    ],
    ids=["inflated", "backwards"],
)
def test_the_client_drops_impossible_figures_from_a_live_server(metrics: tuple[str, str], why: str) -> None:
    assert parse_spec_counters(metrics[0])["num_drafts"] > 0
    url, stop = serve(completion_tokens=None, usage=False, metrics=metrics)
    try:
        cfg = BenchConfig(base_url=url, scenario=Scenario(name="t", input_len=16, output_len=8, range_ratio=1.0),
                          backend="openai", model="m", num_prompts=2, max_concurrency=1, quiet=True,
                          request_timeout_s=20, spec_tokens=3)  # fmt: skip
        res = asyncio.run(run_bench_async(cfg)).result
    finally:
        stop()
    assert res["completed"] == 2  # the run itself is measured; only its acceptance is not believed
    for key in ("accept_length", "spec_accept_length", "spec_acceptance_rate"):
        assert res.get(key) is None, key
    assert why in res["acceptance_invalid_reason"]
    assert any(why in w for w in res["warnings"])
