"""Pure functions: request records -> how much of a closed-loop run was at its target concurrency, and
the run's figures over the window where it was (the steady state).

A closed-loop run with ``max_concurrency = c`` and ``num_prompts = n`` sends ``n / c`` **waves** of
requests. It ramps up (every slot sends at once), holds ``c`` requests in flight while there are
requests left to send, and drains (the last requests finish one by one, the batch shrinking). With one
wave there is no hold: the run is all burst and drain, and its throughput and TPOT are those of a
shrinking batch, not of ``c`` requests in flight (docs/metrics.md, "Steady state").

Definitions (every one recomputable from the stored records; warmup excluded):

- a request is **in flight** from its send (``send_ns``) to its end (its last output chunk, or
  ``end_ns`` when later, as :func:`specsweep.measure.metrics.run_window_ns`); failed requests held a slot too.
- ``at_target_share`` = the time during which exactly ``c`` requests were in flight / the run's
  ``duration`` (first request due -> last request end). In closed loop a finished request's slot is
  refilled within a fraction of a millisecond, so a steady run's share is close to 1 - drain/duration.
- the **steady window** is ``[w0, w1]``: from the first instant ``c`` requests were in flight to the
  last. ``steady_window_s = w1 - w0``.
- over the window: ``steady_output_throughput`` = output tokens of chunks that arrived in ``(w0, w1]``
  / window; ``steady_total_throughput`` = that x (1 + the run's input tokens / output tokens): the
  prompts' share of the work at the run's own ratio (counting the prompts whose requests started in
  the window instead would add or drop the first wave's, which all start at ``w0``: +-10-20% in the
  simulator's figures at three waves); ``steady_request_throughput`` = requests that completed in the
  window / window.
- ``steady_requests``: the completed requests sent in ``(w0, w1]`` (after the first wave's sends:
  each took the slot of a finished one) whose first chunk came by ``w1``; ``steady_mean_ttft_ms`` is
  their mean TTFT; ``steady_mean_tpot_ms`` the mean TPOT of those of them that also finished by ``w1``
  (a cut that favours short requests a little; TPOT hardly depends on length);
  ``steady_mean_e2e_latency_ms`` = ``steady_mean_ttft_ms`` + ``steady_mean_tpot_ms`` x (the run's mean
  output tokens - 1), a request's e2e by metrics.py's definitions (the mean of the requests inside
  the window would favour short ones: -10 to -20% at three waves).

No steady window (the run never had ``c`` in flight, an open-loop rate below capacity, one request):
every ``steady_*`` figure is None and the share is 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specsweep.measure.metrics import NS_PER_MS, run_window_ns, tpot_ms
from specsweep.measure.records import RequestRecord

# a run is at steady state when it sent at least this many waves and spent at least this share of
# its duration with the target concurrency in flight (docs/metrics.md, "Steady state")
MIN_WAVES = 3.0
MIN_AT_TARGET_SHARE = 0.5

STEADY_KEYS = (
    "steady_window_s",
    "steady_requests",
    "steady_request_throughput",
    "steady_output_throughput",
    "steady_total_throughput",
    "steady_mean_ttft_ms",
    "steady_mean_tpot_ms",
    "steady_mean_e2e_latency_ms",
)


def _end_ns(r: RequestRecord) -> int:
    return max(r.end_ns, r.chunk_ns[-1] if r.chunk_ns else 0, r.send_ns)


def target_intervals(records: Sequence[RequestRecord], concurrency: int) -> list[tuple[int, int]]:
    """The intervals (ns) during which exactly ``concurrency`` of the records were in flight."""
    events: list[tuple[int, int]] = []
    for r in records:
        if not r.send_ns and not r.chunk_ns:
            continue  # never sent (a client error before the send): it held no server slot
        events.append((r.send_ns, 1))
        events.append((_end_ns(r), -1))
    events.sort(key=lambda e: (e[0], e[1]))  # at one instant, ends before sends: a refill is no overlap
    out: list[tuple[int, int]] = []
    level, since = 0, 0
    for t, d in events:
        if level == concurrency and t > since:
            out.append((since, t))
        level += d
        since = t
    return out


def waves(num_prompts: int | None, concurrency: int | None) -> float | None:
    """num_prompts / concurrency: how many times every slot was filled (None without a limit)."""
    if not num_prompts or not concurrency:
        return None
    return num_prompts / concurrency


def steady_state(records: Sequence[RequestRecord], concurrency: int | None) -> dict[str, Any]:
    """``at_target_share`` and the ``steady_*`` figures of the measured records (module docstring)."""
    measured = [r for r in records if not r.is_warmup]
    out: dict[str, Any] = {"at_target_share": None, **dict.fromkeys(STEADY_KEYS)}
    if not measured or not concurrency:
        return out
    t0, t1 = run_window_ns(measured)
    span = max(t1 - t0, 1)
    spans = target_intervals(measured, concurrency)
    out["at_target_share"] = min(1.0, sum(b - a for a, b in spans) / span)
    if not spans:
        return out
    w0, w1 = spans[0][0], spans[-1][1]
    window_s = (w1 - w0) / 1e9
    ok = [r for r in measured if r.ok and r.chunk_ns]
    out_tok = sum(n for r in ok for t, n in zip(r.chunk_ns, r.chunk_tokens, strict=True) if w0 < t <= w1)
    all_out = sum(r.output_tokens for r in ok)
    in_per_out = sum(r.prompt_len for r in ok) / all_out if all_out else 0.0
    done = sum(1 for r in ok if w0 < r.chunk_ns[-1] <= w1)
    sent = [r for r in ok if w0 < r.send_ns <= w1 and r.chunk_ns[0] <= w1]
    inside = [r for r in sent if r.chunk_ns[-1] <= w1]
    out["steady_window_s"] = window_s
    out["steady_requests"] = len(sent)
    out["steady_request_throughput"] = done / window_s
    out["steady_output_throughput"] = out_tok / window_s
    out["steady_total_throughput"] = out_tok * (1.0 + in_per_out) / window_s
    if sent:
        out["steady_mean_ttft_ms"] = sum((r.chunk_ns[0] - r.send_ns) / NS_PER_MS for r in sent) / len(sent)
    tp = [t for r in inside if (t := tpot_ms(r)) is not None]
    out["steady_mean_tpot_ms"] = sum(tp) / len(tp) if tp else None
    if sent and tp:  # per request, e2e = ttft + tpot x (output tokens - 1): the run's mean length
        mean_out = all_out / len(ok)
        out["steady_mean_e2e_latency_ms"] = out["steady_mean_ttft_ms"] + out["steady_mean_tpot_ms"] * max(
            mean_out - 1.0, 0.0
        )
    return out


def is_steady(waves_: float | None, share: float | None) -> bool | None:
    """Whether a closed-loop run measured the steady state (None: not a closed-loop run)."""
    if waves_ is None or share is None:
        return None
    return waves_ >= MIN_WAVES and share >= MIN_AT_TARGET_SHARE
