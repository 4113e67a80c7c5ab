"""Only like with like (issue 26 defects 1, 2, 4, 5, 8, 9): repeats only when the workload and the
recorded server parameters agree, no winner across different workloads, one name per workload in
every import, open-loop runs as cells by request rate, folders and untagged files, E2E from vLLM's
per-request lists. Real files (fixtures/README.md) and real key sets (realformats.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specsweep.analysis.data import load
from specsweep.cli import main
from specsweep.importers import ImportOptions, run_import
from specsweep.report import build_view, render
from specsweep.store.run_dir import find_run_dirs
from tests.importers.realformats import (
    SG_2024,
    SG_2025,
    VLLM_2024,
    consistent,
    document,
    half_length_pair,
    jsonl,
    sweep_run,
)

FIX = Path(__file__).parent / "fixtures"
DEPLOYMENTS = FIX / "vllm/llmd-deployments/results.json"  # 3 llm-d deployments x rates 10, 30, inf


def _rows(res: Path) -> list[dict[str, Any]]:
    return [r for rd in find_run_dirs([res]) for r in rd.summary()]


def _vllm(num_prompts: int, tokens_in: int, duration: float) -> dict[str, Any]:
    """A vLLM result without per-request lists: num_prompts prompts of tokens_in input tokens each."""
    out = {k: v for k, v in VLLM_2024.items() if k not in ("input_lens", "output_lens", "ttfts", "itls",
                                                        "generated_texts", "errors")}  # fmt: skip
    return consistent(out, num_prompts=num_prompts, completed=num_prompts, total_input_tokens=num_prompts * tokens_in,
                      total_output_tokens=num_prompts * 200, duration=duration)  # fmt: skip


# ---- defect 1: different workloads or servers are not repeats ---------------------------------------


def test_two_vllm_files_of_different_workloads_are_two_cells(tmp_path: Path) -> None:
    # 50 prompts of 1,000 input tokens and 500 ShareGPT prompts (~220 tokens): vLLM names no dataset
    a = document(tmp_path / "fixed.json", _vllm(50, 1000, 12.0))
    b = document(tmp_path / "sharegpt.json", _vllm(500, 220, 60.0))
    out = run_import("vllm", [a, b], tmp_path / "res", ImportOptions(label="A", method="m", scenario="chat"))
    cells = load([tmp_path / "res"]).cells
    assert sorted(len(c.ok) for c in cells.values()) == [1, 1]  # not "2 repeats"
    assert any("differ in num_prompts" in w for w in out.warnings)


def test_same_prompt_count_different_tokens_per_request_are_two_cells(tmp_path: Path) -> None:
    a = document(tmp_path / "a.json", _vllm(100, 1000, 12.0))
    b = document(tmp_path / "b.json", _vllm(100, 480, 11.0))
    c = document(tmp_path / "c.json", _vllm(100, 1030, 12.5))  # within 20% of a: a repeat of it
    out = run_import(
        "vllm", [a, b, c], tmp_path / "res", ImportOptions(label="A", method="m", scenario="chat")
    )
    cells = {k[1]: len(v.ok) for k, v in load([tmp_path / "res"]).cells.items()}
    assert cells == {"chat[input_tokens=480]": 1, "chat[input_tokens=1000]": 2}
    assert any("tokens per request" in w and "480 vs 1000" in w for w in out.warnings)


def test_recorded_server_parameters_make_configs_not_repeats(tmp_path: Path) -> None:
    # a real results file: 3 deployments at the same rates; `deployment` is --metadata the file records
    out = run_import("vllm", [DEPLOYMENTS], tmp_path / "res", ImportOptions(label="llmd", method="none"))
    ds = load([tmp_path / "res"])
    assert sorted(ds.configs) == [
        "llmd[deployment=base]",
        "llmd[deployment=kvcache]",
        "llmd[deployment=no-features]",
    ]
    assert {len(c.ok) for c in ds.cells.values()} == {1} and len(ds.cells) == 9
    assert ds.configs["llmd[deployment=base]"].params == {"deployment": "base"}
    assert any("recorded server parameters (deployment)" in w for w in out.warnings)


def test_bench_sweep_rows_with_other_serve_parameters_are_configs(tmp_path: Path) -> None:
    runs = [{**sweep_run(i, 1000.0 + i), "max_num_seqs": seqs} for i, seqs in enumerate((4, 4, 8, 8))]
    f = document(tmp_path / "summary.json", runs, indent=4)
    run_import("vllm", [f], tmp_path / "res", ImportOptions(label="A", method="m", scenario="s"))
    ds = load([tmp_path / "res"])
    assert {lab: len(c.ok) for (lab, _s, _c), c in ds.cells.items()} == {
        "A[max_num_seqs=4]": 2,
        "A[max_num_seqs=8]": 2,
    }


def test_llmperf_lines_of_different_frameworks_are_configs(tmp_path: Path) -> None:
    files = [FIX / "llmperf/anyscale_7b_summary.json", FIX / "llmperf/fireworks_7b_summary.json"]
    run_import("llmperf", files, tmp_path / "res", ImportOptions(label="L", method="none"))
    ds = load([tmp_path / "res"])
    assert len(ds.configs) == 2 and all(len(c.ok) == 1 for c in ds.cells.values())
    assert all("framework=" in lab for lab in ds.configs)


# ---- defect 2: no winner across different workloads -------------------------------------------------


@pytest.mark.slow  # renders HTML (with plots) in two languages: ~2 s
def test_sglang_half_length_prompts_against_vllm_full_length_get_no_winner(tmp_path: Path) -> None:
    # --random-range-ratio 0: sglang draws ~506 input tokens for "in1024", vLLM sends exactly 1,024
    view = build_view([half_length_pair(tmp_path)], "compare", now="T")
    (w,) = view.winners
    assert w.winner is None and w.verdict is None and w.note is not None and w.note.key == "winner.workloads"
    assert "506" in str(w.note.args["detail"]) and "1024" in str(w.note.args["detail"])
    assert not [v for v in view.verdicts if v.scenario == "in1024"]
    assert any(m.key == "note.workloads" for m in view.provenance.comparability)
    assert view.compare is not None and view.compare.conclusion.key == "compare.no_cells_workloads"
    for lang, word in (("en", "different workloads"), ("zh", "负载不同")):
        for fmt in ("md", "html"):
            page = render(view, fmt, lang)
            assert page.count(word) >= 2 and "+82" not in page  # in the cell and in the header


# ---- defect 4: one name per workload in every import ------------------------------------------------


def test_same_workload_gets_the_same_cell_name_in_every_import(tmp_path: Path) -> None:
    def line(n: int, tput: float) -> dict[str, Any]:
        return consistent(SG_2025, random_input_len=n, total_input_tokens=n * 100, total_throughput=tput)

    res = tmp_path / "res"
    a = jsonl(tmp_path / "a.jsonl", line(128, 4000.0), line(512, 5000.0))
    b = jsonl(tmp_path / "b.jsonl", line(512, 4400.0))
    run_import("sglang", [a], res, ImportOptions(label="A", method="x", scenario="rnd"))
    run_import("sglang", [b], res, ImportOptions(label="B", method="y", scenario="rnd"))
    view = build_view([res], "compare", now="T")
    shared = [w for w in view.winners if w.leader and w.runner_up]
    assert [w.scenario for w in shared] == ["rnd[random_input_len=512]"]
    assert view.compare is not None and view.compare.n_cells == 1


def test_a_shared_cell_with_a_failed_run_is_not_called_different_names(tmp_path: Path) -> None:
    res = tmp_path / "res"
    run_import("sglang", [jsonl(tmp_path / "a.jsonl", SG_2025)], res, ImportOptions(label="A", method="x"))
    dead = {**SG_2025, "completed": 0, "total_throughput": 0.0, "output_throughput": 0.0, "duration": 13.0}
    run_import("sglang", [jsonl(tmp_path / "b.jsonl", dead)], res, ImportOptions(label="B", method="y"))
    view = build_view([res], "compare", now="T")
    assert view.compare is not None and view.compare.conclusion.key == "compare.no_cells_failed"
    assert "--scenario" not in render(view, "md", "en").split("Conclusion")[1].split("\n")[0]


# ---- defect 5: open-loop runs are cells by request rate ---------------------------------------------


def test_request_rate_runs_need_no_invented_concurrency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = tmp_path / "res"
    assert (
        main(["import", "vllm", str(DEPLOYMENTS), "--label", "llmd", "--method", "none", "-o", str(res)]) == 0
    )
    ds = load([res])
    assert {s for _lab, s, _c in ds.cells} == {"in1000-out500 @ rate 10 req/s", "in1000-out500 @ rate 30 req/s",
                                               "in1000-out500 @ rate inf"}  # fmt: skip
    assert {c for _lab, _s, c in ds.cells} == {0}  # no concurrency limit
    view = build_view([res], "sweep", now="T")
    for lang in ("en", "zh"):
        md = render(view, "md", lang)
        assert "| in1000-out500 @ rate inf | ∞ |" in md
        assert "Concurrency 1" not in md and "Low concurrency" not in md and "低并发" not in md
    assert {r.band for r in view.recommendations} == {"open"}


def test_old_sglang_rate_sweep_without_max_concurrency(tmp_path: Path) -> None:
    f = jsonl(
        tmp_path / "old.jsonl", *[consistent(SG_2024, request_rate=r, duration=20.0 + r) for r in (1.0, 4.0)]
    )
    run_import("sglang", [f], tmp_path / "res", ImportOptions(label="A", method="m", scenario="rag"))
    assert sorted(r["scenario"] for r in _rows(tmp_path / "res")) == [
        "rag @ rate 1 req/s",
        "rag @ rate 4 req/s",
    ]


# ---- defect 8: folders, and files without a tag --------------------------------------------------------


def test_vllm_bench_sweep_folder_and_untagged_files(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    for seqs in (4, 8):
        d = sweep / f"SERVE--max_num_seqs={seqs}-BENCH--max_concurrency=4"
        d.mkdir(parents=True)
        runs = [{**sweep_run(i, 1000.0 + seqs + i), "max_num_seqs": seqs} for i in range(2)]
        for i, r in enumerate(runs):
            document(d / f"run={i}.json", r, indent=4)
        document(d / "summary.json", runs, indent=4)
    res = tmp_path / "res"
    assert main(["import", "vllm", str(sweep), "--label", "A", "--method", "m", "-o", str(res)]) == 0
    ds = load([res])
    assert {(lab, s): len(c.ok) for (lab, s, _c), c in ds.cells.items()} == {
        ("A[max_num_seqs=4]", "in512-out128"): 2, ("A[max_num_seqs=8]", "in512-out128"): 2,
    }  # fmt: skip
    assert len(find_run_dirs([res])[0].manifest["files"]) == 6


def test_sglang_tag_null_is_named_from_its_workload(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "s.jsonl", {**SG_2025, "tag": None})
    out = run_import("sglang", [f], tmp_path / "res", ImportOptions(label="A", method="m"))
    assert [r["scenario"] for r in _rows(tmp_path / "res")] == ["in512-out128"]
    assert any("no tag" in w and "--scenario" in w for w in out.warnings)


# ---- defect 9: E2E from vLLM's per-request lists ---------------------------------------------------


def test_vllm_e2e_is_derived_from_ttfts_and_itls(tmp_path: Path) -> None:
    obj = {k: v for k, v in VLLM_2024.items() if "e2el" not in k}
    obj["errors"] = ["", "", "timeout", ""]  # the third request failed: left out
    f = document(tmp_path / "v.json", obj)
    run_import("vllm", [f], tmp_path / "res", ImportOptions(label="A", method="m", scenario="s"))
    (row,) = _rows(tmp_path / "res")
    lat = np.array(
        [t + sum(g) for t, g, e in zip(obj["ttfts"], obj["itls"], obj["errors"], strict=True) if not e]
    )
    assert row["mean_e2e_latency_ms"] == pytest.approx(lat.mean() * 1000)
    assert row["median_e2e_latency_ms"] == pytest.approx(np.median(lat) * 1000)
    assert row["p99_e2e_latency_ms"] == pytest.approx(np.percentile(lat, 99) * 1000)
    assert row["std_e2e_latency_ms"] == pytest.approx(lat.std() * 1000)
    assert "mean_e2e_latency_ms" in row["computed_keys"]
    md = render(build_view([tmp_path / "res"], "sweep", now="T"), "md", "en")
    assert f"{lat.mean() * 1000:.2f}" in md


def test_manifest_names_every_config(tmp_path: Path) -> None:
    run_import("vllm", [DEPLOYMENTS], tmp_path / "res", ImportOptions(label="llmd", method="none"))
    man = find_run_dirs([tmp_path / "res"])[0].manifest
    assert [s["label"] for s in man["servers"]] == sorted(s["label"] for s in man["servers"]) and len(
        man["servers"]
    ) == 3
    assert json.dumps(man["plan"])  # (scenario, level) pairs, JSON-serialisable
