"""Load run dirs into one table of cells: (config label, scenario, concurrency) -> repeats.

A cell's level is the summary row's ``max_concurrency`` (sglang's own ``concurrency`` key is the
measured mean number of requests in flight and is kept as a metric). Rows with status "ok" are
repeats; "failed" / "invalid" rows are kept for anomalies. Per-request records are attached when the
run dir has them (our own runs; imports have none).

Loading is tolerant (a corrupt line must not refuse the whole report): a summary line that is not a
JSON object, lacks a label / scenario / concurrency level / repeat, or a records file that cannot be
read is left out, logged as a warning and listed in ``Dataset.skipped`` (the report shows the list).
Values that are not finite numbers (``NaN``, ``Infinity``, ``1e999``: not JSON, so they used to drop
the whole line silently) keep their line; the value becomes missing (None) and is listed.

Manifests come in several layouts (our runs, imports, simulated runs, older writers); what a report
shows of them is normalised here once: :class:`RunInfo` per run dir, and per config its server's
backend, model, version and argv (:class:`ConfigMeta`). ``Dataset.manifests`` keeps the raw dicts.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsweep.errors import DataError
from specsweep.importers import cellnames
from specsweep.measure.records import RequestRecord
from specsweep.store import inputs
from specsweep.store.run_dir import SUMMARY, RunDir, find_run_dirs
from specsweep.workload.scenarios import Scenario, parse_scenarios

Key = tuple[str, str, int]  # (label, scenario, concurrency)
log = logging.getLogger(__name__)


@dataclass
class ConfigMeta:
    label: str
    method: str
    params: dict[str, Any]
    server: str | None
    run_dirs: list[str] = field(default_factory=list)
    server_info: dict[str, Any] = field(default_factory=dict)  # the manifest's record, as written
    order: int = 0  # first appearance
    # from server_info, its keys' aliases resolved (see _server_facts)
    backend: str | None = field(init=False)
    model: str | None = field(init=False)
    version: str | None = field(init=False)
    argv: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.backend, self.model, self.version, self.argv = _server_facts(self.server_info)


def _server_facts(si: dict[str, Any]) -> tuple[str | None, str | None, str | None, list[str]]:
    """(backend, model, version, argv) of a server record: ``backend`` | ``launcher`` | ``kind``,
    ``model`` | ``model_id``, ``versions`` | ``version`` (first one set wins); argv only as a list."""
    backend = si.get("backend") or si.get("launcher") or si.get("kind")
    model = si.get("model") or si.get("model_id")
    version = si.get("versions") or si.get("version")
    argv = si.get("argv") if isinstance(si.get("argv"), list) else []
    return (str(backend) if backend else None, str(model) if model else None,
            str(version) if version else None, [str(a) for a in argv or []])  # fmt: skip


def finite_number(x: Any) -> float | None:
    """``x`` as a float when it is a finite number (not a bool), else None."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


@dataclass(frozen=True)
class RunInfo:
    """One run dir's manifest as the report reads it, whichever layout wrote it.

    ``client`` is the load generator as a command (``sglang.bench_serving --backend vllm``; our own
    client when none is named); the client record is the manifest's ``client`` or its resolved
    ``config.client``. ``simulated``: marked simulated, sourced from the simulator, or time-scaled.
    ``time_scale`` is the recorded one (top level, else ``sim.time_scale``) as a number, None if it is
    not one; ``time_scale_recorded`` says whether any was recorded at all.
    """

    path: str
    experiment: Any = None  # the experiment's name (an ``experiment`` dict's ``name``, or the value)
    source: str = "run"  # "run" | "import" | "sim"
    tool_version: Any = None
    client: str = "specsweep bench"
    warmup: int | None = None  # warmup requests
    ignore_eos: bool | None = None
    dataset: Any = None
    simulated: bool = False
    time_scale: float | None = None
    time_scale_recorded: bool = False
    preflight: list[dict[str, Any]] = field(default_factory=list)  # the checks, as recorded


def run_info(path: str, m: dict[str, Any]) -> RunInfo:
    """Normalise one manifest (see :class:`RunInfo`)."""
    e = m.get("experiment")
    cfg = m.get("config") if isinstance(m.get("config"), dict) else {}
    assert isinstance(cfg, dict)
    cl = m.get("client") if isinstance(m.get("client"), dict) else cfg.get("client")
    cl = cl if isinstance(cl, dict) else {}
    tool = cl.get("tool") or "specsweep bench"
    be = cl.get("backend")
    w = cl.get("warmup", cl.get("warmup_requests"))
    sim = m.get("sim")
    ts = m.get("time_scale") or sim.get("time_scale") if isinstance(sim, dict) else m.get("time_scale")
    return RunInfo(
        path=path, experiment=e.get("name") if isinstance(e, dict) else e, source=m.get("source") or "run",
        tool_version=m.get("tool_version"), client=f"{tool} --backend {be}" if isinstance(be, str) and be else tool,
        warmup=w if isinstance(w, int) and not isinstance(w, bool) else None,
        ignore_eos=bool(cl["ignore_eos"]) if cl.get("ignore_eos") is not None else None, dataset=cl.get("dataset"),
        simulated=bool(m.get("simulated") or ts is not None or m.get("source") == "sim"),
        time_scale=finite_number(ts) if ts is not None else None, time_scale_recorded=ts is not None,
        preflight=[c for c in m.get("preflight") or [] if isinstance(c, dict)],
    )  # fmt: skip


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
    skipped: list[str] = field(default_factory=list)  # "file:line: what was left out and why"
    runs: list[RunInfo] = field(default_factory=list)  # per run dir, its manifest normalised

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
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        raise DataError(f"max_concurrency must be a positive integer, got {v!r}", file=where)
    if v == cellnames.UNBOUNDED and row.get("open_loop") is True and not isinstance(v, bool):
        return cellnames.UNBOUNDED  # an open-loop run with no concurrency limit (a cell by request rate)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 1:
        raise DataError(f"max_concurrency must be a positive integer, got {v!r}", file=where)
    return int(v)


