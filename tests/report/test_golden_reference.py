"""The reference reports' data through `specsweep import` and `specsweep report`: every number of the
two hand-written reports must come out, in both languages, as Markdown and JSON; plus the verdicts,
anomalies and crossovers issue 6 asks for on that data, and golden Markdown files."""

from __future__ import annotations

import csv
import html
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
from reference_seed import COLUMNS, CONFIGS, import_args, seed_rows, to_sglang_line, write_jsonl

from specsweep.cli import main

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).with_name("golden")

# Every improvement % of both reference reports ("提升" columns).
SWEEP_GAINS = [
    "9.20%", "6.30%", "32.90%", "6.89%", "1.92%", "0.89%", "19.22%", "3.65%", "12.49%", "17.49%", "11.40%",
    "7.44%", "22.84%", "7.52%", "4.75%", "1.90%", "24.39%", "31.40%",
]  # fmt: skip
COMPARE_GAINS = [
    "301.18%", "343.95%", "317.08%", "236.24%", "114.23%", "132.43%", "157.65%", "141.60%", "138.24%",
    "112.99%", "498.95%", "196.86%", "207.35%", "330.82%", "106.67%", "181.99%", "172.49%", "126.15%",
]  # fmt: skip


@pytest.fixture(scope="module")
def results(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("golden")
    files = write_jsonl(reference_dir, base / "src")
    out = base / "results"
    for label, _m, _p, _f in CONFIGS:
        assert main(import_args(label, files[label], out)) == 0
    return out


def _report(results: Path, tmp: Path, kind: str, lang: str, fmt: str) -> str:
    out = tmp / f"{kind}.{lang}.{fmt}"
    args = ["report", str(results), "--kind", kind, "--lang", lang, "--format", fmt, "-o", str(out)]
    if kind == "sweep":
        args += ["--method", "dspark"]
    assert main(args) == 0
    text = out.read_text(encoding="utf-8")
    if fmt == "md":  # ">" opens nothing: never escaped, so no "&gt;" shows in a terminal (issue 34)
        assert "&gt;" not in text
    # report.md escapes "<" before a tag-like character and "&" of an entity (md_inert); what a reader sees
    return html.unescape(text) if fmt == "md" else text


def _md_table_rows(md: str, first_header: str) -> list[list[str]]:
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| " + first_header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def _tables(md: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table: (header, rows)."""
    out = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: "):
            head = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
                j += 1
            out.append((head, rows))
            i = j
        else:
            i += 1
    return out


def _core_rows(md: str) -> dict[tuple[str, str, str], dict[str, str]]:
    head, rows = next(
        t for t in _tables(md) if t[0][:2] == ["Scenario", "Concurrency"] and "Mean E2E(ms)" in t[0]
    )
    return {(r[0], r[1], r[2]): dict(zip(head, r, strict=True)) for r in rows}


# reference CSV column -> the reports' core-table header
_CORE_COLS = {
    "duration_s": "Duration(s)", "request_throughput": "Req/s", "output_throughput": "Out tok/s",
    "total_throughput": "Total tok/s", "mean_e2e_latency_ms": "Mean E2E(ms)", "p95_e2e_latency_ms": "P95 E2E(ms)",
    "p99_e2e_latency_ms": "P99 E2E(ms)", "mean_ttft_ms": "Mean TTFT(ms)", "p99_ttft_ms": "P99 TTFT(ms)",
    "mean_tpot_ms": "Mean TPOT(ms)", "p99_tpot_ms": "P99 TPOT(ms)",
}  # fmt: skip


def _csv(reference_dir: Path, name: str) -> list[dict[str, str]]:
    with (reference_dir / name).open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _ref_core(reference_dir: Path, kind: str) -> dict[tuple[str, str, str], dict[str, str]]:
    """The reports' core tables, from the shipped CSVs: report 1 (sweep) has every DSpark row keyed by
    spec tokens; report 2 (compare) the winning DSpark config per cell and EAGLE, without duration."""
    rows = _csv(reference_dir, "seed-results.csv")
    best = {
        (w["scenario"], w["concurrency"]): w["winner"] for w in _csv(reference_dir, "winners-vs-eagle.csv")
    }
    out = {}
    for r in rows:
        cell = (r["scenario"], r["concurrency"])
        if kind == "sweep":
            if r["method"] != "dspark":
                continue
            key = (*cell, r["spec_tokens"])
        else:
            label = "EAGLE" if r["method"] == "eagle" else f"DSpark(st={r['spec_tokens']})"
            if r["method"] == "dspark" and best[cell] != label:
                continue
            key = (*cell, label)
        out[key] = {h: r[c] for c, h in _CORE_COLS.items() if kind == "sweep" or c != "duration_s"}
    return out


def _ref_winners(reference_dir: Path, kind: str) -> dict[tuple[str, str], dict[str, str]]:
    name, a, b = (
        ("winners-spec-tokens.csv", "st=3", "st=5")
        if kind == "sweep"
        else ("winners-vs-eagle.csv", "DSpark", "EAGLE")
    )
    out = {}
    for w in _csv(reference_dir, name):
        ta, tb = (v for k, v in w.items() if k.endswith("_total_throughput"))
        out[(w["scenario"], w["concurrency"])] = {
            "Winner": w["winner"],
            f"{a} Total tok/s": ta,
            f"{b} Total tok/s": tb,
            "提升": w["gain_pct"] + "%",
        }
    return out


def _assert_core_matches(ours_md: str, reference_dir: Path, kind: str) -> None:
    ref = _ref_core(reference_dir, kind)
    ours = _core_rows(ours_md)
    assert set(ours) == set(ref)
    for key, row in ref.items():
        for col, val in row.items():
            assert ours[key][col] == val, (key, col)


def _winner_rows(md: str) -> dict[tuple[str, str], dict[str, str]]:
    head, rows = next(
        t
        for t in _tables(md)
        if t[0][:2] == ["Scenario", "Concurrency"] and any(h.startswith("Winner") for h in t[0])
    )
    return {(r[0], r[1]): dict(zip(head, r, strict=True)) for r in rows}


def _assert_winners_match(ours_md: str, reference_dir: Path, kind: str, lang: str) -> None:
    ref = _ref_winners(reference_dir, kind)
    ours = _winner_rows(ours_md)
    assert set(ours) == set(ref)
    gain = "提升" if lang == "zh" else "Gain"
    for key, row in ref.items():
        o = ours[key]
        assert o[gain] == row["提升"], key
        for col, val in row.items():
            if col.endswith("Total tok/s") and not col.startswith("Winner"):
                assert o[col] == val, (key, col)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_sweep_markdown_has_every_reference_number(
    results: Path, tmp_path: Path, reference_dir: Path, lang: str
) -> None:
    md = _report(results, tmp_path, "sweep", lang, "md")
    _assert_core_matches(md, reference_dir, "sweep")
    _assert_winners_match(md, reference_dir, "sweep", lang)
    winners = _winner_rows(md)
    assert [w["提升" if lang == "zh" else "Gain"] for w in winners.values()] == SWEEP_GAINS
    tie = "持平" if lang == "zh" else "tie"
    col = "Winner (Total tok/s)"
    # each config imported on its own: a tie there also says a host change between the sessions
    # cannot be told apart (stats_launch), after the tie and its two configs
    assert winners[("chat_standard", "64")][col].startswith(tie)  # 0.89%: within the noise floor
    # Single runs with nothing measured are judged against an assumed 10% run-to-run noise (issue 14:
    # the old 3% gave 14-57% false winners at 5-10% real noise, and this data's own A/A pairs differ
    # by up to 25%). Two single runs then resolve ~32% alone and ~53% after Benjamini-Hochberg over
    # 18 cells, so 31.4% (c=128) and 24.4% (c=96) are ties; with measured repeats they are decided
    # (test_measured_repeats_decide_the_reference_crossover).
    for cell in (("chat_short", "1"), ("stress_standard", "96"), ("stress_standard", "128")):
        assert winners[cell][col].startswith(tie), cell
    # the gap table as concurrency rises (stress_standard) and the findings' headline numbers
    gap = next(rows for head, rows in _tables(md) if head[-1] in ("差距", "Gap") and rows[0][0] == "64")
    assert [r[:3] for r in gap] == [
        ["64", "15225.66", "14942.17"],
        ["96", "24069.73", "19349.55"],
        ["128", "29828.36", "22700.92"],
    ]
    assert (
        "24.4%" in gap[1][3]
        and "31.4%" in gap[2][3]
        and gap[0][3].startswith("基本持平" if lang == "zh" else "even")
    )


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_compare_markdown_has_every_reference_number(
    results: Path, tmp_path: Path, reference_dir: Path, lang: str
) -> None:
    md = _report(results, tmp_path, "compare", lang, "md")
    _assert_core_matches(md, reference_dir, "compare")
    _assert_winners_match(md, reference_dir, "compare", lang)
    winners = _winner_rows(md)
    assert [w["提升" if lang == "zh" else "Gain"] for w in winners.values()] == COMPARE_GAINS
    ref_winners = _ref_winners(reference_dir, "compare")
    # the reference names the best DSpark config by point estimate; the report names it alone only
    # where the verdict between DSpark's configs decides it, else the undecided set holding it (issue 34)
    for k, w in ref_winners.items():
        assert w["Winner"] in winners[k]["Winner"].split(" / "), k
    if lang == "zh":
        assert "对比点数：18" in md
        assert "DSpark 胜出：18 个" in md
        assert "EAGLE 胜出：0 个" in md
        assert "平均 Mean E2E 比值（EAGLE / DSpark）：3.09" in md
        assert "平均 Mean TPOT 比值（EAGLE / DSpark）：3.21" in md
        assert "平均 Mean TTFT 比值（EAGLE / DSpark）：1.81" in md
        assert "比值 < 1 表示 EAGLE 更快；> 1 表示 DSpark 更快" in md
    else:
        assert "Cells compared: 18" in md
        assert "DSpark wins: 18" in md and "EAGLE wins: 0" in md
        for metric, ratio in (("E2E", "3.09"), ("TPOT", "3.21"), ("TTFT", "1.81")):
            assert f"Average Mean {metric} ratio (EAGLE / DSpark): {ratio}" in md


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_json_views(results: Path, tmp_path: Path, lang: str) -> None:
    sweep = json.loads(_report(results, tmp_path, "sweep", lang, "json"))
    comp = json.loads(_report(results, tmp_path, "compare", lang, "json"))
    from specsweep.report.build.view import ReportView

    assert ReportView.model_validate(comp).lang == lang  # the JSON file is the view model
    tie = next(w for w in sweep["winners"] if (w["scenario"], w["concurrency"]) == ("chat_standard", 64))
    assert tie["winner"] is None and tie["verdict"]["verdict"] == "tie"
    assert all(a["evidence"]["text"] for a in sweep["anomalies"])
    gains = [f"{w['gain'] * 100:.2f}%" for w in sweep["winners"]]
    assert gains == SWEEP_GAINS
    assert [f"{w['gain'] * 100:.2f}%" for w in comp["winners"]] == COMPARE_GAINS
    assert comp["compare"]["win_counts"] == {"DSpark": 18, "EAGLE": 0}
    ratios = {r["metric"]: round(r["mean_ratio"], 2) for r in comp["compare"]["ratios"]}
    assert ratios == {"mean_e2e_latency_ms": 3.09, "mean_tpot_ms": 3.21, "mean_ttft_ms": 1.81}

    # issue 6 on the reference data
    v = next(v for v in sweep["verdicts"] if (v["scenario"], v["concurrency"]) == ("chat_standard", 64))
    assert v["verdict"] == "tie" and v["basis"] == "default_floor"
    assert round(v["effect"], 4) == round(15680.46 / 15542.80 - 1, 4)
    assert v["ci_low"] < 0 < v["ci_high"]
    assert sweep["noise"]["source"] == "default" and sweep["noise"]["floor"] == 0.05
    assert sweep["noise"]["sigma"] == 0.10 and not sweep["noise"]["sigma_measured"]
    # the largest single-run gap: a tie because it is under what two single runs can resolve
    v = next(v for v in sweep["verdicts"] if (v["scenario"], v["concurrency"]) == ("stress_standard", 128))
    assert v["verdict"] == "tie" and v["method"] == "z_assumed_noise" and (v["n_a"], v["n_b"]) == (1, 1)
    assert round(v["effect"], 4) == round(29828.36 / 22700.92 - 1, 4) < v["detectable_effect"]
    kinds = {(a["scenario"], a["concurrency"], a["kind"]) for a in sweep["anomalies"]}
    assert ("chat_short", 16, "trend_outlier") in kinds
    assert ("long_context_probe", 4, "prefix_cache") in kinds
    assert len(sweep["anomalies"]) == 2  # nothing else on this data is flagged
    assert sweep["crossovers"] == []  # every sweep cell is a tie on single runs: no crossover is claimed
    checks = {c["kind"] for c in sweep["checks"]}
    assert {"cuda_graph_cap", "below_block_size", "single_run"} <= checks
    cap = next(c for c in sweep["checks"] if c["kind"] == "cuda_graph_cap")
    assert cap["configs"] == ["DSpark(st=5)"] and cap["message"]["args"]["threshold"] == 86
    aa = [n for n in sweep["notes"] if n["key"] == "note.aa_within"]  # chat_standard = stress_standard (A/A)
    assert len(aa) == 1 and {aa[0]["args"]["s1"], aa[0]["args"]["s2"]} == {"chat_standard", "stress_standard"}
    assert aa[0]["args"]["diffs"] == "2.99% (st=3, c=64), 4.02% (st=5, c=64)"
    assert all(r["config"] is None for r in sweep["recommendations"])  # all ties: no config is named
    recs = {(r["workload_class"], r["band"]): r for r in comp["recommendations"]}
    assert recs[("chat", "high")]["config"] == "DSpark"  # 126-173% gaps: decided on single runs too


def test_measured_repeats_decide_the_reference_crossover(reference_dir: Path, tmp_path: Path) -> None:
    """The reference DSpark data as 3 repeats per cell with 3% run-to-run noise (seeded): with the noise
    measured, stress_standard c=128 (31.4%) is decided for st=3, chat_standard c=64 (0.9%: st=3 ahead)
    is never decided for st=5 and the st=3 / st=5 crossover lies between c=64 and c=96 - what single
    runs on the assumed 10% noise cannot resolve (test_json_views)."""
    rows = [r for r in seed_rows(reference_dir) if r["method"] == "dspark"]
    rng = np.random.default_rng(14)
    out = tmp_path / "results"
    for label, _m, _p, (m, st) in CONFIGS[:2]:
        for rep in range(3):
            lines = []
            for r in (r for r in rows if r["spec_tokens"] == st):
                line, f = to_sglang_line(r), math.exp(rng.normal(0.0, 0.03))
                for key, val in list(line.items()):
                    if key in COLUMNS.values() and isinstance(val, float):
                        line[key] = val * f if key.endswith("throughput") else val / f
                lines.append(json.dumps(line))
            path = tmp_path / f"{m}{st}-{rep}.jsonl"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            assert main(import_args(label, path, out)) == 0
    js = tmp_path / "sweep.json"
    assert (
        main(["report", str(out), "--kind", "sweep", "--method", "dspark", "--format", "json", "-o", str(js)])
        == 0
    )
    sweep = json.loads(js.read_text(encoding="utf-8"))
    v = {(x["scenario"], x["concurrency"]): x for x in sweep["verdicts"]}
    c128 = v[("stress_standard", 128)]
    assert c128["method"] == "welch_t" and (c128["n_a"], c128["n_b"]) == (3, 3)
    assert c128["winner"] == "DSpark(st=3)" and c128["detectable_effect"] < 0.2
    # each config's noise pooled over its 18 cells resolves ~6%: a 0.9% gap may come out decided, for
    # the config that is truly ahead (with this seed its three runs came out 6% ahead), never the other
    assert v[("chat_standard", 64)]["winner"] in (None, "DSpark(st=3)")
    x = [c for c in sweep["crossovers"] if c["scenario"] == "stress_standard"]
    assert len(x) == 1 and (x[0]["low"], x[0]["high"]) == (64, 96) and 64 <= x[0]["concurrency"] <= 96
    assert {x[0]["a"], x[0]["b"]} == {"DSpark(st=3)", "DSpark(st=5)"}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_ties_say_the_method_and_the_detectable_difference(results: Path, tmp_path: Path, lang: str) -> None:
    """Every format and language renders the test the verdicts used and, for the ties, the difference
    the data could have resolved and that the noise was assumed (issue 14's "done when")."""
    from specsweep.report import i18n
    from specsweep.report.build.view import Msg

    view = json.loads(_report(results, tmp_path, "sweep", lang, "json"))
    rule, ties = (Msg.model_validate(view["noise"][k]) for k in ("rule", "ties"))
    assert ties.key == "verdict.ties_assumed" and ties.args["detectable"] > 0.314  # c=128's 31.4% is a tie
    assert rule.args["test"] == "test.z_assumed_noise"
    want = [i18n.text(rule, lang), i18n.text(ties, lang)]
    assert f"{ties.args['detectable']:.0%}" in want[1] and "10%" in want[1]
    for fmt in ("md", "html"):
        text = _report(results, tmp_path, "sweep", lang, fmt)
        if fmt == "html":
            text = html.unescape(re.sub(r"<[^>]+>", "", text))
        for line in want:
            assert line in text, (fmt, line)


def _normalise(md: str, results: Path) -> str:
    md = md.replace(str(results), "RESULTS")
    return re.sub(r"-\d{8}-\d{6}(-\d+)?", "-STAMP", md)


@pytest.mark.parametrize("kind", ["sweep", "compare"])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_markdown_golden_files(results: Path, tmp_path: Path, kind: str, lang: str) -> None:
    md = _normalise(_report(results, tmp_path, kind, lang, "md"), results)
    path = GOLDEN / f"reference-{kind}.{lang}.md"
    if os.environ.get("SPECSWEEP_UPDATE_GOLDEN") or not path.exists():
        path.write_text(md, encoding="utf-8")
        if not os.environ.get("SPECSWEEP_UPDATE_GOLDEN"):
            pytest.skip(f"golden file {path.name} created; rerun")
    assert md == path.read_text(encoding="utf-8"), (
        f"{path.name} differs (SPECSWEEP_UPDATE_GOLDEN=1 to accept)"
    )


def test_plots_export_for_slides(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "plots"
    args = ["report", str(results), "--kind", "compare", "--format", "md", "-o", str(tmp_path / "r.md"),
            "--plots-dir", str(out), "--plots-format", "svg"]  # fmt: skip
    assert main(args) == 0
    files = sorted(p.name for p in out.iterdir())
    assert "winmap.svg" in files and "metric-total_throughput.svg" in files
    assert all((out / f).read_text().lstrip().startswith(("<?xml", "<svg")) for f in files)
