"""Checks of the host: GPUs visible, free and not shared (nvidia-smi); CPU engines' threads plus the
client's processes against the free cores; other busy processes; CPU frequency scaling."""

from __future__ import annotations

import math

from specsweep.config import Plan, ServerConfig
from specsweep.preflight.engines import argv_of, engine_of, flag
from specsweep.preflight.host import Host
from specsweep.preflight.model import Check

GPU_BUSY_MEM_FRAC = 0.05  # memory in use on an idle GPU: a few hundred MiB of context at most
GPU_BUSY_UTIL_PCT = 5
GPU_KINDS = ("vllm", "sglang")


def parse_gpus(text: str) -> list[dict[str, str | float]]:
    """nvidia-smi --query-gpu=index,uuid,name,memory.used,memory.total,utilization.gpu (csv, no units)."""
    out: list[dict[str, str | float]] = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) < 6:
            continue
        try:
            out.append({"index": f[0], "uuid": f[1], "name": f[2], "mem_used": float(f[3]),
                        "mem_total": float(f[4]), "util": float(f[5])})  # fmt: skip
        except ValueError:
            continue
    return out


def parse_apps(text: str | None) -> list[dict[str, str]]:
    out = []
    for line in (text or "").splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 4 and f[0].isdigit():
            out.append({"pid": f[0], "uuid": f[1], "mem": f[2], "name": f[3]})
    return out


def _gpu_need(cfg: ServerConfig, argv: list[str]) -> int:
    for n in ("--tensor-parallel-size", "-tp", "--tp", "--tp-size"):
        v = flag(argv, n)
        if v and v.isdigit():
            return int(v)
    return cfg.spec.tp or 1


def check_gpus(plan: Plan, host: Host) -> list[Check]:
    gpu_cfgs = [(c, argv_of(c)) for c in plan.configs]
    gpu_cfgs = [
        (c, a) for c, a in gpu_cfgs if engine_of(c, a) in GPU_KINDS and "cpu" not in " ".join(a).lower()
    ]
    if not gpu_cfgs:
        return [Check("gpus", None, "pass", "no GPU engine in the experiment")]
    if host.nvidia_smi_gpus is None:
        return [Check("gpus", None, "warn", "nvidia-smi not found or failed: GPUs cannot be checked",
                      "run on the GPU host with the NVIDIA driver installed (nvidia-smi on PATH)")]  # fmt: skip
    gpus = parse_gpus(host.nvidia_smi_gpus)
    vis = host.env.get("CUDA_VISIBLE_DEVICES")
    if vis:
        allowed = {x.strip() for x in vis.split(",")}
        gpus = [g for g in gpus if g["index"] in allowed or g["uuid"] in allowed]
    out = []
    need = max(_gpu_need(c, a) for c, a in gpu_cfgs)
    if len(gpus) < need:
        out.append(Check("gpus", None, "fail", f"{len(gpus)} GPU(s) visible, a config needs {need} (tensor parallel)",
                         "free or expose more GPUs (CUDA_VISIBLE_DEVICES), or lower tp"))  # fmt: skip
    apps = parse_apps(host.nvidia_smi_apps)
    busy = []
    for g in gpus:
        procs = [a for a in apps if a["uuid"] == g["uuid"]]
        mem_frac = float(g["mem_used"]) / max(float(g["mem_total"]), 1.0)
        if procs or mem_frac > GPU_BUSY_MEM_FRAC or float(g["util"]) > GPU_BUSY_UTIL_PCT:
            who = (
                ", ".join(f"pid {a['pid']} {a['name']} ({a['mem']} MiB)" for a in procs)
                or "no listed process"
            )
            busy.append(
                f"GPU {g['index']}: {g['mem_used']:.0f}/{g['mem_total']:.0f} MiB used, {g['util']:.0f}% busy; {who}"
            )
    if busy:
        out.append(Check("gpus", None, "fail" if len(gpus) - len(busy) < need else "warn",
                         "GPUs in use by others: " + "; ".join(busy),
                         "stop the other processes or pick free GPUs with CUDA_VISIBLE_DEVICES: a shared GPU "
                         "measures the neighbour as much as the engine"))  # fmt: skip
    if not out:
        out.append(Check("gpus", None, "pass", f"{len(gpus)} GPU(s) visible and idle ({gpus[0]['name'] if gpus else ''}); need {need}"))  # fmt: skip
    return out


