"""The check of a CPU engine once it runs: which cores its threads may use (every thread's
``Cpus_allowed_list`` in /proc, read back after readiness) against the cores the experiment named for it
and the cores the client runs on. The static ``cpu_threads`` check reads the settings; this one reads
what the kernel enforces."""

from __future__ import annotations

from collections.abc import Mapping

from specsweep.preflight.model import Check
from specsweep.servers.affinity import format_cpu_list as cpus_text

PINNABLE = ("llamacpp", "vllm")  # engines whose cores an experiment can name (servers.affinity)


def check_affinity(
    label: str,
    engine: str,
    threads: Mapping[int, frozenset[int]],
    pinned: frozenset[int] | None,
    client: frozenset[int],
    host: frozenset[int],
) -> Check | None:
    """``threads``: thread id -> allowed CPUs of the server's processes; ``pinned``: the cores named
    for the engine (None: none); ``client``: the client's cores while the engine runs; ``host``: the
    machine's. None when there is nothing to read (the server is gone, or not on Linux)."""
    if not threads:
        return None
    allowed = frozenset().union(*threads.values())
    seen = (f"{len(threads)} server thread(s) may run on CPU(s) {cpus_text(allowed)}; the client runs on "
            f"CPU(s) {cpus_text(client)}")  # fmt: skip
    if pinned is not None:
        outside = [t for t, c in threads.items() if not c <= pinned]
        if outside:
            return Check("cpu_affinity", label, "fail", f"{seen}: {len(outside)} thread(s) outside the engine's "
                         f"cores {cpus_text(pinned)}", "the engine re-pinned its own threads: check its "
                         "affinity options (llama.cpp --cpu-range/--cpu-mask and their -batch forms)")  # fmt: skip
        shared = allowed & client
        if shared:
            rest = host - pinned
            fix = (f"run the client on the other cores: taskset -c {cpus_text(rest)} specsweep run ..." if rest
                   else "name fewer cores for the engine, so that one is left for the client")  # fmt: skip
            return Check("cpu_affinity", label, "warn", f"{seen}: they share CPU(s) {cpus_text(shared)}", fix)
        return Check("cpu_affinity", label, "pass", seen)
    if client < host and allowed <= client:
        fix = ("name the engine's cores (llama.cpp: params cpu_range, e.g. cpu_range: "
               f"{cpus_text(host - client)}; vLLM-CPU: env VLLM_CPU_OMP_THREADS_BIND): specsweep pins the engine "
               "there at launch and keeps the client off them" if engine in PINNABLE else
               "run specsweep without taskset (this engine's cores cannot be named), or the engine on "
               "another host")  # fmt: skip
        return Check("cpu_affinity", label, "warn", f"{seen}: the engine inherited the client's CPU(s) "
                     "(taskset), so they share them", fix)  # fmt: skip
    return Check("cpu_affinity", label, "pass", seen)
