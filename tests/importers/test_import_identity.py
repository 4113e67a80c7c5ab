"""Repeats are only what is provably a repeat; the producer is read from the keys; errors point at the
real place; odd values (Infinity, negatives, deep nesting) get one clear answer. Real key sets
(tests/importers/realformats.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsweep.analysis.data import load
from specsweep.cli import main
from specsweep.errors import DataError, UsageError
from specsweep.importers import ImportOptions, run_import
from specsweep.store.run_dir import find_run_dirs
from tests.importers.realformats import (
    SG_2024,
    SG_2025,
    VLLM_06,
    VLLM_06_LATENCY,
    VLLM_2024,
    consistent,
    document,
    jsonl,
    sweep_run,
)

OPTS = ImportOptions(label="A", method="eagle")


def _rows(res: Path) -> list[dict]:
    return [r for rd in find_run_dirs([res]) for r in rd.summary()]


def _nothing_written(res: Path) -> bool:
    return not res.exists() or not any(res.iterdir())


# ---- identical content is one result ---------------------------------------------------------------


def test_same_file_twice_in_one_import_is_one_result(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "a.jsonl", SG_2025)
    out = run_import("sglang", [f, f], tmp_path / "res", OPTS)
    assert out.rows == 1 and [r["repeat"] for r in _rows(tmp_path / "res")] == [0]
    assert any("identical" in w and "a.jsonl" in w for w in out.warnings)


def test_identical_lines_are_kept_once(tmp_path: Path) -> None:
    other = consistent(SG_2025, duration=12.9)
    f = jsonl(tmp_path / "a.jsonl", SG_2025, other, SG_2025)
    out = run_import("sglang", [f], tmp_path / "res", OPTS)
    rows = _rows(tmp_path / "res")
    assert [(r["source_line"], r["repeat"]) for r in rows] == [(1, 0), (2, 1)]
    assert any("a.jsonl:3 = " in w and "a.jsonl:1" in w for w in out.warnings)


def test_same_file_into_the_same_results_dir_again(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "a.jsonl", SG_2025)
    run_import("sglang", [f], tmp_path / "res", OPTS)
    with pytest.raises(DataError, match=r"already imported into .* under label 'A'") as e:
        run_import("sglang", [f], tmp_path / "res", OPTS)
    assert "a.jsonl" in str(e.value)
    assert len(find_run_dirs([tmp_path / "res"])) == 1
    # the same result copied into another file is caught by its content, with its line
    g = jsonl(tmp_path / "b.jsonl", consistent(SG_2025, duration=13.0), SG_2025)
    with pytest.raises(DataError, match="already imported") as e:
        run_import("sglang", [g], tmp_path / "res", OPTS)
    assert "b.jsonl:2" in str(e.value)
    # under another label it is not a repeat of anything: imported, with a warning
    out = run_import("sglang", [f], tmp_path / "res", ImportOptions(label="B", method="eagle"))
    assert out.rows == 1 and any("already imported" in w for w in out.warnings)


def test_vllm_sweep_folder_summary_and_runs_are_not_doubled(tmp_path: Path) -> None:
    d = tmp_path / "SERVE--max_num_seqs=64-BENCH--max_concurrency=4"
    d.mkdir()
    runs = [sweep_run(0, 1024.0), sweep_run(1, 1000.0)]
    files = [document(d / f"run={i}.json", r, indent=4) for i, r in enumerate(runs)]
    files.append(document(d / "summary.json", runs, indent=4))
    out = run_import(
        "vllm", sorted(files), tmp_path / "res", ImportOptions(label="A", method="m", scenario="chat")
    )
    rows = _rows(tmp_path / "res")
    assert out.rows == 2 and sorted(r["total_throughput"] for r in rows) == [1000.0, 1024.0]
    assert sorted(r["repeat"] for r in rows) == [0, 1]
    assert any("identical" in w for w in out.warnings)


# ---- different workloads are different cells ---------------------------------------------------------


def test_rate_sweep_with_concurrency_flag_is_not_one_cell(tmp_path: Path) -> None:
    sweep = [consistent(SG_2024, request_rate=r, duration=20.0 + r) for r in (1.0, 2.0, 4.0)]
    share = {**SG_2024, "dataset_name": "sharegpt", "request_rate": float("inf"), "random_input_len": None}
    f = jsonl(tmp_path / "old.jsonl", *sweep, share, consistent(share, duration=31.0))
    out = run_import(
        "sglang", [f], tmp_path / "res", ImportOptions(label="A", method="m", scenario="rag", concurrency=4)
    )
    ds = load([tmp_path / "res"])
    cells = {s: ds.get("A", s, 4) for s in ds.scenarios()}
    assert len(cells) == 4  # three rates, one ShareGPT cell
    sizes = sorted(len(c.ok) for c in cells.values() if c is not None)
    assert sizes == [1, 1, 1, 2]  # only the two ShareGPT runs are repeats
    assert {"rag @ rate 1 req/s", "rag @ rate 2 req/s", "rag @ rate 4 req/s", "rag"} == set(cells)
    assert any("cells by request rate" in w and "rag @ rate 4 req/s" in w for w in out.warnings)


def test_concurrency_flag_never_silently_overrides_the_file(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "c.jsonl", SG_2025, consistent(SG_2025, max_concurrency=32, duration=9.0))
    with pytest.raises(DataError, match=r"max_concurrency 32 .*--override-concurrency") as e:
        run_import("sglang", [f], tmp_path / "res", ImportOptions(label="A", method="m", concurrency=8))
    assert "c.jsonl:2" in str(e.value) and _nothing_written(tmp_path / "res")
    opts = ImportOptions(label="A", method="m", concurrency=8, override_concurrency=True)
    out = run_import("sglang", [f], tmp_path / "res", opts)
    rows = _rows(tmp_path / "res")
    assert {r["max_concurrency"] for r in rows} == {8} and {r["file_max_concurrency"] for r in rows} == {
        8,
        32,
    }
    assert len({r["scenario"] for r in rows}) == 2  # c=8 and c=32 runs stay apart
    assert any("--override-concurrency" in w for w in out.warnings)


def test_concurrency_zero_is_blamed_on_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = jsonl(tmp_path / "old.jsonl", SG_2024)
    args = ["sglang", str(f), "--label", "A", "--method", "m", "--scenario", "s", "--concurrency", "0"]
    rc = main(["import", *args, "-o", str(tmp_path / "res")])
    err = capsys.readouterr().err
    assert rc == 2 and "--concurrency 0" in err and "old.jsonl" not in err
    with pytest.raises(UsageError):
        run_import("sglang", [f], tmp_path / "res", ImportOptions(label="A", method="m", concurrency=-3))


# ---- the producer, from its keys ---------------------------------------------------------------------


@pytest.mark.parametrize("indent", [None, 4])
def test_vllm_result_under_import_sglang_is_refused(tmp_path: Path, indent: int | None) -> None:
    f = document(tmp_path / "v.json", VLLM_2024, indent=indent)
    with pytest.raises(DataError, match=r"this is a vLLM .* use `specsweep import vllm`") as e:
        run_import("sglang", [f], tmp_path / "res", OPTS)
    assert "v.json:1" in str(e.value) and _nothing_written(tmp_path / "res")


@pytest.mark.parametrize("obj", [SG_2025, SG_2024])
def test_sglang_result_under_import_vllm_is_refused(tmp_path: Path, obj: dict) -> None:
    f = jsonl(tmp_path / "s.jsonl", obj)
    with pytest.raises(DataError, match="use `specsweep import sglang`"):
        run_import(
            "vllm", [f], tmp_path / "res", ImportOptions(label="A", method="m", concurrency=4, scenario="s")
        )


def test_provenance_follows_the_producer(tmp_path: Path) -> None:
    v = document(tmp_path / "v.json", VLLM_2024)
    run_import("vllm", [v], tmp_path / "rv", ImportOptions(label="A", method="m", scenario="s"))
    s = jsonl(tmp_path / "s.jsonl", SG_2025)
    run_import("sglang", [s], tmp_path / "rs", OPTS)
    (rv,), (rs,) = find_run_dirs([tmp_path / "rv"]), find_run_dirs([tmp_path / "rs"])
    assert "ignore_eos" not in rv.manifest["client"] and rs.manifest["client"]["ignore_eos"] is True


# ---- older and partial key sets --------------------------------------------------------------------


def test_vllm_06_latency_keys_are_read(tmp_path: Path) -> None:
    f = document(tmp_path / "v06.json", VLLM_06)
    run_import(
        "vllm", [f], tmp_path / "res", ImportOptions(label="A", method="m", scenario="s", concurrency=16)
    )
    (row,) = _rows(tmp_path / "res")
    assert row["mean_e2e_latency_ms"] == 4900.5 and row["p99_e2e_latency_ms"] == 9050.3
    assert row["median_e2e_latency_ms"] == 4702.0


def test_latency_only_file_is_imported_without_throughput(tmp_path: Path) -> None:
    f = document(tmp_path / "lat.json", VLLM_06_LATENCY)
    out = run_import(
        "vllm", [f], tmp_path / "res", ImportOptions(label="A", method="m", scenario="s", concurrency=4)
    )
    (row,) = _rows(tmp_path / "res")
    assert out.rows == 1 and row.get("total_throughput") is None and row.get("output_throughput") is None
    assert row["mean_ttft_ms"] == 210.4 and row["mean_e2e_latency_ms"] == 4900.5
    assert "latency only: the file has no throughput" in row["import_notes"]
    cell = load([tmp_path / "res"]).get("A", "s", 4)
    assert cell is not None and cell.mean("mean_tpot_ms") == pytest.approx(24.1)
    assert cell.mean("total_throughput") is None


# ---- errors point at the right place -----------------------------------------------------------------


def test_truncated_indented_file_is_not_line_1(tmp_path: Path) -> None:
    text = json.dumps(VLLM_2024, indent=4)
    f = tmp_path / "cut.json"
    f.write_text(text[: len(text) * 2 // 3], encoding="utf-8")
    with pytest.raises(DataError, match="truncated") as e:
        run_import("vllm", [f], tmp_path / "res", OPTS)
    assert e.value.line is not None and e.value.line > 1
    assert e.value.line == f.read_text().count("\n") + 1


def test_items_of_a_json_list_are_located(tmp_path: Path) -> None:
    runs = [sweep_run(0, 1024.0), sweep_run(1, 1000.0), {**sweep_run(2, 990.0), "mean_ttft_ms": "fast"}]
    f = document(tmp_path / "summary.json", runs, indent=4)
    with pytest.raises(DataError) as e:
        run_import("vllm", [f], tmp_path / "res", ImportOptions(label="A", method="m", scenario="s"))
    lines = f.read_text().splitlines()
    third = [i for i, s in enumerate(lines, 1) if s == "    {"][2]
    assert "summary.json item 3" in str(e.value) and e.value.line == third
    assert e.value.field == "mean_ttft_ms"


# ---- values: Infinity, negatives, nesting ------------------------------------------------------------


def test_request_rate_infinity_is_kept_and_infinite_metrics_are_noted(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "a.jsonl", {**SG_2025, "p99_itl_ms": float("inf")})
    assert "Infinity" in f.read_text()
    out = run_import("sglang", [f], tmp_path / "res", OPTS)
    (row,) = _rows(tmp_path / "res")
    assert row["request_rate"] == "inf"
    assert row.get("p99_itl_ms") is None
    assert any("p99_itl_ms" in n and "Infinity" in n for n in row["import_notes"])
    assert any("infinite or NaN" in w and "p99_itl_ms" in w for w in out.warnings)


@pytest.mark.parametrize(
    ("key", "value"), [("mean_ttft_ms", -5.0), ("output_throughput", -1039.8), ("completed", -100)]
)
def test_negative_values_are_refused(tmp_path: Path, key: str, value: float) -> None:
    f = jsonl(tmp_path / "neg.jsonl", SG_2025, {**SG_2025, key: value})
    with pytest.raises(DataError, match="negative value") as e:
        run_import("sglang", [f], tmp_path / "res", OPTS)
    assert "neg.jsonl:2" in str(e.value) and e.value.field == key and _nothing_written(tmp_path / "res")


@pytest.mark.parametrize("shape", ["line", "document"])
def test_deep_nesting_is_a_clear_error(tmp_path: Path, shape: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"tag": ' + deep + "}\n" if shape == "line" else '{\n  "tag": ' + deep + "\n}\n"
    f = tmp_path / "deep.jsonl"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match="nested too deeply") as e:
        run_import("sglang", [f], tmp_path / "res", OPTS)
    assert "deep.jsonl" in str(e.value)


def test_output_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "a.jsonl", SG_2025)
    (tmp_path / "res").write_text("not a folder")
    with pytest.raises(UsageError, match="not a folder"):
        run_import("sglang", [f], tmp_path / "res", OPTS)
