"""What a configuration asks a Ray cluster for (pure; no Ray needed)."""

from __future__ import annotations

from typing import Any

import pytest

from specsweep.errors import ConfigError
from specsweep.executors.resources import Demand, config_demand, infeasible
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment


def demands(server: dict[str, Any], workers: int = 1) -> dict[str, Demand]:
    exp = parse_experiment({"name": "r", "servers": [server], "client": {"workers": workers},
                            "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]})  # fmt: skip
    return {c.label: config_demand(c, workers) for c in plan_experiment(exp).configs}


def test_gpus_follow_tensor_and_pipeline_parallel_size() -> None:
    d = demands({"name": "v", "kind": "vllm", "model": "m", "tp": 4})
    assert d["v"] == Demand(num_cpus=1, num_gpus=4)
    d = demands({"name": "s", "kind": "sglang", "model": "m", "grid": {"tp": [1, 2]}, "params": {"pp": 2}})
    assert [x.num_gpus for x in d.values()] == [2, 4]
    assert demands({"name": "v", "kind": "vllm", "model": "m"})["v"].num_gpus == 1  # one GPU by default
    # A fork launched by command: its grid names the TP size; a sim or url server needs no GPU.
    d = demands({"name": "f", "kind": "command", "argv": ["srv", "--tp", "{tensor_parallel_size}"],
                 "grid": {"tensor_parallel_size": [8]}})  # fmt: skip
    assert next(iter(d.values())).num_gpus == 8
    assert demands({"name": "s", "kind": "sim", "profile": "toy"})["s"].num_gpus == 0
    assert demands({"name": "u", "kind": "url", "url": "http://h:1"})["u"].num_gpus == 0


def test_custom_resources_and_overrides() -> None:
    d = demands({"name": "v", "kind": "vllm", "model": "m", "tp": 2, "resources": {"h200": 1, "CPU": 4}}, 3)
    assert d["v"] == Demand(num_cpus=4, num_gpus=2, custom={"h200": 1.0})
    assert d["v"].options() == {"num_cpus": 4, "num_gpus": 2, "resources": {"h200": 1.0}}
    assert demands({"name": "s", "kind": "sim", "profile": "toy"}, workers=3)["s"].num_cpus == 3


def test_bad_tp_value_names_it() -> None:
    with pytest.raises(ConfigError, match=r"tp='x' is not a whole number"):
        demands({"name": "f", "kind": "command", "argv": ["srv", "{tp}"], "params": {"tp": "x"}})


def test_infeasible_names_the_short_resource() -> None:
    d = Demand(num_cpus=1, num_gpus=8, custom={"h200": 1})
    nodes = [{"CPU": 64, "GPU": 8}, {"CPU": 8, "GPU": 4, "h200": 1}]
    assert infeasible(d, nodes) is not None
    assert infeasible(d, [*nodes, {"CPU": 2, "GPU": 8, "h200": 2}]) is None
    assert "GPU=8 (largest node has 4)" in (infeasible(d, [nodes[1]]) or "")
    assert infeasible(d, []) == "the Ray cluster has no live node"
