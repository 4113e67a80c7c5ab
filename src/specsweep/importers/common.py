"""Shared part of the importers: normalise one result object to a summary row, write one run dir.

A run of ``sglang.bench_serving`` or ``vllm bench serve`` becomes a summary row keyed like ours
(sglang key names). Keys older versions lack are computed from the others where the definition
allows it (``total_throughput = (input+output tokens)/duration`` and so on); a row that still lacks
what a report needs fails with the file, line and field.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsweep import SCHEMA_VERSION, __version__
from specsweep.errors import DataError, UsageError
from specsweep.store import MANIFEST, SUMMARY, RunDir, atomic_write_bytes, dumps, safe_name

PENDING_MANIFEST = ".manifest.json.pending"

# Aliases: vLLM / older sglang key -> our (sglang) key.
ALIASES: dict[str, str] = {
    "total_token_throughput": "total_throughput",
    "mean_e2el_ms": "mean_e2e_latency_ms",
    "median_e2el_ms": "median_e2e_latency_ms",
    "std_e2el_ms": "std_e2e_latency_ms",
    "p90_e2el_ms": "p90_e2e_latency_ms",
    "p95_e2el_ms": "p95_e2e_latency_ms",
    "p99_e2el_ms": "p99_e2e_latency_ms",
    "benchmark_duration": "duration",
    "successful_requests": "completed",
}

_NUMERIC_PREFIXES = ("mean_", "median_", "std_", "p90_", "p95_", "p99_", "p50_", "min_", "max_")
_NUMERIC_KEYS = {
    "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
    "request_throughput", "input_throughput", "output_throughput", "total_throughput",
    "concurrency", "max_output_tokens_per_s", "accept_length", "request_goodput", "request_rate",
}  # fmt: skip


@dataclass
class ParsedRun:
    """One result object from a file, normalised, with where it came from."""

    file: str
    line: int
    row: dict[str, Any]


@dataclass
class ImportOptions:
    label: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    scenario: str | None = None
    concurrency: int | None = None
    model: str | None = None
    backend: str | None = None  # server backend description, e.g. "vllm-dspark (TP=8)"
    warmup: int | None = None
    experiment: str | None = None


def parse_param(text: str) -> tuple[str, Any]:
    """``k=v`` -> (k, v) with v as int, float, bool or string."""
    if "=" not in text or text.startswith("="):
        raise UsageError(f"--param {text!r}: expected KEY=VALUE, e.g. spec_tokens=3")
    k, v = text.split("=", 1)
    val: Any = v
    low = v.lower()
    if low in ("true", "false"):
        val = low == "true"
    else:
        try:
            val = int(v)
        except ValueError:
            try:
                val = float(v)
            except ValueError:
                val = v
    return k.strip(), val


def _num(obj: dict[str, Any], key: str, file: str, line: int) -> float | None:
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, str) and v.strip().lower() in ("inf", "infinity", "nan"):
        v = float(v)  # vLLM writes request_rate "inf" as a string
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DataError(f"expected a number, got {v!r}", file=file, line=line, field=key)
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        raise DataError(f"number out of range: {v!r}", file=file, line=line, field=key) from None
    if math.isnan(f):
        return None
    return f


def _storable(v: Any, file: str, line: int, key: str) -> Any:
    """A value the run dir's JSON can hold: a 64-bit integer, a string without lone surrogates."""
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
        raise DataError(f"integer out of range: {v!r}", file=file, line=line, field=key)
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise DataError(
                f"not valid text (lone surrogate): {v!r}", file=file, line=line, field=key
            ) from None
    return v


def normalise(obj: dict[str, Any], file: str, line: int) -> dict[str, Any]:
    """Our summary-row metric keys from a bench_serving / vllm result object (computing gaps)."""
    row: dict[str, Any] = {}
    for k, v in obj.items():
        key = ALIASES.get(k, k)
        if key.endswith("_e2el_ms"):
            key = key.replace("_e2el_ms", "_e2e_latency_ms")
        if key in _NUMERIC_KEYS or (key.startswith(_NUMERIC_PREFIXES) and key.endswith(("_ms", "_s"))):
            row[key] = _num(obj, k, file, line)
        elif isinstance(v, (str, int, float, bool)) or v is None:
            row.setdefault(key, _storable(v, file, line, k))
    errors = obj.get("errors")  # per-request error strings (--output-details / --save-detailed)
    if row.get("failed") is None and isinstance(errors, list):
        row["failed"] = sum(1 for e in errors if e)
    given = {k for k, v in row.items() if v is not None}
    g = row.get
    dur, done = g("duration"), g("completed")
    tin, tout = g("total_input_tokens"), g("total_output_tokens")
    if dur is None and done is not None and g("request_throughput"):
        dur = row["duration"] = done / g("request_throughput")
    if dur:
        if g("request_throughput") is None and done is not None:
            row["request_throughput"] = done / dur
        if g("input_throughput") is None and tin is not None:
            row["input_throughput"] = tin / dur
        if g("output_throughput") is None and tout is not None:
            row["output_throughput"] = tout / dur
    tin_s, tout_s = g("input_throughput"), g("output_throughput")
    if g("total_throughput") is None and tin_s is not None and tout_s is not None:
        row["total_throughput"] = tin_s + tout_s
    if g("mean_e2e_latency_ms") is None and g("concurrency") and dur and done:
        # sglang's concurrency = sum(e2e)/duration, so mean e2e = concurrency*duration/completed
        row["mean_e2e_latency_ms"] = g("concurrency") * dur * 1000.0 / done
    computed = sorted(k for k, v in row.items() if v is not None and k not in given)
    if computed:
        row["computed_keys"] = computed
    for k in ("completed", "failed", "total_input_tokens", "total_output_tokens"):
        v = row.get(k)
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
            row[k] = int(v)
    if g("total_throughput") is None and g("output_throughput") is None:
        raise DataError(
            "no throughput: need output_throughput / total_throughput (or total_token_throughput), "
            "or token totals with duration",
            file=file,
            line=line,
            field="output_throughput",
        )
    return row


