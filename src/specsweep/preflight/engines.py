"""Checks of the engines' own settings: executables and versions, model identity across compared
configs, CUDA-graph capture sizes, SGLang's DeepGEMM JIT cache, prefix caching."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from specsweep.analysis.recommend import CUDA_GRAPH_CAP, spec_tokens
from specsweep.experiment.argv import build_argv, build_env, engine_of, flag, version_argv
from specsweep.experiment.config import Plan, ServerConfig
from specsweep.preflight.host import Host
from specsweep.preflight.model import Check
from specsweep.store.fingerprint import config_json_sha256

SGLANG_GRAPH_BS_DEFAULT = 160  # sglang's --cuda-graph-max-bs default on large-memory GPUs (it varies)


def argv_of(cfg: ServerConfig) -> list[str]:
    try:
        return build_argv(cfg, cfg.spec.port or 8000) or []
    except ValueError:
        return []


__all__ = ["argv_of", "engine_of", "flag", "is_cpu_engine"]


def is_cpu_engine(cfg: ServerConfig, argv: list[str]) -> bool:
    """llama.cpp, the simulator, and vLLM's CPU build (its venv, python or env says cpu)."""
    eng = engine_of(cfg, argv)
    if eng in ("llamacpp", "sim"):
        return True
    if eng != "vllm":
        return False
    hints = " ".join([*argv[:2], cfg.spec.venv or "", cfg.spec.python or "", *cfg.spec.env]).lower()
    return "cpu" in hints


def check_executables(plan: Plan, host: Host, versions: bool = True) -> list[Check]:
    out = []
    for cfg in plan.configs:
        argv = argv_of(cfg)
        if not argv:
            out.append(Check("executable", cfg.label, "pass", "nothing to start (an existing URL)"))
            continue
        exe = argv[0]
        env = build_env(cfg, 0)
        found = host.which(exe)  # shutil.which: a path is checked as it is, a name on PATH
        if found is None and cfg.spec.venv:
            found = host.which(os.path.join(cfg.spec.venv, "bin", exe))
        if found is None:
            out.append(Check("executable", cfg.label, "fail", f"executable {exe!r} not found (PATH={env.get('PATH', '')[:80]}...)",
                             "install the engine, or set the server's 'binary' / 'venv' / argv[0] to its path"))  # fmt: skip
            continue
        ver = None
        va = version_argv(cfg) if versions else None
        if va:
            text = host.run(va)
            ver = text.splitlines()[-1].strip() if text else None
        if versions and va and ver is None:
            out.append(Check("executable", cfg.label, "warn", f"{found} found but '{' '.join(va)}' printed no version",
                             "check the engine starts: run the version command by hand"))  # fmt: skip
        else:
            out.append(
                Check("executable", cfg.label, "pass", f"{found}" + (f", version {ver}" if ver else ""))
            )
    return out


def sim_profile_of(argv: list[str]) -> str | None:
    """The ``--profile`` a ``sim serve`` command line names."""
    return flag(argv, "--profile") or None


def check_sim_profiles(plan: Plan, host: Host | None = None) -> list[Check]:
    """A simulated config's profile must load (a shipped name or a profile file): else its server
    exits at launch and every cell of it fails."""
    from specsweep.errors import SpecsweepError
    from specsweep.sim.profile import load_profile

    out = []
    for cfg in plan.configs:
        argv = argv_of(cfg)
        if cfg.spec.kind != "sim" or (name := sim_profile_of(argv)) is None:
            continue
        try:
            prof = load_profile(name)
        except SpecsweepError as e:
            out.append(Check("sim_profile", cfg.label, "fail", str(e),
                             "name a shipped profile (listed above) or a profile file (.yaml), e.g. one "
                             "written by specsweep sim fit"))  # fmt: skip
            continue
        out.append(Check("sim_profile", cfg.label, "pass", f"profile {prof.name} (k={prof.k})"))
    return out


def _model_fingerprint(model: str) -> str:
    """A local model dir's config.json hash (same weights dir under two names still match); else the name."""
    h = config_json_sha256(model)
    return f"config.json sha256 {h[:16]}" if h else model


