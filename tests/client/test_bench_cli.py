"""`specsweep bench` as a user runs it: a real `sim serve` process, output files, bad flags."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import orjson
import pyarrow.parquet as pq
import pytest

from specsweep.cli import main

pytestmark = pytest.mark.slow

CMD = [sys.executable, "-m", "specsweep"]


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    p = subprocess.Popen([*CMD, "sim", "serve", "--profile", "toy", "--port", "0", "--time-scale", "5"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert p.stdout is not None
    line = p.stdout.readline()
    assert "listening on" in line, line
    yield line.strip().rsplit(" ", 1)[-1]
    p.terminate()
    p.wait(10)


@pytest.mark.parametrize("backend", ["sglang", "vllm", "openai-chat"])
def test_bench_writes_sglang_line_and_records(sim_url: str, tmp_path, backend: str) -> None:  # type: ignore[no-untyped-def]
    out, recs = tmp_path / "out.jsonl", tmp_path / "rec.parquet"
    argv = ["bench", "--backend", backend, "--base-url", sim_url, "--scenario", "chat_short",
            "--random-input-len", "64", "--random-output-len", "32", "--num-prompts", "12",
            "--max-concurrency", "4", "--warmup-requests", "2", "--output-file", str(out),
            "--records", str(recs), "--tag", "t1", "--quiet", "--repeats", "2"]  # fmt: skip
    rc = main(argv)
    lines = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    # exit 5 exactly when a repeat's self-check marked it invalid (a loaded machine), else 0
    assert rc == (5 if any(x["invalid"] for x in lines) else 0), (
        rc,
        [x.get("invalid_reason") for x in lines],
    )
    assert len(lines) == 2 and [x["repeat"] for x in lines] == [0, 1]
    res = lines[0]
    for key in ("duration", "completed", "total_input_tokens", "total_output_tokens", "request_throughput",
                "output_throughput", "total_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
                "median_itl_ms", "p95_e2e_latency_ms", "concurrency", "max_output_tokens_per_s",
                "accept_length", "mean_e2el_ms", "total_token_throughput", "itl_mode", "tag"):  # fmt: skip
        assert key in res, key
    assert res["completed"] == 12 and res["failed"] == 0 and res["tag"] == "t1"
    assert res["output_tokens_source"] == "server"
    # the sim speculates: several tokens per chunk and an acceptance length above 1
    assert res["mean_tokens_per_chunk"] > 1.0
    assert res["accept_length"] > 1.0
    if backend != "sglang":
        assert res["spec_accept_length"] > 1.0
    t = pq.read_table(tmp_path / "rec.r0.parquet").to_pylist()
    assert len(t) == 14 and sum(r["is_warmup"] for r in t) == 2
    assert sum(r["output_tokens"] for r in t if not r["is_warmup"]) == res["total_output_tokens"]


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["bench", "--backend", "tgi", "--scenario", "chat_short"], "unknown --backend"),
        (["bench", "--scenario", "nope"], "unknown scenario"),
        (["bench", "--scenario", "chat_short", "--num-prompts", "0"], "--num-prompts must be > 0"),
        (["bench", "--scenario", "chat_short", "--extra-request-body", "{bad"], "not JSON"),
        (["bench", "--scenario", "chat_short", "--goodput", "foo:1"], "--goodput"),
        (["bench", "--scenario", "chat_short", "--request-rate", "fast"], "invalid float value"),
        (["bench", "--scenario", "chat_short", "--base-url", "localhost:1"], "--base-url"),
    ],
)
def test_bad_flags_one_clear_line(argv: list[str], msg: str) -> None:
    r = subprocess.run([*CMD, *argv], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    err = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("  (see")]
    assert len(err) == 1 and msg in err[0], r.stderr
    assert "Traceback" not in r.stderr


def test_unreachable_server_exits_nonzero_with_reason() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = subprocess.run([*CMD, "bench", "--backend", "vllm", "--model", "m", "--port", str(port), "--scenario",
                        "chat_short", "--num-prompts", "2", "--quiet"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 4
    assert "no request completed" in r.stderr and "connect" in r.stderr
    assert "Traceback" not in r.stderr
