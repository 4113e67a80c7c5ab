"""Importers: results of other benchmark clients -> run dirs (``source: "import"``).

``IMPORTERS`` maps a name to (row parser, client name, client provenance); :func:`run_import` is
the library call behind ``specsweep import`` (:func:`import_results` returns just the run dir).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specsweep.errors import UsageError, one_of
from specsweep.importers import sglang, vllm
from specsweep.importers.common import ImportOptions, parse_param
from specsweep.importers.write import ImportOutcome, write_import
from specsweep.store import RunDir

IMPORTERS = {
    "sglang": (sglang.to_row, sglang.CLIENT, sglang.CLIENT_EXTRA),
    "vllm": (vllm.to_row, vllm.CLIENT, vllm.CLIENT_EXTRA),
}

__all__ = ["IMPORTERS", "ImportOptions", "ImportOutcome", "import_results", "parse_param", "run_import"]


def run_import(
    kind: str, files: Sequence[str | Path], results_dir: str | Path, opts: ImportOptions
) -> ImportOutcome:
    """Read every file (any error: nothing written), then one run dir; warnings for the user."""
    if kind not in IMPORTERS:
        raise UsageError(f"unknown importer: {one_of(kind, IMPORTERS)}")
    if not files:
        raise UsageError("no files to import")
    to_row, client, extra = IMPORTERS[kind]
    return write_import(results_dir, kind, client, to_row, files, opts, extra_client=extra)


def import_results(
    kind: str, files: Sequence[str | Path], results_dir: str | Path, opts: ImportOptions
) -> RunDir:
    return run_import(kind, files, results_dir, opts).rundir
