"""--validate: the planned fleet as real sim servers on localhost, the mix replayed through the routing
rule, predicted vs replayed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from specsweep.plan.fleet import Pool
from specsweep.plan.options import Option
from specsweep.plan.planner import make_plan, to_json
from specsweep.plan.replay import replay_option, requests_for, route, tolerance
from specsweep.plan.traffic import parse_traffic


def test_route_by_input_tokens() -> None:
    rules = [{"match": {"input_tokens_max": 512}, "pool": "short", "config": "a"},
             {"match": {"input_tokens_min": 513}, "pool": "long", "config": "b"}]  # fmt: skip
    pools = [Pool("short", "a", ("x",), 1), Pool("long", "b", ("y",), 1)]
    o = Option("s", "split", pools, rules, None, 2)  # type: ignore[arg-type]
    assert [route(o, n) for n in (1, 512, 513, 16384)] == ["short", "short", "long", "long"]


def test_engine_model_sees_prefill_interference(reference_results: Path) -> None:
    """Chat sharing instances with RAG waits behind RAG prefills: its p99 TTFT in the mixed fleet is
    above (by >10%) the same config's chat-only fleet at the same load (what per-scenario cells cannot show)."""
    from specsweep.plan.fleetsim import figures, run_fleet
    from specsweep.sim.profile import load_profile
    from specsweep.workload.lengths import sample_lengths
    from specsweep.workload.scenarios import BUILTIN

    prof = load_profile("v4flash-dspark-st3")
    chat_in, chat_out = sample_lengths(BUILTIN["chat_short"], 600, 1)
    rag_in, rag_out = sample_lengths(BUILTIN["rag_medium"], 600, 2)
    alone = [("chat_short", i, o) for i, o in zip(chat_in, chat_out, strict=True)]
    mixed = [r if k % 3 else ("rag_medium", rag_in[k], rag_out[k]) for k, r in enumerate(alone)]

    def chat_p99(reqs: list[tuple[str, int, int]]) -> float:
        done, end = run_fleet([("all", prof, 1)], lambda _n: "all", reqs, 16)
        return figures([d for d in done if d.scenario == "chat_short"], end, 16)["p99_ttft_ms"]

    assert chat_p99(mixed) > 1.1 * chat_p99(alone)


@pytest.mark.slow
@pytest.mark.timing  # replayed latencies on the wall clock against the prediction: runs alone
def test_replay_within_stated_uncertainty(reference_results: Path) -> None:
    """The split whose short pool mixes chat and RAG (the case the cell model got wrong): predicted
    from its fleet on the engine model, replayed over HTTP on sim servers, within the computed
    tolerance on every figure."""
    tr = parse_traffic({"mix": {"chat_short": 0.5, "rag_medium": 0.3, "long_context_probe": 0.2},
                        "load": {"concurrency": 8}, "gpus_per_instance": 8})  # fmt: skip
    plan = make_plan([reference_results], tr, gpus=16)
    reqs = requests_for(plan, 400, 0)
    share = sum(1 for s, _i, _o in reqs if s == "chat_short") / len(reqs)
    assert 0.4 < share < 0.6  # drawn by the mix
    view = {o["name"]: o for o in to_json(plan)["options"]}
    opt = next(o for o in plan.options if o.kind == "split" and len(o.pools[0].scenarios) > 1)
    rep = replay_option(plan, opt, time_scale=1.0, n_requests=120)
    assert rep["completed"] == 120 and rep["failed"] == 0
    parts = tolerance(plan, opt, view[opt.name], 120)
    tol = {k: v["total"] for k, v in parts.items()}
    for k, t in tol.items():
        pred = view[opt.name][k]
        assert 0 < t < 1.5 and abs(math.log(rep[k] / pred)) <= math.log1p(t), (k, rep, pred, tol)


def test_engine_model_rejects_what_no_engine_holds() -> None:
    """A prompt larger than the KV cache is refused (the server answers 400) and the loop goes on."""
    from specsweep.plan.fleetsim import run_fleet
    from specsweep.sim.profile import load_profile

    prof = load_profile("v4flash-dspark-st3")
    reqs = [("a", 100, 20), ("a", prof.kv_tokens + 1, 20), ("a", 50, 10)]
    done, _end = run_fleet([("all", prof, 1)], lambda _n: "all", reqs, 2)
    assert sorted(d.index for d in done) == [0, 2]