def check_models(plan: Plan, host: Host) -> list[Check]:
    """Compared configs must serve the same model at the same revision (a draft model may differ)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for cfg in plan.configs:
        argv = argv_of(cfg)
        if cfg.spec.kind in ("sim", "url"):
            continue
        model = (
            cfg.spec.model
            or flag(argv, "--model", "-m")
            or (argv[2] if len(argv) > 2 and argv[1] == "serve" else "")
        )
        rev = str(cfg.params.get("revision") or flag(argv, "--revision") or "default")
        seen.setdefault((_model_fingerprint(model) if model else "(none)", rev), []).append(cfg.label)
    if not seen:
        return [
            Check("model_identity", None, "pass", "no served model to compare (simulated or URL configs)")
        ]
    if len(seen) == 1:
        what = next(iter(seen))
        return [Check("model_identity", None, "pass", f"all configs serve {what[0]} (revision {what[1]})")]
    groups = "; ".join(f"{m} rev {r}: {', '.join(labs)}" for (m, r), labs in seen.items())
    absent = [m for m, _r in seen if _local_path(m) and not Path(os.path.expanduser(m)).exists()]
    if absent:
        return [Check("model_identity", None, "skip", f"cannot compare the served models: {', '.join(absent)} "
                      f"not on this host ({groups})", "run the pre-flight where the model directories are")]  # fmt: skip
    return [Check("model_identity", None, "warn", f"the compared configs serve different models/revisions: {groups}",
                  "serve the same target weights and revision in every config (pin --revision); if a fork needs "
                  "its own copy, check its config.json matches the base model's")]  # fmt: skip


def _local_path(model: str) -> bool:
    """A filesystem path, not a hub id (``org/name``)."""
    return model.startswith(("/", "./", "../", "~")) or model.endswith(".gguf")


def _spec_k(cfg: ServerConfig, argv: list[str]) -> int | None:
    params: dict[str, Any] = dict(cfg.params)
    sc = flag(argv, "--speculative-config")
    if sc:
        with contextlib.suppress(ValueError):
            params.update(json.loads(sc))
    for n in ("--spec-tokens", "--num-speculative-tokens", "--speculative-num-draft-tokens"):
        v = flag(argv, n)
        if v and v.isdigit():
            return int(v) - (1 if "draft-tokens" in n else 0)
    return spec_tokens(cfg.method or "", params)


def _compilation_cap(argv: list[str]) -> str | None:
    """``max_cudagraph_capture_size`` of a ``--compilation-config`` JSON."""
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        v = json.loads(flag(argv, "--compilation-config") or "{}").get("max_cudagraph_capture_size")
        return str(v) if isinstance(v, int) else None
    return None


def check_cuda_graphs(plan: Plan, host: Host) -> list[Check]:
    """vLLM captures graphs up to max_cudagraph_capture_size tokens per step: a step verifies c*(k+1)
    tokens at concurrency c, so beyond the cap it runs eagerly (the reference's c=96/128 cliff)."""
    out = []
    for cfg in plan.configs:
        argv = argv_of(cfg)
        eng = engine_of(cfg, argv)
        cells = plan.cells.get(cfg.label) or []
        if eng not in ("vllm", "sglang") or not cells or is_cpu_engine(cfg, argv):  # CPU: no CUDA graphs
            continue
        c_max = max(c.max_concurrency for c in cells)
        k = _spec_k(cfg, argv) or 0
        if flag(argv, "--enforce-eager", "--disable-cuda-graph") is not None:
            out.append(Check("cuda_graph", cfg.label, "warn", "CUDA graphs are disabled: every step runs eagerly",
                             "drop --enforce-eager / --disable-cuda-graph unless measuring eager mode on purpose"))  # fmt: skip
            continue
        if eng == "vllm":
            v = flag(argv, "--max-cudagraph-capture-size", "--max-seq-len-to-capture") or _compilation_cap(
                argv
            )
            cap = int(v) if v and v.isdigit() else CUDA_GRAPH_CAP
            need = c_max * (k + 1)
            if need > cap:
                out.append(Check("cuda_graph", cfg.label, "warn",
                                 f"concurrency {c_max} x (spec tokens {k} + 1) = {need} tokens per step > capture size {cap}: "
                                 f"levels from {cap // (k + 1) + 1} run without CUDA graphs",
                                 f"--max-cudagraph-capture-size {need} (or --compilation-config "
                                 f"'{{\"max_cudagraph_capture_size\": {need}}}')"))  # fmt: skip
            else:
                out.append(
                    Check("cuda_graph", cfg.label, "pass", f"{need} tokens per step <= capture size {cap}")
                )
        else:
            v = flag(argv, "--cuda-graph-max-bs")
            bs_cap = int(v) if v and v.isdigit() else None
            if (bs_cap or SGLANG_GRAPH_BS_DEFAULT) < c_max:
                out.append(Check("cuda_graph", cfg.label, "warn",
                                 f"concurrency {c_max} > cuda-graph-max-bs {bs_cap or f'default (~{SGLANG_GRAPH_BS_DEFAULT})'}",
                                 f"--cuda-graph-max-bs {c_max}"))  # fmt: skip
            else:
                out.append(Check("cuda_graph", cfg.label, "pass", f"batch {c_max} within cuda-graph-max-bs {bs_cap or 'default'}"))  # fmt: skip
    return out


def deep_gemm_cache_dirs(env: dict[str, str]) -> list[Path]:
    root = env.get("SGLANG_JIT_CACHE_ROOT") or os.path.join(env.get("HOME", "~"), ".cache", "sglang")
    dirs = [Path(root) / "deep_gemm"]
    if env.get("DG_JIT_CACHE_DIR"):
        dirs.insert(0, Path(env["DG_JIT_CACHE_DIR"]))
    dirs.append(Path(env.get("HOME", "~")) / ".deep_gemm")
    return dirs


def check_deep_gemm(plan: Plan, host: Host) -> list[Check]:
    """SGLang JIT-compiles DeepGEMM kernels on first use: uncompiled, the first requests of each new
    shape stall for seconds (the reference EAGLE runs asked whether compile_deep_gemm had run)."""
    out = []
    for cfg in plan.configs:
        argv = argv_of(cfg)
        if engine_of(cfg, argv) != "sglang":
            continue
        env = {**host.env, **build_env(cfg, 0, base=host.env)}
        if env.get("SGL_ENABLE_JIT_DEEPGEMM", "1").lower() in ("0", "false"):
            out.append(
                Check("deep_gemm", cfg.label, "pass", "DeepGEMM JIT disabled (SGL_ENABLE_JIT_DEEPGEMM=0)")
            )
            continue
        found = [d for d in deep_gemm_cache_dirs(env) if d.is_dir() and any(d.iterdir())]
        if found:
            out.append(Check("deep_gemm", cfg.label, "pass", f"DeepGEMM kernel cache present: {found[0]}"))
        else:
            tp = cfg.spec.tp or 1
            out.append(Check("deep_gemm", cfg.label, "warn",
                             "no DeepGEMM kernel cache: the first requests of each shape JIT-compile (seconds of stall)",
                             f"python3 -m sglang.compile_deep_gemm --model-path {cfg.spec.model or 'MODEL'} --tp {tp} "
                             "--trust-remote-code (same env as the server); the warmup check's first-requests probe "
                             "shows a stall in the results"))  # fmt: skip
    return out


def prefix_caching_state(cfg: ServerConfig, argv: list[str]) -> str | None:
    eng = engine_of(cfg, argv)
    if eng == "vllm":
        if flag(argv, "--no-enable-prefix-caching") is not None:
            return "off"
        return "on" if flag(argv, "--enable-prefix-caching") is not None else "on (default)"
    if eng == "sglang":
        return "off" if flag(argv, "--disable-radix-cache") is not None else "on (default)"
    if eng == "llamacpp":
        return "off" if flag(argv, "--no-cache-prompt") is not None else "on (default)"
    return None


def check_prefix_caching(plan: Plan, host: Host) -> list[Check]:
    """Configs compared with prefix caching on in some and off in others measure different things; on,
    repeated prompts (warmup reusing measured prompts) hit the cache (the reference's long_context c=4
    anomaly: faster than c=1 and c=8)."""
    states = {}
    for cfg in plan.configs:
        st = prefix_caching_state(cfg, argv_of(cfg))
        if st is not None:
            states[cfg.label] = st
    if not states:
        return []
    kinds = {s.split()[0] for s in states.values()}
    listed = ", ".join(f"{k}: {v}" for k, v in states.items())
    if len(kinds) > 1:
        return [Check("prefix_caching", None, "fail", f"prefix caching differs between compared configs ({listed})",
                      "set it the same everywhere: vLLM --enable-prefix-caching / --no-enable-prefix-caching, "
                      "SGLang --disable-radix-cache, llama.cpp --no-cache-prompt")]  # fmt: skip
    if "on" in kinds:
        return [Check("prefix_caching", None, "pass", f"prefix caching on in every config ({listed}): repeated "
                      "prompts are served from cache and look faster",
                      "keep prompts unique per request (random datasets, a fresh seed per repeat) or turn caching "
                      "off to measure raw speed; read a level faster than its neighbours as a cache hit")]  # fmt: skip
    return [Check("prefix_caching", None, "pass", f"prefix caching off everywhere ({listed})")]
