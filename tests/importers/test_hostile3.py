"""Issue 38, the importer defects: a rate its own file contradicts (1), duplicated GuideLLM benchmarks
(6), impossible LLMPerf values (7), dropped values said in an import note (13), repeats only of one
recorded server (14), measurements never taken for server settings (15), AIPerf's public datasets
(16), one cell name per workload in every client (17), truncated files alike in every importer (18).
Real files (fixtures/README.md) and real key sets (realformats.py), changed where the defect needs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from specsweep.cli import main
from specsweep.errors import DataError
from specsweep.importers import ImportOptions, run_import
from specsweep.store.run_dir import find_run_dirs
from tests.importers.realformats import SG_2025, consistent, document, jsonl

FIX = Path(__file__).parent / "fixtures"


def _rows(res: Path) -> list[dict[str, Any]]:
    return [r for rd in find_run_dirs([res]) for r in rd.summary()]


def _fixture(rel: str) -> Any:
    return json.loads((FIX / rel).read_text(encoding="utf-8"))


# ---- 1: a rate that the file's own counts and duration contradict -----------------------------------

# 438 output tokens in 2.74 s is 160 tok/s; the line claims 5e8 (and a total to match it)
LIAR = consistent(SG_2025, tag="chat", completed=4, total_input_tokens=2048, total_output_tokens=438,
                  duration=2.74, total_output_tokens_retokenized=438)  # fmt: skip
LIAR.update(output_throughput=5e8, total_throughput=5e8 + 747.4)


def test_a_contradicted_rate_is_flagged_through_import_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = tmp_path / "res"
    honest = jsonl(tmp_path / "base.jsonl", {**SG_2025, "tag": "chat"})
    liar = jsonl(tmp_path / "fast.jsonl", LIAR)
    assert main(["import", "sglang", str(honest), "--label", "base", "--method", "none", "-o", str(res)]) == 0
    assert main(["import", "sglang", str(liar), "--label", "fast", "--method", "eagle", "-o", str(res)]) == 0
    err = capsys.readouterr().err
    assert "contradict" in err and "output_throughput 5e+08" in err and "438 / 2.74 s" in err
    out = tmp_path / "r.json"
    assert main(["report", str(res), "--kind", "compare", "--format", "json", "-o", str(out)]) == 0
    rep = json.loads(out.read_text(encoding="utf-8"))
    fast = [c for c in rep["cells"] if c["config"] == "fast"]
    assert [c["status"] for c in fast] == ["invalid"] and fast[0]["values"]["output_throughput"] is None
    assert not [w for w in rep["winners"] if w.get("winner") == "fast"]
    assert "fast" not in json.dumps(rep["recommendations"])
    (why,) = [a for a in rep["anomalies"] if a["kind"] == "invalid_run"]
    assert "output_throughput 5e+08 contradicts" in why["data"]["reason"]
    md = tmp_path / "r.md"
    assert main(["report", str(res), "--kind", "compare", "--format", "md", "-o", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    assert "contradicts the file's own total_output_tokens / duration" in text
    assert "145" not in text.split("## Throughput winners")[1].split("---")[0]  # no absurd gain


def _aiperf_liar() -> dict[str, Any]:
    obj = _fixture("aiperf/flat-2026-c16/profile_export_aiperf.json")
    obj["output_token_throughput"]["avg"] *= 1000
    return obj


def _genai_liar() -> dict[str, Any]:
    obj = _fixture("genai_perf/streaming-c100/profile_export_genai_perf.json")
    obj["output_token_throughput"]["avg"] *= 1000
    return obj


def _guidellm_liar() -> dict[str, Any]:
    obj = _fixture("guidellm/benchmarks.json")
    obj["benchmarks"][0]["metrics"]["output_tokens_per_second"]["successful"]["mean"] *= 1000
    return obj


def _llmperf_liar() -> dict[str, Any]:
    obj = _fixture("llmperf/anyscale_7b_summary.json")
    obj["results_mean_output_throughput_token_per_s"] *= 1000
    return obj


def _vllm_liar() -> dict[str, Any]:
    obj = json.loads((FIX / "vllm/llmd-deployments/results.json").read_text(encoding="utf-8").splitlines()[0])
    obj["request_throughput"] *= 1000
    return obj


@pytest.mark.parametrize(
    ("kind", "name", "make", "field"),
    [
        ("sglang", "s.jsonl", lambda: LIAR, "output_throughput"),
        ("vllm", "v.json", _vllm_liar, "request_throughput"),
        ("aiperf", "profile_export_aiperf.json", _aiperf_liar, "output_throughput"),
        ("genai-perf", "profile_export_genai_perf.json", _genai_liar, "output_throughput"),
        ("guidellm", "benchmarks.json", _guidellm_liar, "output_throughput"),
        ("llmperf", "x_summary.json", _llmperf_liar, "output_throughput"),
    ],
)
def test_every_importer_flags_a_rate_its_file_contradicts(
    tmp_path: Path, kind: str, name: str, make: Any, field: str
) -> None:
    f = document(tmp_path / name, make())
    out = run_import(kind, [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    (row,) = _rows(tmp_path / "res")
    assert row["status"] == "invalid" and row["invalid_reason"].startswith(f"{field} ")
    assert any("contradict" in w for w in out.warnings)


@pytest.mark.parametrize(
    ("kind", "rel"),
    [
        ("aiperf", "aiperf/records-2025/profile_export_aiperf.json"),
        ("aiperf", "aiperf/flat-2026-c16/profile_export_aiperf.json"),
        ("aiperf", "aiperf/flat-2026-errors/profile_export_aiperf.json"),
        ("genai-perf", "genai_perf/streaming-c100/profile_export_genai_perf.json"),
        ("genai-perf", "genai_perf/non-streaming-c100/profile_export_genai_perf.json"),
        ("guidellm", "guidellm/benchmarks.json"),
        ("llmperf", "llmperf/anyscale_7b_summary.json"),
        ("llmperf", "llmperf/fireworks_7b_summary.json"),
        ("vllm", "vllm/llmd-deployments/results.json"),
    ],
)
def test_real_files_agree_with_themselves(tmp_path: Path, kind: str, rel: str) -> None:
    out = run_import(kind, [FIX / rel], tmp_path / "res", ImportOptions(label="A", method="m"))
    assert {r["status"] for r in _rows(tmp_path / "res")} == {"ok"}
    assert not any("contradict" in w for w in out.warnings)


# ---- 6: a GuideLLM benchmark given three times is one result ----------------------------------------


def test_duplicated_guidellm_benchmarks_are_one_result(tmp_path: Path) -> None:
    obj = _fixture("guidellm/benchmarks.json")
    obj["benchmarks"] = [obj["benchmarks"][0]] * 3
    f = document(tmp_path / "benchmarks.json", obj)
    out = run_import("guidellm", [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    assert out.rows == 1 and [r["repeat"] for r in _rows(tmp_path / "res")] == [0]
    assert any("2 result(s) identical to an earlier one" in w for w in out.warnings)


def test_guidellm_benchmarks_that_differ_stay_apart(tmp_path: Path) -> None:
    obj = _fixture("guidellm/benchmarks.json")
    other = copy.deepcopy(obj["benchmarks"][0])
    other["metrics"]["time_to_first_token_ms"]["successful"]["max"] *= 1.01
    obj["benchmarks"].append(other)
    f = document(tmp_path / "benchmarks.json", obj)
    assert run_import("guidellm", [f], tmp_path / "res", ImportOptions(label="A", method="m")).rows == 2


# ---- 7: LLMPerf values that cannot be ------------------------------------------------------------------


# every E2E statistic 1 ms, TTFT as the file has it (~225 ms)
E2E_1MS = {f"results_end_to_end_latency_s_{s}": 0.001 for s in ("mean", "min", "max", "quantiles_p25", "quantiles_p50",
                                                                "quantiles_p75", "quantiles_p90", "quantiles_p95", "quantiles_p99")}  # fmt: skip
E2E_1MS["results_end_to_end_latency_s_stddev"] = 0.0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (E2E_1MS, "e2e_latency_ms"),
        ({"mean_output_tokens": -150}, "output_len"),
        ({"results_number_input_tokens_mean": -5.0}, "input_tokens"),
    ],
)
def test_llmperf_impossible_values_are_refused(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    obj = {**_fixture("llmperf/anyscale_7b_summary.json"), **change}
    f = document(tmp_path / "x_summary.json", obj)
    with pytest.raises(DataError, match=field):
        run_import("llmperf", [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    assert not [p for p in (tmp_path / "res").glob("*") if not p.name.startswith(".")]


# ---- 13: what is dropped is said in an import note ----------------------------------------------------


def test_nan_guidellm_ttft_is_noted(tmp_path: Path) -> None:
    obj = _fixture("guidellm/benchmarks.json")
    obj["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["mean"] = float("nan")
    f = document(tmp_path / "benchmarks.json", obj)
    out = run_import("guidellm", [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    (row,) = _rows(tmp_path / "res")
    assert row.get("mean_ttft_ms") is None and row.get("median_ttft_ms") is not None
    assert any("time_to_first_token_ms.successful.mean: NaN" in n for n in row["import_notes"])
    assert any("dropped (import_notes)" in w and "time_to_first_token_ms" in w for w in out.warnings)


def test_aiperf_latency_that_is_no_block_is_noted(tmp_path: Path) -> None:
    obj = _fixture("aiperf/flat-2026-c16/profile_export_aiperf.json")
    obj["time_to_first_token"] = [1, 2]
    f = document(tmp_path / "profile_export_aiperf.json", obj)
    out = run_import("aiperf", [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    (row,) = _rows(tmp_path / "res")
    assert row.get("mean_ttft_ms") is None
    assert any(n.startswith("time_to_first_token: [1, 2]") and "dropped" in n for n in row["import_notes"])
    assert any("time_to_first_token" in w for w in out.warnings)


# ---- 14, 15: repeats need one recorded server; measurements are no server settings ---------------------


def _sg(tp: int, dp: int, **more: Any) -> dict[str, Any]:
    info = {"tp_size": tp, "dp_size": dp, "quantization": "fp8", "speculative_algorithm": None,
            "version": "0.4.6", "mem_fraction_static": 0.88, "internal_states": [{"avg_spec_accept_length": 1.0}]}  # fmt: skip
    return {**SG_2025, "server_info": info, **more}


def test_different_parallelism_is_not_a_repeat(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "s.jsonl", _sg(4, 2), consistent(_sg(8, 1), duration=12.5))
    out = run_import("sglang", [f], tmp_path / "res", ImportOptions(label="sg", method="m"))
    rows = _rows(tmp_path / "res")
    assert sorted(r["label"] for r in rows) == ["sg[dp_size=1,tp_size=8]", "sg[dp_size=2,tp_size=4]"]
    assert [r["repeat"] for r in rows] == [0, 0]
    assert any("dp_size, tp_size" in w and "not as repeats" in w for w in out.warnings)


def test_same_server_settings_are_repeats(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "s.jsonl", _sg(4, 2), consistent(_sg(4, 2), duration=12.5))
    run_import("sglang", [f], tmp_path / "res", ImportOptions(label="sg", method="m"))
    assert sorted((r["label"], r["repeat"]) for r in _rows(tmp_path / "res")) == [("sg", 0), ("sg", 1)]


def test_an_engine_version_apart_is_not_a_repeat(tmp_path: Path) -> None:
    b = _sg(4, 2)
    b["server_info"] = {**b["server_info"], "version": "0.5.0"}
    f = jsonl(tmp_path / "s.jsonl", _sg(4, 2), consistent(b, duration=12.5))
    run_import("sglang", [f], tmp_path / "res", ImportOptions(label="sg", method="m"))
    assert sorted(r["label"] for r in _rows(tmp_path / "res")) == [
        "sg[engine_version=0.4.6]",
        "sg[engine_version=0.5.0]",
    ]


def test_measured_values_never_split_configs(tmp_path: Path) -> None:
    a = {**SG_2025, "total_input_text_tokens": 108929, "total_input_vision_tokens": 0}
    b = consistent(SG_2025, duration=12.5, total_input_text_tokens=108931, total_input_vision_tokens=0,
                   total_throughput_retokenized=5100.0, mean_custom_metric=1.0)  # fmt: skip
    f = jsonl(tmp_path / "s.jsonl", a, b)
    out = run_import("sglang", [f], tmp_path / "res", ImportOptions(label="sg", method="m"))
    assert sorted((r["label"], r["repeat"]) for r in _rows(tmp_path / "res")) == [("sg", 0), ("sg", 1)]
    assert not any("server parameters" in w for w in out.warnings)


def test_a_server_setting_that_looks_like_a_count_is_still_a_setting(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "s.jsonl", {**SG_2025, "max_num_batched_tokens": 8192},
              consistent(SG_2025, duration=12.5, max_num_batched_tokens=16384))  # fmt: skip
    run_import("sglang", [f], tmp_path / "res", ImportOptions(label="sg", method="m"))
    assert len({r["label"] for r in _rows(tmp_path / "res")}) == 2


# ---- 16: AIPerf 0.10's public dataset ------------------------------------------------------------------


def test_aiperf_public_dataset_is_not_synthetic(tmp_path: Path) -> None:
    obj = _fixture("aiperf/flat-2026-c16/profile_export_aiperf.json")
    obj["input_config"]["datasets"] = [{"name": "main", "type": "public", "dataset": "sharegpt"}]
    f = document(tmp_path / "profile_export_aiperf.json", obj)
    run_import("aiperf", [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    (row,) = _rows(tmp_path / "res")
    assert row["dataset_name"] == "sharegpt" and row["scenario"] == "sharegpt"


# ---- 18: a truncated file gets one message in every importer -------------------------------------------

TRUNCATABLE = [
    ("aiperf", "aiperf/records-2025/profile_export_aiperf.json"),
    ("aiperf", "aiperf/flat-2026-c16/profile_export_aiperf.json"),
    ("genai-perf", "genai_perf/streaming-c100/profile_export_genai_perf.json"),
    ("guidellm", "guidellm/benchmarks.json"),
    ("llmperf", "llmperf/anyscale_7b_summary.json"),
    ("vllm", "vllm/llmd-deployments/results.json"),
]


@pytest.mark.parametrize(("kind", "rel"), TRUNCATABLE)
@pytest.mark.parametrize("fraction", [0.5, 0.9, 0.999])
def test_a_truncated_file_says_truncated_in_every_importer(
    tmp_path: Path, kind: str, rel: str, fraction: float
) -> None:
    data = (FIX / rel).read_bytes()
    f = tmp_path / Path(rel).name
    f.write_bytes(data[: int(len(data) * fraction)])  # cuts land inside strings, numbers, between keys
    with pytest.raises(DataError, match=r"the JSON ends before it is complete \(truncated\?\)"):
        run_import(kind, [f], tmp_path / "res", ImportOptions(label="A", method="m"))


@pytest.mark.parametrize("indent", [None, 2])
def test_a_truncated_sglang_file_says_truncated(tmp_path: Path, indent: int | None) -> None:
    text = "".join(json.dumps(SG_2025, indent=indent) + "\n" for _ in range(1 if indent else 2))
    f = tmp_path / "s.jsonl"
    f.write_text(text[: len(text) - 40], encoding="utf-8")  # inside the last line's string key
    with pytest.raises(DataError, match=r"the JSON ends before it is complete \(truncated\?\)"):
        run_import("sglang", [f], tmp_path / "res", ImportOptions(label="A", method="m"))


# ---- 17: cells named by the workload actually sent, the same for every client --------------------------


def test_sglang_sharegpt_is_not_named_after_unused_random_lengths(tmp_path: Path) -> None:
    # sglang writes random_input_len/random_output_len on every line; a ShareGPT run never used them
    share = consistent(SG_2025, tag=None, dataset_name="sharegpt", random_input_len=1024, random_output_len=1024,
                       total_input_tokens=22400, total_output_tokens=19800)  # fmt: skip
    other = consistent(share, random_input_len=4096, duration=12.5)  # the same run, another unused value
    out = run_import("sglang", [jsonl(tmp_path / "s.jsonl", share, other)], tmp_path / "res",
                     ImportOptions(label="A", method="m"))  # fmt: skip
    rows = _rows(tmp_path / "res")
    assert [(r["scenario"], r["repeat"]) for r in rows] == [("sharegpt", 0), ("sharegpt", 1)]
    assert not any("random_input_len" in str(r["workload"]) for r in rows)
    assert not any("differ in" in w for w in out.warnings)


def _genai_2025() -> dict[str, Any]:
    """The streaming fixture in genai-perf's newer config schema (``input.synthetic_tokens``,
    ``perf_analyzer.stimulus``): the same workload, the keys moved."""
    obj = _fixture("genai_perf/streaming-c100/profile_export_genai_perf.json")
    old = obj["input_config"]
    obj["input_config"] = {
        "model_names": old["model"], "endpoint": {"type": "kserve", "streaming": True},
        "perf_analyzer": {"stimulus": {"concurrency": old["concurrency"]}},
        "input": {"synthetic_tokens": {"mean": old["synthetic_input_tokens_mean"], "stddev": 20},
                  "output_tokens": {"mean": old["output_tokens_mean"], "stddev": 0}},
    }  # fmt: skip
    return obj


def test_both_genai_perf_schemas_name_one_workload_alike(tmp_path: Path) -> None:
    old = FIX / "genai_perf/streaming-c100/profile_export_genai_perf.json"
    new = document(tmp_path / "profile_export_genai_perf.json", _genai_2025())
    res = tmp_path / "res"
    run_import("genai-perf", [old], res, ImportOptions(label="old", method="m"))
    run_import("genai-perf", [new], res, ImportOptions(label="new", method="m"))
    names = {r["label"]: r["scenario"] for r in _rows(res)}
    assert names == {"old": "in200-out500", "new": "in200-out500"}


def test_vllm_and_sglang_random_runs_share_a_cell(tmp_path: Path) -> None:
    from tests.importers.realformats import VLLM_2024

    res = tmp_path / "res"
    run_import("sglang", [jsonl(tmp_path / "s.jsonl", {**SG_2025, "tag": None, "max_concurrency": 4})], res,
               ImportOptions(label="sg", method="a"))  # fmt: skip
    run_import("vllm", [document(tmp_path / "v.json", VLLM_2024)], res, ImportOptions(label="vl", method="b"))
    names = {r["label"]: (r["scenario"], r["max_concurrency"]) for r in _rows(res)}
    assert names == {"sg": ("in512-out128", 4), "vl": ("in512-out128", 4)}  # not "random-..." and "default"


def test_measured_lengths_keep_repeats_together(tmp_path: Path) -> None:
    from tests.importers.realformats import VLLM_2024

    a = consistent({k: v for k, v in VLLM_2024.items() if not isinstance(v, list)}, completed=100,
                   total_input_tokens=51200, total_output_tokens=12730)  # fmt: skip
    b = consistent(a, total_output_tokens=12890)  # EOS stops: 127.3 and 128.9 output tokens a request
    run_import(
        "vllm", [jsonl(tmp_path / "v.jsonl", a, b)], tmp_path / "res", ImportOptions(label="v", method="m")
    )
    assert [(r["scenario"], r["repeat"]) for r in _rows(tmp_path / "res")] == [
        ("in512-out130", 0),
        ("in512-out130", 1),
    ]


def test_no_comparison_made_claims_no_detectable_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every cell set aside (the liar's invalid): the next step said "cannot separate differences under
    ~0%", a figure from no comparison."""
    res = tmp_path / "res"
    honest = jsonl(tmp_path / "base.jsonl", {**SG_2025, "tag": "chat"})
    liar = jsonl(tmp_path / "fast.jsonl", LIAR)
    assert main(["import", "sglang", str(honest), "--label", "base", "--method", "none", "-o", str(res)]) == 0
    assert main(["import", "sglang", str(liar), "--label", "fast", "--method", "eagle", "-o", str(res)]) == 0
    capsys.readouterr()
    for lang in ("en", "zh"):
        assert main(["report", str(res), "--kind", "compare", "--lang", lang]) == 0
        out = capsys.readouterr().out
        assert "~0%" not in out and "约 0%" not in out, out[-1500:]
        assert "repeats: 2" in out
