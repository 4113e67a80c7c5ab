"""Acceptance length: one definition for every engine (issue 19 item 11).

``accept_length`` = 1 + accepted draft tokens / decode steps, per sequence: how many tokens one
verification (forward) step yields on average, counting the steps that had no draft. Engines that
expose only ``/metrics`` counters (vLLM, llama.cpp) give it exactly: every decode step yields one
token plus its accepted draft tokens, and each request's first token comes from prefill, so

    decode steps  = output tokens - requests - accepted draft tokens
    accept_length = (output tokens - requests) / decode steps = 1 + accepted / decode steps

The engines' own figure, ``spec_accept_length`` = 1 + accepted / drafts, counts only the steps
that had a draft (vLLM's and llama.cpp's ``num_drafts`` skip steps where the drafter proposed
nothing), so an n-gram drafter that often finds no match shows k+1 while the server makes far fewer
tokens per step. It is kept, as "per drafted step", with ``spec_draft_coverage`` = drafts / decode
steps; when every step drafts (EAGLE, MTP, the simulator) the two are equal. Decode steps are never
taken below the drafts: engines also count accepted drafts past ``max_tokens`` that the client never
receives, and then (steps <= drafts) the drafts count is the better step count.

llama-server also says per response (its ``timings.draft_n_accepted``), so the same figure is known
per request and hence per category in a cell that mixes domains (:func:`from_requests`): a response
of n tokens with a accepted draft tokens took n - 1 - a decode steps. It equals the counters' figure
over the same requests. vLLM has no per-response figure: per category only when a cell holds one.

On SGLang the exact per-request figure is used (Σ completion_tokens / Σ spec_verify_ct, SGLang's own
definition), which also counts each request's prefill token: higher by about 1 / (steps per request).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def from_counters(output_tokens: float, requests: int, accepted: float, drafts: float) -> dict[str, float]:
    """``accept_length`` and ``spec_draft_coverage`` from token totals and counter deltas (empty
    without drafts). Decode steps are never counted below the drafts: a drafted step is a step."""
    steps = output_tokens - requests - accepted
    if requests <= 0 or drafts <= 0:
        return {}
    if steps <= drafts:
        # every step drafted (EAGLE, MTP, the simulator): the engines' figure is the per-step one.
        # Fewer counted steps than drafts means the counters saw tokens the client did not (accepted
        # drafts past max_tokens, a client-side token count): trust the drafts count then.
        return {"accept_length": 1.0 + accepted / drafts, "spec_draft_coverage": 1.0}
    return {"accept_length": 1.0 + accepted / steps, "spec_draft_coverage": drafts / steps}


def from_requests(output_tokens: float, requests: int, accepted: float) -> float | None:
    """``accept_length`` = 1 + accepted / decode steps from per-response counts (llama-server's
    ``timings``): decode steps = output tokens - requests - accepted. None without a decode step."""
    steps = output_tokens - requests - accepted
    if requests <= 0 or steps <= 0:
        return None
    return 1.0 + accepted / steps


def fill(result: Mapping[str, Any]) -> dict[str, Any]:
    """The acceptance keys to add to a bench result: keeps an exact per-request ``accept_length``
    (SGLang's spec_verify_ct), else derives it from the ``/metrics`` deltas (``spec_num_*``)."""
    if result.get("accept_length") is not None:
        return {"accept_length_basis": "spec_verify_ct"}
    acc, drafts = result.get("spec_num_accepted_tokens"), result.get("spec_num_drafts")
    if not drafts or acc is None:
        return {}
    out: dict[str, Any] = from_counters(
        float(result.get("total_output_tokens") or 0),
        int(result.get("completed") or 0),
        float(acc),
        float(drafts),
    )
    if out:
        out["accept_length_basis"] = "metrics_counters"
    return out
