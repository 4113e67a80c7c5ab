"""A snapshot of the host the checks read: cores (the machine's, and the client's own affinity), load,
CPU governors, nvidia-smi's output, executables.

``Host.probe()`` reads the real machine; tests build a Host from recorded output instead.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from specsweep.servers import affinity

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


@dataclass
class Host:
    cpus: int  # the machine's usable cores (an engine may be pinned to any of them)
    load_1m: float  # run-queue average: other busy processes
    governors: list[str] = field(default_factory=list)
    nvidia_smi_gpus: str | None = None  # output of NVSMI_GPU_QUERY; None: no nvidia-smi
    nvidia_smi_apps: str | None = None
    which: Callable[[str], str | None] = shutil.which
    run: Callable[[list[str]], str | None] = _run
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    cpu_ids: frozenset[int] | None = None  # the machine's cores; None: 0 .. cpus-1
    client_cpus: frozenset[int] | None = None  # this process's affinity (taskset); None: every core

    @property
    def cores(self) -> frozenset[int]:
        return self.cpu_ids if self.cpu_ids is not None else frozenset(range(self.cpus))

    @property
    def client_cores(self) -> frozenset[int]:
        return self.client_cpus if self.client_cpus is not None else self.cores

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
        cores = affinity.host_cpus()
        return cls(
            len(cores), load, _governors(), gpus, apps, cpu_ids=cores, client_cpus=affinity.client_cpus()
        )
