"""--validate: the planned fleet as real sim servers on localhost, the mix replayed through the routing
rule, predicted vs replayed."""

from __future__ import annotations

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


@pytest.mark.slow
def test_replay_matches_prediction(reference_results: Path) -> None:
    tr = parse_traffic({"mix": {"chat_short": 0.5, "rag_medium": 0.5}, "load": {"concurrency": 8},
                        "gpus_per_instance": 8})  # fmt: skip
    plan = make_plan([reference_results], tr, gpus=16)
    reqs = requests_for(plan, 400, 0)
    share = sum(1 for s, _i, _o in reqs if s == "chat_short") / len(reqs)
    assert 0.4 < share < 0.6  # drawn by the mix
    view = {o["name"]: o for o in to_json(plan)["options"]}
    single = next(o for o in plan.options if o.kind == "single")
    rep = replay_option(plan, single, time_scale=3.0, n_requests=96)
    assert rep["completed"] == 96 and rep["failed"] == 0
    pred = view[single.name]["total_throughput"]
    tol = tolerance(plan, single)["total_throughput"]
    assert abs(rep["total_throughput"] / pred - 1) <= tol, (rep, pred, tol)
