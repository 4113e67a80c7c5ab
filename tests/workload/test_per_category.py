"""per_category (the bench result line's per-domain object), the category column in Parquet records,
and `specsweep bench --dataset-name ...` against the simulator with per-category acceptance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from specsweep.measure.per_category import per_category
from specsweep.measure.records import RequestRecord
from specsweep.sim.serve import SubprocessServer
from specsweep.store.run_dir import read_records_parquet, write_records_parquet

pytestmark = pytest.mark.slow

MS = 1_000_000


def rec(i: int, cat: str | None, chunks: list[int], tokens: list[int], **kw: object) -> RequestRecord:
    return RequestRecord(index=i, is_warmup=False, worker=0, prompt_len=10, output_len=8, scheduled_ns=0,
                         send_ns=0, chunk_ns=chunks, chunk_tokens=tokens, end_ns=chunks[-1] if chunks else 0,
                         output_tokens=sum(tokens), category=cat, **kw)  # type: ignore[arg-type]  # fmt: skip


def test_per_category_hand_computed() -> None:
    rs = [
        rec(0, "code", [10 * MS, 20 * MS, 30 * MS], [1, 3, 3], spec_verify_ct=2),  # tpot (30-10)/6 ms
        rec(1, "code", [20 * MS, 60 * MS], [1, 1], spec_verify_ct=1),  # tpot 40 ms; duration ends at 1000 ms
        rec(2, "chat", [40 * MS, 1000 * MS], [1, 1]),
        rec(3, None, [], [], error_kind="timeout"),
        RequestRecord(index=-1, is_warmup=True, worker=0, prompt_len=5, output_len=2, scheduled_ns=0, category="code"),
    ]  # fmt: skip
    got = per_category(rs)
    assert list(got) == ["chat", "code", "uncategorized"]
    code = got["code"]
    assert code["completed"] == 2 and code["failed"] == 0
    assert code["output_throughput"] == pytest.approx(9 / 1.0)  # 9 tokens over the run's 1.0 s
    assert code["total_throughput"] == pytest.approx(29 / 1.0)
    assert code["mean_tpot_ms"] == pytest.approx((20 / 6 + 40) / 2)
    assert code["mean_ttft_ms"] == pytest.approx(15.0)
    assert code["accept_length"] == pytest.approx(9 / 3) and code["accept_length_source"] == "verify_ct"
    assert code["tokens_per_chunk"] == pytest.approx(7 / 3)
    assert got["chat"]["accept_length"] is None and got["uncategorized"]["failed"] == 1
    # one category: the run's server-counter acceptance is that category's
    only = per_category([rs[2]], 2.5)["chat"]
    assert only["accept_length"] == 2.5 and only["accept_length_source"] == "server_counters"


def test_mixed_cell_gets_acceptance_per_category_from_llama_server_timings() -> None:
    """llama-server's per-response drafts give each domain of a mixed cell its own acceptance (the
    cell's /metrics counters, given too, cannot be split by category and are not used)."""
    rs = [
        rec(0, "code", [10 * MS, 20 * MS], [1, 15], draft_tokens=15, draft_accepted=12),  # 3 steps
        rec(1, "code", [10 * MS, 30 * MS], [1, 9], draft_tokens=9, draft_accepted=6),  # 3 steps
        rec(2, "chat", [10 * MS, 40 * MS], [1, 10], draft_tokens=12, draft_accepted=2),  # 8 steps
        rec(3, "chat", [10 * MS, 50 * MS], [1, 4]),  # a response without timings: left out
    ]
    got = per_category(rs, cell_accept_length=9.9)
    assert got["code"]["accept_length"] == pytest.approx(1 + 18 / 6)
    assert got["chat"]["accept_length"] == pytest.approx(1 + 2 / 8)
    assert {v["accept_length_source"] for v in got.values()} == {"timings"}


def test_category_column_round_trips_and_old_files_load(tmp_path: Path) -> None:
    p = tmp_path / "r.parquet"
    write_records_parquet(
        p, [rec(0, "math", [MS], [1], draft_tokens=6, draft_accepted=4), rec(1, None, [MS], [1])]
    )
    back = read_records_parquet(p)
    assert [r.category for r in back] == ["math", None]
    assert [(r.draft_tokens, r.draft_accepted) for r in back] == [(6, 4), (None, None)]
    old = tmp_path / "old.parquet"
    table = pq.read_table(p).drop(["category", "draft_tokens", "draft_accepted", "chunk_bound_ns"])
    pq.write_table(pa.table(table.to_pydict()), old)
    assert [(r.category, r.chunk_bound_ns) for r in read_records_parquet(old)] == [(None, None), (None, None)]


def test_chunk_stamp_bounds_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "r.parquet"
    bounded = rec(0, "math", [MS, 2 * MS, 3 * MS], [1, 1, 1])
    bounded.chunk_bound_ns = [0, 400_000, 0]  # the middle chunk came with the third, in one read
    write_records_parquet(p, [bounded, rec(1, None, [MS], [1])])
    assert [r.chunk_bound_ns for r in read_records_parquet(p)] == [[0, 400_000, 0], None]


def test_bench_dataset_line_has_per_category_from_the_sim(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text(yaml.safe_dump({
        "name": "p", "model_name": "sim-p", "spec_method": "dspark", "k": 3, "survival": [0.2, 0.05, 0.01],
        "category_survival": {"code_edit": [0.95, 0.9, 0.85]}, "t0_ms": 2.0, "max_batch": 8,
    }))  # fmt: skip
    mix = tmp_path / "mix.jsonl"
    rows = [{"prompt": f"rename x to total in line {i}", "category": "code_edit"} for i in range(4)]
    rows += [{"prompt": f"say hello to person {i}", "category": "chat"} for i in range(4)]
    mix.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "line.jsonl"
    with SubprocessServer("--profile", str(prof), "--port", "0", "--time-scale", "0.2") as srv:
        cmd = [sys.executable, "-m", "specsweep", "bench", "--base-url", srv.url, "--backend", "sglang",
               "--dataset-name", "jsonl", "--dataset-path", str(mix), "--random-output-len", "40",
               "--num-prompts", "16", "--max-concurrency", "4", "--output-file", str(out), "--quiet"]  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    # 5: the client's self-check doubts the timings (a loaded host); the counts checked here stand
    assert p.returncode in (0, 5), p.stderr[-2000:]
    line = json.loads(out.read_text().splitlines()[-1])
    per = line["per_category"]
    assert set(per) == {"code_edit", "chat"} and per["code_edit"]["completed"] == 8
    for m in per.values():
        assert {"completed", "output_throughput", "mean_tpot_ms", "mean_ttft_ms", "accept_length"} <= set(m)
    # SGLang's per-request verify counts: the header made the sim use the code curve for code prompts
    assert per["code_edit"]["accept_length"] > 3.0 > 1.5 > per["chat"]["accept_length"]
