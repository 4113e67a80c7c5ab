"""AIPerf (both schemas), genai-perf, GuideLLM and LLMPerf result files, real ones (fixtures/README.md):
imported by name and by ``auto``, every core-table number equal to the file's in every rendering (JSON
view, Markdown, HTML, terminal table; en and zh), units converted as documented (s -> ms), and the
report saying that configs measured by different clients do not define their metrics alike."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from specsweep.cli import main
from specsweep.errors import DataError
from specsweep.importers import ImportOptions, run_import
from specsweep.report import build_view, render
from specsweep.report.build.view import ReportView
from specsweep.store.run_dir import find_run_dirs

FIX = Path(__file__).parent / "fixtures"


def _load(rel: str) -> Any:
    return json.loads((FIX / rel).read_text(encoding="utf-8"))


def _aiperf_records() -> dict[str, float | None]:
    r = _load("aiperf/records-2025/profile_export_aiperf.json")["records"]
    dur = r["benchmark_duration"]["avg"]
    return {
        "duration": dur, "request_throughput": r["request_throughput"]["avg"],
        "output_throughput": r["output_token_throughput"]["avg"],
        # no total_token_throughput in the 2025 schema: (total ISL + total OSL) / duration
        "total_throughput": r["total_isl"]["avg"] / dur + r["total_osl"]["avg"] / dur,
        "mean_e2e_latency_ms": r["request_latency"]["avg"], "p95_e2e_latency_ms": r["request_latency"]["p95"],
        "p99_e2e_latency_ms": r["request_latency"]["p99"], "mean_ttft_ms": r["ttft"]["avg"],
        "p99_ttft_ms": r["ttft"]["p99"], "mean_tpot_ms": r["inter_token_latency"]["avg"],
        "p99_tpot_ms": r["inter_token_latency"]["p99"],
    }  # fmt: skip


def _aiperf_flat() -> dict[str, float | None]:
    r = _load("aiperf/flat-2026-c16/profile_export_aiperf.json")
    return {
        "duration": r["benchmark_duration"]["avg"], "request_throughput": r["request_throughput"]["avg"],
        "output_throughput": r["output_token_throughput"]["avg"], "total_throughput": r["total_token_throughput"]["avg"],
        "mean_e2e_latency_ms": r["request_latency"]["avg"], "p95_e2e_latency_ms": r["request_latency"]["p95"],
        "p99_e2e_latency_ms": r["request_latency"]["p99"], "mean_ttft_ms": r["time_to_first_token"]["avg"],
        "p99_ttft_ms": r["time_to_first_token"]["p99"], "mean_tpot_ms": r["inter_token_latency"]["avg"],
        "p99_tpot_ms": r["inter_token_latency"]["p99"],
    }  # fmt: skip


def _genai_perf() -> dict[str, float | None]:
    r = _load("genai_perf/streaming-c100/profile_export_genai_perf.json")
    req, out = r["request_throughput"]["avg"], r["output_token_throughput"]["avg"]
    return {
        "duration": None, "request_throughput": req, "output_throughput": out,
        # input throughput = request throughput x mean input sequence length
        "total_throughput": req * r["input_sequence_length"]["avg"] + out,
        "mean_e2e_latency_ms": r["request_latency"]["avg"], "p95_e2e_latency_ms": r["request_latency"]["p95"],
        "p99_e2e_latency_ms": r["request_latency"]["p99"], "mean_ttft_ms": r["time_to_first_token"]["avg"],
        "p99_ttft_ms": r["time_to_first_token"]["p99"], "mean_tpot_ms": r["inter_token_latency"]["avg"],
        "p99_tpot_ms": r["inter_token_latency"]["p99"],
    }  # fmt: skip


def _guidellm() -> dict[str, float | None]:
    b = _load("guidellm/benchmarks.json")["benchmarks"][0]
    m = {k: v["successful"] for k, v in b["metrics"].items() if isinstance(v, dict) and "successful" in v}
    lat = m["request_latency"]  # seconds
    return {
        "duration": b["duration"], "request_throughput": m["requests_per_second"]["mean"],
        "output_throughput": m["output_tokens_per_second"]["mean"], "total_throughput": m["tokens_per_second"]["mean"],
        "mean_e2e_latency_ms": lat["mean"] * 1000, "p95_e2e_latency_ms": lat["percentiles"]["p95"] * 1000,
        "p99_e2e_latency_ms": lat["percentiles"]["p99"] * 1000, "mean_ttft_ms": m["time_to_first_token_ms"]["mean"],
        "p99_ttft_ms": m["time_to_first_token_ms"]["percentiles"]["p99"],
        "mean_tpot_ms": m["inter_token_latency_ms"]["mean"],  # GuideLLM's ITL = (latency - TTFT)/(tokens - 1)
        "p99_tpot_ms": m["inter_token_latency_ms"]["percentiles"]["p99"],
    }  # fmt: skip


def _llmperf() -> dict[str, float | None]:
    r = _load("llmperf/anyscale_7b_summary.json")
    req = r["results_num_completed_requests_per_min"] / 60
    done = r["results_num_completed_requests"]
    tin = r["results_number_input_tokens_mean"]
    out = r["results_mean_output_throughput_token_per_s"]
    dur = done / req
    return {
        "duration": dur, "request_throughput": req, "output_throughput": out,
        "total_throughput": tin * done / dur + out,
        "mean_e2e_latency_ms": r["results_end_to_end_latency_s_mean"] * 1000,
        "p95_e2e_latency_ms": r["results_end_to_end_latency_s_quantiles_p95"] * 1000,
        "p99_e2e_latency_ms": r["results_end_to_end_latency_s_quantiles_p99"] * 1000,
        "mean_ttft_ms": r["results_ttft_s_mean"] * 1000, "p99_ttft_ms": r["results_ttft_s_quantiles_p99"] * 1000,
        "mean_tpot_ms": None, "p99_tpot_ms": None,  # LLMPerf's "inter token latency" includes TTFT: not TPOT
    }  # fmt: skip


CASES = {
    "aiperf-2025": ("aiperf", "aiperf/records-2025/profile_export_aiperf.json", _aiperf_records, 100),
    "aiperf-2026": ("aiperf", "aiperf/flat-2026-c16/profile_export_aiperf.json", _aiperf_flat, 16),
    "genai-perf": (
        "genai-perf",
        "genai_perf/streaming-c100/profile_export_genai_perf.json",
        _genai_perf,
        100,
    ),
    "guidellm": ("guidellm", "guidellm/benchmarks.json", _guidellm, 4),
    "llmperf": ("llmperf", "llmperf/anyscale_7b_summary.json", _llmperf, 5),
}


def _md_row(md: str, scenario: str, n: int) -> list[str]:
    for line in html.unescape(md).splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("|") and cells[0] == scenario:
            return cells[3 : 3 + n]
    raise AssertionError(f"no core-table row for {scenario}")


def _html_row(page: str, scenario: str, n: int) -> list[str]:
    table = page[page.index('id="core-table"') :]
    table = table[: table.index("</table>")]
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
        cells = [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        ]
        if cells and cells[0] == scenario:
            return cells[3 : 3 + n]
    raise AssertionError(f"no HTML core-table row for {scenario}")


def _table_row(text: str, scenario: str, n: int) -> list[str]:
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] == scenario:
            return cells[3 : 3 + n]
    raise AssertionError(f"no terminal-table row for {scenario}")


@pytest.fixture(scope="module", params=sorted(CASES))
def imported(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, ReportView]:
    kind, rel, _expected, _c = CASES[request.param]
    res = tmp_path_factory.mktemp(request.param) / "res"
    assert main(["import", kind, str(FIX / rel), "--label", "X", "--method", "none", "-o", str(res)]) == 0
    return request.param, build_view([res], "sweep", now="T")


@pytest.mark.slow  # an HTML report with plots per format and language: ~1 s each
def test_every_number_equals_the_file_in_every_rendering(imported: tuple[str, ReportView]) -> None:
    name, view = imported
    _kind, _rel, expected_of, level = CASES[name]
    expected = expected_of()
    (cell,) = view.cells
    assert cell.concurrency == level and cell.status == "ok"
    for key, want in expected.items():  # the view (and so --format json) holds the file's numbers
        got = cell.values.get(key)
        assert (got is None) == (want is None), (name, key, got, want)
        if want is not None:
            assert got == pytest.approx(want, rel=1e-12), (name, key)
    cols = view.core_columns
    shown = [f"{expected[k]:.2f}" if expected.get(k) is not None else "-" for k in cols if k in expected]
    assert [k for k in cols if k in expected] == cols[: len(shown)]
    for lang in ("en", "zh"):
        page = json.loads(render(view, "json", lang))
        assert page["cells"][0]["values"]["total_throughput"] == view.cells[0].values["total_throughput"]
        assert _md_row(render(view, "md", lang), cell.scenario, len(shown)) == shown
        assert _html_row(render(view, "html", lang), cell.scenario, len(shown)) == shown
        assert _table_row(render(view, "table", lang), cell.scenario, len(shown)) == shown


@pytest.mark.parametrize("name", sorted(CASES))
def test_auto_tells_the_client_from_the_keys(tmp_path: Path, name: str) -> None:
    kind, rel, _e, _c = CASES[name]
    out = run_import("auto", [FIX / rel], tmp_path / "res", ImportOptions(label="X", method="none"))
    assert out.rundir.manifest["importer"] == kind
    others = [k for k in ("sglang", "vllm", "aiperf", "genai-perf", "guidellm", "llmperf") if k != kind]
    with pytest.raises(DataError, match=f"use `specsweep import {kind}`"):
        run_import(others[0], [FIX / rel], tmp_path / "res2", ImportOptions(label="X", method="none"))


def test_aiperf_failures_and_cancellations_are_failed_requests(tmp_path: Path) -> None:
    run_import(
        "aiperf", [FIX / "aiperf/flat-2026-errors"], tmp_path / "res", ImportOptions(label="X", method="m")
    )
    run_import(
        "aiperf", [FIX / "aiperf/records-2025"], tmp_path / "res", ImportOptions(label="Y", method="m")
    )
    rows = {r["label"]: r for rd in find_run_dirs([tmp_path / "res"]) for r in rd.summary()}
    assert (rows["X"]["completed"], rows["X"]["failed"]) == (10, 10)  # 10 of 20 timed out
    assert (rows["X"]["max_concurrency"], rows["Y"]["failed"]) == (1, 11)  # 11 cancelled of 100


def test_different_clients_are_flagged_and_linked(tmp_path: Path) -> None:
    res = tmp_path / "res"
    for kind, rel, label in (
        ("aiperf", "aiperf/flat-2026-c16", "A"),
        ("genai-perf", "genai_perf/streaming-c100", "G"),
    ):
        run_import(kind, [FIX / rel], res, ImportOptions(label=label, method=label.lower(), scenario="agent"))
    view = build_view([res], "compare", now="T")
    (note,) = [m for m in view.provenance.comparability if m.key == "note.clients"]
    assert "aiperf: A" in str(note.args["clients"]) and "genai-perf: G" in str(note.args["clients"])
    assert {s.label: s.clients for s in view.provenance.servers} == {"A": ["aiperf"], "G": ["genai-perf"]}
    for lang in ("en", "zh"):  # a link, not a path to copy (issue 38 item 18)
        assert "[docs/metrics.md](docs/metrics.md#metrics-of-other-clients)" in render(view, "md", lang)
        assert '<a href="docs/metrics.md#metrics-of-other-clients">docs/metrics.md</a>' in render(
            view, "html", lang
        )


@pytest.mark.parametrize(
    ("rel", "edit", "field"),
    [
        ("aiperf/flat-2026-c16/profile_export_aiperf.json", ("time_to_first_token", "unit", "fortnights"),
         "time_to_first_token.unit"),
        ("aiperf/flat-2026-c16/profile_export_aiperf.json", ("request_throughput", "avg", "fast"),
         "request_throughput.avg"),
        ("genai_perf/streaming-c100/profile_export_genai_perf.json", ("request_latency", "p99", -5.0),
         "p99_e2e_latency_ms"),
    ],
)  # fmt: skip
def test_bad_values_name_the_field(tmp_path: Path, rel: str, edit: tuple[str, str, Any], field: str) -> None:
    obj = _load(rel)
    obj[edit[0]][edit[1]] = edit[2]
    f = tmp_path / Path(rel).name
    f.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(DataError) as e:
        run_import("auto", [f], tmp_path / "res", ImportOptions(label="X", method="m"))
    assert e.value.field == field and f.name in str(e.value)
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())


def test_an_unknown_guidellm_strategy_is_refused(tmp_path: Path) -> None:
    obj = _load("guidellm/benchmarks.json")
    obj["benchmarks"][0]["config"]["strategy"]["type_"] = "telepathic"
    f = tmp_path / "benchmarks.json"
    f.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(DataError, match="unknown GuideLLM strategy 'telepathic'") as e:
        run_import("guidellm", [f], tmp_path / "res", ImportOptions(label="X", method="m"))
    assert e.value.field == "benchmarks[0].config.strategy.type_"


def test_the_cli_offers_every_importer() -> None:
    from specsweep.commands.importcmd import KINDS as CLI_KINDS
    from specsweep.importers import KINDS

    assert CLI_KINDS == KINDS
