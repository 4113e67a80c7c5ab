"""A snapshot of the host the checks read: cores, load, CPU governors, nvidia-smi's output, executables.

``Host.probe()`` reads the real machine; tests build a Host from recorded output instead.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

NVSMI_GPU_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu",
    "--format=csv,noheader,nounits",
]
NVSMI_APPS_QUERY = [
    "nvidia-smi",
    "--query-compute-apps=pid,gpu_uuid,used_memory,process_name",
    "--format=csv,noheader,nounits",
]


def _run(argv: list[str], timeout_s: float = 20.0) -> str | None:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (p.stdout or p.stderr).strip() if p.returncode == 0 else None


def _governors() -> list[str]:
    out = []
    for path in sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")):
        try:
            with open(path, encoding="ascii") as f:
                out.append(f.read().strip())
        except OSError:
            continue
    return out


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class Host:
    cpus: int
    load_1m: float  # run-queue average: other busy processes
    governors: list[str] = field(default_factory=list)
    nvidia_smi_gpus: str | None = None  # output of NVSMI_GPU_QUERY; None: no nvidia-smi
    nvidia_smi_apps: str | None = None
    which: Callable[[str], str | None] = shutil.which
    run: Callable[[list[str]], str | None] = _run
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    @classmethod
    def probe(cls) -> Host:
        gpus = apps = None
        if shutil.which("nvidia-smi"):
            gpus = _run(NVSMI_GPU_QUERY)
            apps = _run(NVSMI_APPS_QUERY) if gpus is not None else None
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = 0.0
        return cls(_cpus(), load, _governors(), gpus, apps)
