"""The two values that cross the benchmark's layers: what to run (:class:`BenchConfig`) and what came
out (:class:`BenchOutcome`). A leaf module: ``bench``, ``client.*`` and ``orchestrate`` import it, it
imports none of them (no import cycle between the library call and the client).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specsweep.measure.records import RequestRecord
from specsweep.workload.scenarios import Scenario


@dataclass
class BenchConfig:
    base_url: str  # e.g. http://127.0.0.1:30000
    scenario: Scenario
    backend: str = "sglang"  # dialect: sglang | vllm | openai | openai-chat | sglang-oai | sglang-oai-chat
    model: str | None = None  # None: first model listed by /v1/models (or get_model_info)
    tokenizer: str | None = None  # local HF tokenizer file/dir; None: built-in tokenizer
    num_prompts: int | None = None  # None: default_num_prompts(max_concurrency)
    prompt_pool: int | None = None  # a shorter run of a cell: its first num_prompts of this many (the cell's)
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
    allow_redirects: bool = (
        False  # follow HTTP redirects (refused by default: the numbers would describe another server)
    )
    # k, the server's draft tokens per step, when its config says (specsweep.measure.acceptance.spec_tokens):
    # bounds the acceptance figures the server reports (None: only the bounds any engine obeys)
    spec_tokens: int | None = None


@dataclass
class BenchOutcome:
    result: dict[str, Any]  # one JSON line: sglang.bench_serving key names + our extras
    records: list[RequestRecord]  # all requests incl. warmup (is_warmup flag)
    invalid_reason: str | None = None  # the client was the bottleneck, etc.
    # Per measured request index: [(chunk position, ns), ...] for chunks whose arrival stamp may be up
    # to that much late (read together with later bytes); see client/selfcheck.py.
    stamp_bounds: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
