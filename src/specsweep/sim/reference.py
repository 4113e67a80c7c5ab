"""The reference reports' tables (``specsweep/data/reference/seed-results.csv``) as result rows and run dirs.

The CSV has one row per method x spec_tokens x scenario x concurrency (sglang.bench_serving numbers
of the DSpark fork of vLLM and of SGLang EAGLE). ``reference_rows`` turns it into summary rows with
sglang key names plus the cell fields ``sim fit`` reads (scenario, max_concurrency, method, params,
label, num_prompts); ``write_results_dir`` stores them as a run dir so ``sim fit`` can read them like
any other results.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from specsweep.errors import DataError
from specsweep.workload.scenarios import default_num_prompts

_FLOAT_COLS = (
    "duration_s", "request_throughput", "output_throughput", "total_throughput", "mean_e2e_latency_ms",
    "p95_e2e_latency_ms", "p99_e2e_latency_ms", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
)  # fmt: skip

# EAGLE in the reference: SGLang, num_steps=3, topk=1, num_draft_tokens=4 (3 drafts verified per step)
EAGLE_PARAMS = {"speculative_num_steps": 3, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4}


# Shipped with the package (its README states the provenance); the one copy everything cites.
REFERENCE_DIR = Path(__file__).resolve().parents[1] / "data" / "reference"
REFERENCE_CSV = REFERENCE_DIR / "seed-results.csv"
# How profiles and docs name it: a path inside the repository, not this machine's
REFERENCE_CSV_NAME = "src/specsweep/data/reference/seed-results.csv"


def find_reference_csv() -> Path | None:
    """The shipped ``seed-results.csv`` (None only in a broken install that lost the package data)."""
    return REFERENCE_CSV if REFERENCE_CSV.is_file() else None


def reference_rows(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise DataError(f"cannot read reference CSV: {e}", file=str(p)) from e
    rows: list[dict[str, Any]] = []
    for lineno, rec in enumerate(csv.DictReader(text.splitlines()), 2):
        try:
            conc = int(rec["concurrency"])
            method = rec["method"].strip()
            row: dict[str, Any] = {
                "scenario": rec["scenario"].strip(),
                "max_concurrency": conc,
                "method": method,
            }
            if method == "eagle":
                row["params"] = dict(EAGLE_PARAMS)
                row["label"] = "eagle"
            else:
                k = int(rec["spec_tokens"])
                row["params"] = {"spec_tokens": k}
                row["label"] = f"{method}-st{k}"
            for col in _FLOAT_COLS:
                v = (rec.get(col) or "").strip()
                if v:
                    row["duration" if col == "duration_s" else col] = float(v)
        except (KeyError, ValueError) as e:
            raise DataError(f"bad reference row: {e}", file=str(p), line=lineno) from e
        n = default_num_prompts(conc)
        row["num_prompts"] = row["completed"] = n
        # realised token totals (EAGLE rows have no duration: n / request_throughput, 2-3 digits)
        dur = row.get("duration") or n / row["request_throughput"]
        row["total_output_tokens"] = round(row["output_throughput"] * dur)
        row["total_input_tokens"] = round((row["total_throughput"] - row["output_throughput"]) * dur)
        row["status"] = "ok"
        row["cell_id"] = f"{row['label']}/{row['scenario']}/c{conc}"
        rows.append(row)
    return rows


def write_results_dir(rows: list[dict[str, Any]], results_dir: str | Path, name: str = "reference") -> Path:
    """One run dir holding ``rows`` as its summary (fixed stamp: reruns overwrite nothing, add a -N)."""
    from specsweep.store.run_dir import RunDir

    manifest = {"source": "seed-results.csv (reference reports)", "imported": True, "rows": len(rows)}
    rd = RunDir.create(results_dir, name, manifest, stamp="import")
    for row in rows:
        rd.append_summary(row)
    return rd.path
