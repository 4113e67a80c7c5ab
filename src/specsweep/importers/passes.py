"""The two passes of an import over a spool file in the run dir being built (see :mod:`write`).

Pass 1 reads every result object (one at a time), checks it, turns it into summary rows and spools
them; it learns what only the whole import can tell: duplicates, and which results share a cell or a
config (:class:`grouping.Groups`). Pass 2 names each cell and config and numbers the repeats. Memory
is one object plus 16 bytes of content hash and 8 bytes of token counts per result.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from specsweep.errors import DataError
from specsweep.importers import cellnames, grouping, identity
from specsweep.importers.common import ImportOptions
from specsweep.importers.plausible import check_row, contradictions
from specsweep.importers.reader import read_objects
from specsweep.store import redact
from specsweep.store.run_dir import SUMMARY, dumps

SPOOL = ".spool.jsonl"
ToRows = Callable[[dict[str, Any], str, int], list[dict[str, Any]]]


def _where(file: str, line: int) -> str:
    return f"{file}:{line}"


class Pass:
    """One import's state between the passes: groups, duplicates, what the manifest records."""

    def __init__(self, kind: str, client: str, to_rows: ToRows, opts: ImportOptions) -> None:
        self.kind, self.client, self.to_rows, self.opts = kind, client, to_rows, opts
        self.groups = grouping.Groups(opts.label)
        self.seen: dict[bytes, int] = {}  # content hash -> file index << 40 | line of its first occurrence
        self.dups: list[str] = []
        self.backends: set[str] = set()
        self.models: set[str] = set()
        self.overridden = self.noted = self.invalid = 0
        self.first_note = self.first_invalid = ""
        self.derived: dict[str, int] = {}  # scenario names derived from the workload (no tag) -> results

    def read(self, tmp: Path, paths: list[Path], earlier: set[bytes], earlier_dir: str) -> None:
        with (tmp / SPOOL).open("wb") as out:
            for fi, path in enumerate(paths):
                found = False
                for loc in read_objects(path):
                    found = True
                    self._object(loc.obj, loc.where(path), loc.line, fi, paths, earlier, earlier_dir, out)
                if not found:
                    raise DataError(
                        f"no result lines (expected {self.client} output: JSON objects)", file=str(path)
                    )
        if not self.seen:
            raise DataError("no result objects found", file=", ".join(str(p) for p in paths))

    def _object(
        self,
        obj: Any,
        where: str,
        line: int,
        fi: int,
        paths: list[Path],
        earlier: set[bytes],
        earlier_dir: str,
        out: Any,
    ) -> None:
        if not isinstance(obj, dict):
            raise DataError(f"expected a JSON object, got {type(obj).__name__}", file=where, line=line)
        wrong = identity.wrong_importer(self.kind, obj)
        if wrong:
            raise DataError(wrong, file=where, line=line)
        try:
            d0 = identity.digest(obj)
        except (RecursionError, ValueError):
            raise DataError(
                "JSON nested too deeply to read: not a benchmark result", file=where, line=line
            ) from None
        rows = self.to_rows(obj, where, line)
        for row in rows:
            check_row(row, where, line)  # values no run can produce (1e300 tok/s, p99 < median)
            # several results in one object (GuideLLM's benchmarks): each by its own content, so the same
            # benchmark twice (in one file or two) is one result, not a repeat
            d = (
                d0
                if len(rows) == 1
                else identity.digest({k: v for k, v in row.items() if k != "benchmark_index"})
            )
            bad = contradictions(row, self.kind)  # a rate its own counts and duration contradict
            if bad:
                row["invalid_reason"] = "; ".join(bad)
            if d in self.seen:
                if len(self.dups) < 3:
                    ffi, fline = divmod(self.seen[d], 1 << 40)
                    self.dups.append(f"{_where(where, line)} = {_where(str(paths[ffi]), fline)}")
                else:
                    self.dups.append("")
                continue
            if d in earlier:
                raise DataError(
                    f"this result is already imported into {earlier_dir} under label {self.opts.label!r}: "
                    "importing it again would count it as a repeat of itself",
                    file=where,
                    line=line,
                )
            self.seen[d] = fi << 40 | line
            self._row(obj, row, d, where, line, paths[fi], out)

    def _row(
        self, obj: dict[str, Any], row: dict[str, Any], d: bytes, where: str, line: int, path: Path, out: Any
    ) -> None:
        opts = self.opts
        tag = row.get("tag")
        base = opts.scenario or (tag if isinstance(tag, str) and tag.strip() else None)
        if base is None:
            base = identity.default_scenario(row)
            self.derived[base] = self.derived.get(base, 0) + 1
        level, rate, over = grouping.place_load(row, opts, where, line)
        self.overridden += over
        if opts.override_concurrency and row.get("max_concurrency") is not None:
            row["file_max_concurrency"] = row["max_concurrency"]
        params = row.pop("server_params", None)
        params = identity.clean_params(params) if isinstance(params, dict) else identity.recorded_params(obj)
        key = grouping.Key(
            base, grouping.pairs(identity.workload_fields(row)), rate, level, grouping.pairs(params)
        )
        tin, tout = grouping.tokens(row)
        self.groups.add(key, tin, tout)
        if row.get("invalid_reason"):
            self.invalid += 1
            self.first_invalid = self.first_invalid or f"{_where(where, line)}: {row['invalid_reason']}"
        notes = [x for x in row.get("import_notes", ()) if not x.startswith("latency only")]
        if notes:
            self.noted += 1
            self.first_note = self.first_note or f"{_where(where, line)}: {notes[0]}"
        for k in ("model_id", "model"):
            if isinstance(row.get(k), str) and len(self.models) < 100:
                self.models.add(row[k])
        if row.get("backend") and len(self.backends) < 100:
            self.backends.add(str(row["backend"]))
        row.update(record_sha=d.hex(), source_file=str(path), source_line=line, source_item=None)
        if "item " in where:
            row["source_item"] = int(where.rsplit("item ", 1)[1])
        spooled = {"b": base, "w": list(key.workload), "r": rate, "l": level, "p": list(key.params),
                   "t": [tin, tout], "row": row}  # fmt: skip
        out.write(dumps(spooled) + b"\n")

    def warnings(self, warnings: list[str]) -> None:
        if self.dups:
            shown = "; ".join(x for x in self.dups if x)
            warnings.append(
                f"{len(self.dups)} result(s) identical to an earlier one (same content) kept once, "
                f"not counted as repeats: {shown}{' ...' if len(self.dups) > 3 else ''}"
            )
        if self.overridden:
            warnings.append(
                f"--override-concurrency: {self.overridden} result(s) had another max_concurrency in the file; "
                f"imported as c={self.opts.concurrency} (the file's value kept as file_max_concurrency)"
            )
        if self.noted:
            warnings.append(
                f"{self.noted} result(s) had infinite or NaN metric values, or statistics that are no block "
                f"of numbers, dropped (import_notes): {self.first_note}"
            )
        if self.invalid:
            warnings.append(
                f"{self.invalid} result(s) state a rate that their own counts and duration contradict: imported "
                f"as invalid (set aside by reports, never recommended): {self.first_invalid}"
            )
        if self.derived:
            named = ", ".join(f"{n!r}" for n in sorted(self.derived)[:3])
            warnings.append(
                f"{sum(self.derived.values())} result(s) have no tag: scenario named after the workload "
                f"({named}{', ...' if len(self.derived) > 3 else ''}); give --scenario NAME to choose one"
            )
        self.groups.decide(warnings)

    def write_rows(self, tmp: Path) -> tuple[int, dict[str, dict[str, Any]], set[tuple[str, int]]]:
        """Pass 2: every spooled row with its config, cell and repeat number."""
        counts: dict[tuple[str, str, int], int] = {}
        configs: dict[str, dict[str, Any]] = {}
        plan: set[tuple[str, int]] = set()
        n = 0
        opts = self.opts
        with (tmp / SPOOL).open("rb") as src, (tmp / SUMMARY).open("wb") as out:
            for raw in src:
                rec = orjson.loads(raw)
                key = grouping.Key(rec["b"], tuple(tuple(x) for x in rec["w"]), rec["r"], rec["l"],
                                   tuple(tuple(x) for x in rec["p"]))  # fmt: skip
                scenario, workload = self.groups.place(key, *rec["t"])
                label = self.groups.config_of(key)
                params = {**opts.params, **self.groups.params_of(key)}
                configs.setdefault(label, params)
                conc = key.level
                rep = counts.get((label, scenario, conc), 0)
                counts[(label, scenario, conc)] = rep + 1
                plan.add((scenario, conc))
                row = rec["row"]
                row.update(
                    cell_id=f"{label}/{scenario}/c{conc}", label=label, method=opts.method, params=params,
                    server=label, scenario=scenario, scenario_base=key.base, workload=workload,
                    max_concurrency=conc, open_loop=cellnames.is_open_loop(key.rate, conc), repeat=rep, status="ok", error=None,
                )  # fmt: skip
                if row.get("failed") is None:
                    row["failed"] = 0
                if row.get("completed") is not None and row["completed"] == 0:
                    row["status"] = "failed"
                    row["error"] = "no request completed"
                elif row.get("invalid_reason"):
                    row["status"] = "invalid"
                out.write(dumps(redact.scrub_obj(row)) + b"\n")  # an LLMPerf model URL's password
                n += 1
            out.flush()
            os.fsync(out.fileno())
        (tmp / SPOOL).unlink()
        return n, configs, plan
