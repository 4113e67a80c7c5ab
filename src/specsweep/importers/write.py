"""One import -> one run dir, streaming, in two passes over a spool file in the run dir being built.

Pass 1 reads every result object (one at a time), checks it, normalises it to a summary row and
spools it; it also learns what only the whole import can tell: duplicates and which workloads share a
(scenario, concurrency) cell. Pass 2 names each cell and numbers the repeats. Memory is one object
plus 16 bytes of content hash per result; the run dir appears (by rename) only when all is well.

Repeats are only what is provably a repeat:

* identical content is the same result, not a second run: a file given twice (same sha256), or a
  result object identical to another (a ``bench sweep`` ``summary.json`` beside its ``run=N.json``
  files) is kept once, with a warning; a file or result already imported into the results dir under
  the same label is refused (a warning only under another label).
* results of one (scenario, concurrency) that differ in request rate, dataset or lengths (or in the
  file's own concurrency, when ``--override-concurrency`` replaced it) are different cells: the
  scenario name gets the differing fields, e.g. ``chat[request_rate=4]``.
* ``--concurrency N`` fills in results without ``max_concurrency``; one that has another value is
  refused unless ``--override-concurrency`` (warned, the file's value kept as ``file_max_concurrency``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from specsweep import SCHEMA_VERSION, __version__
from specsweep.errors import DataError, UsageError
from specsweep.importers.common import ImportOptions
from specsweep.importers.identity import (
    WORKLOAD_KEYS,
    cell_suffix,
    digest,
    workload,
    wrong_importer,
)
from specsweep.importers.plausible import check_row
from specsweep.importers.reader import read_objects
from specsweep.inputs import open_regular
from specsweep.paths import safe_name
from specsweep.store import MANIFEST, SUMMARY, RunDir, atomic_write_bytes, dumps

PENDING_MANIFEST = ".manifest.json.pending"
SPOOL = ".spool.jsonl"
MAX_CONCURRENCY = 10_000_000
ToRow = Callable[[dict[str, Any], str, int], dict[str, Any]]


@dataclass
class ImportOutcome:
    rundir: RunDir
    rows: int
    warnings: list[str]


def check_options(opts: ImportOptions) -> None:
    c = opts.concurrency
    if c is not None and (isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_CONCURRENCY):
        raise UsageError(f"--concurrency {c!r}: expected an integer from 1 to {MAX_CONCURRENCY:,}")
    if opts.override_concurrency and c is None:
        raise UsageError("--override-concurrency needs --concurrency N (the value to use instead)")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open_regular(path) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise DataError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    return h.hexdigest()


def _earlier_imports(base: Path, label: str) -> tuple[dict[str, tuple[str, str]], set[bytes], str]:
    """Source-file sha256 -> (run dir, label) of earlier imports here; record hashes of this label's."""
    files: dict[str, tuple[str, str]] = {}
    records: set[bytes] = set()
    first_dir = ""
    if not base.is_dir():
        return files, records, first_dir
    for d in sorted(p for p in base.iterdir() if (p / MANIFEST).is_file()):
        try:
            m = json.loads((d / MANIFEST).read_bytes())
        except (OSError, ValueError, RecursionError):
            continue  # not ours to judge here; `report` names a corrupt run dir
        if not isinstance(m, dict) or m.get("source") != "import":
            continue
        for f in m.get("files") or []:
            if isinstance(f, dict) and isinstance(f.get("sha256"), str):
                files.setdefault(f["sha256"], (str(d), str(m.get("label"))))
        if m.get("label") != label:
            continue
        try:
            with (d / SUMMARY).open("rb") as fh:
                for raw in fh:
                    try:
                        sha = orjson.loads(raw).get("record_sha")
                    except (orjson.JSONDecodeError, AttributeError):
                        continue
                    if isinstance(sha, str) and len(sha) == 32:
                        records.add(bytes.fromhex(sha))
                        first_dir = first_dir or str(d)
        except (OSError, ValueError):
            continue
    return files, records, first_dir


def _concurrency(row: dict[str, Any], opts: ImportOptions, where: str, line: int) -> tuple[int, bool]:
    """(the cell's concurrency, whether --override-concurrency replaced the file's value)."""
    v = row.get("max_concurrency")
    usable = (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and float(v).is_integer()
        and 1 <= v <= MAX_CONCURRENCY
    )
    if opts.concurrency is not None:
        if v is None or (usable and int(v) == opts.concurrency):
            return opts.concurrency, False
        if opts.override_concurrency:
            return opts.concurrency, True
        raise DataError(
            f"the file says max_concurrency {v!r} but --concurrency is {opts.concurrency}: "
            "--concurrency only fills in results that have none; give --override-concurrency "
            "to replace the file's value",
            file=where,
            line=line,
            field="max_concurrency",
        )
    if not usable:
        raise DataError(
            f"no usable max_concurrency (got {v!r}; expected an integer from 1 to {MAX_CONCURRENCY:,}); "
            "give --concurrency N for results without one",
            file=where,
            line=line,
            field="max_concurrency",
        )
    return int(v), False  # type: ignore[arg-type]


