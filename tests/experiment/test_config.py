"""Experiment files: validation messages (file, path to the bad key, what is accepted) and expansion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from specsweep.errors import ConfigError
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.labels import abbrev, make_cell_id
from specsweep.experiment.loader import load_experiment, parse_experiment

REPO = Path(__file__).resolve().parents[2]


def base(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": "t",
        "servers": [
            {
                "name": "DSpark",
                "kind": "command",
                "method": "dspark",
                "argv": ["srv", "--port", "{port}", "--spec-tokens", "{spec_tokens}"],
                "grid": {"spec_tokens": [3, 5]},
            },
            {"name": "EAGLE", "kind": "sim", "profile": "toy", "method": "eagle"},
        ],
        "workloads": [{"scenarios": ["chat_short", "decode_heavy"], "concurrency": [1, 8]}],
    }
    d.update(over)
    return d


def err_of(data: Any, tmp_path: Path) -> str:
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    with pytest.raises(ConfigError) as ei:
        load_experiment(f)
    msg = str(ei.value)
    assert str(f) in msg  # every error names the file
    return msg


def test_grid_expands_to_labelled_configs_and_cells() -> None:
    plan = plan_experiment(parse_experiment(base()))
    assert [c.label for c in plan.configs] == ["DSpark(st=3)", "DSpark(st=5)", "EAGLE"]
    assert plan.configs[1].params == {"spec_tokens": 5}
    cells = plan.all_cells()
    assert len(cells) == 3 * 2 * 2
    first = plan.cells["DSpark(st=3)"]
    assert [(c.scenario, c.max_concurrency, c.num_prompts) for c in first] == [
        ("chat_short", 1, 32),
        ("chat_short", 8, 128),
        ("decode_heavy", 1, 32),
        ("decode_heavy", 8, 128),
    ]
    assert first[0].method == "dspark" and first[0].params == {"spec_tokens": 3}
    assert len({c.cell_id for c in cells}) == len(cells)
    assert first[0].cell_id.startswith("DSpark_st=3.chat_short.c1-")


def test_cell_ids_stable_across_plans() -> None:
    a = [c.cell_id for c in plan_experiment(parse_experiment(base())).all_cells()]
    b = [c.cell_id for c in plan_experiment(parse_experiment(base())).all_cells()]
    assert a == b


@given(
    st.text(min_size=1, max_size=12),
    st.text(min_size=1, max_size=12),
    st.text(min_size=1, max_size=12),
    st.integers(1, 512),
)
def test_cell_ids_differ_when_labels_differ(l1: str, l2: str, sc: str, c: int) -> None:
    # Labels that differ only in characters the readable part drops still get distinct ids.
    assert (make_cell_id(l1, sc, c) == make_cell_id(l2, sc, c)) == (l1 == l2)
    assert "/" not in make_cell_id(l1, sc, c)


def test_label_template_and_abbreviations() -> None:
    d = base()
    d["servers"][0]["label"] = "dspark-k{spec_tokens}"
    plan = plan_experiment(parse_experiment(d))
    assert plan.configs[0].label == "dspark-k3"
    assert abbrev("spec_tokens") == "st" and abbrev("max_num_seqs") == "mns" and abbrev("tp") == "tp"


def test_num_prompts_rounds_and_mapping() -> None:
    d = base(
        workloads=[
            {"scenarios": ["chat_short"], "concurrency": [1, 4], "rounds": 3},
            {"scenarios": ["rag_medium"], "concurrency": [2, 4], "num_prompts": {2: 5, 4: 9}},
            {"scenarios": ["decode_heavy"], "concurrency": [2], "num_prompts": 7, "servers": ["EAGLE"]},
        ]
    )
    plan = plan_experiment(parse_experiment(d))
    got = {(c.scenario, c.max_concurrency): c.num_prompts for c in plan.cells["EAGLE"]}
    assert got == {
        ("chat_short", 1): 3,
        ("chat_short", 4): 12,
        ("rag_medium", 2): 5,
        ("rag_medium", 4): 9,
        ("decode_heavy", 2): 7,
    }
    assert all(c.scenario != "decode_heavy" for c in plan.cells["DSpark(st=3)"])


def test_inline_user_scenarios() -> None:
    d = base(scenarios={"tiny": {"input_len": 16, "output_len": 8}})
    d["workloads"] = [{"scenarios": ["tiny"], "concurrency": [1]}]
    plan = plan_experiment(parse_experiment(d))
    assert plan.scenarios["tiny"].output_len == 8


def test_name_defaults_to_file_stem(tmp_path: Path) -> None:
    d = base()
    del d["name"]
    f = tmp_path / "my-grid.yaml"
    f.write_text(yaml.safe_dump(d))
    exp, _ = load_experiment(f)
    assert exp.name == "my-grid"


# ---- error messages ----------------------------------------------------------------------------
def test_unknown_key_lists_accepted_keys(tmp_path: Path) -> None:
    d = base()
    d["servers"][1]["tensor_parallel"] = 8
    msg = err_of(d, tmp_path)
    assert "at 'servers[1].tensor_parallel'" in msg
    assert "unknown key 'tensor_parallel'" in msg and "tp" in msg and "kv_cache_dtype" in msg


def test_unknown_top_level_key(tmp_path: Path) -> None:
    msg = err_of(base(repeat=3), tmp_path)
    assert "at 'repeat'" in msg and "repeats" in msg


def test_bad_kind_lists_kinds(tmp_path: Path) -> None:
    d = base()
    d["servers"][1]["kind"] = "tgi"
    msg = err_of(d, tmp_path)
    assert "servers[1].kind" in msg
    for k in ("vllm", "sglang", "llamacpp", "command", "url", "sim"):
        assert k in msg
    assert "'tgi'" in msg


def test_kind_specific_fields(tmp_path: Path) -> None:
    d = base()
    d["servers"][1]["argv"] = ["x"]
    msg = err_of(d, tmp_path)
    assert "servers[1]" in msg and "'argv' applies only to kind command" in msg
    d = base()
    del d["servers"][0]["argv"]
    assert "kind 'command' needs 'argv'" in err_of(d, tmp_path)
    d = base()
    d["servers"][1] = {"name": "v", "kind": "vllm"}
    assert "needs 'model'" in err_of(d, tmp_path)


def test_unknown_scenario_names_path_and_catalog(tmp_path: Path) -> None:
    d = base(workloads=[{"scenarios": ["chat_short", "chat_long"], "concurrency": [1]}])
    msg = err_of(d, tmp_path)
    assert "at 'workloads[0].scenarios[1]'" in msg and "'chat_long'" in msg and "rag_medium" in msg


def test_bad_concurrency_and_prompts(tmp_path: Path) -> None:
    msg = err_of(base(workloads=[{"scenarios": ["chat_short"], "concurrency": [0, 4]}]), tmp_path)
    assert "workloads[0].concurrency" in msg and ">= 1" in msg
    w = {"scenarios": ["chat_short"], "concurrency": [1, 4], "num_prompts": {1: 8}}
    msg = err_of(base(workloads=[w]), tmp_path)
    assert "lacks concurrency level(s) [4]" in msg


def test_unknown_placeholder_names_accepted(tmp_path: Path) -> None:
    d = base()
    d["servers"][0]["argv"] = ["srv", "--port", "{prot}", "{spec_tokens}"]
    msg = err_of(d, tmp_path)
    assert "servers[0]" in msg and "{prot}" in msg and "port" in msg and "spec_tokens" in msg


def test_unused_command_parameter(tmp_path: Path) -> None:
    d = base()
    d["servers"][0]["argv"] = ["srv", "--port", "{port}"]
    msg = err_of(d, tmp_path)
    assert "['spec_tokens'] are not used" in msg and "{spec_tokens}" in msg


def test_duplicate_names_and_labels(tmp_path: Path) -> None:
    d = base()
    d["servers"][1]["name"] = "DSpark"
    assert "server names must be unique" in err_of(d, tmp_path)
    d = base()
    d["servers"][1]["label"] = "DSpark(st=3)"
    assert "labels must be unique" in err_of(d, tmp_path)


def test_empty_grid_and_backend(tmp_path: Path) -> None:
    d = base()
    d["servers"][0]["grid"] = {"spec_tokens": []}
    assert "has no values" in err_of(d, tmp_path)
    msg = err_of(base(client={"backend": "tgi"}), tmp_path)
    assert "client.backend" in msg and "sglang" in msg and "vllm" in msg


def test_not_yaml_and_not_mapping(tmp_path: Path) -> None:
    assert "not valid YAML" in err_of("servers: [\n", tmp_path)
    assert "expected a mapping" in err_of("- 1\n- 2\n", tmp_path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read experiment file"):
        load_experiment(tmp_path / "nope.yaml")


@pytest.mark.parametrize("name", ["quickstart.yaml", "dspark-vs-eagle.yaml"])
def test_examples_load(name: str) -> None:
    f = REPO / "examples" / name
    if not f.exists():
        pytest.skip(f"{f} not written yet")
    _, plan = load_experiment(f)
    assert plan.all_cells()


def test_resolved_config_round_trips_through_json() -> None:
    """Resume rebuilds the plan from the manifest's JSON: same cells, same ids, same prompts."""
    import orjson

    d = base(
        scenarios=[{"name": "tiny", "input_len": 8, "output_len": 4}],
        workloads=[{"scenarios": ["tiny", "chat_short"], "concurrency": [2, 4], "num_prompts": {2: 5, 4: 9}}],
        client={"goodput": {"ttft": 100.0}, "backend": "vllm"},
    )
    exp = parse_experiment(d)
    again = parse_experiment(orjson.loads(orjson.dumps(exp.model_dump(mode="json"))))
    assert again == exp
    a, b = plan_experiment(exp).all_cells(), plan_experiment(again).all_cells()
    assert a == b and [c.num_prompts for c in b[:2]] == [5, 9]


