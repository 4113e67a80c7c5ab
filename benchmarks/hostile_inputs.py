"""Timings behind docs/reliability.md section 5 (issue 20, items 8-12): the size and shape attacks.

    python benchmarks/hostile_inputs.py            # about 20 s on a busy 2-core box

Prints one line per case: planning 8,000 servers (quadratic before: 118 s), decoding one 100 MB SSE
event fed in 64 KiB reads (the decoder's bound raised for the measurement), loading the 12-line
alias bomb (90 s+ and 1.8 GB before), and metrics of a record that claims 1e8 tokens in one chunk (1.9 GB before), with the peak Python memory of each.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specsweep.config import plan_experiment
from specsweep.errors import ConfigError
from specsweep.loader import load_experiment, parse_experiment

ROOT = Path(__file__).resolve().parents[1]


def measure(name: str, fn: Callable[[], Any]) -> None:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    except ConfigError as e:
        out = f"ConfigError: {str(e)[-90:]}"
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"{name:<44} {dt:8.2f} s  peak {peak:7.1f} MiB  {out}")


def plan_servers(n: int) -> str:
    servers = [{"name": f"s{i}", "kind": "sim", "profile": "toy"} for i in range(n)]
    exp = parse_experiment({"name": "big", "servers": servers,
                            "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]})  # fmt: skip
    return f"{len(plan_experiment(exp).configs):,} configs"


def sse_event(size: int) -> str:
    from specsweep.client.sse import SSEDecoder

    dec = SSEDecoder(max_event_bytes=size * 2)
    piece = b"x" * 65536
    dec.feed(b"data: ")
    for _ in range(size // len(piece)):
        dec.feed(piece)
    (ev,) = dec.feed(b"\n\n")
    return f"{len(ev) / 1e6:.0f} MB event"


def claimed_tokens(n: int) -> str:
    from specsweep.metrics import compute_metrics
    from specsweep.records import RequestRecord

    r = RequestRecord(index=0, is_warmup=False, worker=0, prompt_len=4, output_len=n, scheduled_ns=0,
                      send_ns=1, chunk_ns=[10, 20_000_000], chunk_tokens=[1, n], end_ns=20_000_000,
                      output_tokens=n + 1)  # fmt: skip
    return f"mean ITL {compute_metrics([r])['mean_itl_ms']:.2e} ms"


def main() -> None:
    measure("plan 8,000 servers", lambda: plan_servers(8000))
    measure("SSE: one 100 MB event in 64 KiB reads", lambda: sse_event(100 * 2**20))
    measure(
        "YAML alias bomb (12 lines)", lambda: load_experiment(ROOT / "tests/security/inputs/alias_bomb.yaml")
    )
    measure("metrics of a record claiming 1e8 tokens", lambda: claimed_tokens(10**8))


if __name__ == "__main__":
    main()