def _where(file: str, line: int) -> str:
    return f"{file}:{line}"


def write_import(
    results_dir: str | Path,
    kind: str,
    client: str,
    to_row: ToRow,
    files: Sequence[str | Path],
    opts: ImportOptions,
    extra_client: dict[str, Any] | None = None,
) -> ImportOutcome:
    check_options(opts)
    base = Path(results_dir)
    if base.exists() and not base.is_dir():
        raise UsageError(f"-o {base}: exists and is not a folder (expected a results folder)")
    warnings: list[str] = []
    # identical files: the same result, once
    paths: list[Path] = []
    shas: list[str] = []
    for f in files:
        p = Path(f)
        sha = _sha256(p)
        if sha in shas:
            warnings.append(
                f"{p} is identical to {paths[shas.index(sha)]} (same sha256): imported once, not as a repeat"
            )
            continue
        paths.append(p)
        shas.append(sha)
    earlier_files, earlier_records, earlier_dir = _earlier_imports(base, opts.label)
    for p, sha in zip(paths, shas, strict=True):
        if sha in earlier_files:
            d, lab = earlier_files[sha]
            if lab == opts.label:
                raise DataError(
                    f"already imported into {d} under label {lab!r} (same sha256): importing it again "
                    "would count the same runs as repeats; remove that run dir to re-import",
                    file=str(p),
                )
            warnings.append(f"{p} was already imported into {d} under label {lab!r}")
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    tmp = Path(tempfile.mkdtemp(prefix=".import-", dir=base))
    try:
        n = _build(
            tmp, kind, client, to_row, paths, shas, opts, extra_client, warnings, earlier_records, earlier_dir
        )
        final = base / f"{safe_name(opts.label)}-{stamp}"
        k = 1
        while final.exists():
            k += 1
            final = base / f"{safe_name(opts.label)}-{stamp}-{k}"
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # The manifest makes a folder a run dir: it appears last, by rename, after the folder has its
    # final name - a crash anywhere before leaves no (half) run dir for readers to find.
    os.replace(final / PENDING_MANIFEST, final / MANIFEST)
    return ImportOutcome(RunDir(final), n, warnings)


def _build(
    tmp: Path,
    kind: str,
    client: str,
    to_row: ToRow,
    paths: list[Path],
    shas: list[str],
    opts: ImportOptions,
    extra_client: dict[str, Any] | None,
    warnings: list[str],
    earlier_records: set[bytes],
    earlier_dir: str,
) -> int:
    seen: dict[bytes, int] = {}  # content hash -> file index << 40 | line of its first occurrence
    dups: list[str] = []
    groups: dict[tuple[str, int], dict[tuple[Any, ...], None]] = {}
    backends: set[str] = set()
    models: set[str] = set()
    overridden = noted = 0
    first_note = ""
    spool = tmp / SPOOL
    with spool.open("wb") as out:
        for fi, path in enumerate(paths):
            found = False
            for loc in read_objects(path):
                found = True
                where, line = loc.where(path), loc.line
                if not isinstance(loc.obj, dict):
                    raise DataError(
                        f"expected a JSON object, got {type(loc.obj).__name__}", file=where, line=line
                    )
                wrong = wrong_importer(kind, loc.obj)
                if wrong:
                    raise DataError(wrong, file=where, line=line)
                try:
                    d = digest(loc.obj)
                except (RecursionError, ValueError):
                    raise DataError(
                        "JSON nested too deeply to read: not a benchmark result", file=where, line=line
                    ) from None
                row = to_row(loc.obj, where, line)
                check_row(row, where, line)  # values no run can produce (1e300 tok/s, p99 < median)
                if d in seen:
                    if len(dups) < 3:
                        ffi, fline = divmod(seen[d], 1 << 40)
                        dups.append(f"{_where(where, line)} = {_where(str(paths[ffi]), fline)}")
                    else:
                        dups.append("")
                    continue
                if d in earlier_records:
                    raise DataError(
                        f"this result is already imported into {earlier_dir} under label {opts.label!r}: "
                        "importing it again would count it as a repeat of itself",
                        file=where,
                        line=line,
                    )
                seen[d] = fi << 40 | line
                scenario = opts.scenario or row.get("tag")
                if not scenario or not isinstance(scenario, str):
                    raise DataError(
                        "no scenario: the result has no 'tag'; give --scenario NAME",
                        file=where,
                        line=line,
                        field="tag",
                    )
                conc, over = _concurrency(row, opts, where, line)
                overridden += over
                if opts.override_concurrency and row.get("max_concurrency") is not None:
                    row["file_max_concurrency"] = row["max_concurrency"]
                wl = workload(row)
                groups.setdefault((scenario, conc), {})[wl] = None
                notes = [x for x in row.get("import_notes", ()) if not x.startswith("latency only")]
                if notes:
                    noted += 1
                    first_note = first_note or f"{_where(where, line)}: {notes[0]}"
                for k in ("model_id", "model"):
                    if isinstance(row.get(k), str) and len(models) < 100:
                        models.add(row[k])
                if row.get("backend") and len(backends) < 100:
                    backends.add(str(row["backend"]))
                row.update(record_sha=d.hex(), source_file=str(path), source_line=line, source_item=loc.item)
                out.write(dumps({"s": scenario, "c": conc, "w": list(wl), "row": row}) + b"\n")
            if not found:
                raise DataError(f"no result lines (expected {client} output: JSON objects)", file=str(path))
    if not seen:
        raise DataError("no result objects found", file=", ".join(str(p) for p in paths))
    if dups:
        shown = "; ".join(x for x in dups if x)
        warnings.append(
            f"{len(dups)} result(s) identical to an earlier one (same content) kept once, "
            f"not counted as repeats: {shown}{' ...' if len(dups) > 3 else ''}"
        )
    if overridden:
        warnings.append(
            f"--override-concurrency: {overridden} result(s) had another max_concurrency in the file; "
            f"imported as c={opts.concurrency} (the file's value kept as file_max_concurrency)"
        )
    if noted:
        warnings.append(
            f"{noted} result(s) had infinite or NaN metric values, dropped (import_notes): {first_note}"
        )
    names = _cell_names(groups, warnings)
    n = _write_rows(tmp, spool, names, opts)
    spool.unlink()
    _write_sources_and_manifest(tmp, kind, client, paths, shas, opts, extra_client, names, backends, models)
    return n


