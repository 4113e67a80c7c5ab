"""Shared part of the importers: normalise one result object to a summary row.

A run of ``sglang.bench_serving`` or ``vllm bench serve`` becomes a summary row keyed like ours
(sglang key names). Keys older versions lack are computed from the others where the definition
allows it (``total_throughput = (input+output tokens)/duration`` and so on); a row with neither a
throughput nor a latency fails with the file, line and field (a latency-only row is kept, noted).
Negative times, counts, rates or throughputs are refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsweep.errors import DataError, UsageError

PENDING_MANIFEST = ".manifest.json.pending"

# The most bytes of one result file, by format. Files with per-request detail (vLLM, sglang,
# GuideLLM) are streamed (reader.py: memory flat), so their bound is on time; a summary file
# (AIPerf, genai-perf, LLMPerf) is a few KB, so one over 64 MiB is another file given by mistake.
DETAILED_MAX = 2 * 2**30
SUMMARY_MAX = 64 * 2**20

# Aliases: vLLM / older sglang key -> our (sglang) key.
ALIASES: dict[str, str] = {
    "total_token_throughput": "total_throughput",
    "mean_e2el_ms": "mean_e2e_latency_ms",
    "median_e2el_ms": "median_e2e_latency_ms",
    "std_e2el_ms": "std_e2e_latency_ms",
    "p90_e2el_ms": "p90_e2e_latency_ms",
    "p95_e2el_ms": "p95_e2e_latency_ms",
    "p99_e2el_ms": "p99_e2e_latency_ms",
    "benchmark_duration": "duration",
    "successful_requests": "completed",
    # vLLM <= 0.6 benchmark_serving named the end-to-end latency plainly
    "mean_latency_ms": "mean_e2e_latency_ms",
    "median_latency_ms": "median_e2e_latency_ms",
    "std_latency_ms": "std_e2e_latency_ms",
    "p90_latency_ms": "p90_e2e_latency_ms",
    "p95_latency_ms": "p95_e2e_latency_ms",
    "p99_latency_ms": "p99_e2e_latency_ms",
}
# Any one of these makes a result worth importing (a latency-only file has no throughput keys).
LATENCY_KEYS = tuple(
    f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2e_latency") for s in ("mean", "median", "p99")
)

_NUMERIC_PREFIXES = ("mean_", "median_", "std_", "p90_", "p95_", "p99_", "p50_", "min_", "max_")
_NUMERIC_KEYS = {
    "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
    "request_throughput", "input_throughput", "output_throughput", "total_throughput",
    "concurrency", "max_output_tokens_per_s", "accept_length", "request_goodput", "request_rate",
}  # fmt: skip


@dataclass
class ParsedRun:
    """One result object from a file, normalised, with where it came from."""

    file: str
    line: int
    row: dict[str, Any]


@dataclass
class ImportOptions:
    label: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    scenario: str | None = None
    concurrency: int | None = None
    override_concurrency: bool = False  # --concurrency replaces values the files have (warned)
    model: str | None = None
    backend: str | None = None  # server backend description, e.g. "vllm-dspark (TP=8)"
    warmup: int | None = None
    experiment: str | None = None


def parse_param(text: str) -> tuple[str, Any]:
    """``k=v`` -> (k, v) with v as int, float, bool or string."""
    if "=" not in text or text.startswith("="):
        raise UsageError(f"--param {text!r}: expected KEY=VALUE, e.g. spec_tokens=3")
    k, v = text.split("=", 1)
    val: Any = v
    low = v.lower()
    if low in ("true", "false"):
        val = low == "true"
    else:
        try:
            val = int(v)
        except ValueError:
            try:
                val = float(v)
            except ValueError:
                val = v
    return k.strip(), val


_KEY_KIND: dict[str, tuple[str, bool]] = {}


def _key_kind(k: str) -> tuple[str, bool]:
    """(our key, whether it holds a number) for a file's key; remembered for the common ones."""
    key = ALIASES.get(k, k)
    if key.endswith("_e2el_ms"):
        key = key.replace("_e2el_ms", "_e2e_latency_ms")
    numeric = key in _NUMERIC_KEYS or (key.startswith(_NUMERIC_PREFIXES) and key.endswith(("_ms", "_s")))
    if len(_KEY_KIND) < 4096:  # bounded: a hostile file's random keys are not all remembered
        _KEY_KIND[k] = (key, numeric)
    return key, numeric


# Measurements the clients write besides the summary statistics (never server parameters).
OTHER_METRICS = frozenset(
    {"max_concurrent_requests", "total_output_tokens_retokenized", "output_throughput_retokenized",
     "request_goodput:", "incomplete", "input_tokens_per_request", "output_tokens_per_request",
     "accept_length", "accept_rate", "concurrency", "completed", "failed", "duration"}
)  # fmt: skip


# The shape of a measurement's name, whatever the client adds next (sglang's total_input_text_tokens,
# total_input_vision_tokens, total_throughput_retokenized): totals and statistics, rates, times.
_MEASURED = re.compile(
    r"^(total_|mean_|median_|std_|p\d+(\.\d+)?_)"
    r"|(_throughput|_retokenized|_per_s|_per_sec|_ms|_goodput|_latency|_duration)$"
)


