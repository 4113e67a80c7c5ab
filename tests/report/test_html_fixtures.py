"""Report views for the HTML tests, built by hand (no analysis code involved).

- :func:`reference_view`: the DSpark ``--spec-tokens`` 3 vs 5 sweep of the shipped reference data, every
  cell of seed-results.csv, winners/verdicts from the numbers (gain = winner/loser - 1, tie under 2%).
- :func:`hostile_view`: a compare view whose every string field carries markup, quotes and ``&``,
  with every section filled, so escaping is exercised everywhere a renderer writes text.

Messages use ``test.*`` keys that :func:`install_test_texts` registers in :mod:`specsweep.report.i18n`
(via pytest's monkeypatch), so these views do not depend on the builder's message catalogue.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from specsweep.report import i18n
from specsweep.report.build.view import (
    Anomaly,
    CellView,
    ClassBest,
    CompareSummary,
    ConfigInfo,
    Crossover,
    Divergence,
    DomainCheck,
    EngineFlags,
    Finding,
    GapRow,
    GapTable,
    LosslessView,
    MetricSpec,
    Msg,
    NoiseInfo,
    Pick,
    Provenance,
    RatioRow,
    Recommendation,
    ReportView,
    ScheduleEntry,
    ServerInfo,
    SetAside,
    Verdict,
    WinnerRow,
)

EVIL = "<script>alert(1)</script>"
EVIL_ALL = f"{EVIL} \"q\" 'q' & </script><img src=x onerror=alert(2)>"

CORE = [
    "duration",
    "request_throughput",
    "output_throughput",
    "total_throughput",
    "mean_e2e_latency_ms",
    "p95_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p99_tpot_ms",
]
CSV_COL = {"duration": "duration_s"}
UNITS = {
    "duration": "s",
    "request_throughput": "req/s",
    "output_throughput": "tok/s",
    "total_throughput": "tok/s",
}

TEST_TEXTS = {
    "test.title": ("{title}", "{title}"),
    "test.plain": ("{text}", "{text}"),
    "test.finding": ("{a} beats {b} by {gain:.2%} at c={c}", "{a} 比 {b} 高 {gain:.2%}（c={c}）"),
    "test.next": ("Run {what} again", "再测一次 {what}"),
}


def install_test_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, (en, zh) in TEST_TEXTS.items():
        monkeypatch.setitem(i18n._TEXTS["en"], key, en)
        monkeypatch.setitem(i18n._TEXTS["zh"], key, zh)


def _msg(text: str) -> Msg:
    return Msg(key="test.plain", args={"text": text})


def _metrics() -> list[MetricSpec]:
    return [
        MetricSpec(key=k, unit=UNITS.get(k, "ms"), higher_is_better=k in UNITS and k != "duration")
        for k in CORE
    ]


def _verdict(scen: str, c: int, a: str, b: str, av: float, bv: float, floor: float = 0.02) -> Verdict:
    effect = av / bv - 1
    leader = a if effect >= 0 else b
    gain = max(av, bv) / min(av, bv) - 1
    v = "tie" if abs(effect) < floor else ("a" if effect > 0 else "b")
    return Verdict(
        scenario=scen,
        concurrency=c,
        metric="total_throughput",
        a=a,
        b=b,
        verdict=v,
        effect=effect,
        ci_low=effect - floor,
        ci_high=effect + floor,
        basis="noise_floor",
        noise_floor=floor,
        min_effect=floor,
        a_value=av,
        b_value=bv,
        winner=None if v == "tie" else leader,
        leader=leader,
        gain=gain,
    )


def reference_view(reference_dir: Path) -> ReportView:
    rows = list(csv.DictReader((reference_dir / "seed-results.csv").open(encoding="utf-8")))
    rows = [r for r in rows if r["method"] == "dspark"]
    labels = {"3": "DSpark(st=3)", "5": "DSpark(st=5)"}
    scenarios: list[str] = []
    for r in rows:
        if r["scenario"] not in scenarios:
            scenarios.append(r["scenario"])
    cells = []
    for r in rows:
        vals = {k: float(r[CSV_COL.get(k, k)]) for k in CORE}
        cells.append(
            CellView(
                scenario=r["scenario"],
                concurrency=int(r["concurrency"]),
                config=labels[r["spec_tokens"]],
                workload_class="chat",
                status="ok",
                repeats=1,
                values=vals,
            )
        )
    verdicts, winners = [], []
    points = sorted({(c.scenario, c.concurrency) for c in cells}, key=lambda p: (scenarios.index(p[0]), p[1]))
    for scen, c in points:
        a = next(x for x in cells if (x.scenario, x.concurrency, x.config) == (scen, c, labels["3"]))
        b = next(x for x in cells if (x.scenario, x.concurrency, x.config) == (scen, c, labels["5"]))
        av, bv = a.values["total_throughput"], b.values["total_throughput"]
        assert av is not None and bv is not None
        v = _verdict(scen, c, labels["3"], labels["5"], av, bv)
        verdicts.append(v)
        winners.append(
            WinnerRow(
                scenario=scen,
                concurrency=c,
                metric="total_throughput",
                values={labels["3"]: av, labels["5"]: bv},
                winner=v.winner,
                leader=v.leader,
                runner_up=v.b if v.leader == v.a else v.a,
                gain=v.gain,
                verdict=v,
            )
        )
    return ReportView(
        kind="sweep",
        title=Msg(key="test.title", args={"title": "vllm-dspark --spec-tokens 3 vs 5"}),
        provenance=Provenance(
            run_dirs=["/data/user1/yy/bench_results/dspark_st_comparison_20260707-150649"],
            sources=["import"],
            models=["/data/models/DeepSeek-V4-Flash-DSpark"],
            backends=["vllm-dspark"],
            clients=["sglang.bench_serving --backend vllm"],
            warmup=[100],
            generated_at="2026-12-02T12:00:00Z",
            tool_versions=["specsweep 0.1.0"],
        ),
        metrics=_metrics(),
        core_columns=CORE,
        config_column="col.param.spec_tokens",
        varied_param="spec_tokens",
        configs=[
            ConfigInfo(label=labels["3"], short="st=3", method="dspark", params={"spec_tokens": 3}),
            ConfigInfo(label=labels["5"], short="st=5", method="dspark", params={"spec_tokens": 5}),
        ],
        scenarios=scenarios,
        concurrencies=sorted({c.concurrency for c in cells}),
        cells=cells,
        noise=NoiseInfo(floor=0.02, source="default"),
        verdicts=verdicts,
        winners=winners,
        findings=[
            Finding(
                band="high",
                text=Msg(
                    key="test.finding",
                    args={"a": "st=3", "b": "st=5", "gain": 0.314, "c": 128},
                ),
            )
        ],
        next_steps=[Msg(key="test.next", args={"what": "chat_short c=16"})],
    )


def hostile_view() -> ReportView:
    """Every user-controlled string is hostile; two configs, two scenarios, all sections present."""
    a, b = f"A{EVIL}", f'B&"{EVIL_ALL}'
    scen = [f"s1{EVIL}", "s2'&\""]
    cells = []
    for si, s in enumerate(scen):
        for c in (1, 8):
            for ci, conf in enumerate((a, b)):
                tput = 1000.0 * c * (1 + 0.2 * ci) * (1 + si)
                cells.append(
                    CellView(
                        scenario=s,
                        concurrency=c,
                        config=conf,
                        picked=f"{conf}(st={3 + ci}){EVIL}",
                        workload_class=f"cls{EVIL}",
                        status="ok",
                        repeats=3,
                        values={
                            "total_throughput": tput,
                            "mean_tpot_ms": 5.0 + c + ci,
                            "mean_ttft_ms": 50.0 + c,
                            "mean_e2e_latency_ms": 500.0 + 10 * c,
                        },
                        ci={"total_throughput": [tput * 0.95, tput * 1.05]},
                        ci_basis="repeats",
                        accept_length=2.5 + ci * 0.3,
                        error=EVIL_ALL,
                    )
                )
    cells.append(
        CellView(
            scenario=scen[1],
            concurrency=32,
            config=a,
            workload_class="chat",
            status="missing",
            values={"total_throughput": None},
        )
    )
    verdicts = []
    winners = []
    for s in scen:
        for c in (1, 8):
            av = next(x for x in cells if (x.scenario, x.concurrency, x.config) == (s, c, a)).values[
                "total_throughput"
            ]
            bv = next(x for x in cells if (x.scenario, x.concurrency, x.config) == (s, c, b)).values[
                "total_throughput"
            ]
            assert av is not None and bv is not None
            v = _verdict(s, c, a, b, av, bv, floor=0.5 if c == 1 else 0.02)
            v = v.model_copy(update={"basis": f"basis{EVIL}"})
            verdicts.append(v)
            winners.append(
                WinnerRow(
                    scenario=s,
                    concurrency=c,
                    metric="total_throughput",
                    values={a: av, b: bv},
                    winner=v.winner,
                    leader=v.leader,
                    runner_up=a if v.leader == b else b,
                    gain=v.gain,
                    verdict=v,
                )
            )
    m = _msg(EVIL_ALL)
    return ReportView(
        kind="compare",
        title=Msg(key="test.title", args={"title": f"Title {EVIL_ALL}"}),
        provenance=Provenance(
            run_dirs=[f"/runs/{EVIL_ALL}"],
            experiments=[f"exp{EVIL}"],
            sources=["sim"],
            servers=[
                ServerInfo(
                    name=f"srv{EVIL}",
                    label=a,
                    method="dspark",
                    backend=f"vllm{EVIL}",
                    model=f"model{EVIL_ALL}",
                    argv=["vllm", "serve", f"--model={EVIL_ALL}"],
                    version=f"v{EVIL}",
                )
            ],
            models=[f"model{EVIL_ALL}"],
            backends=[f"vllm{EVIL}"],
            clients=[f"client{EVIL}"],
            warmup=[100],
            ignore_eos=True,
            datasets=[f"data{EVIL}"],
            simulated=True,
            time_scale=0.1,
            tool_versions=[f"specsweep{EVIL}"],
            generated_at=f"2026{EVIL}",
        ),
        metrics=[
            MetricSpec(key="total_throughput", unit="tok/s", higher_is_better=True),
            MetricSpec(key="mean_tpot_ms", unit="ms", higher_is_better=False),
            MetricSpec(key="mean_ttft_ms", unit="ms", higher_is_better=False),
            MetricSpec(key="mean_e2e_latency_ms", unit="ms", higher_is_better=False),
        ],
        core_columns=["total_throughput", "mean_tpot_ms", "mean_ttft_ms", "mean_e2e_latency_ms"],
        config_column="col.method",
        configs=[
            ConfigInfo(label=a, short=f"a{EVIL}", method="dspark", members=[f"{a}(st=3){EVIL}"]),
            ConfigInfo(label=b, short=f"b{EVIL_ALL}", method="eagle", is_baseline=True),
        ],
        scenarios=scen,
        concurrencies=[1, 8, 32],
        cells=cells,
        noise=NoiseInfo(floor=0.03, source="aa", n=4, min_effect=0.02, detail=m),
        verdicts=verdicts,
        latency_verdicts=[],
        winners=winners,
        findings=[Finding(band="low", text=m), Finding(band=None, text=m)],
        class_best=[
            ClassBest(
                workload_class=f"cls{EVIL}",
                scenarios=scen,
                config=b,
                wins=2,
                losses=0,
                ties=1,
                mean_gain=0.2,
                reason=m,
            )
        ],
        gaps=[
            GapTable(
                scenario=scen[0],
                metric="total_throughput",
                a=a,
                b=b,
                rows=[GapRow(concurrency=1, a_value=1.0, b_value=2.0, verdict=verdicts[0], text=m)],
                summary=m,
            )
        ],
        anomalies=[
            Anomaly(scenario=scen[0], concurrency=8, kind="trend_outlier", configs=[a, b], evidence=m)
        ],
        crossovers=[
            Crossover(
                scenario=scen[0],
                a=a,
                b=b,
                metric="total_throughput",
                concurrency=3.2,
                low=1,
                high=8,
                before="tie",
                after="b",
                text=m,
            )
        ],
        recommendations=[
            Recommendation(
                workload_class=f"cls{EVIL}",
                band="low",
                c_low=1,
                c_high=8,
                config=b,
                alternatives=[a],
                expected_gain=0.2,
                ci_low=0.1,
                ci_high=0.3,
                confidence="medium",
                basis=f"b{EVIL}",
                n_cells=2,
                picks=[
                    Pick(
                        config=f"{b}(k={EVIL})",
                        method=f"m{EVIL}",
                        cells=[[scen[0], 1]],
                        flags=EngineFlags(
                            vllm=f'--speculative-config \'{{"method": "{EVIL_ALL}"}}\'',
                            sglang=f"--speculative-algorithm {EVIL}",
                            measured=f"vllm serve {EVIL_ALL}",
                        ),
                    )
                ],
                set_aside=[SetAside(scenario=scen[0], concurrency=8, reason="invalid", configs=[f"c{EVIL}"])],
                extra=[m],
                note=m,
            ),
            Recommendation(
                workload_class=None,
                band="high",
                c_low=32,
                c_high=None,
                config=None,
                expected_gain=None,
                ci_low=None,
                ci_high=None,
                confidence="low",
                basis="x",
                n_cells=1,
                note=m,
            ),
        ],
        schedule=[ScheduleEntry(scope=scen[0], c_low=1, c_high=8, config=b)],
        checks=[DomainCheck(kind="simulated", severity="warn", configs=[a], cells=[[scen[0], 1]], message=m)],
        compare=CompareSummary(
            methods=[a, b],
            n_cells=4,
            win_counts={a: 0, b: 3},
            ties=1,
            ratios=[
                RatioRow(metric="mean_e2e_latency_ms", numerator=a, denominator=b, mean_ratio=3.09, n_cells=4)
            ],
            conclusion=m,
        ),
        next_steps=[m],
        notes=[m],
        lossless=LosslessView(
            base_urls=[f"http://x/{EVIL}"],
            n_prompts=4,
            identical=3,
            share_identical=0.75,
            divergences=[Divergence(index=2, token_index=7, a_context=EVIL_ALL, b_context=f"b{EVIL}")],
        ),
    )