def _repeat(row: dict[str, Any]) -> int:
    v = row.get("repeat", 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise DataError(f"repeat must be an integer >= 0, got {v!r}")
    return v


def _rows(rd: RunDir, skipped: list[str]) -> Iterable[tuple[str, dict[str, Any]]]:
    """(where, row) for every summary line that is a JSON object; others go to ``skipped``."""
    path = rd.path / SUMMARY
    if not path.exists():
        return
    try:
        f = inputs.open_regular(path)  # a FIFO or a device must not hang the report
    except OSError as e:
        skipped.append(f"{path}: cannot read ({e.strerror or e}); file skipped")
        return
    with f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line:
                continue
            where = f"{path}:{lineno}"
            try:
                row = json.loads(line)  # accepts NaN / Infinity / 1e999 (orjson does not): see below
            except ValueError as e:
                skipped.append(f"{where}: not valid JSON ({e}); line skipped")
                continue
            if not isinstance(row, dict):
                skipped.append(f"{where}: not a JSON object; line skipped")
                continue
            bad = sorted(k for k, v in row.items() if isinstance(v, float) and not math.isfinite(v))
            if bad:  # kept as missing values, so no later step meets a NaN
                skipped.append(f"{where}: not a finite number: {', '.join(bad)} (left out of the statistics)")
                row = {k: (None if k in bad else v) for k, v in row.items()}
            row["_line"] = lineno  # the file's order: the run order of rows without seq or started_at
            yield where, row


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
    skipped: list[str] = []
    pending: list[tuple[RunDir, dict[str, Any], str, dict[str, Any]]] = []
    for rd in rds:
        try:
            man = rd.manifest
        except DataError as e:
            skipped.append(f"{e} (the run's provenance is not shown)")
            man = {}
        manifests.append(man)
        pending += [(rd, man, where, row) for where, row in _rows(rd, skipped)]
    _name_imported_cells([row for _rd, _m, _w, row in pending])
    for rd, man, where, row in pending:
        try:
            _add_row(rd, man, row, configs, cells, with_records, skipped, where)
        except DataError as e:
            skipped.append(f"{where}: {e}; line skipped")
    for note in skip_notes(skipped):
        log.warning("skipped: %s", note)
    if not cells:
        why = f" ({len(skipped)} line(s) or file(s) skipped: {skipped[0]})" if skipped else ""
        raise DataError("no results in the run directories" + why, file=", ".join(str(p) for p in paths))
    runs = [run_info(str(rd.path), m) for rd, m in zip(rds, manifests, strict=True)]
    return Dataset(list(rds), manifests, configs, cells, _scenario_defs(manifests), skipped, runs)


def _add_row(
    rd: RunDir,
    man: dict[str, Any],
    row: dict[str, Any],
    configs: dict[str, ConfigMeta],
    cells: dict[Key, CellData],
    with_records: bool,
    skipped: list[str],
    where: str,
) -> None:
    label = row.get("label") or row.get("server")
    scenario = row.get("scenario")
    if not label or not scenario:
        raise DataError("summary row lacks 'label' or 'scenario'")
    label, scenario = str(label), str(scenario)
    c = _level(row, "")
    repeat = _repeat(row)
    row["_run_dir"] = str(rd.path)
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
    if row.get("status", "ok") != "ok":
        cell.bad.append(row)
        return
    cell.ok.append(row)
    if with_records and row.get("cell_id") is not None:
        p = rd.records_path(str(row["cell_id"]), repeat)
        if p.is_file():
            try:
                cell.records.append(rd.read_records(str(row["cell_id"]), repeat))
            except DataError as e:
                skipped.append(f"{e} (the summary row is kept; per-request figures lack this repeat)")


def _name_imported_cells(rows: list[dict[str, Any]]) -> None:
    """Imported rows get their scenario name from every imported row read together, so one workload
    has one name in every import (:func:`cellnames.assign`): a file of 128- and 512-token runs and a
    file of 512-token runs name the 512 cell alike."""
    placed, where = [], []
    for row in rows:
        base, wl, level = row.get("scenario_base"), row.get("workload"), row.get("max_concurrency")
        if (
            not isinstance(base, str)
            or not isinstance(wl, dict)
            or isinstance(level, bool)
            or not isinstance(level, int)
        ):
            continue
        rate = row.get("request_rate")
        placed.append(
            cellnames.Placed.of(base, wl, rate if isinstance(rate, (int, float, str)) else None, level)
        )
        where.append(row)
    for row, name in zip(where, cellnames.assign(placed), strict=True):
        row["scenario"] = name


def skip_notes(skipped: list[str], limit: int = 20) -> list[str]:
    """What was left out, for the terminal and the report: the first ``limit`` and a count of the rest."""
    more = [f"... and {len(skipped) - limit} more"] if len(skipped) > limit else []
    return skipped[:limit] + more


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
