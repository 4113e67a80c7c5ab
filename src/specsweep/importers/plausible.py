"""Values no benchmark run can produce, refused at import (docs/reliability.md).

``check_row`` runs on each normalised result row (``importers.common.normalise``) before anything is
written. A file claiming 1e300 tok/s or a TTFT of 1e-300 ms would otherwise be reported as a
winner with a 300-digit gain. Each refusal is one DataError naming the file, the line, the field,
its value and what is possible:

- a rate above ``MAX_TOKENS_PER_S`` tokens/s or ``MAX_REQUESTS_PER_S`` requests/s;
- a duration above ``MAX_DURATION_S``, or a duration of 0 with completed requests;
- a latency statistic (mean, median, min, max, pNN of ttft, tpot, itl, e2e_latency; in ms) above
  ``MAX_LATENCY_MS`` or, with a duration, above the whole run; or a TTFT / E2E latency above 0 and
  below ``MIN_RESPONSE_MS`` (no HTTP response comes back within a microsecond), a TPOT / ITL above 0
  and below ``MIN_GAP_MS`` (finer than any clock);
- percentiles out of order: min <= p50 (median) <= p90 <= p95 <= p99 <= max of each latency, and
  its mean between its min and max (a rounding slack of ``ORDER_SLACK_MS``).

- an E2E latency below the TTFT of the same statistic (a request ends after its first token, so
  every mean, median and percentile of E2E is at least TTFT's), or a negative token count
  (``input_len``, ``output_len``, tokens per request, token totals).

:func:`contradictions` holds every rate a file states against the counts and the duration it comes
from (``output_throughput`` against ``total_output_tokens / duration``, ``total_throughput``
against input + output, throughput against request rate x tokens per request). A rate that
disagrees beyond rounding (:data:`RATE_SLACK`; GuideLLM's rates are means of time series,
:data:`CLIENT_SLACK`) is not a measurement the file can support: the row is imported as
``invalid`` with the reason, so reports set it aside and never recommend it.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from specsweep.errors import DataError

MAX_TOKENS_PER_S = 1e9  # a thousand GPUs at a million tokens/s each
MAX_REQUESTS_PER_S = 1e7
MAX_DURATION_S = 1e8  # three years
MAX_LATENCY_MS = 1e9  # eleven days
MIN_RESPONSE_MS = 1e-3  # one microsecond: no request is answered faster, even on localhost
MIN_GAP_MS = 1e-9  # one picosecond: below any clock's resolution
ORDER_SLACK_MS = 0.011  # clients round to 2 decimals

RATE_SLACK = 0.02  # relative: rates and durations rounded to 2-3 digits
RATE_ABS_SLACK = 0.011  # a rate rounded to 2 decimals
CLIENT_SLACK = {"guidellm": 1.0}  # a factor of 2: time-series means of rates, not totals / duration
_COUNTS = ("input_len", "output_len", "input_tokens_per_request", "output_tokens_per_request",
           "total_input_tokens", "total_output_tokens", "completed", "failed")  # fmt: skip

_TOKEN_RATES = ("input_throughput", "output_throughput", "total_throughput", "max_output_tokens_per_s")
_REQUEST_RATES = ("request_throughput", "request_goodput")
_LATENCY = re.compile(r"^(mean|median|std|min|max|p(\d+(?:\.\d+)?))_(ttft|tpot|itl|e2e_latency)_ms$")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def check_row(row: dict[str, Any], file: str, line: int) -> None:
    """Refuse ``row`` (one normalised result) if a value in it cannot be (module docstring)."""

    def refuse(key: str, why: str) -> DataError:
        return DataError(f"{row[key]!r} {why}", file=file, line=line, field=key)

    for key, cap, unit in [*((k, MAX_TOKENS_PER_S, "tokens/s") for k in _TOKEN_RATES),
                           *((k, MAX_REQUESTS_PER_S, "requests/s") for k in _REQUEST_RATES)]:  # fmt: skip
        v = _num(row.get(key))
        if v is not None and v > cap:
            raise refuse(key, f"{unit} cannot be: no benchmark client measures more than {cap:.0e} {unit}")
    dur = _num(row.get("duration"))
    if dur is not None and (dur > MAX_DURATION_S or (dur == 0 and (_num(row.get("completed")) or 0) > 0)):
        raise refuse("duration", f"s cannot be the duration of a run that completed requests "
                                  f"(expected > 0 and <= {MAX_DURATION_S:.0e} s)")  # fmt: skip
    by_metric: dict[str, list[tuple[float, str, float]]] = {}
    for key, raw in row.items():
        m = _LATENCY.match(key)
        v = _num(raw)
        if m is None or v is None:
            continue
        stat, metric = m.group(1), m.group(3)
        _check_latency(row, key, v, metric, dur, refuse)
        q = {"min": 0.0, "median": 50.0, "max": 100.0}.get(stat)
        if q is None and m.group(2):
            q = float(m.group(2))
        if q is not None:
            by_metric.setdefault(metric, []).append((q, key, v))
    for metric, points in by_metric.items():
        _check_order(row, metric, sorted(points), refuse)
    for key in _COUNTS:
        v = row.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            raise refuse(key, "cannot be: token counts and request counts are >= 0")
    for stat in ("mean", "median", "min", "max", "p50", "p90", "p95", "p99"):
        ttft, e2e = _num(row.get(f"{stat}_ttft_ms")), _num(row.get(f"{stat}_e2e_latency_ms"))
        if ttft is not None and e2e is not None and e2e < ttft - max(ORDER_SLACK_MS, 1e-9 * ttft):
            raise refuse(f"{stat}_e2e_latency_ms", f"ms is below {stat}_ttft_ms = {ttft!r} ms: a request "
                         "cannot end before its first token")  # fmt: skip


def _check_latency(
    row: dict[str, Any], key: str, v: float, metric: str, dur: float | None, refuse: Any
) -> None:
    if key.startswith("std_"):
        if v > MAX_LATENCY_MS:
            raise refuse(key, f"ms cannot be: latencies are at most {MAX_LATENCY_MS:.0e} ms")
        return
    floor = MIN_RESPONSE_MS if metric in ("ttft", "e2e_latency") else MIN_GAP_MS
    if 0 < v < floor:
        raise refuse(key, f"ms cannot be: above 0, a {metric} is at least {floor:g} ms")
    cap = MAX_LATENCY_MS if not dur else min(MAX_LATENCY_MS, dur * 1000 * 1.05 + 1000)
    if v > cap:
        raise refuse(key, f"ms cannot be: longer than the whole run ({dur:g} s)" if dur and cap < MAX_LATENCY_MS
                     else f"ms cannot be: latencies are at most {MAX_LATENCY_MS:.0e} ms")  # fmt: skip


def _check_order(
    row: dict[str, Any], metric: str, points: list[tuple[float, str, float]], refuse: Any
) -> None:
    for (_q0, k0, v0), (_q1, k1, v1) in itertools.pairwise(points):
        if v1 < v0 - max(ORDER_SLACK_MS, 1e-9 * v0):
            raise refuse(k1, f"ms is below {k0} = {v0!r} ms: percentiles of one latency cannot decrease")
    lo = next((v for q, _, v in points if q == 0.0), None)
    hi = next((v for q, _, v in points if q == 100.0), None)
    mean_key = f"mean_{metric}_ms"
    mean = _num(row.get(mean_key))
    if mean is not None and (
        (lo is not None and mean < lo - ORDER_SLACK_MS) or (hi is not None and mean > hi + ORDER_SLACK_MS)
    ):
        raise refuse(mean_key, f"ms is outside min..max of {metric} ({lo!r}..{hi!r} ms)")


def _g(row: dict[str, Any], key: str) -> float | None:
    return _num(row.get(key))


def contradictions(row: dict[str, Any], client: str = "") -> list[str]:
    """Each rate of ``row`` the file states that its own counts and duration contradict (module
    docstring), as a sentence naming both sides; empty when all agree within rounding."""
    slack = CLIENT_SLACK.get(client, RATE_SLACK)
    computed = set(row.get("computed_keys") or ())
    dur, done = _g(row, "duration"), _g(row, "completed")
    tin, tout = _g(row, "total_input_tokens"), _g(row, "total_output_tokens")
    req, rin, rout = _g(row, "request_throughput"), _g(row, "input_throughput"), _g(row, "output_throughput")
    checks: list[tuple[str, float, str]] = []
    if dur:
        if done is not None and (client != "guidellm" or done >= 3):  # GuideLLM: a rate of n-1 gaps
            checks.append(("request_throughput", done / dur, f"completed / duration = {done:g} / {dur:g} s"))
        if tin is not None:
            checks.append(
                ("input_throughput", tin / dur, f"total_input_tokens / duration = {tin:g} / {dur:g} s")
            )
        if tout is not None:
            checks.append(
                ("output_throughput", tout / dur, f"total_output_tokens / duration = {tout:g} / {dur:g} s")
            )
        if tin is not None and tout is not None:
            checks.append(("total_throughput", (tin + tout) / dur,
                           f"(total_input_tokens + total_output_tokens) / duration = {tin + tout:g} / {dur:g} s"))  # fmt: skip
    if rin is not None and rout is not None:
        checks.append(
            ("total_throughput", rin + rout, f"input_throughput + output_throughput = {rin:g} + {rout:g}")
        )
    for side, rate in (("input", rin), ("output", rout)):
        per = _g(row, f"{side}_tokens_per_request")
        if req is not None and per is not None and rate is not None:
            checks.append((f"{side}_throughput", req * per,
                           f"request_throughput x {side}_tokens_per_request = {req:g} x {per:g}"))  # fmt: skip
    out: list[str] = []
    flagged: set[str] = set()
    for key, expected, how in checks:
        stated = _g(row, key)
        if stated is None or key in computed or key in flagged or any(f in how for f in flagged):
            continue  # a check built on a rate already found wrong would blame the wrong key
        lo, hi = sorted((stated, expected))
        if hi - lo > RATE_ABS_SLACK and hi > lo * (1.0 + slack):
            flagged.add(key)
            out.append(f"{key} {stated:g} contradicts the file's own {how} = {expected:.4g} "
                       f"({hi / lo if lo > 0 else math.inf:.3g}x apart; rounding allows {slack:.0%})")  # fmt: skip
    return out
