"""Experiment files: a workload's dataset sources and the no-speculation baseline server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specsweep.errors import ConfigError
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.workload.prompts import generate
from specsweep.workload.tokenizer import BuiltinTokenizer

DATA = Path(__file__).parent / "data"


def _exp(**kw: Any) -> dict[str, Any]:
    exp: dict[str, Any] = {
        "name": "d",
        "servers": [
            {"name": "off", "kind": "sim", "profile": "dspark-st3", "baseline": True},
            {"name": "on", "kind": "sim", "profile": "dspark-st3", "method": "dspark", "grid": {"k": [3, 5]}},
        ],
        "workloads": [{"scenarios": ["chat_short"], "concurrency": [1, 4], "num_prompts": 4,
                       "dataset": [{"name": "gsm8k", "path": str(DATA / "gsm8k_test.jsonl")},
                                   {"name": "spec-bench", "path": str(DATA / "spec_bench_question.jsonl"),
                                    "categories": ["translation", "qa"], "label": "lang"}]}],
    }  # fmt: skip
    exp.update(kw)
    return exp


def test_workload_dataset_makes_one_scenario_per_source() -> None:
    plan = plan_experiment(parse_experiment(_exp()))
    cells = plan.cells["off"]
    assert sorted({c.scenario for c in cells}) == ["chat_short@gsm8k", "chat_short@lang"]
    assert len(cells) == 4 and len(plan.all_cells()) == 12
    sc = plan.scenarios["chat_short@lang"]
    assert sc.output_len == 256 and sc.mix[0].categories == ("translation", "qa")
    specs = generate(sc, 6, BuiltinTokenizer(), seed=1)
    assert {s.category for s in specs} == {"translation", "qa"}
    assert {s.category for s in generate(plan.scenarios["chat_short@gsm8k"], 3, BuiltinTokenizer(), 1)} == {
        "math"
    }


def test_baseline_server_rules() -> None:
    exp = parse_experiment(_exp())
    assert [s.baseline for s in exp.servers] == [True, False]
    two = _exp()
    two["servers"][1]["baseline"] = True
    with pytest.raises(ConfigError, match="only one server may be the baseline"):
        parse_experiment(two)
    grid = _exp()
    grid["servers"][0]["grid"] = {"k": [1, 2]}
    with pytest.raises(ConfigError, match="must be one configuration"):
        parse_experiment(grid)


def test_unknown_dataset_name_lists_the_accepted_ones() -> None:
    bad = _exp()
    bad["workloads"][0]["dataset"] = {"name": "humaneval-x", "path": "x"}
    with pytest.raises(ConfigError, match="humaneval") as e:
        parse_experiment(bad)
    assert "workloads[0].dataset" in str(e.value)


def test_manifest_round_trip_keeps_the_same_cells() -> None:
    exp = _exp(scenarios={"mixed": {"input_len": 64, "output_len": 16,
                                    "mix": [{"name": "gsm8k", "path": str(DATA / "gsm8k_test.jsonl"), "weight": 2},
                                            {"name": "instructcoder", "path": str(DATA / "instructcoder.jsonl")}]}})  # fmt: skip
    exp["workloads"].append({"scenarios": ["mixed"], "concurrency": [1], "num_prompts": 3})
    a = plan_experiment(parse_experiment(exp))
    b = plan_experiment(
        parse_experiment(parse_experiment(exp).model_dump(mode="json"))
    )  # what resume re-reads
    assert [c.cell_id for c in a.all_cells()] == [c.cell_id for c in b.all_cells()]
    assert a.scenarios["mixed"] == b.scenarios["mixed"] and a.scenarios["mixed"].dataset == "mix"
