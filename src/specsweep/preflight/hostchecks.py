"""Checks of the host: GPUs visible, free and not shared (nvidia-smi); CPU engines' threads and the
client's processes against the cores, each on its own when the engine is pinned (servers.affinity);
other busy processes against the cores left free; CPU frequency scaling."""

from __future__ import annotations

from specsweep.experiment.argv import build_env
from specsweep.experiment.config import Plan, ServerConfig
from specsweep.preflight.engines import argv_of, engine_of, flag, is_cpu_engine
from specsweep.preflight.host import Host
from specsweep.preflight.model import Check
from specsweep.preflight.running import PINNABLE
from specsweep.servers import affinity

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


def engine_cores(cfg: ServerConfig, argv: list[str], host: Host) -> frozenset[int] | None:
    """The cores the config names for its engine (the launch pins it there); raises ValueError."""
    env = {**host.env, **build_env(cfg, 0, base=host.env)} if engine_of(cfg, argv) == "vllm" else {}
    return affinity.engine_cpus(engine_of(cfg, argv), argv, env)


def engine_threads(cfg: ServerConfig, argv: list[str], pinned: frozenset[int] | None = None) -> int:
    """Cores a CPU engine keeps busy: llama.cpp --threads (default: all cores), vLLM-CPU's bound cores
    or OMP threads, sim servers one; 0: all cores."""
    eng = engine_of(cfg, argv)
    if eng == "llamacpp":
        v = flag(argv, "--threads", "-t")
        return int(v) if v and v.isdigit() else 0  # 0: all cores
    if eng == "sim":
        return 1
    if pinned is not None:  # VLLM_CPU_OMP_THREADS_BIND: one OMP thread per listed core
        return len(pinned)
    v = cfg.spec.env.get("OMP_NUM_THREADS")
    if v and v.isdigit():
        return int(v)
    return 0


def client_processes(plan: Plan) -> int:
    workers = plan.experiment.client.workers
    return workers + (1 if workers > 1 else 0)


THREADS_FIX = ("llama.cpp: params threads; vLLM-CPU: env VLLM_CPU_OMP_THREADS_BIND), or run the client on "
               "another host: an engine sharing cores with its client measures the contention (a no-spec "
               "config swung 12x between runs)")  # fmt: skip


def cpu_need(cfg: ServerConfig, argv: list[str], host: Host, client: int) -> int:
    """Cores a CPU engine and its client keep busy together."""
    try:
        pinned = engine_cores(cfg, argv, host)
    except ValueError:
        pinned = None
    return (len(pinned) if pinned else engine_threads(cfg, argv) or host.cpus) + client


def check_cpu(plan: Plan, host: Host) -> list[Check]:
    """The engine's threads and the client's processes against the cores: each on its own. What the
    other processes of the host take is ``host_load``'s."""
    out = []
    client = client_processes(plan)
    for cfg in plan.configs:
        argv = argv_of(cfg)
        if is_cpu_engine(cfg, argv):
            out.append(_cpu_check(cfg, argv, host, client))
    return out


def _cpu_check(cfg: ServerConfig, argv: list[str], host: Host, client: int) -> Check:
    try:
        pinned = engine_cores(cfg, argv, host)
    except ValueError as e:
        return Check("cpu_threads", cfg.label, "fail", str(e), "fix the engine's core list")
    t = engine_threads(cfg, argv, pinned)
    threads = t or host.cpus
    each = f"engine threads {threads}{'' if t else ' (default: all cores)'}, client processes {client}"
    if pinned is not None:
        return _pinned_check(cfg, host, pinned, threads, client, each)
    need = threads + client
    msg = f"{each}: {need} on {host.cpus} core(s)"
    if need > host.cpus:
        most = host.cpus - client
        fix = (f"give the engine at most {most} thread(s) ({THREADS_FIX}" if most >= 1 else
               f"run the client on another host, or use a host with {need} or more cores")  # fmt: skip
        return Check("cpu_threads", cfg.label, "fail", msg, fix)
    client_only = host.client_cores
    if client_only < host.cores and engine_of(cfg, argv) in PINNABLE:
        rest = affinity.format_cpu_list(host.cores - client_only)
        return Check("cpu_threads", cfg.label, "warn", f"{msg}; the client is pinned to CPU(s) "
                     f"{affinity.format_cpu_list(client_only)} (taskset) and the engine names no cores, so it "
                     "inherits the client's and they share them", f"name the engine's cores: params cpu_range: "
                     f"{rest} (llama.cpp) or env VLLM_CPU_OMP_THREADS_BIND: {rest!r} (vLLM-CPU); the launch pins "
                     "it there")  # fmt: skip
    return Check("cpu_threads", cfg.label, "pass", msg + " (engine not pinned)")


