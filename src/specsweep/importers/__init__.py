"""Importers: results of other benchmark clients -> run dirs (``source: "import"``).

``IMPORTERS`` maps a name to its module (``to_rows``, ``CLIENT``, ``CLIENT_EXTRA``, ``FILES``: the
file names it reads in a folder, ``MAX_BYTES`` and ``TOO_BIG``: its bound on a file's size, and what
to do with a larger one); :func:`run_import` is the library call behind ``specsweep import``
(:func:`import_results` returns just the run dir). ``auto`` reads the producer from the keys of the
first result (:func:`identity.producer`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from specsweep.errors import DataError, UsageError, one_of
from specsweep.importers import aiperf, genai_perf, guidellm, identity, llmperf, sglang, vllm
from specsweep.importers.common import ImportOptions, parse_param
from specsweep.importers.reader import read_objects
from specsweep.importers.write import ImportOutcome, write_import
from specsweep.store.run_dir import RunDir

IMPORTERS: dict[str, ModuleType] = {
    "sglang": sglang, "vllm": vllm, "aiperf": aiperf, "genai-perf": genai_perf, "guidellm": guidellm,
    "llmperf": llmperf,
}  # fmt: skip
KINDS = (*IMPORTERS, "auto")

__all__ = [
    "IMPORTERS",
    "KINDS",
    "ImportOptions",
    "ImportOutcome",
    "import_results",
    "parse_param",
    "run_import",
]


def expand(kind: str, files: Sequence[str | Path]) -> list[Path]:
    """Files as given; a folder (a ``vllm bench sweep`` output, an AIPerf artifacts dir, ...) as the
    files in it, at any depth, that the importer reads (its ``FILES`` patterns), in path order."""
    out: list[Path] = []
    for f in files:
        p = Path(f)
        if not p.is_dir():
            out.append(p)
            continue
        pats = (
            IMPORTERS[kind].FILES
            if kind in IMPORTERS
            else tuple({x for m in IMPORTERS.values() for x in m.FILES})
        )
        found = sorted({q for pat in pats for q in p.rglob(pat) if q.is_file() and not _hidden(q, p)})
        if not found:
            raise DataError(
                f"a folder with no result files (looked for {', '.join(pats)} at any depth)", file=str(p)
            )
        out += found
    return out


def _hidden(q: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in q.relative_to(root).parts)


def check_sizes(files: Sequence[Path], kind: str) -> None:
    """Each file within its format's bound (``MAX_BYTES``; ``auto``: the largest), else one error
    naming the file, its size, the bound and what to do (the module's ``TOO_BIG``)."""
    mod = IMPORTERS.get(kind)
    limit = mod.MAX_BYTES if mod else max(m.MAX_BYTES for m in IMPORTERS.values())
    for path in files:
        try:
            size = os.stat(path).st_size
        except OSError:
            continue  # a missing file: the reader says so
        if size > limit:
            what = f"a result file of {mod.CLIENT}" if mod else "any result file"
            hint = mod.TOO_BIG if mod else "split it into several files"
            raise DataError(
                f"{size:,} bytes ({_size(size)}), over the {_size(limit)} ({limit:,} bytes) read from "
                f"{what}: {hint}",
                file=str(path),
            )


def _size(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def detect(files: Sequence[Path]) -> str:
    """The producer of the first result object of the first file (``import auto``)."""
    for path in files:
        for loc in read_objects(path):
            if isinstance(loc.obj, dict):
                who, _keys = identity.producer(loc.obj)
                if who is None:
                    raise DataError(
                        "cannot tell which client wrote this result from its keys; name it: "
                        f"specsweep import {{{', '.join(IMPORTERS)}}}",
                        file=loc.where(path),
                        line=loc.line,
                    )
                return who
            break
    raise DataError("no result objects found", file=", ".join(str(p) for p in files))


def run_import(
    kind: str, files: Sequence[str | Path], results_dir: str | Path, opts: ImportOptions
) -> ImportOutcome:
    """Read every file (any error: nothing written), then one run dir; warnings for the user."""
    if kind not in KINDS:
        raise UsageError(f"unknown importer: {one_of(kind, KINDS)}")
    if not files:
        raise UsageError("no files to import")
    paths = expand(kind, files)
    check_sizes(paths, kind)
    if kind == "auto":
        kind = detect(paths)
        if any(Path(f).is_dir() for f in files):
            paths = expand(kind, files)
        check_sizes(paths, kind)
    mod = IMPORTERS[kind]
    return write_import(
        results_dir, kind, mod.CLIENT, mod.to_rows, paths, opts, extra_client=mod.CLIENT_EXTRA
    )


def import_results(
    kind: str, files: Sequence[str | Path], results_dir: str | Path, opts: ImportOptions
) -> RunDir:
    return run_import(kind, files, results_dir, opts).rundir
