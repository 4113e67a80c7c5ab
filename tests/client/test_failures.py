"""Failures are data: each bad server behaviour becomes a failed request of the right kind."""

from __future__ import annotations

import asyncio
import socket

import pytest

from specsweep.client.bench import BenchConfig
from specsweep.client.runner import run_bench_async
from specsweep.workload.scenarios import Scenario

from .scripted_server import ProcessServer, Script

SC = Scenario(name="t", input_len=16, output_len=11, range_ratio=1.0)


def _bench(url: str, backend: str = "vllm", timeout: float = 30.0, n: int = 4) -> object:
    cfg = BenchConfig(base_url=url, scenario=SC, backend=backend, model="scripted", num_prompts=n,
                      max_concurrency=2, scrape_metrics=False, quiet=True, request_timeout_s=timeout)  # fmt: skip
    return asyncio.run(run_bench_async(cfg))


@pytest.mark.parametrize(
    ("mode", "kind", "backend"),
    [
        ("http500", "http_status", "vllm"),
        ("malformed", "malformed", "vllm"),
        ("malformed", "malformed", "sglang"),
        ("truncate", "disconnect", "vllm"),
        ("truncate", "disconnect", "sglang"),
        ("error_obj", "server_error", "openai-chat"),
    ],
)
def test_fault_kinds(mode: str, kind: str, backend: str) -> None:
    with ProcessServer(Script(mode=mode)) as ps:
        out = _bench(ps.url, backend)
    res = out.result  # type: ignore[attr-defined]
    assert res["completed"] == 0 and res["failed"] == 4
    assert res["errors_by_kind"] == {kind: 4}
    assert res["mean_ttft_ms"] == 0.0  # failures never enter latency statistics


def test_timeout() -> None:
    with ProcessServer(Script(mode="stall")) as ps:
        out = _bench(ps.url, timeout=1.0, n=2)
    assert out.result["errors_by_kind"] == {"timeout": 2}  # type: ignore[attr-defined]


def test_mixed_success_and_errors_keep_stats_clean() -> None:
    with ProcessServer(Script(mode="every_other_500")) as ps:
        out = _bench(ps.url, n=6)
    res = out.result  # type: ignore[attr-defined]
    assert res["completed"] == 3 and res["failed"] == 3
    assert res["errors_by_kind"] == {"http_status": 3}
    assert res["total_output_tokens"] == 3 * sum(Script().tokens)


def test_unreachable_server_is_data_not_crash() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = _bench(f"http://127.0.0.1:{port}", n=3)
    assert out.result["errors_by_kind"] == {"connect": 3}  # type: ignore[attr-defined]


def test_pooled_connection_closed_by_server_is_retried_not_lost() -> None:
    # concurrency 2 (the helper's default): several pooled connections go stale at once
    with ProcessServer(Script(mode="close_after")) as ps:
        out = _bench(ps.url, n=24)
    res = out.result  # type: ignore[attr-defined]
    assert res["completed"] == 24 and res["failed"] == 0, res["errors_by_kind"]