def is_metric_key(k: str) -> bool:
    """Whether a result key holds a measurement (a summary statistic, throughput, count or time): by
    what the key is, never by whether its value differs between results (a setting such as vLLM's
    ``max_num_seqs`` or ``max_num_batched_tokens`` is no measurement)."""
    return k in OTHER_METRICS or _key_kind(k)[1] or _MEASURED.search(k) is not None


def _num(obj: dict[str, Any], key: str, file: str, line: int) -> float | None:
    v = obj.get(key)
    if v is None:
        return None
    if type(v) is float and 0.0 <= v < math.inf:  # the common case, fast
        return v
    if isinstance(v, str) and v.strip().lower() in ("inf", "infinity", "nan"):
        v = float(v)  # vLLM writes request_rate "inf" as a string
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DataError(f"expected a number, got {v!r}", file=file, line=line, field=key)
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        raise DataError(f"number out of range: {v!r}", file=file, line=line, field=key) from None
    if math.isnan(f):
        return None
    if f < 0:
        raise DataError(
            f"negative value {v!r}: times, token counts, rates and throughputs are >= 0",
            file=file,
            line=line,
            field=key,
        )
    return f


def _storable(v: Any, file: str, line: int, key: str) -> Any:
    """A value the run dir's JSON can hold: a 64-bit integer, a string without lone surrogates."""
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
        raise DataError(f"integer out of range: {v!r}", file=file, line=line, field=key)
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise DataError(
                f"not valid text (lone surrogate): {v!r}", file=file, line=line, field=key
            ) from None
    return v


def _shown(v: Any) -> str:
    """A value as the file wrote it (Python json writes Infinity / NaN)."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return repr(v)


def normalise(obj: dict[str, Any], file: str, line: int, notes: list[str] | None = None) -> dict[str, Any]:
    """Our summary-row metric keys from a bench_serving / vllm result object (computing gaps).

    ``request_rate`` Infinity (all requests at once) is kept as ``"inf"`` (vLLM's own spelling; JSON
    has no infinity). Any other infinite or NaN metric is no measurement: it is dropped and the row
    says so in ``import_notes`` (with ``notes``: what the importer itself dropped).
    """
    row: dict[str, Any] = {}
    notes = list(notes or ())
    for k, v in obj.items():
        kind = _KEY_KIND.get(k)
        if kind is None:
            kind = _key_kind(k)
        key, numeric = kind
        if numeric:
            f = _num(obj, k, file, line)
            if f is not None and math.isinf(f):
                if key == "request_rate":
                    row[key] = "inf"
                    continue
                notes.append(f"{k}: {_shown(v)} in the file is not a measurement; dropped")
                f = None
            elif f is None and v is not None:
                notes.append(f"{k}: {_shown(v)} in the file is not a measurement; dropped")
            if row.get(key) is None:
                row[key] = f
        elif isinstance(v, (str, int, float, bool)) or v is None:
            row.setdefault(key, _storable(v, file, line, k))
    errors = obj.get("errors")  # per-request error strings (--output-details / --save-detailed)
    if row.get("failed") is None and isinstance(errors, list):
        row["failed"] = sum(1 for e in errors if e)
    given = {k for k, v in row.items() if v is not None}
    g = row.get
    dur, done = g("duration"), g("completed")

    tin, tout = g("total_input_tokens"), g("total_output_tokens")
    if dur is None and done is not None and g("request_throughput"):
        dur = row["duration"] = done / g("request_throughput")
    if dur:
        if g("request_throughput") is None and done is not None:
            row["request_throughput"] = done / dur
        if g("input_throughput") is None and tin is not None:
            row["input_throughput"] = tin / dur
        if g("output_throughput") is None and tout is not None:
            row["output_throughput"] = tout / dur
    tin_s, tout_s = g("input_throughput"), g("output_throughput")
    if g("total_throughput") is None and tin_s is not None and tout_s is not None:
        row["total_throughput"] = tin_s + tout_s
    if g("mean_e2e_latency_ms") is None and g("concurrency") and dur and done:
        # sglang's concurrency = sum(e2e)/duration, so mean e2e = concurrency*duration/completed
        row["mean_e2e_latency_ms"] = g("concurrency") * dur * 1000.0 / done
    computed = sorted(k for k, v in row.items() if v is not None and k not in given)
    if computed:
        row["computed_keys"] = computed
    for k in ("completed", "failed", "total_input_tokens", "total_output_tokens"):
        v = row.get(k)
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
            row[k] = int(v)
    if g("total_throughput") is None and g("output_throughput") is None:
        if not any(g(k) is not None for k in LATENCY_KEYS):
            raise DataError(
                "no metrics: need a throughput (output_throughput, total_throughput or "
                "total_token_throughput, or token totals with duration) or a latency "
                "(mean/median/p99 of ttft, tpot, itl, e2e_latency or e2el, in ms)",
                file=file,
                line=line,
                field="output_throughput",
            )
        notes.append("latency only: the file has no throughput")
    if notes:
        row["import_notes"] = notes
    return row


Parser = Callable[[Path], list[ParsedRun]]
