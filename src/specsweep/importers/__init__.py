"""Importers: results of other benchmark clients -> run dirs (``source: "import"``).

``IMPORTERS`` maps a name to its parser; :func:`import_results` is the library call behind
``specsweep import``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specsweep.errors import UsageError, one_of
from specsweep.importers import sglang, vllm
from specsweep.importers.common import ImportOptions, ParsedRun, parse_param
from specsweep.store import RunDir

IMPORTERS = {"sglang": (sglang.parse, sglang.CLIENT), "vllm": (vllm.parse, vllm.CLIENT)}

__all__ = ["IMPORTERS", "ImportOptions", "import_results", "parse_param"]


def import_results(
    kind: str, files: Sequence[str | Path], results_dir: str | Path, opts: ImportOptions
) -> RunDir:
    """Parse every file first (any error: nothing written), then write one run dir."""
    if kind not in IMPORTERS:
        raise UsageError(f"unknown importer: {one_of(kind, IMPORTERS)}")
    if not files:
        raise UsageError("no files to import")
    parse, client = IMPORTERS[kind]
    runs: list[ParsedRun] = []
    for f in files:
        runs.extend(parse(Path(f)))
    extra = {"ignore_eos": True} if kind == "sglang" else {}
    from specsweep.importers.common import write_import

    return write_import(results_dir, kind, client, files, runs, opts, extra_client=extra)
