"""Load run dirs into one table of cells: (config label, scenario, concurrency) -> repeats.

A cell's level is the summary row's ``max_concurrency`` (sglang's own ``concurrency`` key is the
measured mean number of requests in flight and is kept as a metric). Rows with status "ok" are
repeats; "failed" / "invalid" rows are kept for anomalies. Per-request records are attached when the
run dir has them (our own runs; imports have none).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsweep.errors import DataError
from specsweep.records import RequestRecord
from specsweep.store import RunDir, find_run_dirs
from specsweep.workload.scenarios import Scenario, parse_scenarios

Key = tuple[str, str, int]  # (label, scenario, concurrency)


@dataclass
class ConfigMeta:
    label: str
    method: str
    params: dict[str, Any]
    server: str | None
    run_dirs: list[str] = field(default_factory=list)
    server_info: dict[str, Any] = field(default_factory=dict)
    order: int = 0  # first appearance


@dataclass
class CellData:
    label: str
    scenario: str
    concurrency: int
    ok: list[dict[str, Any]] = field(default_factory=list)  # one summary row per ok repeat
    bad: list[dict[str, Any]] = field(default_factory=list)  # failed / invalid rows
    records: list[list[RequestRecord]] = field(default_factory=list)  # per ok repeat, when stored
    run_dirs: list[str] = field(default_factory=list)

    def values(self, key: str) -> list[float]:
        out = []
        for r in self.ok:
            v = r.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                out.append(float(v))
        return out

    def mean(self, key: str) -> float | None:
        v = self.values(key)
        return sum(v) / len(v) if v else None


@dataclass
class Dataset:
    run_dirs: list[RunDir]
    manifests: list[dict[str, Any]]
    configs: dict[str, ConfigMeta]
    cells: dict[Key, CellData]
    scenario_defs: dict[str, Scenario] = field(default_factory=dict)  # user scenarios from the manifests

    def scenarios(self) -> list[str]:
        return sorted({k[1] for k in self.cells})

    def concurrencies(self, scenario: str | None = None) -> list[int]:
        return sorted({k[2] for k in self.cells if scenario is None or k[1] == scenario})

    def get(self, label: str, scenario: str, c: int) -> CellData | None:
        return self.cells.get((label, scenario, c))

    def methods(self) -> list[str]:
        seen: dict[str, None] = {}
        for m in sorted(self.configs.values(), key=lambda m: m.order):
            seen.setdefault(m.method, None)
        return list(seen)


def _level(row: dict[str, Any], where: str) -> int:
    v = row.get("max_concurrency")
    if v is None:
        v = row.get("concurrency")  # older writers of ours; only an integer level is accepted here
        if not isinstance(v, int) or isinstance(v, bool):
            raise DataError("summary row has no max_concurrency (the cell's concurrency level)", file=where)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 1:
        raise DataError(f"max_concurrency must be a positive integer, got {v!r}", file=where)
    return int(v)


def _server_info(manifest: dict[str, Any], name: str | None, label: str) -> dict[str, Any]:
    servers = manifest.get("servers")
    items: Iterable[Any]
    if isinstance(servers, dict):  # keyed by config label (specsweep run)
        for key in (label, name):
            v = servers.get(key) if key else None
            if isinstance(v, dict):
                return v
        items = [{"name": k, **v} if isinstance(v, dict) else {"name": k} for k, v in servers.items()]
    elif isinstance(servers, list):
        items = servers
    else:
        items = []
    for s in items:
        if isinstance(s, dict) and (s.get("name") in (name, label) or s.get("label") == label):
            return s
    return {}


def load(paths: Sequence[str | Path], *, with_records: bool = True) -> Dataset:
    rds = find_run_dirs(paths)
    manifests: list[dict[str, Any]] = []
    configs: dict[str, ConfigMeta] = {}
    cells: dict[Key, CellData] = {}
    for rd in rds:
        man = rd.manifest
        manifests.append(man)
        where = str(rd.path / "summary.jsonl")
        for row in rd.summary():
            row["_run_dir"] = str(rd.path)
            label = row.get("label") or row.get("server")
            scenario = row.get("scenario")
            if not label or not scenario:
                raise DataError("summary row lacks 'label' or 'scenario'", file=where)
            label, scenario = str(label), str(scenario)
            c = _level(row, where)
            params = row.get("params") if isinstance(row.get("params"), dict) else {}
            meta = configs.get(label)
            if meta is None:
                server = row.get("server")
                meta = configs[label] = ConfigMeta(
                    label=label,
                    method=str(row.get("method") or "unknown"),
                    params=dict(params or {}),
                    server=str(server) if server else None,
                    server_info=_server_info(man, server, label),
                    order=len(configs),
                )
            if str(rd.path) not in meta.run_dirs:
                meta.run_dirs.append(str(rd.path))
            cell = cells.setdefault((label, scenario, c), CellData(label, scenario, c))
            if str(rd.path) not in cell.run_dirs:
                cell.run_dirs.append(str(rd.path))
            if row.get("status", "ok") == "ok" and row.get("completed") == 0:
                row = {**row, "status": "failed", "error": row.get("error") or "no request completed"}
            if row.get("status", "ok") == "ok":
                cell.ok.append(row)
                if with_records and row.get("cell_id") is not None:
                    p = rd.records_path(str(row["cell_id"]), int(row.get("repeat", 0)))
                    if p.is_file():
                        cell.records.append(rd.read_records(str(row["cell_id"]), int(row.get("repeat", 0))))
            else:
                cell.bad.append(row)
    if not cells:
        raise DataError("no results in the run directories", file=", ".join(str(p) for p in paths))
    return Dataset(list(rds), manifests, configs, cells, _scenario_defs(manifests))


def _scenario_defs(manifests: list[dict[str, Any]]) -> dict[str, Scenario]:
    """User scenarios recorded in the manifests' resolved config (built-ins need no record)."""
    out: dict[str, Scenario] = {}
    for m in manifests:
        cfg = m.get("config")
        sc = cfg.get("scenarios") if isinstance(cfg, dict) else None
        if not sc:
            continue
        try:
            out.update(parse_scenarios(sc))
        except Exception:  # an unreadable record of a scenario only costs its workload class
            continue
    return out
