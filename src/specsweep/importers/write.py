"""One import -> one run dir: files checked, the two passes (:mod:`passes`) in a folder that appears by
rename only when all is well, the source files copied in, the manifest last.

Repeats are only what is provably a repeat:

* identical content is the same result, not a second run: a file given twice (same sha256), or a
  result object identical to another (a ``bench sweep`` ``summary.json`` beside its ``run=N.json``
  files) is kept once, with a warning; a file or result already imported into the results dir under
  the same label is refused (a warning only under another label).
* results that differ in their workload (dataset, lengths, number of prompts, tokens per request
  beyond a tolerance) are different cells; results that differ in recorded server parameters are
  different configs (:mod:`grouping`); open-loop results are cells by request rate.
* ``--concurrency N`` fills in results without ``max_concurrency``; one that has another value is
  refused unless ``--override-concurrency`` (warned, the file's value kept as ``file_max_concurrency``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from specsweep import SCHEMA_VERSION, __version__
from specsweep.errors import DataError, UsageError
from specsweep.importers.common import ImportOptions
from specsweep.importers.grouping import MAX_CONCURRENCY
from specsweep.importers.passes import Pass, ToRows
from specsweep.store import inputs, redact
from specsweep.store.inputs import open_regular
from specsweep.store.paths import safe_name
from specsweep.store.redact_copy import copy_scrubbed
from specsweep.store.run_dir import MANIFEST, SUMMARY, RunDir, atomic_write_bytes, dumps

PENDING_MANIFEST = ".manifest.json.pending"


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
        with open_regular(path) as fh:  # a FIFO or /dev/zero: refused at once, never read forever
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
        try:  # at most MAX_MANIFEST_BYTES: a planted sparse 1.5 GB manifest is not read whole
            m = json.loads(inputs.read_bytes(d / MANIFEST, inputs.MAX_MANIFEST_BYTES))
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
            with open_regular(d / SUMMARY) as fh:  # a planted FIFO: skipped, never waited on
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


def write_import(
    results_dir: str | Path,
    kind: str,
    client: str,
    to_rows: ToRows,
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
        job = Pass(kind, client, to_rows, opts)
        job.read(tmp, paths, earlier_records, earlier_dir)
        job.warnings(warnings)
        n, configs, plan = job.write_rows(tmp)
        _write_sources_and_manifest(tmp, kind, client, paths, shas, opts, extra_client, job, configs, plan)
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


def _write_sources_and_manifest(
    tmp: Path,
    kind: str,
    client: str,
    paths: list[Path],
    shas: list[str],
    opts: ImportOptions,
    extra_client: dict[str, Any] | None,
    job: Pass,
    configs: dict[str, dict[str, Any]],
    plan: set[tuple[str, int]],
) -> None:
    src_dir = tmp / "source"
    src_dir.mkdir()
    file_info = []
    for i, (p, sha) in enumerate(zip(paths, shas, strict=True)):
        dest = src_dir / f"{i}-{safe_name(p.name)}"
        # the copy with its secrets replaced (sha256: of the file as it was read)
        redacted = copy_scrubbed(p, dest)
        info = {"path": str(p.resolve()), "copy": str(dest.relative_to(tmp)), "sha256": sha}
        file_info.append({**info, "redacted": True} if redacted else info)
    bk = sorted(job.backends)
    md = sorted(job.models)
    servers: list[dict[str, Any]] = [
        {
            "name": label, "label": label, "method": opts.method, "params": params, "backend": opts.backend,
            "model": opts.model or (md[0] if md else None), "argv": [], "version": None,
        }
        for label, params in sorted(configs.items())
    ]  # fmt: skip
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
        "servers": servers,
        "client": {
            "tool": client,
            "backend": bk[0] if len(bk) == 1 else (bk or None),
            "warmup": opts.warmup,
            **(extra_client or {}),
        },
        "plan": sorted(plan),
    }
    atomic_write_bytes(tmp / PENDING_MANIFEST, dumps(redact.scrub_obj(manifest), indent=True))
