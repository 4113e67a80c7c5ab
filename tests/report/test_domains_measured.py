"""The per-domain section says what it measured (issue 28 item 4): per domain only what is measured per
response (TPOT, acceptance, per-request throughput); a mixed cell's throughput is the cell's and is
left out; invalid runs are listed; a domain without a valid competitor shows "-", and no per-domain
recommendation rests on a cell where only one config has valid results."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

from specsweep.measure.per_category import per_category
from specsweep.measure.records import RequestRecord
from specsweep.report import build_view, render
from specsweep.store.run_dir import RunDir

MS = 1_000_000


def _cat(per_req: float, total: float, tpot: float) -> dict[str, Any]:
    return {"completed": 10, "failed": 0, "total_throughput": total, "output_throughput": total / 2,
            "per_request_tok_s": per_req, "mean_tpot_ms": tpot, "accept_length": None, "tokens_per_chunk": 1.0}  # fmt: skip


def _row(label: str, scenario: str, c: int, per: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
    return {"label": label, "server": label, "method": "ngram" if label == "spec" else "none", "params": {},
            "scenario": scenario, "max_concurrency": c, "repeat": 0, "status": "ok", "completed": 20, "failed": 0,
            "duration": 10.0, "total_throughput": 1000.0, "mean_tpot_ms": 10.0, "per_category": per, **kw}  # fmt: skip


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """ "mix" c=4 holds qa and code in one run: spec's responses are 3x faster on qa, 1.1x on code, while
    each domain's share of the cell's throughput moves with the cell (2.09x for both). "solo" c=8 holds
    math alone and spec's run there is invalid."""
    manifest = {
        "experiment": "d",
        "config": {"servers": [{"name": "base", "baseline": True}, {"name": "spec"}]},
    }
    rd = RunDir.create(tmp_path, "d", manifest, "20260101-000000")
    rows = [
        _row("base", "mix", 4, {"qa": _cat(100.0, 500.0, 10.0), "code": _cat(100.0, 500.0, 10.0)}),
        _row("spec", "mix", 4, {"qa": _cat(300.0, 1045.0, 3.3), "code": _cat(110.0, 1045.0, 9.1)}),
        _row("base", "solo", 8, {"math": _cat(90.0, 800.0, 11.0)}),
        _row("spec", "solo", 8, None, status="invalid", invalid_reason="client saturated"),
    ]
    for r in rows:
        rd.append_summary(r)
    return tmp_path


def test_per_domain_numbers_are_the_domains_own(run: Path) -> None:
    v = build_view([run], "sweep", method="ngram")
    rows = {(r.category, r.config): r for r in v.domains}
    assert rows["qa", "spec"].speedup == pytest.approx(3.0)  # the domain's own, not the cell's 2.09x
    assert rows["code", "spec"].speedup == pytest.approx(1.1)
    assert rows["qa", "spec"].total_throughput is None and rows["qa", "spec"].mixed  # the cell's: left out
    assert rows["math", "base"].total_throughput == 800.0 and not rows["math", "base"].mixed
    d = v.domain_summary
    assert d is not None and d.mixed_cells == 2
    md = html.unescape(render(v, "md", "en"))
    table = md[md.index("| Domain | Scenario") :]
    qa = next(ln for ln in table.splitlines() if ln.startswith("| qa | mix | 4 | spec"))
    assert "| 300.0 | - | 3.00x" in qa  # per-request tok/s, no cell throughput, the domain's speedup
    assert "2.09" not in table.split("### ")[0]
    assert "throughput is the cell's, not a domain's" in md


def test_invalid_runs_are_listed_and_no_competitor_is_no_tie(run: Path) -> None:
    v = build_view([run], "sweep", method="ngram")
    for lang in ("en", "zh"):
        for fmt in ("md", "html"):
            out = render(v, fmt, lang)
            if fmt == "html":
                out = re.sub(r"<[^>]+>", "|", re.sub(r"<(script|style|svg)\b.*?</\1>", "", out, flags=re.S))
            out = html.unescape(out)
            assert "solo c=8 spec" in out and "client saturated" in out, (lang, fmt)
            tie = {"en": "tie (not significant)", "zh": "持平（差异不显著）"}[lang]
            assert not re.search(rf"math\s*\|\s*solo\s*\|\s*8\s*\|+\s*base \({re.escape(tie)}\)", out), (
                lang,
                fmt,
            )
            assert "math: base" not in out and "math：base" not in out  # no recommendation from it
    d = v.domain_summary
    assert d is not None
    assert [(x.scenario, x.concurrency, x.config, x.status) for x in d.left_out] == [
        ("solo", 8, "spec", "invalid")
    ]
    math = next(w for w in d.winners if w.category == "math")
    assert math.runner_up is None and math.winner is None
    adv = next(a for a in d.advice if a.category == "math")
    assert adv.config is None and adv.uncompared == 1  # never a recommendation from the one valid config


def _rec(cat: str, send: int, chunks: list[int], tokens: list[int]) -> RequestRecord:
    return RequestRecord(index=0, is_warmup=False, worker=0, prompt_len=10, output_len=8, scheduled_ns=0,
                         send_ns=send, chunk_ns=chunks, chunk_tokens=tokens, end_ns=chunks[-1],
                         output_tokens=sum(tokens), category=cat)  # fmt: skip


def test_per_request_throughput_is_measured_per_response() -> None:
    got = per_category([
        _rec("qa", 0, [100 * MS, 500 * MS], [1, 9]),  # 10 tokens in 0.5 s
        _rec("qa", 0, [100 * MS, 1500 * MS], [1, 19]),  # 20 tokens in 1.5 s
        _rec("code", 1000 * MS, [1100 * MS, 2000 * MS], [1, 3]),  # 4 tokens in 1.0 s
    ])  # fmt: skip
    assert got["qa"]["per_request_tok_s"] == pytest.approx(30 / 2.0)  # tokens over request time
    assert got["code"]["per_request_tok_s"] == pytest.approx(4 / 1.0)
    # the run-wide figures divide by the run's 2 s, whatever the domain's requests took
    assert got["code"]["output_throughput"] == pytest.approx(4 / 2.0)
