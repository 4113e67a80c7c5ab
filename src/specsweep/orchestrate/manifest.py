"""A run dir's manifest: the environment it ran in, the resolved config and plan, the run order; and
the plan of an existing run read back from it (for ``run --resume``)."""

from __future__ import annotations

import getpass
import os
import platform
import socket
import subprocess
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specsweep import __version__
from specsweep.errors import ConfigError
from specsweep.experiment.config import Plan
from specsweep.experiment.loader import plan_of
from specsweep.experiment.rounds import RunSchedule, run_schedule
from specsweep.experiment.stored import experiment_of, manifest_config, stored_id
from specsweep.servers.process import now_iso
from specsweep.store.fingerprint import used_files
from specsweep.store.run_dir import RunDir


def _git_sha() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode().strip() or None if out.returncode == 0 else None


def environment() -> dict[str, Any]:
    return {
        "tool": "specsweep",
        "tool_version": __version__,
        "git_sha": _git_sha(),
        "host": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            # the cores this client may run on (a pinned client, e.g. `taskset -c 0`, shows here)
            "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "user": _user(),
        },
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
    }


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def plan_rows(plan: Plan) -> list[dict[str, Any]]:
    return [{**c.to_dict(), "repeats": plan.experiment.repeats} for c in plan.all_cells()]


def order_records(schedule: RunSchedule) -> dict[str, Any]:
    """The manifest's ``run_order`` (its kind and every round's launch order; the design's rounds
    are appended as they are decided: specsweep.design.loop) and, for the adaptive design,
    ``design`` (its settings: what the report needs to read the design's verdicts back from the rows)."""
    rounds = [list(labels) for labels in schedule.launch_order]
    out: dict[str, Any] = {"run_order": {"kind": schedule.order, "rounds": rounds}}
    if schedule.design is not None:
        out["design"] = {"kind": "adaptive", "settings": asdict(schedule.design)}
    return out


def create_run_dir(plan: Plan, results_dir: str | Path, experiment_file: str | None = None) -> RunDir:
    exp = plan.experiment
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    config, secrets = manifest_config(exp)
    manifest = {
        # which binaries and model files ran: a ${VAR} stays unwritten in "config"; their hashes are not
        "files": used_files(config, exp.model_dump(mode="json")),
        **environment(),
        "kind": "experiment",
        "experiment": exp.name,
        "experiment_file": str(Path(experiment_file).resolve()) if experiment_file else None,
        "config": config,
        "secrets": secrets,
        "plan": plan_rows(plan),
        **order_records(run_schedule(plan)),
        "servers": {},
        "started_at": now_iso(),
        "ended_at": None,
        "status": "running",
        "invocations": [],
    }
    return RunDir.create(results_dir, exp.name, manifest, stamp)


def load_run_plan(run_dir: RunDir) -> Plan:
    """The plan of an existing run, from its manifest's resolved config (checked against its plan)."""
    m = run_dir.manifest
    where = str(run_dir.path / "manifest.json")
    if "config" not in m or "plan" not in m:
        raise ConfigError("this run dir was not written by 'specsweep run' (no config/plan)", file=where)
    exp = experiment_of(m, where)
    plan = plan_of(exp, file=where)
    want = [r["cell_id"] for r in m["plan"]]
    have = [stored_id(c.cell_id) for c in plan.all_cells()]
    if want != have:
        raise ConfigError(
            "the manifest's plan does not match its config (written by another specsweep version?)",
            file=where,
            path="plan",
        )
    return plan
