"""A small, fast cross-validation: specsweep and sglang.bench_serving against the simulator.

Both clients get the same prompts, output lengths, tokenizer, concurrency and warmup, each against a
fresh `specsweep sim serve` with the same seed and --truth. Each client's numbers are divided by its own
server's ground truth (which cancels the host's run-to-run drift), then compared: TPOT, E2E and
throughput agree; ITL differs by design (sglang's OpenAI path counts one gap per chunk, ours per
token) and sglang's ITL equals our chunk gap. benchmarks/cross_validate.py is the full version
(docs/validation.md). Needs the peer venv: `bash scripts/setup_peers.sh sglang`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # both clients' timings against server truth: runs alone

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "cross_validate.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cross_validate", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cross_validate"] = mod
    spec.loader.exec_module(mod)
    return mod


cv = _load()

# toy profile slowed 20x: steps of a few ms, well above the client's timestamp noise; speculative
# chunks carry several tokens. 24 requests at concurrency 4: about 2 s per client.
PROFILE, TIME_SCALE, N, CONC, OUT_LEN = "toy", 0.05, 24, 4, 32
TOL = 0.05  # normalised difference allowed here (the full run holds 2%; CI hosts are noisier)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    why = cv.peer_missing("sglang")
    if why:
        pytest.skip(f"peer client not installed: {why}")
    work = tmp_path_factory.mktemp("xv")
    wl = cv.make_workload(work / "workload", N, OUT_LEN, 32, 200, seed=1)
    out: dict[str, object] = {}
    for name, fn in (("specsweep", cv.run_specsweep), ("sglang", cv.run_sglang)):
        d = work / name
        d.mkdir()
        with cv.sim_server(PROFILE, TIME_SCALE, 1, d / "truth.jsonl", d / "server.log") as srv:
            res = fn(cv.RunSpec(wl, srv, CONC, d, seed=1))
        res.truth = cv.truth_metrics(d / "truth.jsonl", N)
        out[name] = res
    return out


@pytest.mark.timeout(240)
def test_same_workload_same_counts(runs: dict[str, object]) -> None:
    ss, sg = runs["specsweep"], runs["sglang"]
    for key in ("completed", "total_input_tokens", "total_output_tokens"):
        assert ss.metrics[key] == sg.metrics[key] == ss.truth[key], key  # type: ignore[attr-defined]
    assert ss.metrics["total_output_tokens"] == N * OUT_LEN  # type: ignore[attr-defined]


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "key",
    ["mean_tpot_ms", "median_tpot_ms", "mean_e2e_latency_ms", "output_throughput", "request_throughput"],
)
def test_shared_definitions_agree(runs: dict[str, object], key: str) -> None:
    d = cv.agreement(runs["specsweep"], runs["sglang"], key)
    assert d is not None and abs(d) < TOL, f"{key}: sglang vs specsweep (normalised by truth) {d:+.1%}"


@pytest.mark.timeout(240)
def test_specsweep_matches_server_truth(runs: dict[str, object]) -> None:
    ss = runs["specsweep"]
    for key in ("mean_tpot_ms", "mean_e2e_latency_ms", "mean_itl_ms", "mean_chunk_latency_ms"):
        d = cv.rel(ss.truth[key], ss.metrics[key])  # type: ignore[attr-defined]
        assert d is not None and abs(d) < TOL, f"{key}: specsweep vs server truth {d:+.1%}"


@pytest.mark.timeout(240)
def test_itl_per_chunk_vs_per_token(runs: dict[str, object]) -> None:
    ss, sg = runs["specsweep"], runs["sglang"]
    tpc = ss.metrics["mean_tokens_per_chunk"]  # type: ignore[attr-defined]
    assert tpc > 1.3, f"the toy profile should put several tokens in a chunk, got {tpc}"
    # sglang's OpenAI-path ITL is the chunk gap: it equals our chunk_latency, not our per-token ITL
    d = cv.agreement(ss, sg, "mean_chunk_latency_ms")
    assert d is not None and abs(d) < TOL, f"sglang ITL vs our chunk gap {d:+.1%}"
    assert sg.metrics["mean_itl_ms"] > 1.2 * ss.metrics["mean_itl_ms"]  # type: ignore[attr-defined]
