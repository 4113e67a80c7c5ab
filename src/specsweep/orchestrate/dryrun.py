"""Dry run: what a plan would launch (``describe_plan``) and what would make launches fail here
(``preflight``). The duration estimate is specsweep.progress.estimate_plan."""

from __future__ import annotations

import os
import shutil
from typing import Any

from specsweep.config import Plan
from specsweep.errors import SpecsweepError
from specsweep.servers.argv import build_argv


def preflight(plan: Plan) -> list[str]:
    """Problems that would make launches fail here: missing executables, unknown sim profiles.
    Warnings, not errors: a failed launch is data, and a binary may appear before its turn."""
    out: list[str] = []
    for cfg in plan.configs:
        argv = build_argv(cfg, 1)
        if argv and not (shutil.which(argv[0]) or (os.sep in argv[0] and os.access(argv[0], os.X_OK))):
            out.append(f"{cfg.label}: executable {argv[0]!r} not found")
        if cfg.spec.kind == "sim" and argv:
            try:
                from specsweep.sim.profile import load_profile

                load_profile(argv[argv.index("--profile") + 1])
            except SpecsweepError as e:
                out.append(f"{cfg.label}: {e}")
    return out


def describe_plan(plan: Plan) -> list[dict[str, Any]]:
    """Per configuration: label, kind, argv (``<port>`` for a free port), cells."""
    out = []
    for cfg in plan.configs:
        argv = build_argv(cfg, cfg.spec.port or "<port>")
        out.append({"config": cfg, "argv": argv, "cells": plan.cells[cfg.label]})
    return out
