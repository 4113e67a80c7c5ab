"""CPU engines pinned as the experiment says (issue 28 defect 5): the launch pins the server's whole
process to the named cores (every thread inherits it, whatever the launcher's own affinity), the
client moves off them, the static check reads the settings and the running check reads every
thread's Cpus_allowed_list; no fix advice is advice already followed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from specsweep.preflight import run_checks
from specsweep.preflight.running import check_affinity
from specsweep.servers import affinity, spawn

from .conftest import host, make_plan

TWO_CORES = pytest.mark.skipif(
    not affinity.supported() or len(affinity.client_cpus()) < 2, reason="needs Linux and 2 usable cores"
)
LLAMA = {"name": "l", "kind": "llamacpp", "binary": "llama-server", "model": "m.gguf"}


def llama(**params: object) -> dict[str, object]:
    return {**LLAMA, "params": params}


def cpu_check(plan_servers: list[dict[str, object]], **h: object) -> tuple[str, str, str]:
    (c,) = [c for c in run_checks(make_plan(plan_servers), host(**h)) if c.check == "cpu_threads"]
    return c.status, c.message, c.fix


def test_cpu_lists() -> None:
    assert affinity.parse_cpu_list("0-2,5") == {0, 1, 2, 5}
    assert affinity.parse_cpu_list("1|3") == {1, 3}  # vLLM's per-rank lists
    assert affinity.format_cpu_list({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert affinity.parse_cpu_mask("0x2") == {1}
    assert affinity.engine_cpus("llamacpp", ["llama-server", "--cpu-range", "1-1"], {}) == {1}
    assert affinity.engine_cpus("vllm", ["vllm"], {"VLLM_CPU_OMP_THREADS_BIND": "2-3"}) == {2, 3}
    assert affinity.engine_cpus("vllm", ["vllm"], {"VLLM_CPU_OMP_THREADS_BIND": "auto"}) is None
    # another program's -C is not a CPU mask (make -C dir)
    assert affinity.engine_cpus("other", ["make", "-C", "dir"], {}) is None
    with pytest.raises(ValueError, match="--cpu-range '1-x'"):
        affinity.engine_cpus("llamacpp", ["llama-server", "--cpu-range", "1-x"], {})


def test_pinned_engine_and_the_client_on_its_own_core() -> None:
    pinned = llama(threads=1, cpu_range="1-1", cpu_strict=1)
    for client in (None, frozenset({0})):  # with or without `taskset -c 0`: the engine is on core 1
        st, msg, _ = cpu_check([pinned], cpus=2, load_1m=0.0, client_cpus=client)
        assert st == "pass" and "engine pinned to CPU(s) 1, client on CPU(s) 0" in msg
    # `taskset -c 1` puts the client on the engine's only core: the advice is the other core
    st, msg, fix = cpu_check([pinned], cpus=2, load_1m=0.0, client_cpus=frozenset({1}))
    assert (
        st == "fail"
        and "no core of its own" in msg
        and fix.startswith("run the client on the other cores: taskset -c 0")
    )
    st, msg, fix = cpu_check([llama(threads=2, cpu_range="1-1")], cpus=2, load_1m=0.0)
    assert (
        st == "warn"
        and "2 threads take turns on 1 core(s)" in msg
        and fix == "threads: 1 (llama.cpp --threads)"
    )
    st, msg, _ = cpu_check([llama(threads=1, cpu_range="2-3")], cpus=2, load_1m=0.0)
    assert st == "fail" and "not all on this host" in msg


def test_taskset_client_and_an_unpinned_engine_share_its_core() -> None:
    """The issue's case: `taskset -c 0 specsweep run` with an engine that names no cores."""
    st, msg, fix = cpu_check([llama(threads=1)], cpus=2, load_1m=0.0, client_cpus=frozenset({0}))
    assert st == "warn" and "inherits the client's" in msg
    assert "cpu_range: 1" in fix and "at most" not in fix  # threads 1 already: never that advice
    assert cpu_check([llama(threads=1)], cpus=2, load_1m=0.0)[0] == "pass"


