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

Servers are not believed blindly (:func:`problems`): counters that go backwards, more tokens accepted
than drafted, drafts longer than k, or an acceptance length above k + 1 make every acceptance figure
of the run invalid (:func:`invalidate`: dropped, with ``acceptance_invalid_reason``).
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


# ---- physical bounds --------------------------------------------------------------------------
# No engine drafts more tokens per step than this (vLLM's and SGLang's k are single digits; trees
# verify a few dozen): when the config does not say k, a server claiming more is not believed.
MAX_SPEC_TOKENS = 64
# The figures a result line may hold about acceptance: all dropped together when one is impossible.
FIGURES = ("accept_length", "accept_length_basis", "spec_accept_length", "spec_acceptance_rate",
           "spec_accept_per_pos", "spec_draft_coverage", "server_accept_length")  # fmt: skip


def spec_tokens(method: str, params: Mapping[str, Any]) -> int | None:
    """k, the draft tokens verified per step, from a config's parameters."""
    for key in ("num_speculative_tokens", "spec_tokens", "k", "speculative_num_steps", "num_steps"):
        v = params.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    v = params.get("draft_tokens") or params.get("num_draft_tokens")
    if isinstance(v, int) and not isinstance(v, bool):
        return v - 1
    return None


def max_accept_length(k: int | None, basis: str | None = None) -> float:
    """The largest acceptance length a step can show with ``k`` draft tokens (``MAX_SPEC_TOKENS``
    when unknown): k + 1 tokens per step; SGLang's verify-count figure also counts each request's
    prefill token (one more at most, with one verify step per request)."""
    return (k if k and k > 0 else MAX_SPEC_TOKENS) + (
        2.0 if basis in ("spec_verify_ct", "verify_ct") else 1.0
    )


def problems(
    result: Mapping[str, Any], k: int | None = None, *, output_tokens: int | None = None
) -> list[str]:
    """Why the acceptance figures of a result line cannot be (empty: they can). Physical bounds:
    counters never go backwards over a run, no more draft tokens are accepted than drafted, a
    draft holds at most k tokens (``MAX_SPEC_TOKENS`` when the config does not say k), each
    position's acceptance is a share of the drafts, and an acceptance length lies in
    [1, ``max_accept_length``]. With ``output_tokens`` (the most output tokens the run's requests
    can have had): accepted tokens are output tokens, and each draft (verify step) makes at least
    one, so neither counter can rise by more over the run (``OUTPUT_SLACK`` allowed)."""
    out: list[str] = []
    if output_tokens is not None:
        out += _over_output(result, output_tokens)
    most = k if k and k > 0 else None
    names = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
    drafts, drafted, accepted = (_num(result.get(f"spec_{n}")) for n in names)
    back = [f"{n} {v:+,.0f}" for n, v in zip(names, (drafts, drafted, accepted), strict=True) if v < 0]
    if back:
        out.append(f"the server's spec-decode counters went backwards during the run ({', '.join(back)}): "
                   "it restarted, or its counters are wrong")  # fmt: skip
    elif accepted > drafted:
        out.append(f"more draft tokens accepted ({accepted:,.0f}) than drafted ({drafted:,.0f})")
    if not back and drafts > 0 and drafted / drafts > (most or MAX_SPEC_TOKENS):
        than = f"k = {most}, the config's" if most else f"{MAX_SPEC_TOKENS} (any engine's)"
        out.append(f"{drafted / drafts:,.2f} draft tokens per draft, more than {than}")
    per_pos = result.get("spec_accept_per_pos")
    if isinstance(per_pos, list) and not all(0.0 <= _num(p, -1.0) <= 1.0 for p in per_pos):
        out.append("a per-position acceptance outside [0, 1] (accepted at a position: at most one per draft)")
    bases = {  # server_accept_length: SGLang's own figure, counted its way
        "accept_length": result.get("accept_length_basis"),
        "spec_accept_length": None,
        "server_accept_length": "spec_verify_ct",
    }
    for key, basis in bases.items():
        v, top = result.get(key), max_accept_length(most, basis)
        if isinstance(v, (int, float)) and not 1.0 <= v <= top:
            where = f"k = {most}" if most else f"{MAX_SPEC_TOKENS} draft tokens at most"
            out.append(f"{key} {v:,.2f} outside [1, {top:g}] ({where})")
    return out


OUTPUT_SLACK = 64  # tokens: a request the server counted that the client did not (a probe)


def _over_output(result: Mapping[str, Any], output_tokens: int) -> list[str]:
    cap = output_tokens + OUTPUT_SLACK
    out = []
    for name, what in (("num_accepted_tokens", "accepted draft tokens"), ("num_drafts", "drafts")):
        v = _num(result.get(f"spec_{name}"))
        if v > cap:
            out.append(
                f"{v:,.0f} {what} in a run whose requests had at most {output_tokens:,} output tokens "
                "(each is at most one output token): the server's counters are wrong, or count other traffic"
            )
    return out


def _num(v: Any, default: float = 0.0) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def invalidate(result: dict[str, Any], reasons: list[str]) -> None:
    """Drop every acceptance figure of ``result`` (raw counter deltas stay, as facts) and say why in
    ``acceptance_invalid_reason``."""
    for key in FIGURES:
        if key in result:
            result[key] = None
    result["acceptance_invalid_reason"] = "; ".join(reasons)
