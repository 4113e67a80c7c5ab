"""Pure functions: request records -> one run's metrics (sglang.bench_serving key names).

Definitions (times from records, ms in keys):
- ttft = first output chunk - send; e2e_latency = last output chunk - send (vLLM: e2el).
- tpot = (e2e - ttft) / (output_tokens - 1), requests with output_tokens > 1; mean over requests.
- itl (itl_mode "per_token"): a chunk arriving ``gap`` after the previous one with ``n`` tokens adds
  ``n`` entries of ``gap / n``; pooled over requests. ``chunk_latency`` keeps the raw per-chunk gaps
  (under speculative decoding, the verify-step latency that per-chunk clients call "ITL").
- duration = last request end - first request due (the run's wall time).
- request_throughput = completed / duration; input/output/total throughput in tokens/s;
  concurrency = sum(e2e) / duration (measured mean in-flight requests, sglang's meaning).
- queue = send - due: time waiting for a concurrency slot (open loop) or client overhead (closed).
- percentiles: numpy linear; std: population.
Warmup requests are excluded. Failed requests are counted by kind and never enter latency stats.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from specsweep.measure.records import RequestRecord

NS_PER_MS = 1e6
PCTS = (("median", 50), ("p90", 90), ("p95", 95), ("p99", 99))


def _stats(
    prefix: str, values_ms: Sequence[float] | np.ndarray, *, with_max: bool = False
) -> dict[str, float]:
    a = np.asarray(values_ms, dtype=np.float64)
    out: dict[str, float] = {}
    if a.size == 0:
        out[f"mean_{prefix}_ms"] = 0.0
        out[f"std_{prefix}_ms"] = 0.0
        for name, _ in PCTS:
            out[f"{name}_{prefix}_ms"] = 0.0
        if with_max:
            out[f"max_{prefix}_ms"] = 0.0
        return out
    out[f"mean_{prefix}_ms"] = float(a.mean())
    out[f"std_{prefix}_ms"] = float(a.std())
    qs = np.percentile(a, [q for _, q in PCTS])
    for (name, _), v in zip(PCTS, qs, strict=True):
        out[f"{name}_{prefix}_ms"] = float(v)
    if with_max:
        out[f"max_{prefix}_ms"] = float(a.max())
    return out


def _weighted_stats(
    prefix: str, values_ms: Sequence[float], counts: Sequence[int], *, with_max: bool = False
) -> dict[str, float]:
    """``_stats`` of the list in which ``values_ms[i]`` appears ``counts[i]`` times, without building
    it: memory follows the number of chunks, not the tokens a server claims (1e8 tokens in one
    chunk must not become a 1e8-element list). Same numbers as expanding (numpy linear percentiles,
    population std)."""
    v = np.asarray(values_ms, dtype=np.float64)
    w = np.asarray(counts, dtype=np.float64)
    keep = w > 0
    v, w = v[keep], w[keep]
    if v.size == 0:
        return _stats(prefix, [], with_max=with_max)
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    total = float(w.sum())
    mean = float((v * w).sum() / total)
    out = {f"mean_{prefix}_ms": mean, f"std_{prefix}_ms": float(np.sqrt((w * (v - mean) ** 2).sum() / total))}
    cum = np.cumsum(w)  # cum[i] - 1: the last expanded index holding v[i]
    for name, q in PCTS:
        pos = q / 100.0 * (total - 1)
        lo = np.floor(pos)
        i = int(np.searchsorted(cum, lo, side="right"))
        j = int(np.searchsorted(cum, min(lo + 1, total - 1), side="right"))
        out[f"{name}_{prefix}_ms"] = float(v[i] + (pos - lo) * (v[j] - v[i]))
    if with_max:
        out[f"max_{prefix}_ms"] = float(v[-1])
    return out


def per_token_itl_ms(r: RequestRecord) -> list[float]:
    out: list[float] = []
    for j in range(1, len(r.chunk_ns)):
        n = r.chunk_tokens[j]
        if n <= 0:
            continue
        g = (r.chunk_ns[j] - r.chunk_ns[j - 1]) / NS_PER_MS / n
        out.extend([g] * n)
    return out


def chunk_gaps_ms(r: RequestRecord) -> list[float]:
    return [(r.chunk_ns[j] - r.chunk_ns[j - 1]) / NS_PER_MS for j in range(1, len(r.chunk_ns))]


def tpot_ms(r: RequestRecord) -> float | None:
    if r.output_tokens <= 1 or not r.chunk_ns:
        return None
    return (r.chunk_ns[-1] - r.chunk_ns[0]) / NS_PER_MS / (r.output_tokens - 1)


def run_window_ns(records: Sequence[RequestRecord]) -> tuple[int, int]:
    starts = [r.scheduled_ns for r in records]
    ends = [max(r.end_ns, r.chunk_ns[-1] if r.chunk_ns else 0, r.send_ns) for r in records]
    return min(starts), max(ends)


def compute_metrics(
    records: Sequence[RequestRecord], *, goodput: dict[str, float] | None = None
) -> dict[str, Any]:
    """All run metrics from raw records (warmup excluded). See the module docstring."""
    measured = [r for r in records if not r.is_warmup]
    ok = [r for r in measured if r.ok and r.chunk_ns]
    failed = [r for r in measured if not (r.ok and r.chunk_ns)]
    out: dict[str, Any] = {}
    if measured:
        t0, t1 = run_window_ns(measured)
        duration = max((t1 - t0) / 1e9, 1e-9)
    else:
        t0, duration = 0, 0.0
    n_ok = len(ok)
    in_tok = sum(r.prompt_len for r in ok)
    in_tok_server = sum(r.prompt_tokens_server or 0 for r in ok)
    out_tok = sum(r.output_tokens for r in ok)
    ttft = [(r.chunk_ns[0] - r.send_ns) / NS_PER_MS for r in ok]
    e2e = [(r.chunk_ns[-1] - r.send_ns) / NS_PER_MS for r in ok]
    tpots = [t for r in ok if (t := tpot_ms(r)) is not None]
    itl_counts: list[int] = []  # per-token ITL as (gap / n, n) pairs: bounded by chunks, not tokens
    gaps: list[float] = []
    tokens_per_chunk: Counter[int] = Counter()
    for r in ok:
        g = chunk_gaps_ms(r)
        gaps.extend(g)
        itl_counts.extend(r.chunk_tokens[1 : len(g) + 1])
        tokens_per_chunk.update(n for n in r.chunk_tokens[1:] if n > 0)
    queue = [r.queue_ns / NS_PER_MS for r in measured if r.send_ns]

    out["duration"] = duration
    out["completed"] = n_ok
    out["failed"] = len(failed)
    out["total"] = len(measured)
    kinds = Counter(r.error_kind or "empty" for r in failed)
    out["errors_by_kind"] = dict(sorted(kinds.items()))
    out["total_input_tokens"] = in_tok
    out["total_input_tokens_server"] = in_tok_server or None
    out["total_output_tokens"] = out_tok
    out["request_throughput"] = n_ok / duration if duration else 0.0
    out["input_throughput"] = in_tok / duration if duration else 0.0
    out["output_throughput"] = out_tok / duration if duration else 0.0
    out["total_throughput"] = (in_tok + out_tok) / duration if duration else 0.0
    out["concurrency"] = (sum(e2e) / 1000.0) / duration if duration else 0.0
    out.update(_stats("ttft", ttft))
    out.update(_stats("tpot", tpots))
    itl = [gap / n if n > 0 else 0.0 for gap, n in zip(gaps, itl_counts, strict=True)]
    out.update(_weighted_stats("itl", itl, itl_counts, with_max=True))
    out.update(_stats("e2e_latency", e2e))
    out.update(_stats("chunk_latency", gaps))
    out.update(_stats("queue", queue))
    out["itl_mode"] = "per_token"
    out["max_output_tokens_per_s"] = _max_tokens_per_s(ok, t0)
    n_chunks = sum(tokens_per_chunk.values())
    out["mean_tokens_per_chunk"] = (
        sum(k * v for k, v in tokens_per_chunk.items()) / n_chunks if n_chunks else None
    )
    out["tokens_per_chunk_hist"] = {str(k): v for k, v in sorted(tokens_per_chunk.items())}
    svc = [r.spec_verify_ct for r in ok if r.spec_verify_ct]
    out["accept_length"] = sum(r.output_tokens for r in ok if r.spec_verify_ct) / sum(svc) if svc else None
    srcs = Counter(r.output_tokens_source for r in ok)
    out["output_tokens_source"] = srcs.most_common(1)[0][0] if srcs else None
    # vLLM aliases
    for k in ("mean", "median", "std", "p90", "p95", "p99"):
        out[f"{k}_e2el_ms"] = out[f"{k}_e2e_latency_ms"]
    out["total_token_throughput"] = out["total_throughput"]
    if goodput:
        good = 0
        for r, t, e in zip(ok, ttft, e2e, strict=True):
            tp = tpot_ms(r)
            if "ttft" in goodput and t > goodput["ttft"]:
                continue
            if "e2el" in goodput and e > goodput["e2el"]:
                continue
            if "tpot" in goodput and tp is not None and tp > goodput["tpot"]:
                continue
            good += 1
        out["request_goodput"] = good / duration if duration else 0.0
        out["goodput_slo"] = dict(goodput)
    return out


def _max_tokens_per_s(ok: Sequence[RequestRecord], t0: int) -> float:
    buckets: Counter[int] = Counter()
    for r in ok:
        for t, n in zip(r.chunk_ns, r.chunk_tokens, strict=True):
            buckets[(t - t0) // 1_000_000_000] += n
    return float(max(buckets.values())) if buckets else 0.0


def parse_goodput(spec: Sequence[str] | str | None) -> dict[str, float]:
    """``ttft:MS tpot:MS e2el:MS`` -> {"ttft": ..}; one clear error for anything else."""
    from specsweep.errors import UsageError

    if not spec:
        return {}
    items = spec.split() if isinstance(spec, str) else [x for s in spec for x in s.split()]
    out: dict[str, float] = {}
    for item in items:
        k, sep, v = item.partition(":")
        if not sep or k not in ("ttft", "tpot", "e2el"):
            raise UsageError(f"--goodput {item!r}: expected KEY:MS with KEY one of: e2el, tpot, ttft")
        try:
            out[k] = float(v)
        except ValueError as e:
            raise UsageError(f"--goodput {item!r}: {v!r} is not a number of milliseconds") from e
        if out[k] <= 0:
            raise UsageError(f"--goodput {item!r}: milliseconds must be > 0")
    return out
