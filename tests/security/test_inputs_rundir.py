"""Corrupt run dirs (issue 20, item 12): the report shows what can be shown and lists what was left
out and why (terminal warning and a note in the report); --resume's bookkeeping does not crash."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from specsweep.cli import main
from specsweep.measure.records import RequestRecord
from specsweep.store.run_dir import RunDir

pytestmark = pytest.mark.slow

LEVELS = [1, 2, 4, 8, 16, 32]
CONFIGS = [("DSpark(st=3)", {"spec_tokens": 3}), ("DSpark(st=5)", {"spec_tokens": 5})]


def _row(label: str, params: dict[str, Any], c: int, thr: float) -> dict[str, Any]:
    return {
        "duration": 10.0, "completed": 4, "failed": 0, "total": 4, "mean_ttft_ms": 100.0, "mean_tpot_ms": 10.0,
        "mean_e2e_latency_ms": 1000.0, "p99_e2e_latency_ms": 2000.0, "total_throughput": thr,
        "output_throughput": thr / 3, "request_throughput": thr / 300, "cell_id": f"{label}.chat.c{c}",
        "label": label, "method": "dspark", "params": params, "server": label, "scenario": "chat_short",
        "max_concurrency": c, "repeat": 0, "status": "ok",
    }  # fmt: skip


def _records() -> list[RequestRecord]:
    return [
        RequestRecord(
            index=i,
            is_warmup=False,
            worker=0,
            prompt_len=8,
            output_len=4,
            scheduled_ns=0,
            send_ns=10,
            chunk_ns=[1_000_000 + i, 2_000_000 + i],
            chunk_tokens=[1, 3],
            end_ns=2_000_000 + i,
            output_tokens=4,
        )
        for i in range(4)
    ]


@pytest.fixture
def corrupt_run(tmp_path: Path) -> Path:
    rd = RunDir.create(tmp_path, "x", {"experiment": "x"}, "20260101-000000")
    for k, (label, params) in enumerate(CONFIGS):
        for c in LEVELS:
            row = _row(label, params, c, 1000.0 * c + 50 * k)
            rd.append_summary(row)
            rd.write_records(row["cell_id"], 0, _records())
    parquet = sorted((rd.path / "records").glob("*.parquet"))
    assert len(parquet) == 12
    for p in parquet[:3]:  # 3 corrupt Parquet files of 12
        p.write_bytes(b"PAR1 not really parquet")
    bad = _row("DSpark(st=3)", {"spec_tokens": 3}, 64, 9999.0)
    with (rd.path / "summary.jsonl").open("a") as f:
        f.write("{}\n")
        f.write(str(bad).replace("'", '"').replace('"repeat": 0', '"repeat": "x"') + "\n")
        f.write(str(bad).replace("'", '"').replace('"repeat": 0', '"repeat": null') + "\n")
        nan = (
            str(_row("DSpark(st=5)", {}, 64, 1.0))
            .replace("'", '"')
            .replace('"mean_ttft_ms": 100.0', '"mean_ttft_ms": NaN')
        )
        f.write(nan + "\n")
        f.write(
            str(_row("DSpark(st=3)", {}, 128, 1.0)).replace("'", '"').replace("1000.0,", "1e999,", 1) + "\n"
        )
        f.write("[1, 2]\n")
    return rd.path


def test_report_shows_what_it_can_and_lists_the_rest(
    corrupt_run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "r.md"
    with caplog.at_level(logging.WARNING):
        rc = main(["report", str(corrupt_run), "-o", str(out)])
    assert rc == 0
    md = out.read_text()
    for lvl in LEVELS:  # every good cell is in the report
        assert f"| chat_short | {lvl} |" in md, lvl
    notes = [line for line in md.splitlines() if "Left out of this report" in line]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for what in ("lacks 'label'", "got 'x'", "got None",
                 "not a finite number: mean_ttft_ms", "not a finite number: mean_e2e_latency_ms",
                 "not a JSON object", "cannot read records"):  # fmt: skip
        assert any(what in n for n in notes), (what, notes)
        assert any(what in w for w in warned), (what, warned)
    assert sum("cannot read records" in n for n in notes) == 3
    # the NaN / 1e999 rows are kept (their other values count); only the bad value is left out
    assert "| chat_short | 64 |" in md and "| chat_short | 128 |" in md


def test_resume_bookkeeping_survives_bad_repeats(corrupt_run: Path) -> None:
    done = RunDir(corrupt_run).finished()
    # the 12 good cells; the "x" and null repeats finish nothing (run again), and lines that are not
    # JSON (NaN / 1e999, which our writer never produces) are not counted as finished either
    assert len(done) == 12
    assert all(isinstance(r, int) for _, r in done)


def test_nothing_reportable_names_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rd = RunDir.create(tmp_path, "y", {"experiment": "y"}, "20260101-000000")
    (rd.path / "summary.jsonl").write_text("{}\n")
    rc = main(["report", str(rd.path)])
    err = capsys.readouterr().err
    assert rc == 2 and "no results" in err and "lacks 'label'" in err and "Traceback" not in err