def _cell_names(
    groups: dict[tuple[str, int], dict[tuple[Any, ...], None]], warnings: list[str]
) -> dict[tuple[str, int, tuple[Any, ...]], str]:
    """Scenario name per (scenario, concurrency, workload): suffixed where workloads differ."""
    names: dict[tuple[str, int, tuple[Any, ...]], str] = {}
    for (scen, conc), wls in groups.items():
        keys = list(wls)
        if len(keys) == 1:
            names[(scen, conc, keys[0])] = scen
            continue
        differ = [i for i in range(len(WORKLOAD_KEYS)) if len({wl[i] for wl in keys}) > 1]
        for wl in keys:
            names[(scen, conc, wl)] = scen + cell_suffix({WORKLOAD_KEYS[i]: wl[i] for i in differ})
        fields = ", ".join(WORKLOAD_KEYS[i].removeprefix("file_") for i in differ)
        warnings.append(
            f"{scen} c={conc}: results differ in {fields}: imported as {len(keys)} separate cells "
            f"(e.g. {names[(scen, conc, keys[0])]}), not as repeats"
        )
    return names


def _write_rows(
    tmp: Path, spool: Path, names: dict[tuple[str, int, tuple[Any, ...]], str], opts: ImportOptions
) -> int:
    counts: dict[tuple[str, int], int] = {}
    n = 0
    with spool.open("rb") as src, (tmp / SUMMARY).open("wb") as out:
        for raw in src:
            rec = orjson.loads(raw)
            conc = rec["c"]
            scenario = names[(rec["s"], conc, tuple(rec["w"]))]
            rep = counts.get((scenario, conc), 0)
            counts[(scenario, conc)] = rep + 1
            row = rec["row"]
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
            )
            if row.get("failed") is None:
                row["failed"] = 0
            if row.get("completed") is not None and row["completed"] == 0:
                row["status"] = "failed"
                row["error"] = "no request completed"
            out.write(dumps(row) + b"\n")
            n += 1
        out.flush()
        os.fsync(out.fileno())
    return n


def _write_sources_and_manifest(
    tmp: Path,
    kind: str,
    client: str,
    paths: list[Path],
    shas: list[str],
    opts: ImportOptions,
    extra_client: dict[str, Any] | None,
    names: dict[tuple[str, int, tuple[Any, ...]], str],
    backends: set[str],
    models: set[str],
) -> None:
    src_dir = tmp / "source"
    src_dir.mkdir()
    file_info = []
    for i, (p, sha) in enumerate(zip(paths, shas, strict=True)):
        dest = src_dir / f"{i}-{safe_name(p.name)}"
        shutil.copyfile(p, dest)
        file_info.append({"path": str(p.resolve()), "copy": str(dest.relative_to(tmp)), "sha256": sha})
    bk = sorted(backends)
    md = sorted(models)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "source": "import",
        "importer": kind,
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
                "model": opts.model or (md[0] if md else None),
                "argv": [],
                "version": None,
            }
        ],
        "client": {
            "tool": client,
            "backend": bk[0] if len(bk) == 1 else (bk or None),
            "warmup": opts.warmup,
            **(extra_client or {}),
        },
        "plan": sorted({(name, conc) for (_, conc, _), name in names.items()}),
    }
    atomic_write_bytes(tmp / PENDING_MANIFEST, dumps(manifest, indent=True))
