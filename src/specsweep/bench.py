"""One benchmark run: workload -> client runner -> records -> metrics. The library call behind
``specsweep bench`` and behind every cell of ``specsweep run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specsweep.records import RequestRecord
from specsweep.workload.scenarios import Scenario


@dataclass
class BenchConfig:
    base_url: str  # e.g. http://127.0.0.1:30000
    scenario: Scenario
    backend: str = "sglang"  # dialect: sglang | vllm | openai | openai-chat | sglang-oai | sglang-oai-chat
    model: str | None = None  # None: first model listed by /v1/models (or get_model_info)
    tokenizer: str | None = None  # local HF tokenizer file/dir; None: built-in tokenizer
    num_prompts: int | None = None  # None: default_num_prompts(max_concurrency)
    max_concurrency: int | None = None  # closed loop limit (None: unlimited)
    request_rate: float = float("inf")  # open loop rate (req/s); inf: all at once (bounded by concurrency)
    burstiness: float = 1.0  # gamma shape; 1 = Poisson
    warmup_requests: int = 0
    warmup_sleep_s: float = 1.0  # pause after warmup (sglang sleeps 1 s)
    seed: int = 1
    extra_request_body: dict[str, Any] = field(default_factory=dict)
    goodput: dict[str, float] = field(default_factory=dict)  # {"ttft": ms, "tpot": ms, "e2el": ms}
    tag: str | None = None
    ignore_eos: bool = True
    temperature: float = 0.0
    request_timeout_s: float = 600.0
    keep_text: bool = False  # store output text in records (losslessness checks)
    workers: int = 1
    repeats: int = 1
    scrape_metrics: bool = True  # scrape /metrics and /server_info before and after (spec counters)
    quiet: bool = False


@dataclass
class BenchOutcome:
    result: dict[str, Any]  # one JSON line: sglang.bench_serving key names + our extras
    records: list[RequestRecord]  # all requests incl. warmup (is_warmup flag)
    invalid_reason: str | None = None  # the client was the bottleneck, etc.


def run_bench(cfg: BenchConfig, *, ray_address: str | None = None) -> BenchOutcome:
    """Run one benchmark synchronously (owns its event loop); ``workers > 1`` splits the load over
    that many client processes (specsweep.client.multiworker)."""
    import asyncio

    if cfg.workers > 1:
        from specsweep.client.multiworker import run_multiworker

        return run_multiworker(cfg, ray_address=ray_address)
    from specsweep.client.runner import run_bench_async

    return asyncio.run(run_bench_async(cfg))
