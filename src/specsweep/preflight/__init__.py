"""Engine pre-flight: checks of an experiment and of this host before any server starts.

Each check is a small function ``(plan, host) -> list[Check]`` in one of the modules here; ``run_checks``
runs them all. A check reads the host through :class:`~specsweep.preflight.host.Host` (a snapshot that
tests replace with recorded tool output, e.g. nvidia-smi's).
"""

from __future__ import annotations

from specsweep.preflight.checks import CHECKS, for_manifest, run_checks
from specsweep.preflight.host import Host
from specsweep.preflight.model import Check

__all__ = ["CHECKS", "Check", "Host", "for_manifest", "run_checks"]
