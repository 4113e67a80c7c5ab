"""`specsweep calibrate-noise`: measure the launch noise of an engine on a host, once, and store it.

The calibration is an ordinary interleaved run (a real run dir beside the experiment's others, so
nothing is lost and ``--resume`` finishes it): one config of the experiment (its first, or the one
named), ``launches`` rounds of it (one server launch a round), a few of its cells in each. Its runs
are then fitted by the same model the verdicts use (:func:`specsweep.stats.launch.fit_launches`:
statsmodels MixedLM, the cells fixed, the launch a random intercept, after the host's drift), and
the launch sd with its degrees of freedom (launches - 1) is written to the calibration file
(:mod:`specsweep.store.launch_noise`) under the engine and host the run's manifest records, where later
reports of that engine and host, and the adaptive design, find it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from specsweep.analysis.core import PRIMARY
from specsweep.errors import DataError, UsageError, one_of
from specsweep.experiment.config import Experiment, Plan, ServerConfig, Workload
from specsweep.store import launch_noise

DEFAULT_LAUNCHES = 4
DEFAULT_CELLS = 2
HIGHER_IS_BETTER = ("throughput",)  # a metric whose name holds one of these: higher is better


@dataclass(frozen=True)
class Calibration:
    """What a calibration measured: ``launch_sd`` (log, one launch's level) with ``df`` (launches - 1),
    the run noise within a launch (``run_sd``), the launches and cells it came from, and where it was
    stored under which key (``path`` None: not stored, the fit failed)."""

    key: str
    config: str
    metric: str
    launch_sd: float
    df: float
    run_sd: float
    launches: int
    cells: int
    run_dir: Path
    path: Path | None


def calibration_plan(plan: Plan, label: str | None, launches: int, cells: int) -> Plan:
    """The calibration's plan: config ``label`` (default the first) alone, its first ``cells`` cells,
    ``launches`` interleaved rounds. An experiment of its own, so that the run dir's manifest
    reloads it on ``--resume``."""
    from specsweep.experiment.loader import plan_of

    if launches < 2:
        raise UsageError(
            f"--launches {launches}: the launch noise needs at least 2 launches (4 or more is better)"
        )
    if cells < 1:
        raise UsageError(f"--cells {cells}: expected 1 or more")
    labels = [c.label for c in plan.configs]
    cfg = plan.configs[0] if label is None else next((c for c in plan.configs if c.label == label), None)
    if cfg is None:
        raise UsageError(f"--config {one_of(label or '', labels)}")
    exp = plan.experiment
    spec = cfg.spec.model_copy(update={"grid": {}, "params": dict(cfg.params), "label": cfg.label,
                                       "baseline": False})  # fmt: skip
    workloads = _workloads(exp, cfg, cells)
    small = exp.model_copy(update={
        "name": f"{exp.name}-calibrate-noise", "servers": [spec], "workloads": workloads,
        "repeats": launches, "run_order": "interleaved", "adaptive": None, "lossless": None,
        "report": exp.report.model_copy(update={"enabled": False}),
    })  # fmt: skip
    small = Experiment.model_validate(small.model_dump(mode="python"))
    out = plan_of(small)
    want = [c.cell_id for c in plan.cells[cfg.label][:cells]]
    have = [c.cell_id for c in out.all_cells()]
    keep = [c for c in out.cells[cfg.label] if c.cell_id in want] or out.cells[cfg.label][:cells]
    if have != want:  # a workload that yields several cells at once (datasets): the first ones only
        out = replace(out, cells={cfg.label: keep})
    return out


def _workloads(exp: Experiment, cfg: ServerConfig, cells: int) -> list[Workload]:
    """One workload per cell (a scenario at one concurrency), in the experiment's order, for the
    first ``cells`` cells this config runs."""
    out: list[Workload] = []
    for w in exp.workloads:
        if w.servers and cfg.name not in w.servers:
            continue
        for s in w.scenarios:
            for c in w.concurrency:
                if len(out) >= cells:
                    return out
                out.append(w.model_copy(update={"scenarios": [s], "concurrency": [c], "servers": None}))
    return out


def measure(run_dir: str | Path, metric: str = PRIMARY) -> Calibration:
    """The launch noise of a calibration's run dir (no stored calibration used as a prior: this is
    the measurement itself), stored in the calibration file of its results dir (or
    $SPECSWEEP_LAUNCH_NOISE) under its engine@host."""
    from specsweep.analysis import data
    from specsweep.analysis.model import calibration_keys, metric_runs
    from specsweep.stats.launch import NO_PRIOR

    rd = Path(run_dir)
    ds = data.load([rd], with_records=False)
    higher = any(h in metric for h in HIGHER_IS_BETTER)
    # the launches' own measurement: the assumed noise's floor would store 2% for a quieter engine
    runs = replace(metric_runs(ds, metric, higher).runs, launch_prior=NO_PRIOR)
    lf = runs.model(diagnostics=False).launch
    n_launches = len(set(runs.launches))
    if lf is None or not lf.configs:
        raise DataError(
            f"{n_launches} launch(es) with a {metric} value: the launch noise needs at least 2; "
            f"finish the calibration with: specsweep calibrate-noise --resume {rd}",
            file=str(rd),
        )
    key = calibration_keys(ds)[0]
    (label, fit), = lf.configs.items()  # fmt: skip
    cal = Calibration(
        key, label, metric, lf.tau, lf.df, fit.sigma_w, fit.launches, len(set(runs.cells)), rd, None
    )
    if lf.failed:
        return cal
    kinds = _kinds(ds.manifests[0])
    entry: dict[str, Any] = {"sd": lf.tau, "df": lf.df, "run_sd": fit.sigma_w, "metric": metric,
                             "launches": fit.launches, "cells": cal.cells, "config": label,
                             "kinds": kinds, "run_dir": rd.name,
                             "at": str(ds.manifests[0].get("ended_at") or ds.manifests[0].get("started_at"))}  # fmt: skip
    if not math.isfinite(lf.tau):
        return cal
    path = launch_noise.store(rd.resolve().parent, key, entry)
    return replace(cal, path=path)


def _kinds(manifest: dict[str, Any]) -> list[str]:
    """The server kinds (sim, vllm, ...) of a run's experiment: what the adaptive design matches a
    calibration by before its own servers have said what engine they are."""
    cfg = manifest.get("config")
    servers = cfg.get("servers") if isinstance(cfg, dict) else None
    return sorted({str(s["kind"]) for s in servers or () if isinstance(s, dict) and s.get("kind")})