def engine_threads(cfg: ServerConfig, argv: list[str]) -> int:
    """Cores a CPU engine keeps busy: llama.cpp --threads (default: all cores), vLLM-CPU's OMP threads,
    sim servers one."""
    eng = engine_of(cfg, argv)
    if eng == "llamacpp":
        v = flag(argv, "--threads", "-t")
        return int(v) if v and v.isdigit() else 0  # 0: all cores
    if eng == "sim":
        return 1
    v = cfg.spec.env.get("VLLM_CPU_OMP_THREADS_BIND") or cfg.spec.env.get("OMP_NUM_THREADS")
    if v and v.isdigit():
        return int(v)
    return 0


def is_cpu_engine(cfg: ServerConfig, argv: list[str]) -> bool:
    eng = engine_of(cfg, argv)
    if eng in ("llamacpp", "sim"):
        return True
    if eng != "vllm":
        return False
    hints = " ".join([*argv[:2], cfg.spec.venv or "", cfg.spec.python or "", *cfg.spec.env]).lower()
    return "cpu" in hints


def check_cpu(plan: Plan, host: Host) -> list[Check]:
    out = []
    client = plan.experiment.client.workers + (1 if plan.experiment.client.workers > 1 else 0)
    free = max(0.0, host.cpus - host.load_1m)
    for cfg in plan.configs:
        argv = argv_of(cfg)
        if not is_cpu_engine(cfg, argv):
            continue
        t = engine_threads(cfg, argv)
        threads = t or host.cpus
        need = threads + client
        msg = (f"engine threads {threads}{'' if t else ' (default: all cores)'} + client processes {client} = {need} "
               f"on {host.cpus} core(s), {free:.1f} free (load {host.load_1m:.1f})")  # fmt: skip
        fix = (f"give the engine at most {max(1, host.cpus - client)} thread(s) (llama.cpp --threads / params "
               "threads; vLLM-CPU VLLM_CPU_OMP_THREADS_BIND), or run the client on another host: an engine "
               "sharing cores with its client measures the contention (a no-spec config swung 12x between runs)")  # fmt: skip
        if need > host.cpus:
            out.append(Check("cpu_threads", cfg.label, "fail", msg, fix))
        elif need > math.floor(free):
            out.append(Check("cpu_threads", cfg.label, "warn", msg + ": more than the free cores", fix))
        else:
            out.append(Check("cpu_threads", cfg.label, "pass", msg))
    return out


def check_busy(plan: Plan, host: Host) -> list[Check]:
    if host.load_1m > 0.5 * host.cpus:
        return [Check("host_load", None, "warn", f"load average {host.load_1m:.1f} on {host.cpus} core(s): other "
                      "processes are busy", "stop other work on this host before measuring (see top/htop)")]  # fmt: skip
    return [Check("host_load", None, "pass", f"load average {host.load_1m:.1f} on {host.cpus} core(s)")]


def check_governor(plan: Plan, host: Host) -> list[Check]:
    if not host.governors:
        return [Check("cpu_frequency", None, "pass", "CPU frequency scaling not exposed (VM or fixed clock)")]
    slow = sorted({g for g in host.governors if g != "performance"})
    if slow:
        return [Check("cpu_frequency", None, "warn", f"CPU frequency governor {', '.join(slow)}: clocks vary with load",
                      "sudo cpupower frequency-set -g performance (for the run)")]  # fmt: skip
    return [Check("cpu_frequency", None, "pass", "CPU governor performance")]