def test_one_core_host_advice_is_not_already_followed() -> None:
    st, _msg, fix = cpu_check([llama(threads=1)], cpus=1, load_1m=0.0)
    assert st == "fail" and "at most" not in fix and "another host" in fix
    st, _msg, fix = cpu_check([llama(threads=2)], cpus=2, load_1m=0.0)
    assert st == "fail" and "at most 1 thread" in fix


def test_running_check_reads_what_the_kernel_enforces() -> None:
    host_cpus, on1, on0 = frozenset({0, 1}), frozenset({1}), frozenset({0})
    ok = check_affinity("l", "llamacpp", {10: on1, 11: on1}, on1, on0, host_cpus)
    assert ok is not None and ok.status == "pass" and "2 server thread(s) may run on CPU(s) 1" in ok.message
    # what the issue saw: every llama-server thread on CPU 0, the client's core, despite --cpu-range 1-1
    bad = check_affinity("l", "llamacpp", {10: on0, 11: on0}, on1, on0, host_cpus)
    assert (
        bad is not None and bad.status == "fail" and "2 thread(s) outside the engine's cores 1" in bad.message
    )
    inherited = check_affinity("l", "llamacpp", {10: on0}, None, on0, host_cpus)
    assert inherited is not None and inherited.status == "warn" and "cpu_range: 1" in inherited.fix
    assert check_affinity("l", "llamacpp", {10: host_cpus}, None, host_cpus, host_cpus).status == "pass"  # type: ignore[union-attr]
    assert check_affinity("l", "llamacpp", {}, on1, on0, host_cpus) is None


THREADS = "import threading, time\n[threading.Thread(target=time.sleep, args=(30,)).start() for _ in range(3)]\ntime.sleep(30)"


@TWO_CORES
def test_launch_pins_every_thread_whatever_the_launchers_affinity() -> None:
    """The launcher on core 0 (as under `taskset -c 0`), the server named core 1: its threads, the
    ones it starts after exec included, may run on core 1 only."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})  # this thread forks: as `taskset -c 0 specsweep run`
    try:
        p = spawn.popen([sys.executable, "-c", THREADS], stdout=subprocess.DEVNULL, env=dict(os.environ),
                        cpus=frozenset({1}))  # fmt: skip
    finally:
        os.sched_setaffinity(0, before)
    try:
        deadline = time.monotonic() + 10
        while len(threads := affinity.tree_cpus(p.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(threads) >= 4 and set(threads.values()) == {frozenset({1})}, threads
    finally:
        p.kill()
        p.wait()


@TWO_CORES
def test_the_client_moves_off_the_engines_cores_and_back() -> None:
    before = affinity.client_cpus()
    engine = frozenset({max(before)})
    with affinity.client_off(engine) as mine:
        assert mine == before - engine
        assert all(c == mine for c in affinity.thread_cpus(os.getpid()).values())
    assert affinity.client_cpus() == before
    with affinity.client_off(None) as mine:
        assert mine == before


def test_a_core_the_kernel_refuses_is_one_clear_launch_error(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cgroup may hide cores the machine lists: pinning there fails at launch, naming the cores."""
    from pathlib import Path

    from specsweep.errors import ServerError
    from specsweep.experiment.config import expand_configs
    from specsweep.experiment.loader import parse_experiment
    from specsweep.servers.process import ManagedServer

    exp = parse_experiment({"name": "pin", "servers": [{**llama(threads=1, cpu_range="1000-1000"), "binary": sys.executable}],
                            "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}]})  # fmt: skip
    (cfg,) = expand_configs(exp)
    monkeypatch.setattr(affinity, "host_cpus", lambda: frozenset(range(1001)))  # the machine lists it
    srv = ManagedServer(cfg, Path(str(tmp_path)) / "log.txt", ready_timeout_s=5)
    with pytest.raises(ServerError, match=r"cannot pin it to CPU\(s\) 1000 here"):
        srv.start()
    assert srv.proc is None
