"""`specsweep import sglang|vllm`: key sets across versions, repeats, errors naming file/line/field,
nothing half-written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsweep.analysis.data import load
from specsweep.cli import main
from specsweep.errors import DataError
from specsweep.importers import ImportOptions, import_results
from specsweep.store.run_dir import find_run_dirs
from tests.importers.realformats import consistent

NEW = {
    "backend": "vllm", "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": 8,
    "tag": "chat_short", "duration": 10.0, "completed": 100, "total_input_tokens": 20000,
    "total_output_tokens": 10000, "request_throughput": 10.0, "input_throughput": 2000.0,
    "output_throughput": 1000.0, "total_throughput": 3000.0, "mean_e2e_latency_ms": 800.0,
    "median_e2e_latency_ms": 700.0, "p99_e2e_latency_ms": 1500.0, "mean_ttft_ms": 50.0, "p99_ttft_ms": 90.0,
    "mean_tpot_ms": 7.0, "p99_tpot_ms": 12.0, "concurrency": 8.0, "accept_length": 2.4,
}  # fmt: skip
# an old sglang.bench_serving line: no max_concurrency, tag, request_throughput, total_throughput
OLD = {
    "backend": "sglang", "request_rate": 4.0, "total_input_tokens": 5000, "total_output_tokens": 2500,
    "mean_e2e_latency_ms": 500.0, "median_e2e_latency_ms": 450.0, "median_ttft_ms": 30.0,
    "median_itl_ms": 5.0, "output_throughput": 250.0, "random_input_len": 512, "random_output_len": 256,
    "random_range_ratio": 0.0, "duration": 10.0, "completed": 40,
}  # fmt: skip


def _write(p: Path, *objs: dict, raw: str | None = None) -> Path:
    # Python's json (like sglang's) writes inf as Infinity
    p.write_text(raw if raw is not None else "\n".join(json.dumps(o) for o in objs) + "\n", encoding="utf-8")
    return p


def _import(tmp: Path, kind: str, files: list[Path], *extra: str) -> int:
    return main(
        [
            "import",
            kind,
            *map(str, files),
            "--label",
            "A(k=3)",
            "--method",
            "eagle",
            "--param",
            "k=3",
            "-o",
            str(tmp / "res"),
            *extra,
        ]
    )


def test_sglang_new_keys_and_infinity(tmp_path: Path) -> None:
    f = _write(tmp_path / "a.jsonl", NEW, consistent(NEW, max_concurrency=16, total_throughput=3300.0))
    assert "Infinity" in f.read_text()
    assert _import(tmp_path, "sglang", [f]) == 0
    (rd,) = find_run_dirs([tmp_path / "res"])
    m = rd.manifest
    assert m["source"] == "import" and m["label"] == "A(k=3)" and m["params"] == {"k": 3}
    assert m["servers"][0]["method"] == "eagle"
    rows = rd.summary()
    assert [r["max_concurrency"] for r in rows] == [8, 16]
    assert rows[0]["concurrency"] == 8.0  # sglang's measured in-flight mean, kept as is
    assert rows[0]["cell_id"] == "A(k=3)/chat_short/c8" and rows[0]["repeat"] == 0
    assert rows[0]["status"] == "ok" and rows[0]["accept_length"] == 2.4
    assert (rd.path / "source").is_dir()


def test_sglang_old_keys_are_computed(tmp_path: Path) -> None:
    f = _write(tmp_path / "old.jsonl", OLD)
    assert _import(tmp_path, "sglang", [f], "--scenario", "rag_medium", "--concurrency", "4") == 0
    (row,) = find_run_dirs([tmp_path / "res"])[0].summary()
    # an open-loop line (request_rate 4) capped at --concurrency 4: a cell by rate
    assert row["scenario"] == "rag_medium @ rate 4 req/s" and row["max_concurrency"] == 4
    assert row["request_throughput"] == pytest.approx(4.0)  # completed / duration
    assert row["input_throughput"] == pytest.approx(500.0)
    assert row["total_throughput"] == pytest.approx(750.0)  # (5000 + 2500) / 10


def test_mean_e2e_from_concurrency(tmp_path: Path) -> None:
    obj = {k: v for k, v in NEW.items() if k != "mean_e2e_latency_ms"}
    f = _write(tmp_path / "a.jsonl", obj)
    assert _import(tmp_path, "sglang", [f]) == 0
    (row,) = find_run_dirs([tmp_path / "res"])[0].summary()
    assert row["mean_e2e_latency_ms"] == pytest.approx(8.0 * 10.0 * 1000 / 100)


def test_repeats_of_one_cell(tmp_path: Path) -> None:
    f = _write(
        tmp_path / "a.jsonl",
        NEW,
        consistent(NEW, total_throughput=3100.0),
        consistent(NEW, total_throughput=2950.0),
    )
    assert _import(tmp_path, "sglang", [f]) == 0
    ds = load([tmp_path / "res"])
    cell = ds.get("A(k=3)", "chat_short", 8)
    assert cell is not None and len(cell.ok) == 3
    assert [r["repeat"] for r in cell.ok] == [0, 1, 2]
    assert cell.mean("total_throughput") == pytest.approx((3000 + 3100 + 2950) / 3)


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (json.dumps(NEW) + "\n{not json\n", ":2"),
        (
            json.dumps(NEW) + "\n" + json.dumps({**NEW, "output_throughput": "fast"}) + "\n",
            "field 'output_throughput'",
        ),
        (  # neither a concurrency level nor a request rate: no cell to put it in
            json.dumps({k: v for k, v in NEW.items() if k not in ("max_concurrency", "request_rate")}) + "\n",
            "field 'max_concurrency'",
        ),
        (json.dumps({**NEW, "max_concurrency": 1e30}) + "\n", "field 'max_concurrency'"),
        (json.dumps({**NEW, "max_concurrency": float("nan")}) + "\n", "field 'max_concurrency'"),
        ("[1, 2]\n", ":1"),
        ("\n\n", "no result lines"),
    ],
)
def test_bad_files_fail_clearly_and_write_nothing(tmp_path: Path, content: str, where: str) -> None:
    good = _write(tmp_path / "good.jsonl", NEW)
    bad = _write(tmp_path / "bad.jsonl", raw=content)
    with pytest.raises(DataError) as e:
        import_results("sglang", [good, bad], tmp_path / "res", ImportOptions(label="X", method="m"))
    assert "bad.jsonl" in str(e.value) and where in str(e.value)
    res = tmp_path / "res"
    assert not res.exists() or not any(res.iterdir())


def test_cli_reports_bad_file_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _write(tmp_path / "bad.jsonl", raw='{"tag": "x"}\n')
    assert _import(tmp_path, "sglang", [bad]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:1" in err and "output_throughput" in err


VLLM = {
    "date": "20250101-000000", "backend": "vllm", "model_id": "meta/llama", "tokenizer_id": "meta/llama",
    "num_prompts": 50, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4, "duration": 5.0,
    "completed": 48, "total_input_tokens": 9600, "total_output_tokens": 4800, "request_throughput": 9.6,
    "request_goodput": None, "output_throughput": 960.0, "total_token_throughput": 2880.0,
    "mean_ttft_ms": 40.0, "median_ttft_ms": 38.0, "std_ttft_ms": 4.0, "p99_ttft_ms": 60.0,
    "mean_tpot_ms": 8.0, "median_tpot_ms": 8.0, "std_tpot_ms": 1.0, "p99_tpot_ms": 11.0,
    "mean_itl_ms": 8.0, "median_itl_ms": 7.5, "std_itl_ms": 2.0, "p99_itl_ms": 20.0,
    "mean_e2el_ms": 420.0, "median_e2el_ms": 400.0, "std_e2el_ms": 50.0, "p99_e2el_ms": 600.0,
    "errors": [""] * 48 + ["timeout", "reset"], "ttfts": [0.04] * 50,
}  # fmt: skip


def test_vllm_result_json(tmp_path: Path) -> None:
    f = tmp_path / "vllm.json"
    f.write_text(json.dumps(VLLM), encoding="utf-8")
    assert _import(tmp_path, "vllm", [f], "--scenario", "chat_short") == 0
    rd = find_run_dirs([tmp_path / "res"])[0]
    (row,) = rd.summary()
    assert row["total_throughput"] == 2880.0
    assert row["mean_e2e_latency_ms"] == 420.0 and row["p99_e2e_latency_ms"] == 600.0
    assert row["failed"] == 2 and row["max_concurrency"] == 4
    assert rd.manifest["servers"][0]["model"] == "meta/llama"
    assert rd.manifest["client"]["tool"] == "vllm bench serve"


def test_two_imports_make_one_result_set(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", NEW)
    b = _write(tmp_path / "b.jsonl", consistent(NEW, total_throughput=2000.0, mean_e2e_latency_ms=1200.0))
    assert (
        main(
            [
                "import",
                "sglang",
                str(a),
                "--label",
                "DSpark(st=3)",
                "--method",
                "dspark",
                "--param",
                "spec_tokens=3",
                "-o",
                str(tmp_path / "res"),
            ]
        )
        == 0
    )
    assert (
        main(
            ["import", "sglang", str(b), "--label", "EAGLE", "--method", "eagle", "-o", str(tmp_path / "res")]
        )
        == 0
    )
    assert len(find_run_dirs([tmp_path / "res"])) == 2
    out = tmp_path / "r.json"
    assert (
        main(["report", str(tmp_path / "res"), "--kind", "compare", "--format", "json", "-o", str(out)]) == 0
    )
    view = json.loads(out.read_text())
    assert view["compare"]["win_counts"] == {"DSpark": 1, "EAGLE": 0}
    assert view["winners"][0]["gain"] == pytest.approx(0.5)


def test_unknown_importer_lists_valid_names(tmp_path: Path) -> None:
    from specsweep.errors import UsageError

    with pytest.raises(UsageError, match="sglang, vllm"):
        import_results("trt", [tmp_path / "x"], tmp_path, ImportOptions(label="x", method="m"))


def test_sglang_output_details_errors_count_as_failed(tmp_path: Path) -> None:
    f = _write(tmp_path / "a.jsonl", {**NEW, "errors": ["", "", "timeout"], "ttfts": [0.1, 0.2, 0.0]})
    assert _import(tmp_path, "sglang", [f]) == 0
    (row,) = find_run_dirs([tmp_path / "res"])[0].summary()
    assert row["failed"] == 1 and "ttfts" not in row


@pytest.mark.parametrize("kind", ["sglang", "vllm"])
def test_undecodable_bytes_are_a_data_error(tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "bin.jsonl"
    good = NEW if kind == "sglang" else {**VLLM, "metadata": {"tag": "chat"}}
    bad.write_bytes(json.dumps(good).encode() + b"\n\xff\xfe\x00garbage\n")
    with pytest.raises(DataError) as e:
        import_results(kind, [bad], tmp_path / "res", ImportOptions(label="X", method="m"))
    assert "bin.jsonl:2" in str(e.value)
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())
