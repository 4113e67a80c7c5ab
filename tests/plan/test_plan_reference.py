"""`specsweep plan` on the reference data: the JSON contract, thresholds and config choices computed
from the data (change the data, the plan changes), measured vs simulated marking, the router config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from specsweep.cli import main
from specsweep.plan.planner import make_plan, to_json
from specsweep.plan.traffic import parse_traffic
from specsweep.sim.reference import write_results_dir
from specsweep.workload.lengths import length_bounds
from specsweep.workload.scenarios import BUILTIN

pytestmark = pytest.mark.slow

MIX = {"chat_short": 0.7, "long_context_probe": 0.3}
TRAFFIC = {"mix": MIX, "load": {"concurrency": 8}, "gpus_per_instance": 8}
KEYS = {
    "name",
    "kind",
    "configs",
    "rules",
    "gpus",
    "total_throughput",
    "p99_ttft_ms",
    "p99_tpot_ms",
    "source",
}


@pytest.fixture(scope="module")
def view(reference_results: Path) -> dict:
    return to_json(make_plan([reference_results], parse_traffic(TRAFFIC), gpus=16))


def test_json_contract(view: dict) -> None:
    names = [o["name"] for o in view["options"]]
    assert view["recommended"] in names
    assert {o["kind"] for o in view["options"]} >= {"single", "split"}
    for o in view["options"]:
        assert set(o) >= KEYS
        assert o["kind"] in ("single", "split", "adaptive") and o["source"] in (
            "measured",
            "simulated",
            "mixed",
        )
        assert o["gpus"] == 16 and o["total_throughput"] > 0 and o["p99_ttft_ms"] > 0 and o["p99_tpot_ms"] > 0


def test_split_threshold_computed_from_scenario_lengths(view: dict) -> None:
    (split,) = [o for o in view["options"] if o["kind"] == "split"]
    sc, lc = BUILTIN["chat_short"], BUILTIN["long_context_probe"]
    t = length_bounds(sc.input_len, sc.range_ratio, sc.range_mode)[1]
    assert split["threshold_input_tokens"] == t
    lo, hi = length_bounds(lc.input_len, lc.range_ratio, lc.range_mode)
    assert split["misrouted_share"] == pytest.approx(
        MIX["long_context_probe"] * (t - lo + 1) / (hi - lo + 1), abs=1e-4
    )
    assert split["rules"][0]["match"] == {"input_tokens_max": t}
    # long context runs at a measured level (8) there, where st=5 beats st=3 in the reference data
    assert split["pools"][1]["in_flight_per_instance"] in (1, 4, 8)
    assert split["rules"][1]["config"] == "dspark-st5"


def test_sources_marked(view: dict) -> None:
    single = next(o for o in view["options"] if o["kind"] == "single")
    (pool,) = single["pools"]
    assert pool["in_flight_per_instance"] == 4  # 8 in flight on 2 instances
    srcs = {s: v["source"] for s, v in pool["scenarios"].items()}
    assert srcs == {"chat_short": "simulated", "long_context_probe": "measured"}  # c=4: long context only
    assert single["source"] == "mixed"


def test_changed_data_changes_the_choice(reference_rows_: list[dict], tmp_path: Path) -> None:
    """Make st=3 twice as fast on long context: the long pool switches to st=3 (nothing hard-coded)."""
    rows = []
    for r in reference_rows_:
        r = dict(r)
        if r["scenario"] == "long_context_probe" and r["label"] == "dspark-st3":
            for k in ("request_throughput", "total_throughput", "output_throughput"):
                r[k] *= 2
            r["mean_e2e_latency_ms"] /= 2
        rows.append(r)
    res = write_results_dir(rows, tmp_path)
    tr = parse_traffic(TRAFFIC)
    v = to_json(make_plan([res], tr, gpus=16))
    (split,) = [o for o in v["options"] if o["kind"] == "split"]
    assert split["rules"][1]["config"] == "dspark-st3"


def test_cli_json_and_router(reference_results: Path, tmp_path: Path) -> None:
    t = tmp_path / "traffic.yaml"
    t.write_text(yaml.safe_dump({**TRAFFIC, "load": {"concurrency": 8}}))
    out = tmp_path / "plan.json"
    rc = main(["plan", str(reference_results), "--traffic", str(t), "--gpus", "16", "--format", "json", "-o", str(out),
               "--slo", "ttft_p99_ms=60000"])  # fmt: skip
    assert rc == 0
    v = json.loads(out.read_text())
    assert set(v["options"][0]) >= KEYS and v["recommended"]
    cfg = yaml.safe_load(v["router"]["config"])
    assert cfg["router_settings"]["enable_tag_filtering"] is True
    rec = next(o for o in v["options"] if o["name"] == v["recommended"])
    assert len(cfg["model_list"]) == rec["gpus"] // 8
    assert any("default" in d["litellm_params"]["tags"] for d in cfg["model_list"])
    assert "LiteLLM" in v["router"]["why"]


def test_daily_profile_sized_for_peak_and_costed(reference_results: Path) -> None:
    """A quiet night and a busy day: the fleet is sized for the peak hour, and scaling per hour needs
    fewer GPU-hours than keeping the peak fleet all day (computed per hour with the cell model)."""
    tr = parse_traffic(
        {"mix": MIX, "load": {"concurrency_by_hour": {0: 2, 8: 24, 20: 4}}, "gpus_per_instance": 8}
    )
    plan = make_plan([reference_results], tr, gpus=32, slo={"ttft_p99_ms": 60000})
    v = to_json(plan)
    assert v["traffic"]["in_flight"] == 24 and v["traffic"]["peak_hour"] == 8
    assert v["traffic"]["in_flight_by_hour"][3] == 2 and v["traffic"]["in_flight_by_hour"][12] == 24
    single = next(o for o in v["options"] if o["kind"] == "single")
    day = single["day"]
    assert day["gpu_hours_fixed"] == 32 * 24
    assert all(8 <= g <= 32 for g in day["gpus_by_hour"])
    assert day["gpus_by_hour"][3] <= day["gpus_by_hour"][12]
    assert day["gpu_hours_scaled"] == sum(day["gpus_by_hour"]) < day["gpu_hours_fixed"]


def test_three_pool_split_thresholds_computed(reference_results: Path) -> None:
    """Short / medium / long: with three scenario lengths and three instances, a three-pool split is
    offered, its two thresholds are each the least-misrouting cut between neighbouring pools, and its
    rules partition the input lengths."""
    from specsweep.plan.options import length_cut
    from specsweep.plan.replay import route

    mix = {"chat_short": 0.5, "rag_medium": 0.3, "long_context_probe": 0.2}
    tr = parse_traffic({"mix": mix, "load": {"concurrency": 12}, "gpus_per_instance": 8})
    plan = make_plan([reference_results], tr, gpus=24)
    three = [o for o in plan.options if o.kind == "split" and len(o.pools) == 3]
    assert len(three) == 1
    o = three[0]
    assert [p.name for p in o.pools] == ["short", "medium", "long"]
    assert sum(p.instances for p in o.pools) == 3 and all(p.instances >= 1 for p in o.pools)
    t1, t2 = o.extra["threshold_input_tokens"]
    sc = {s: BUILTIN[s] for s in mix}
    assert t1 == length_cut([sc["chat_short"]], [sc["rag_medium"]], mix)[0]
    assert t2 == length_cut([sc["rag_medium"]], [sc["long_context_probe"]], mix)[0]
    assert [route(o, n) for n in (1, t1, t1 + 1, t2, t2 + 1)] == [
        "short",
        "short",
        "medium",
        "medium",
        "long",
    ]
