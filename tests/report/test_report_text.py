"""Report text: every label key resolves in every format and language, unknown parameters get a
readable header, the table format writes its file, the HTML core table has each column once
(issue 19 items 1 and 5)."""

from __future__ import annotations

import html
import io
import itertools
import json
import re
from pathlib import Path

import pytest

from specsweep.cli import main

# a label key as the renderers build them ("col.param.x", "class.x", "metric.x", ...)
RAW_KEY = re.compile(
    r"\b(?:col|class|metric|sec|prov|band|value|anomaly|check|confidence|verdict)\.[a-z_]+\b"
)


def _lines(tag: str, conc: list[int], tput: float, i: int) -> str:
    out = []
    for c in conc:
        row = {
            "backend": "sglang", "dataset_name": "random", "tag": tag, "max_concurrency": c,
            "request_rate": "inf", "completed": 64, "duration": 6400 / (tput * c),
            "request_throughput": 0.01 * tput * c, "output_throughput": tput * c, "total_throughput": tput * c * 2, "mean_e2e_latency_ms": 900.0,
            "p99_e2e_latency_ms": 1500.0, "mean_ttft_ms": 80.0 + c, "p99_ttft_ms": 200.0,
            "mean_tpot_ms": 9.0, "p99_tpot_ms": 20.0, "total_input_tokens": 6400, "total_output_tokens": 6400, "accept_length": 2.5 + i,
            "random_input_len": 64, "random_output_len": 64, "random_range_ratio": 0.0,
        }  # fmt: skip
        out.append(json.dumps(row))
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two sweeps over parameters with no built-in label, on a scenario of no built-in class."""
    base = tmp_path_factory.mktemp("keys")
    out = {}
    for param, values in (("max_num_seqs", (64, 256)), ("spec_ngram_simple_size_m", (3, 5))):
        res = base / param
        for i, v in enumerate(values):
            f = base / f"{param}-{v}.jsonl"
            f.write_text(_lines("my_own_scenario", [1, 8], 100.0 * (1 + 0.3 * i), i), encoding="utf-8")
            args = ["import", "sglang", str(f), "--label", f"ngram {param}={v}", "--method", "ngram"]
            assert main([*args, "--param", f"{param}={v}", "-o", str(res)]) == 0
        out[param] = res
    return out


def _render(res: Path, tmp: Path, fmt: str, lang: str, kind: str = "sweep") -> str:
    out = tmp / f"r.{kind}.{lang}.{fmt}"
    args = ["report", str(res), "--kind", kind, "--lang", lang, "--format", fmt, "-o", str(out)]
    assert main([*args, "--method", "ngram"] if kind == "sweep" else args) == 0
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("param", ["max_num_seqs", "spec_ngram_simple_size_m"])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fmt", ["md", "html", "table"])
def test_no_raw_label_key(results: dict[str, Path], tmp_path: Path, param: str, lang: str, fmt: str) -> None:
    text = _render(results[param], tmp_path, fmt, lang)
    if fmt == "html":  # what a reader sees: tags, scripts and styles stripped
        text = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.S)
        text = re.sub(r"<[^>]+>", " ", text)
    assert not RAW_KEY.findall(text), sorted(set(RAW_KEY.findall(text)))
    assert param in text  # the unknown parameter is named (its own name is the readable fallback)


def test_table_format_writes_the_table(results: dict[str, Path], tmp_path: Path) -> None:
    text = _render(results["max_num_seqs"], tmp_path, "table", "en")
    assert "max_num_seqs" in text  # the varied parameter's column
    assert "\x1b[" not in text  # plain text, no colour codes
    assert len([ln for ln in text.splitlines() if "my_own_scenario" in ln]) == 4  # 2 configs x 2 conc


def test_html_core_table_has_each_column_once(results: dict[str, Path], tmp_path: Path) -> None:
    text = _render(results["spec_ngram_simple_size_m"], tmp_path, "html", "en")
    assert "Accept len" in text  # the data has accept lengths
    tables = re.findall(r"<table\b.*?</table>", text, flags=re.S)
    assert tables
    for table in tables:
        head = re.search(r"<thead\b.*?</thead>", table, flags=re.S)
        heads = [
            re.sub(r"<[^>]+>", "", h).strip()
            for h in re.findall(r"<th\b.*?</th>", head[0] if head else table, flags=re.S)
        ]
        dup = {h for h in heads if h and heads.count(h) > 1}
        assert not dup, (dup, heads)


@pytest.mark.parametrize(("lang", "line"), [
    ("en", "my_own_scenario: input 1-64, output 1-64 tokens, uniform (range ratio 0 by sglang's rule)"),
    ("zh", "my_own_scenario：输入 1-64、输出 1-64 token，均匀分布（range ratio 0，sglang 规则）"),
])  # fmt: skip
@pytest.mark.parametrize("fmt", ["md", "html"])
def test_report_header_states_the_length_rule(
    results: dict[str, Path], tmp_path: Path, lang: str, line: str, fmt: str
) -> None:
    """--random-output-len 64 without a range ratio means uniform in [1, 64] (issue 19 item 15)."""
    text = _render(results["max_num_seqs"], tmp_path, fmt, lang)
    assert line in (html.unescape(text) if fmt == "html" else text)


def test_bench_summary_states_the_length_rule() -> None:
    from rich.console import Console

    from specsweep.console.bench_summary import print_bench_summary

    res = {
        "dataset_name": "random",
        "random_input_len": 64,
        "random_output_len": 64,
        "random_range_ratio": 0.0,
    }
    con = Console(record=True, width=250, file=io.StringIO())
    print_bench_summary(res, con)
    out = con.export_text()
    assert "Request lengths" in out
    assert "uniform: input [1, 64], output [1, 64] tokens (mean output 32.5)" in out
    assert "[max(floor(L*r), 1), L]" in out  # not eaten as rich markup
    assert "\\[" not in out  # nor escaped twice: the cell is text (issue 28 defect 11)
    con = Console(record=True, width=250, file=io.StringIO())
    print_bench_summary({**res, "random_range_ratio": 1.0}, con)
    assert "fixed: input 64, output 64 tokens" in con.export_text()


ENGLISH_HEADERS = {"Scenario", "Concurrency", "Winner", "Method", "Config"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def _md_headers(md: str) -> list[list[str]]:
    lines = md.splitlines()
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line, nxt in itertools.pairwise(lines)
        if line.startswith("|") and re.match(r"^\|[-:| ]+\|$", nxt.strip())
    ]


def _html_headers(page: str) -> list[list[str]]:
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", th)).strip()
            for th in re.findall(r"<th\b[^>]*>(.*?)</th>", t, re.S)
        ]
        for t in re.findall(r"<table\b.*?</table>", page, re.S)
    ]


def _mixed(headers: list[list[str]]) -> list[list[str]]:
    """Tables whose translated headers sit beside a bare English column name ("Scenario | 并发"), but
    for the reference reports' own data tables ("Scenario | Concurrency | ... | 提升", as they have them)."""
    return [
        h
        for h in headers
        if h[:2] != ["Scenario", "Concurrency"] and any(CJK.search(x) for x in h) and ENGLISH_HEADERS & set(h)
    ]


def test_zh_tables_do_not_mix_languages(results: dict[str, Path], tmp_path: Path) -> None:
    """Issue 28 defect 11: a zh table is either one of the reference reports' data tables (with their
    headers) or translated throughout - never "Scenario | 并发"."""
    res = results["spec_ngram_simple_size_m"]
    md = _md_headers(_render(res, tmp_path, "md", "zh"))
    assert ["场景", "并发", "推荐配置"] in md
    assert not _mixed(md)
    assert not _mixed(_html_headers(_render(res, tmp_path, "html", "zh")))
    for golden in Path(__file__).with_name("golden").glob("*.zh.md"):  # the reference data's reports
        assert not _mixed(_md_headers(golden.read_text(encoding="utf-8"))), golden.name
