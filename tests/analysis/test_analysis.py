"""Analysis on hand-made run dirs: repeats and A/A noise, missing cells, failures, baselines, records."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from specsweep.analysis import recommend
from specsweep.analysis.recommend import engine_flags
from specsweep.errors import UsageError
from specsweep.measure.records import RequestRecord
from specsweep.report import build_view, render
from specsweep.report.build.view import Divergence, LosslessView
from specsweep.report.build.view import ReportView as ReportViewT
from specsweep.stats.launch import DEFAULT_LAUNCH_NOISE
from specsweep.store.run_dir import RunDir

BASE = {"duration": 10.0, "completed": 100, "failed": 0, "mean_e2e_latency_ms": 1000.0, "mean_ttft_ms": 100.0,
        "mean_tpot_ms": 10.0, "p99_e2e_latency_ms": 2000.0}  # fmt: skip


def row(
    label: str,
    method: str,
    params: dict[str, Any],
    scenario: str,
    c: int,
    thr: float,
    rep: int = 0,
    **kw: Any,
) -> dict[str, Any]:
    return {
        **BASE, "total_throughput": thr, "output_throughput": thr / 3, "request_throughput": thr / 300,
        "cell_id": f"{label}/{scenario}/c{c}", "label": label, "method": method, "params": params, "server": label,
        "scenario": scenario, "max_concurrency": c, "concurrency": c * 0.9, "repeat": rep, "status": "ok", **kw,
    }  # fmt: skip


def make_run(
    tmp: Path, name: str, rows: list[dict[str, Any]], manifest: dict[str, Any] | None = None
) -> RunDir:
    rd = RunDir.create(tmp, name, {"experiment": name, **(manifest or {})}, "20260101-000000")
    for r in rows:
        rd.append_summary(r)
    return rd


K3 = ("DSpark(st=3)", "dspark", {"spec_tokens": 3})
K5 = ("DSpark(st=5)", "dspark", {"spec_tokens": 5})


def test_repeats_give_bootstrap_verdicts_and_cell_intervals(tmp_path: Path) -> None:
    rows = []
    for rep, (a, b) in enumerate([(1000, 900), (1010, 905), (995, 898), (1005, 902)]):
        rows += [row(*K3, "chat_short", 8, a, rep), row(*K5, "chat_short", 8, b, rep)]
    make_run(tmp_path, "x", rows)
    v = build_view([tmp_path], "sweep")
    assert v.noise.source == "repeats" and v.noise.floor < 0.05
    (ver,) = v.verdicts
    assert ver.basis == "repeats" and ver.verdict == "a" and ver.ci_low > 0
    cell = v.cell("chat_short", 8, "DSpark(st=3)")
    assert cell is not None and cell.repeats == 4 and cell.ci_basis == "repeats"
    lo, hi = cell.ci["total_throughput"]
    assert lo <= cell.values["total_throughput"] <= hi  # type: ignore[operator]


def test_aa_runs_set_the_noise_floor(tmp_path: Path) -> None:
    make_run(tmp_path, "a", [row(*K3, "chat_short", 8, 1000), row(*K5, "chat_short", 8, 1025)])
    make_run(tmp_path, "b", [row(*K3, "chat_short", 8, 1020)])
    v = build_view([tmp_path], "sweep")
    assert v.noise.source == "aa" and v.noise.floor == pytest.approx(0.02)
    (ver,) = v.verdicts
    # st=3's A/A pair measures st=3's noise only: st=5's side rests on the assumed noise
    assert ver.basis == "aa+default_floor" and ver.noise_b == pytest.approx(0.10)
    assert 0 < ver.noise_a < 0.05


def test_missing_cells_are_shown_not_invented(tmp_path: Path) -> None:
    make_run(
        tmp_path,
        "x",
        [row(*K3, "chat_short", 8, 1000), row(*K5, "chat_short", 8, 1200), row(*K3, "chat_short", 16, 1500)],
    )
    v = build_view([tmp_path], "sweep")
    cell = v.cell("chat_short", 16, "DSpark(st=5)")
    assert cell is not None and cell.status == "missing" and all(x is None for x in cell.values.values())
    w16 = next(w for w in v.winners if w.concurrency == 16)
    assert w16.missing == ["DSpark(st=5)"] and w16.winner is None and w16.gain is None
    md = render(v, "md", "en")
    assert "| chat_short | 16 | 5 | missing |" in md
    assert "缺失" in render(v, "md", "zh")


def test_failures_and_invalid_runs_are_anomalies(tmp_path: Path) -> None:
    make_run(
        tmp_path, "x",
        [
            row(*K3, "chat_short", 8, 1000, failed=7, errors_by_kind={"timeout": 7}),
            row(*K5, "chat_short", 8, 1100),
            {**row(*K5, "chat_short", 16, 0), "status": "invalid", "error": "client saturated"},
            row(*K3, "chat_short", 16, 1000),
        ],
    )  # fmt: skip
    v = build_view([tmp_path], "sweep")
    kinds = {(a.kind, a.concurrency) for a in v.anomalies}
    assert ("error_burst", 8) in kinds and ("invalid_run", 16) in kinds
    burst = next(a for a in v.anomalies if a.kind == "error_burst")
    assert burst.data["failed"] == 7 and burst.data["kinds"] == {"timeout": 7}
    assert v.cell("chat_short", 16, "DSpark(st=5)").status == "invalid"  # type: ignore[union-attr]
    assert "client saturated" in render(v, "md", "en")


def test_baseline_crossover_where_speculation_stops_paying(tmp_path: Path) -> None:
    base = ("no-spec", "none", {})
    rows = []
    # single runs against the assumed 10% run-to-run noise: the log gain falls linearly in log c
    for c, spec, plain in [(1, 811, 200), (8, 1749, 1100), (32, 3323, 3900), (64, 3750, 6000)]:
        rows += [row(*K3, "chat_short", c, spec), row(*base, "chat_short", c, plain)]
    make_run(tmp_path, "x", rows)
    v = build_view([tmp_path], "sweep", method="dspark", baseline="no-spec")
    assert v.configs[-1].is_baseline
    xs = [x for x in v.crossovers if x.kind == "baseline"]
    assert [(x.low, x.high, x.before, x.after) for x in xs] == [(8, 32, "a", "tie"), (32, 64, "tie", "b")]
    assert 32 <= xs[1].concurrency <= 64
    rec = next(r for r in v.recommendations if r.band == "low")
    assert rec.config == "DSpark(st=3)"
    assert engine_flags("none", {})["vllm"] is None  # no speculative flags for a config without speculation


def test_three_configs_winner_is_leader_vs_runner_up(tmp_path: Path) -> None:
    k4 = ("DSpark(st=4)", "dspark", {"spec_tokens": 4})
    make_run(tmp_path, "x", [row(*K3, "s", 8, 500), row(*k4, "s", 8, 2000), row(*K5, "s", 8, 1100)])
    v = build_view([tmp_path], "sweep")
    assert [c.short for c in v.configs] == ["st=3", "st=4", "st=5"]
    (w,) = v.winners
    assert w.leader == "DSpark(st=4)" and w.runner_up == "DSpark(st=5)" and w.winner == "DSpark(st=4)"
    assert w.gain == pytest.approx(2000 / 1100 - 1)
    assert len(v.verdicts) == 3


def test_min_effect(tmp_path: Path) -> None:
    make_run(tmp_path, "x", [row(*K3, "s", 8, 1400), row(*K5, "s", 8, 1000)])  # p 0.017 at the assumed 10%
    assert build_view([tmp_path], "sweep").verdicts[0].verdict == "a"
    assert build_view([tmp_path], "sweep", min_effect=0.5).verdicts[0].verdict == "tie"
    with pytest.raises(UsageError):
        build_view([tmp_path], "sweep", min_effect=-1)


def _recs(n: int, scale: float) -> list[RequestRecord]:
    out = []
    for i in range(n):
        send = i * 1_000_000
        chunks = [send + int(scale * (10 + j) * 1_000_000) for j in range(20)]
        out.append(RequestRecord(index=i, is_warmup=False, worker=0, prompt_len=100, output_len=20, scheduled_ns=send,
                                 send_ns=send, chunk_ns=chunks, chunk_tokens=[1] * 20, end_ns=chunks[-1], output_tokens=20))  # fmt: skip
    return out


def test_records_give_request_level_intervals(tmp_path: Path) -> None:
    rd = make_run(tmp_path, "x", [])
    for (label, method, params), thr, scale in ((K3, 1000, 1.0), (K5, 900, 1.3)):
        r = row(label, method, params, "s", 8, thr)
        rd.write_records(r["cell_id"], 0, _recs(30, scale))
        rd.append_summary(r)
    v = build_view([tmp_path], "sweep")
    e2e = next(x for x in v.latency_verdicts if x.metric == "mean_e2e_latency_ms")
    assert e2e.basis == "requests+default_floor"
    assert e2e.ci_low <= e2e.effect <= e2e.ci_high
    cell = v.cell("s", 8, "DSpark(st=3)")
    assert cell is not None and cell.ci_basis == "requests"
    lo, hi = cell.ci["p99_e2e_latency_ms"]
    assert lo <= hi and {"total_throughput", "mean_tpot_ms"} <= set(cell.ci)


def test_sweep_needs_a_method_when_ambiguous(tmp_path: Path) -> None:
    make_run(tmp_path, "x", [row(*K3, "s", 8, 2000), row("EAGLE", "eagle", {"num_steps": 3}, "s", 8, 900),
                             row("NG", "ngram", {"k": 2}, "s", 8, 800)])  # fmt: skip
    with pytest.raises(UsageError, match="--method"):
        build_view([tmp_path], "sweep")
    v = build_view([tmp_path], "compare")
    assert [c.label for c in v.configs] == ["DSpark", "EAGLE", "NG"]
    assert v.compare is not None and v.compare.win_counts["DSpark"] == 1


def test_lossless_section_and_engine_flags(tmp_path: Path) -> None:
    make_run(
        tmp_path,
        "x",
        [
            row(*K3, "s", 8, 1000),
            row("EAGLE", "eagle", {"num_steps": 3, "topk": 1, "draft_tokens": 4}, "s", 8, 500),
        ],
    )
    ll = LosslessView(base_urls=["http://a", "http://b"], n_prompts=4, identical=3, share_identical=0.75,
                      divergences=[Divergence(index=2, token_index=5, a_context="x y", b_context="x z")])  # fmt: skip
    v = build_view([tmp_path], "compare", lossless=ll)
    md = render(v, "md", "en")
    assert "3 of 4 outputs identical (75.0%)" in md and "token 5" in md
    f = engine_flags("eagle", {"num_steps": 3, "topk": 1, "draft_tokens": 4}, engine="sglang")
    assert (
        f["sglang"]
        == "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
    )
    assert f["vllm"] is None  # only the engine that ran
    assert '"num_speculative_tokens": 3' in (
        engine_flags("eagle", {"num_steps": 3}, engine="vllm")["vllm"] or ""
    )


def test_engine_flags_only_for_the_engine_that_ran_and_only_measured_values() -> None:
    # issue 19 item 9: no invented topk / draft tokens, no flags for a non-speculative config or llama.cpp
    f = engine_flags("eagle", {"num_steps": 3}, engine="sglang")
    assert f["sglang"] == "--speculative-algorithm EAGLE --speculative-num-steps 3" and f["vllm"] is None
    assert engine_flags("none", {}, engine="vllm") == {"vllm": None, "sglang": None, "measured": None}
    g = engine_flags("ngram", {"spec_tokens": 4}, ["llama-server", "--draft-max", "4"], engine="llamacpp")
    assert g == {"vllm": None, "sglang": None, "measured": "llama-server --draft-max 4"}
    assert (
        recommend.engine_of("vllm-dspark (TP=8)") == "vllm" and recommend.engine_of("llama.cpp") == "llamacpp"
    )
    assert recommend.engine_of("something else") is None


def test_json_roundtrip(tmp_path: Path) -> None:
    from specsweep.report.build.view import ReportView

    make_run(tmp_path, "x", [row(*K3, "s", 8, 1000), row(*K5, "s", 8, 900)])
    v = build_view([tmp_path], "sweep", now="2026-01-01T00:00:00Z")
    assert ReportView.from_json(v.to_json()) == v


def test_server_info_is_matched_by_config_label(tmp_path: Path) -> None:
    servers = {
        "DSpark(st=3)": {
            "name": "DSpark",
            "kind": "sim",
            "argv": ["serve", "--profile", "st3"],
            "model_id": "m",
        },
        "DSpark(st=5)": {
            "name": "DSpark",
            "kind": "sim",
            "argv": ["serve", "--profile", "st5"],
            "model_id": "m",
        },
    }
    make_run(tmp_path, "x", [row(*K3, "s", 8, 1000), row(*K5, "s", 8, 1500)], {"servers": servers})
    v = build_view([tmp_path], "sweep")
    argv = {s.label: s.argv for s in v.provenance.servers}
    assert argv == {
        "DSpark(st=3)": ["serve", "--profile", "st3"],
        "DSpark(st=5)": ["serve", "--profile", "st5"],
    }
    rec = v.recommendations[0]
    (pick,) = rec.picks
    assert rec.config == pick.config == "DSpark(st=5)"
    assert pick.flags is not None and pick.flags.measured == "serve --profile st5"


def test_cli_table_and_kind_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from specsweep.cli import main

    make_run(tmp_path, "x", [row(*K3, "chat_short", 8, 1000.5), row(*K5, "chat_short", 8, 900)])
    assert main(["report", str(tmp_path), "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "chat_short" in out and "1000.50" in out
    assert main(["report", str(tmp_path), "--kind", "compare"]) == 2
    assert "at least two methods" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "nope")]) == 2


def test_user_scenarios_from_the_manifest_give_class_and_dataset_checks(tmp_path: Path) -> None:
    cfg = {"scenarios": {"ids_long": {"input_len": 12000, "output_len": 100, "dataset": "random-ids"}}}
    make_run(tmp_path, "x", [row(*K3, "ids_long", 8, 1000), row(*K5, "ids_long", 8, 1200)], {"config": cfg})
    v = build_view([tmp_path], "sweep")
    assert v.cells[0].workload_class == "long_context"
    assert "random_ids" in {c.kind for c in v.checks}


def test_every_message_key_has_both_languages(tmp_path: Path) -> None:
    from specsweep.report import i18n

    assert set(i18n._TEXTS["en"]) == set(i18n._TEXTS["zh"])
    missing = [
        k
        for k in i18n._LABELS["en"]
        if k not in i18n._LABELS["zh"] and not k.startswith(("metric.", "value.none"))
    ]
    assert missing == []
    make_run(tmp_path, "x", [row(*K3, "chat_short", c, t3) for c, t3 in ((1, 100), (8, 500), (64, 900))]
             + [row(*K5, "chat_short", c, t5) for c, t5 in ((1, 120), (8, 400), (64, 905))])  # fmt: skip
    v = build_view([tmp_path], "sweep")
    for lang in ("en", "zh"):
        md = render(v, "md", lang)
        assert "{" not in md.replace('{"', "").replace("'{", "")  # every template filled


def test_error_burst_from_records(tmp_path: Path) -> None:
    rd = make_run(tmp_path, "x", [])
    recs = _recs(10, 1.0)
    for r in recs[2:6]:  # four failures within 4 ms of each other
        r.error_kind, r.chunk_ns, r.output_tokens = "timeout", [], 0
    for label, method, params in (K3, K5):
        r = row(label, method, params, "s", 8, 1000, failed=4 if label == K3[0] else 0)
        rd.write_records(r["cell_id"], 0, recs if label == K3[0] else _recs(10, 1.0))
        rd.append_summary(r)
    v = build_view([tmp_path], "sweep")
    (a,) = [a for a in v.anomalies if a.kind == "error_burst"]
    assert a.data["kinds"] == {"timeout": 4} and a.data["max_in_1s"] == 4
    assert "4 of them within one second" in render(v, "md", "en")


def test_accept_length_column_only_when_measured(tmp_path: Path) -> None:
    make_run(tmp_path / "a", "x", [row(*K3, "s", 8, 1000), row(*K5, "s", 8, 900)])
    assert "accept_length" not in build_view([tmp_path / "a"], "sweep").core_columns
    make_run(
        tmp_path / "b",
        "x",
        [row(*K3, "s", 8, 1000, accept_length=2.3), row(*K5, "s", 8, 900, accept_length=2.7)],
    )
    v = build_view([tmp_path / "b"], "sweep")
    assert v.core_columns[-1] == "accept_length"
    assert "| s | 8 | 5 |" in render(v, "md", "en") and "2.70 |" in render(v, "md", "en")


def test_two_repeats_use_welch_t_on_logs(tmp_path: Path) -> None:
    rows = [
        row(*K3, "s", 8, 1000, 0),
        row(*K3, "s", 8, 1060, 1),
        row(*K5, "s", 8, 1040, 0),
        row(*K5, "s", 8, 1100, 1),
    ]
    make_run(tmp_path, "x", rows)
    v = build_view([tmp_path], "sweep")
    (ver,) = v.verdicts
    assert ver.basis == "repeats" and ver.method == "welch_t" and (ver.n_a, ver.n_b) == (2, 2)
    # recomputed here: Welch's t on log values, two runs a side (Welch-Satterthwaite df), 95% interval;
    # each config ran in one launch (no run order recorded), so each side also carries the assumed
    # launch noise (stats.launch.DEFAULT_LAUNCH_NOISE, known: no df of its own)
    la, lb = np.log([1000, 1060]), np.log([1040, 1100])
    qa, qb = la.var(ddof=1) / 2, lb.var(ddof=1) / 2
    lv = 2 * DEFAULT_LAUNCH_NOISE**2
    df = (qa + qb + lv) ** 2 / (qa**2 + qb**2)
    d = la.mean() - lb.mean()
    h = scipy_stats.t.ppf(0.975, df) * math.sqrt(qa + qb + lv)
    assert ver.verdict == "tie"
    assert ver.ci_low == pytest.approx(math.expm1(d - h)) and ver.ci_high == pytest.approx(math.expm1(d + h))
    assert ver.detectable_effect == pytest.approx(math.expm1(h))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["chat_short", "rag_medium", "stress_standard"]),
            st.sampled_from([1, 8, 64, 128]),
            st.sampled_from([0, 1, 2]),
            st.floats(min_value=10, max_value=1e5),
            st.integers(min_value=0, max_value=2),
        ),
        min_size=1,
        max_size=14,
    )
)
def test_any_data_gives_a_consistent_report(
    tmp_path_factory: pytest.TempPathFactory, cells: list[Any]
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    cfgs = [K3, K5, ("DSpark(st=7)", "dspark", {"spec_tokens": 7})]
    rows = []
    for scenario, c, ci, thr, failed in cells:
        rows.append(
            row(
                *cfgs[ci],
                scenario,
                c,
                thr,
                rep=sum(1 for r in rows if r["cell_id"] == f"{cfgs[ci][0]}/{scenario}/c{c}"),
                failed=failed,
            )
        )
    make_run(tmp, "x", rows)
    v = build_view([tmp], "sweep")
    points = {(r["scenario"], r["max_concurrency"]) for r in rows}
    assert len(v.winners) == len(points)
    assert len(v.cells) == len(points) * len(v.configs)
    for ver in v.verdicts:
        assert ver.gain >= 0 and ver.ci_low <= ver.effect <= ver.ci_high
        assert (ver.winner is None) == (ver.verdict == "tie")
    for w in v.winners:
        present = [x for x in w.values.values() if x is not None]
        if len(present) >= 2:
            assert w.leader is not None and w.values[w.leader] == max(present)
    assert ReportViewT.from_json(v.to_json()) == v
    for lang in ("en", "zh"):
        md = render(v, "md", lang)
        assert md.count("\n| ") >= len(v.cells)


def test_a_tie_among_many_names_the_even_leaders(tmp_path: Path) -> None:
    k4 = ("DSpark(st=4)", "dspark", {"spec_tokens": 4})
    make_run(tmp_path, "x", [row(*K3, "s", 8, 700), row(*k4, "s", 8, 1010), row(*K5, "s", 8, 1000)])
    v = build_view([tmp_path], "sweep")
    assert v.winners[0].winner is None
    assert "| s | 8 | tie (st=4, st=5) |" in render(v, "md", "en")
    rec = v.recommendations[0]
    assert rec.config is None and rec.alternatives == ["DSpark(st=4)", "DSpark(st=5)"]
