"""Per-category (per-domain) metrics of one run: the ``per_category`` object of the result line.

For each category c of the measured requests (warmup excluded; records without one count as
``"uncategorized"``), over the run's whole duration D (the categories share the run):

- ``completed``: requests of c that produced output; ``failed``: the others;
- ``output_throughput`` = sum(output tokens of c) / D; ``total_throughput`` adds their prompt tokens.
  Both divide by the whole run's duration: in a run that mixes categories they are c's share of the
  run's throughput, not c's own throughput;
- ``per_request_tok_s`` = sum(output tokens) / sum(E2E seconds) over c's completed requests: how fast
  c's responses were generated (output tokens per second of request time, token-weighted), measured
  per response, so c's own even in a mixed run;
- ``mean_tpot_ms``, ``mean_ttft_ms``: means over c's requests (metrics.tpot_ms, first chunk - send);
- ``accept_length``: sum(output tokens) / sum(spec_verify_ct) over c's requests that report the
  server's verify count (SGLang); else 1 + accepted / decode steps from the drafts each response
  reports (llama-server's ``timings``; :func:`specsweep.measure.acceptance.from_requests`); else, when c is the
  run's only category, the run's acceptance length from the server's counters
  (``cell_accept_length``: vLLM); else null. ``accept_length_source`` says which (``"verify_ct"``,
  ``"timings"``, ``"server_counters"`` or null);
- ``tokens_per_chunk``: output tokens after the first chunk / chunks after the first - the client-side
  proxy of acceptance length (1.0 when the server streams one token per chunk).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specsweep.measure.acceptance import from_requests
from specsweep.measure.metrics import NS_PER_MS, run_window_ns, tpot_ms
from specsweep.measure.records import RequestRecord

UNCATEGORIZED = "uncategorized"


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def per_category(
    records: Sequence[RequestRecord], cell_accept_length: float | None = None
) -> dict[str, dict[str, Any]]:
    """{category: {completed, failed, output_throughput, total_throughput, per_request_tok_s,
    mean_tpot_ms, mean_ttft_ms, accept_length, tokens_per_chunk}}, categories sorted by name (see the
    module docstring)."""
    measured = [r for r in records if not r.is_warmup]
    if not measured:
        return {}
    t0, t1 = run_window_ns(measured)
    duration = max((t1 - t0) / 1e9, 1e-9)
    groups: dict[str, list[RequestRecord]] = {}
    for r in measured:
        groups.setdefault(r.category or UNCATEGORIZED, []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for cat in sorted(groups):
        rs = groups[cat]
        ok = [r for r in rs if r.ok and r.chunk_ns]
        out_tok = sum(r.output_tokens for r in ok)
        verify = [r for r in ok if r.spec_verify_ct]
        timed = [r for r in ok if r.draft_accepted is not None]
        al, al_src = None, None
        if verify:
            al = sum(r.output_tokens for r in verify) / sum(r.spec_verify_ct or 0 for r in verify)
            al_src = "verify_ct"
        elif timed:
            al = from_requests(
                sum(r.output_tokens for r in timed), len(timed), sum(r.draft_accepted or 0 for r in timed)
            )
            al_src = "timings" if al is not None else None
        e2e_s = sum((r.chunk_ns[-1] - r.send_ns) / 1e9 for r in ok)
        tail_tok = sum(sum(r.chunk_tokens[1:]) for r in ok)
        tail_chunks = sum(sum(1 for n in r.chunk_tokens[1:] if n > 0) for r in ok)
        out[cat] = {
            "completed": len(ok),
            "failed": len(rs) - len(ok),
            "output_throughput": out_tok / duration,
            "total_throughput": (out_tok + sum(r.prompt_len for r in ok)) / duration,
            "per_request_tok_s": out_tok / e2e_s if e2e_s > 0 else None,
            "mean_tpot_ms": _mean([t for r in ok if (t := tpot_ms(r)) is not None]),
            "mean_ttft_ms": _mean([(r.chunk_ns[0] - r.send_ns) / NS_PER_MS for r in ok]),
            "accept_length": al,
            "accept_length_source": al_src,
            "tokens_per_chunk": tail_tok / tail_chunks if tail_chunks else None,
        }
    if len(out) == 1 and cell_accept_length is not None:
        only = next(iter(out.values()))
        if only["accept_length"] is None:
            only["accept_length"] = cell_accept_length
            only["accept_length_source"] = "server_counters"
    return out