@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=3, unique=True),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=2, unique=True),
    st.lists(st.integers(1, 256), min_size=1, max_size=4, unique=True),
    st.integers(1, 3),
)
def test_plan_size_is_the_grid_product(sts: list[int], modes: list[str], levels: list[int], nsc: int) -> None:
    grid: dict[str, Any] = {"spec_tokens": sts}
    if modes:
        grid["mode"] = modes
    scen = ["chat_short", "rag_medium", "decode_heavy"][:nsc]
    d = base(workloads=[{"scenarios": scen, "concurrency": levels}])
    d["servers"][0]["grid"] = grid
    d["servers"][0]["argv"] = ["srv", "{port}", "{spec_tokens}"] + (["{mode}"] if modes else [])
    plan = plan_experiment(parse_experiment(d))
    n_cfg = len(sts) * max(1, len(modes)) + 1
    assert len(plan.configs) == n_cfg
    cells = plan.all_cells()
    assert len(cells) == n_cfg * nsc * len(levels)
    assert len({c.cell_id for c in cells}) == len(cells)
    assert len({c.label for c in cells}) == n_cfg


def test_environment_variables_expand_except_server_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SS_TEST_BIN", "/opt/engine/bin/srv")
    monkeypatch.setenv("SS_TEST_TOKEN", "hf_secret_value")
    d = base()
    d["servers"][0]["argv"] = ["${SS_TEST_BIN}", "--port", "{port}", "--st", "{spec_tokens}"]
    d["servers"][0]["env"] = {"HF_TOKEN": "${SS_TEST_TOKEN}"}
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(d))
    exp, _ = load_experiment(f)
    assert exp.servers[0].argv is not None and exp.servers[0].argv[0] == "/opt/engine/bin/srv"
    assert exp.servers[0].env == {"HF_TOKEN": "${SS_TEST_TOKEN}"}  # expanded only at launch
    assert "hf_secret_value" not in str(exp.model_dump(mode="json"))  # so never in the manifest
    monkeypatch.delenv("SS_TEST_BIN")
    msg = err_of(d, tmp_path)
    assert "at 'servers[0].argv[0]': environment variable SS_TEST_BIN is not set" in msg
    assert "export SS_TEST_BIN=" in msg  # how to set it


