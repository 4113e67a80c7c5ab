"""The pre-flight checks, in report order, and the function that runs them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specsweep.experiment.config import Plan
from specsweep.preflight import engines, hostchecks, warmup
from specsweep.preflight.host import Host
from specsweep.preflight.model import Check, fold, fold_dicts

CheckFn = Callable[[Plan, Host], list[Check]]

CHECKS: dict[str, CheckFn] = {
    "executable": engines.check_executables,
    "sim_profile": engines.check_sim_profiles,
    "gpus": hostchecks.check_gpus,
    "model_identity": engines.check_models,
    "cuda_graph": engines.check_cuda_graphs,
    "deep_gemm": engines.check_deep_gemm,
    "prefix_caching": engines.check_prefix_caching,
    "warmup": warmup.check_warmup_config,
    "cpu_threads": hostchecks.check_cpu,
    "host_load": hostchecks.check_busy,
    "cpu_frequency": hostchecks.check_governor,
}


def run_checks(
    plan: Plan, host: Host | None = None, *, versions: bool = True, results: list[str | Path] | None = None
) -> list[Check]:
    """Every check on ``plan`` (``host``: the probed machine by default); ``versions``: run each engine's
    version command; ``results``: run dirs whose records get the first-requests probe."""
    host = host or Host.probe()
    out: list[Check] = []
    for name, fn in CHECKS.items():
        if name == "executable":
            out.extend(engines.check_executables(plan, host, versions=versions))
        else:
            out.extend(fn(plan, host))
    for path in results or []:
        out.extend(probe_results(path))
    return out


def probe_results(path: str | Path) -> list[Check]:
    from specsweep.store.run_dir import find_run_dirs

    out = []
    for rd in find_run_dirs([path]):
        for row in rd.summary():
            if row.get("status", "ok") != "ok" or row.get("cell_id") is None:
                continue
            rep = int(row.get("repeat", 0))
            if rd.records_path(str(row["cell_id"]), rep).is_file():
                recs = rd.read_records(str(row["cell_id"]), rep)
                out.append(warmup.first_requests_probe(recs, str(row.get("label")), str(row["cell_id"])))
    return out


def for_manifest(plan: Plan) -> list[dict[str, object]]:
    """The checks as recorded at the start of ``specsweep run`` (no version commands: the servers report
    theirs at launch); anything not passing is logged as a warning - a run is never stopped by them."""
    import logging

    log = logging.getLogger("specsweep.preflight")
    checks = fold(run_checks(plan, versions=False))
    for c in checks:
        if c.status != "pass":
            log.warning("preflight %s %s: %s (fix: %s)", c.status, c.config or "", c.message, c.fix)
    return [c.to_dict() for c in checks]


def of_measurements(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The checks a run's reports show (its manifest's ``preflight``): those of the invocations that
    measured cells - a ``--resume`` with nothing left to run does not replace the measuring
    invocation's host load - then each server's check once it ran (``cpu_affinity``); identical
    findings once. Each invocation keeps its own checks (``invocations[i].preflight``); manifests
    written before that keep their single list."""
    invs = [i for i in manifest.get("invocations") or [] if isinstance(i, dict) and "preflight" in i]
    if not invs:
        return list(manifest.get("preflight") or [])
    measured = [i for i in invs if i.get("cells_stored", i.get("cells_to_run", 0))] or invs[-1:]
    running = [c for srv in (manifest.get("servers") or {}).values() if isinstance(srv, dict)
               for c in srv.get("preflight") or []]  # fmt: skip
    return fold_dicts([c for i in measured for c in i.get("preflight") or []] + running)