def _pinned_check(
    cfg: ServerConfig, host: Host, pinned: frozenset[int], threads: int, client: int, each: str
) -> Check:
    cl = affinity.format_cpu_list
    if not pinned <= host.cores:
        return Check("cpu_threads", cfg.label, "fail", f"the engine's cores {cl(pinned)} are not all on this "
                     f"host (CPUs {cl(host.cores)})", f"name cores among {cl(host.cores)}")  # fmt: skip
    own = host.client_cores - pinned
    msg = f"{each}; engine pinned to CPU(s) {cl(pinned)}, client on CPU(s) {cl(own or host.client_cores)}"
    if not own:
        rest = host.cores - pinned
        fix = (f"run the client on the other cores: taskset -c {cl(rest)} specsweep run ..." if rest else
               f"leave a core for the client: name {len(pinned) - 1} engine core(s)" if len(pinned) > 1 else
               "run the client on another host")  # fmt: skip
        return Check("cpu_threads", cfg.label, "fail", msg + ": the client has no core of its own", fix)
    if threads > len(pinned):
        return Check("cpu_threads", cfg.label, "warn", f"{msg}: {threads} threads take turns on "
                     f"{len(pinned)} core(s)", f"threads: {len(pinned)} (llama.cpp --threads)")  # fmt: skip
    if client > len(own):
        return Check("cpu_threads", cfg.label, "warn", f"{msg}: {client} client processes on {len(own)} core(s)",
                     f"client: workers: {max(1, len(own) - 1)}, or leave the client more cores")  # fmt: skip
    return Check("cpu_threads", cfg.label, "pass", msg)


def check_busy(plan: Plan, host: Host) -> list[Check]:
    """Other processes' load: more than half the cores, or more than the cores a CPU engine and its
    client leave free (one line naming the configs that need the most)."""
    client = client_processes(plan)
    needs: dict[str, int] = {}
    for cfg in plan.configs:
        argv = argv_of(cfg)
        if is_cpu_engine(cfg, argv):
            needs[cfg.label] = cpu_need(cfg, argv, host, client)
    limit = 0.5 * host.cpus
    need = max(needs.values(), default=0)
    if need:
        limit = min(limit, host.cpus - need + 0.5)
    seen = f"load average {host.load_1m:.1f} on {host.cpus} core(s)"
    if host.load_1m <= limit:
        return [Check("host_load", None, "pass", seen)]
    who = ""
    if need:
        names = ", ".join(k for k, v in needs.items() if v == need)
        free = max(0.0, host.cpus - host.load_1m)
        who = f"; {names}: engine and client need {need} core(s), {free:.1f} free"
    return [Check("host_load", None, "warn", f"{seen}: other processes are busy{who}",
                  "stop other work on this host before measuring (see top/htop)")]  # fmt: skip


def check_governor(plan: Plan, host: Host) -> list[Check]:
    if not host.governors:
        return [Check("cpu_frequency", None, "pass", "CPU frequency scaling not exposed (VM or fixed clock)")]
    slow = sorted({g for g in host.governors if g != "performance"})
    if slow:
        return [Check("cpu_frequency", None, "warn", f"CPU frequency governor {', '.join(slow)}: clocks vary with load",
                      "sudo cpupower frequency-set -g performance (for the run)")]  # fmt: skip
    return [Check("cpu_frequency", None, "pass", "CPU governor performance")]
