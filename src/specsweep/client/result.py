"""What one client process measured (:class:`WorkerRun`) and the one function that turns any number
of them into a run's result line (:func:`build_outcome`), as pyperf merges worker runs: a
single-process run is one worker's run, a ``--workers N`` run is N of them on one clock.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from specsweep import __version__
from specsweep.client import server_info, usage_check
from specsweep.client.bench_types import BenchConfig, BenchOutcome
from specsweep.client.selfcheck import ClientLoad, StampBounds, judge
from specsweep.measure import acceptance, steady
from specsweep.measure.metrics import compute_metrics
from specsweep.measure.per_category import per_category
from specsweep.measure.records import RequestRecord
from specsweep.workload.scenarios import default_num_prompts

log = logging.getLogger(__name__)

RANDOM_IDS_WARNING = (
    "random-ids prompts against a speculative server: acceptance on random tokens is not "
    "representative; use real-text prompts (--dataset-name random) to compare speculation"
)


@dataclass
class WorkerRun:
    """One client process's measured run: its records (on its own clock until merged), warmup
    records, its own load, whether its stamps were the kernel's, and per-chunk stamp bounds."""

    worker: int
    records: list[RequestRecord]
    warm: list[RequestRecord] = field(default_factory=list)
    load: ClientLoad = field(default_factory=ClientLoad)
    kernel: bool = False
    bounds: StampBounds = field(default_factory=dict)
    # measured requests whose send time was [the send call's start, the kernel's transmit stamp]
    send_stamps: list[int] = field(default_factory=lambda: [0, 0])
    redirects: int = 0  # responses that followed a redirect (only with allow_redirects)
    # measured requests whose server token count their text contradicts: (index, why); usage_check
    count_disagreements: list[tuple[int, str]] = field(default_factory=list)
    host: str = ""
    pid: int = 0


def send_stamps_label(runs: Sequence[WorkerRun]) -> str:
    """How the measured requests' send times were taken: ``kernel`` (every one the kernel's transmit
    stamp), ``call`` (none: the time the send call began), or ``mixed (N of M kernel)``."""
    call = sum(run.send_stamps[0] for run in runs)
    kern = sum(run.send_stamps[1] for run in runs)
    if not call:
        return "kernel" if kern else "call"
    return f"mixed ({kern} of {kern + call} kernel)" if kern else "call"


@dataclass
class ServerSide:
    """What the driver learned from the server around the measured run."""

    version: dict[str, Any] | None = None
    spec_before: dict[str, Any] | None = None
    spec_after: dict[str, Any] | None = None
    accept_length: float | None = None


def result_line(
    cfg: BenchConfig, model: str | None, tokenizer: str, version: dict[str, Any] | None, m: dict[str, Any]
) -> dict[str, Any]:
    """The result line's head (sglang.bench_serving key names) followed by the metrics ``m``."""
    sc = cfg.scenario
    head: dict[str, Any] = {
        "backend": cfg.backend,
        "base_url": cfg.base_url,
        "model": model,
        "tokenizer": tokenizer,
        "dataset_name": sc.dataset,
        "scenario": sc.name,
        "request_rate": None if math.isinf(cfg.request_rate) else cfg.request_rate,
        "burstiness": cfg.burstiness,
        "max_concurrency": cfg.max_concurrency,
        "num_prompts": cfg.num_prompts or default_num_prompts(cfg.max_concurrency or 1),
        "random_input_len": sc.input_len,
        "random_output_len": sc.output_len,
        "random_range_ratio": sc.range_ratio,
        "range_ratio_mode": sc.range_mode,
        "warmup_requests": cfg.warmup_requests,
        "seed": cfg.seed,
        "ignore_eos": cfg.ignore_eos,
        "temperature": cfg.temperature,
        "tag": cfg.tag,
        "specsweep_version": __version__,
        "date": time.strftime("%Y%m%d-%H%M%S"),
        "server_version": version,
        "time_scale": (version or {}).get("time_scale"),
    }
    head.update(m)
    return head