def test_unset_engine_path_says_where_it_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """${LLAMA_SERVER} of the CPU examples comes from scripts/setup_engines.sh's env file: the error says
    how to get it, not only that it is missing."""
    monkeypatch.delenv("LLAMA_SERVER", raising=False)
    d = base()
    d["servers"][0]["argv"] = ["${LLAMA_SERVER}", "--port", "{port}", "--st", "{spec_tokens}"]
    msg = err_of(d, tmp_path)
    assert "environment variable LLAMA_SERVER is not set" in msg
    assert "scripts/setup_engines.sh" in msg and "engines.env" in msg and "source" in msg


def test_traffic_file_given_as_an_experiment_says_it_is_for_plan(tmp_path: Path) -> None:
    f = tmp_path / "traffic.yaml"
    f.write_text(
        yaml.safe_dump({"mix": {"chat_short": 1.0}, "load": {"concurrency": 32}, "gpus_per_instance": 8})
    )
    with pytest.raises(ConfigError) as ei:
        load_experiment(f)
    msg = str(ei.value)
    assert "traffic file" in msg and "specsweep plan" in msg and "--traffic" in msg
    assert "Field required" not in msg


def test_every_validation_error_is_shown(tmp_path: Path) -> None:
    """Two typos: both named, each at its path (not "(and 1 more error(s))")."""
    d = base()
    d["servers"][0]["kindd"] = "sim"
    d["client"] = {"warmup_requestz": 3}
    msg = err_of(d, tmp_path)
    assert "more error" not in msg
    assert "kindd" in msg and "warmup_requestz" in msg