def build_rows(runs: Sequence[ParsedRun], opts: ImportOptions, tag_key: str = "tag") -> list[dict[str, Any]]:
    """Cell fields for each run; repeats numbered in file order per (scenario, concurrency)."""
    rows: list[dict[str, Any]] = []
    counts: dict[tuple[str, int], int] = {}
    for r in runs:
        scenario = opts.scenario or r.row.get(tag_key)
        if not scenario or not isinstance(scenario, str):
            raise DataError(
                f"no scenario: the result has no '{tag_key}'; give --scenario NAME",
                file=r.file,
                line=r.line,
                field=tag_key,
            )
        conc = opts.concurrency if opts.concurrency is not None else r.row.get("max_concurrency")
        if (
            conc is None
            or isinstance(conc, bool)
            or not isinstance(conc, (int, float))
            or not math.isfinite(conc)
            or conc < 1
        ):
            raise DataError(
                f"no usable max_concurrency (got {conc!r}); give --concurrency N",
                file=r.file,
                line=r.line,
                field="max_concurrency",
            )
        if conc > 10_000_000:
            raise DataError(
                f"implausible max_concurrency {conc!r}", file=r.file, line=r.line, field="max_concurrency"
            )
        conc = int(conc)
        rep = counts.get((scenario, conc), 0)
        counts[(scenario, conc)] = rep + 1
        row = dict(r.row)
        row.update(
            cell_id=f"{opts.label}/{scenario}/c{conc}",
            label=opts.label,
            method=opts.method,
            params=dict(opts.params),
            server=opts.label,
            scenario=scenario,
            max_concurrency=conc,
            repeat=rep,
            status="ok",
            error=None,
            source_file=r.file,
            source_line=r.line,
        )
        if row.get("failed") is None:
            row["failed"] = 0
        if (row.get("completed") or 0) == 0 and row.get("completed") is not None:
            row["status"] = "failed"
            row["error"] = "no request completed"
        rows.append(row)
    return rows


def write_import(
    results_dir: str | Path,
    importer: str,
    client: str,
    files: Sequence[str | Path],
    runs: Sequence[ParsedRun],
    opts: ImportOptions,
    extra_client: dict[str, Any] | None = None,
) -> RunDir:
    """Write one run dir atomically: built in a temporary folder, renamed into place at the end."""
    rows = build_rows(runs, opts)
    if not rows:
        raise DataError("no result objects found", file=", ".join(str(f) for f in files))
    base = Path(results_dir)
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    tmp = Path(tempfile.mkdtemp(prefix=".import-", dir=base))
    try:
        src_dir = tmp / "source"
        src_dir.mkdir()
        file_info = []
        for i, f in enumerate(files):
            p = Path(f)
            data = p.read_bytes()
            dest = src_dir / f"{i}-{safe_name(p.name)}"
            dest.write_bytes(data)
            file_info.append(
                {
                    "path": str(p.resolve()),
                    "copy": str(dest.relative_to(tmp)),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            )
        atomic_write_bytes(tmp / SUMMARY, b"".join(dumps(r) + b"\n" for r in rows))
        backends = sorted({str(r["backend"]) for r in rows if r.get("backend")})
        models = sorted({str(r[k]) for r in rows for k in ("model_id", "model") if r.get(k)})
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "source": "import",
            "importer": importer,
            "tool_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "experiment": opts.experiment or opts.label,
            "files": file_info,
            "label": opts.label,
            "method": opts.method,
            "params": opts.params,
            "servers": [
                {
                    "name": opts.label,
                    "label": opts.label,
                    "method": opts.method,
                    "params": opts.params,
                    "backend": opts.backend,
                    "model": opts.model or (models[0] if models else None),
                    "argv": [],
                    "version": None,
                }
            ],
            "client": {
                "tool": client,
                "backend": backends[0] if len(backends) == 1 else (backends or None),
                "warmup": opts.warmup,
                **(extra_client or {}),
            },
            "plan": sorted({(r["scenario"], r["max_concurrency"]) for r in rows}),
        }
        # The manifest is what makes a folder a run dir: it appears last, by rename, after the folder
        # has its final name - a crash anywhere before leaves no (half) run dir for readers to find.
        atomic_write_bytes(tmp / PENDING_MANIFEST, dumps(manifest, indent=True))
        final = base / f"{safe_name(opts.label)}-{stamp}"
        n = 1
        while final.exists():
            n += 1
            final = base / f"{safe_name(opts.label)}-{stamp}-{n}"
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.replace(final / PENDING_MANIFEST, final / MANIFEST)
    return RunDir(final)


Parser = Callable[[Path], list[ParsedRun]]