def build_outcome(
    cfg: BenchConfig,
    model: str | None,
    tokenizer: str,
    server: ServerSide,
    runs: Sequence[WorkerRun],
    worker_info: Sequence[dict[str, Any]] | None = None,
) -> BenchOutcome:
    """Merge worker runs (records already on one clock) into one run: metrics over all records, one
    self-check verdict (:func:`~specsweep.client.selfcheck.judge`), one result line.
    ``worker_info`` adds per-worker facts (host, clock offset...) to ``self_check.per_worker``."""
    warm = [r for run in runs for r in run.warm]
    records = sorted((r for run in runs for r in run.records), key=lambda r: r.index)
    bounds: StampBounds = {}
    for run in runs:
        bounds.update(run.bounds)
    metrics = compute_metrics(records, goodput=cfg.goodput or None)
    if metrics["completed"] == 0 and records:
        first = next((r.error for r in records if r.error), "")
        log.warning("every request failed (%s): %s", metrics["errors_by_kind"], first)
    result = result_line(cfg, model, tokenizer, server.version, metrics)
    result["waves"] = steady.waves(result.get("num_prompts"), cfg.max_concurrency)
    result.update(steady.steady_state(records, cfg.max_concurrency))
    result.update(server_info.spec_delta(server.spec_before, server.spec_after))
    result.update(acceptance.fill(result))  # one definition for every engine (specsweep.measure.acceptance)
    result["server_accept_length"] = server.accept_length or None  # 0: SGLang has no figure yet
    # the most output tokens the server can have made for these requests: what they asked for (or
    # got, where more): its counters cannot have accepted, nor drafted for, more
    most_output = sum(max(r.output_len, r.output_tokens) for r in records)
    impossible = acceptance.problems(result, cfg.spec_tokens, output_tokens=most_output)
    if impossible:  # a lying or restarted server: no acceptance figure of this run is shown
        acceptance.invalidate(result, impossible)
    result["per_category"] = per_category(records, result.get("accept_length"))
    for cat in result["per_category"].values():  # the same bounds per category (its own requests)
        al = cat.get("accept_length")
        if al is not None and (impossible or not 1.0 <= al <= acceptance.max_accept_length(
            cfg.spec_tokens, cat.get("accept_length_source"))):  # fmt: skip
            cat["accept_length"] = cat["accept_length_source"] = None
    kernel = bool(runs) and all(run.kernel for run in runs)
    v = judge([run.load for run in runs], kernel, records, bounds)
    check = v.check
    if len(runs) > 1:
        result["workers"] = len(runs)
        info = worker_info or [{} for _ in runs]
        check["per_worker"] = [
            {"worker": run.worker, "host": run.host, "pid": run.pid, "requests": len(run.records), **i, **fig,
             "kernel_stamps": 1.0 if run.kernel else 0.0}
            for run, i, fig in zip(runs, info, v.per_worker, strict=True)
        ]  # fmt: skip
        rtts = [i["clock_rtt_ns"] for i in info if "clock_rtt_ns" in i]
        if rtts:
            check["clock_error_max_ms"] = max(rtts) / 2e6
    result["self_check"] = check
    result["arrival_stamps"] = "kernel" if kernel else "read"
    result["send_stamps"] = send_stamps_label(runs)
    result["stamp_error"] = v.stamp_error
    result["allow_redirects"] = cfg.allow_redirects
    result["redirects_followed"] = sum(run.redirects for run in runs)
    warns = list(v.warnings)
    if impossible:
        warns.append(f"acceptance figures dropped: {result['acceptance_invalid_reason']}")
    if cfg.scenario.dataset == "random-ids" and (
        result.get("spec_num_drafts") or result.get("accept_length")
    ):
        warnings.warn(RANDOM_IDS_WARNING, stacklevel=2)
        warns.append(RANDOM_IDS_WARNING)
    result["warnings"] = warns
    counts = usage_check.invalid_reason(
        [d for run in runs for d in run.count_disagreements], int(metrics["completed"])
    )
    invalid = "; ".join([*v.reasons, *([counts] if counts else [])]) or None
    result["invalid"] = invalid is not None
    result["invalid_reason"] = invalid
    result["invalid_reasons"] = v.codes or None  # each reason's code and figures, for reports in any language
    return BenchOutcome(result=result, records=warm + records, invalid_reason=invalid, stamp_bounds=bounds)
