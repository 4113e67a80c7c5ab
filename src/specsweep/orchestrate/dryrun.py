"""Dry run: what a plan would launch (``describe_plan``) and what would make launches fail here
(``preflight``; ``refuse_unrunnable``: what stops a run before its run dir exists). The duration
estimate is specsweep.commands.progress.estimate_plan."""

from __future__ import annotations

import os
import shutil
from typing import Any

from specsweep.client.ray_support import require_ray
from specsweep.errors import ConfigError
from specsweep.experiment.argv import build_argv
from specsweep.experiment.config import Plan
from specsweep.preflight.engines import check_sim_profiles
from specsweep.preflight.model import Check


def preflight(plan: Plan) -> list[str]:
    """Problems that would make launches fail here: missing executables, unknown sim profiles.
    Warnings, not errors: a failed launch is data, and a binary may appear before its turn."""
    out: list[str] = []
    for cfg in plan.configs:
        argv = build_argv(cfg, 1)
        if argv and not (shutil.which(argv[0]) or (os.sep in argv[0] and os.access(argv[0], os.X_OK))):
            out.append(f"{cfg.label}: executable {argv[0]!r} not found")
    return out + [f"{c.config}: {c.message}" for c in unknown_sim_profiles(plan)]


def refuse_unrunnable(plan: Plan, executor: str = "local", *, file: str | None = None) -> None:
    """Before a run dir is made: an executor that cannot load (``--executor ray`` without Ray) and
    simulated configs whose profile does not exist stop the run at once (they would leave a run dir
    with nothing in it, or only failed cells). Raises MissingDependency / ConfigError."""
    if executor == "ray":
        require_ray("--executor ray")
    bad = unknown_sim_profiles(plan)
    if bad:
        raise ConfigError("; ".join(f"config {c.config}: {c.message}" for c in bad), file=file)


def unknown_sim_profiles(plan: Plan) -> list[Check]:
    """The failed ``sim_profile`` checks: simulated configs whose server could not start."""
    return [c for c in check_sim_profiles(plan) if c.status == "fail"]


def describe_plan(plan: Plan) -> list[dict[str, Any]]:
    """Per configuration: label, kind, argv (``<port>`` for a free port), cells."""
    out = []
    for cfg in plan.configs:
        argv = build_argv(cfg, cfg.spec.port or "<port>")
        out.append({"config": cfg, "argv": argv, "cells": plan.cells[cfg.label]})
    return out
