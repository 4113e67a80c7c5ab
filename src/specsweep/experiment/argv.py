"""Launch command lines, per server kind: pure functions ServerConfig -> argv list (never a shell).

Parameters reach the command line in one of two ways:
1. referenced as ``{name}`` in a template (``args``, ``argv``, ``model``, ``profile``, ``env``,
   ``speculative_config``): substituted there, element by element;
2. otherwise mapped by the kind: vLLM's speculative keys go into ``--speculative-config`` JSON,
   SGLang's and llama.cpp's known speculative keys become their flags, and any other parameter
   becomes ``--kebab-case VALUE`` (``True`` -> the bare flag, ``False`` -> omitted).
   Kind ``command`` maps nothing: every parameter must appear in its ``argv`` template.
   Kind ``sim`` maps ``profile``, ``time_scale`` and the ``sim serve`` flags in SIM_FLAGS; its other
   parameters only describe the profile (``spec_tokens: 3`` of ``v4flash-dspark-st3``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specsweep.experiment.config import Scalar, ServerConfig
from specsweep.experiment.templates import expand_env_refs, placeholders, substitute, substitute_value

# vLLM: parameter -> key of the --speculative-config JSON.
VLLM_SPEC_KEYS = {
    "spec_tokens": "num_speculative_tokens",
    "num_speculative_tokens": "num_speculative_tokens",
    "draft_model": "model",
    "prompt_lookup_max": "prompt_lookup_max",
    "prompt_lookup_min": "prompt_lookup_min",
    "draft_tensor_parallel_size": "draft_tensor_parallel_size",
}
SGLANG_FLAGS = {
    "draft_model": "--speculative-draft-model-path",
    "num_steps": "--speculative-num-steps",
    "eagle_topk": "--speculative-eagle-topk",
    "topk": "--speculative-eagle-topk",
    "num_draft_tokens": "--speculative-num-draft-tokens",
    "draft_tokens": "--speculative-num-draft-tokens",
}
# llama.cpp (as vendored by llama-cpp-python 0.3.36) renamed --draft-max/--draft-min to
# --spec-draft-n-max/--spec-draft-n-min and exits on the old names. spec_tokens is the draft-model
# length; n-gram speculation takes its length from --spec-ngram-simple-size-m (set it by name).
LLAMACPP_FLAGS = {
    "draft_model": "--model-draft",
    "spec_tokens": "--spec-draft-n-max",
    "draft_max": "--spec-draft-n-max",
    "draft_min": "--spec-draft-n-min",
    "draft_p_min": "--spec-draft-p-min",
}


def kebab_flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _flags(items: dict[str, Scalar], known: dict[str, str]) -> list[str]:
    out: list[str] = []
    for k, v in items.items():
        flag = known.get(k, kebab_flag(k))
        if v is True:
            out.append(flag)
        elif v is False:
            continue
        else:
            out += [flag, str(v)]
    return out


def python_exe(cfg: ServerConfig) -> str:
    s = cfg.spec
    if s.python:
        return s.python
    if s.venv:
        return str(Path(s.venv) / "bin" / "python")
    return sys.executable


def _tool(cfg: ServerConfig, default: str) -> str:
    s = cfg.spec
    if s.binary:
        return s.binary
    if s.venv:
        return str(Path(s.venv) / "bin" / default)
    return default


def _referenced(cfg: ServerConfig) -> set[str]:
    s = cfg.spec
    refs = placeholders(s.args) | placeholders(s.argv or []) | placeholders(s.model or "")
    refs |= placeholders(s.profile or "") | placeholders(s.speculative_config or {})
    refs |= placeholders(dict(s.env))
    return refs


def _mapped(cfg: ServerConfig) -> dict[str, Scalar]:
    """Parameters that no template references: the kind maps them."""
    refs = _referenced(cfg)
    return {k: v for k, v in cfg.params.items() if k not in refs}


def _vllm(cfg: ServerConfig, vals: dict[str, Any]) -> list[str]:
    s = cfg.spec
    model = vals["model"]
    if s.entrypoint == "module":
        argv = [python_exe(cfg), "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    else:
        argv = [_tool(cfg, "vllm"), "serve", model]
    argv += ["--host", s.host, "--port", str(vals["port"])]
    if s.tp is not None:
        argv += ["--tensor-parallel-size", str(s.tp)]
    if s.kv_cache_dtype:
        argv += ["--kv-cache-dtype", s.kv_cache_dtype]
    spec: dict[str, Any] = {}
    if s.method:
        spec["method"] = s.method
    other: dict[str, Scalar] = {}
    for k, v in _mapped(cfg).items():
        if k in VLLM_SPEC_KEYS:
            spec[VLLM_SPEC_KEYS[k]] = v
        else:
            other[k] = v
    if s.speculative_config:
        spec.update(substitute_value(s.speculative_config, vals))
    if spec:
        argv += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    return argv + _flags(other, {})


def _sglang(cfg: ServerConfig, vals: dict[str, Any]) -> list[str]:
    s = cfg.spec
    argv = [python_exe(cfg), "-m", "sglang.launch_server", "--model-path", vals["model"]]
    argv += ["--host", s.host, "--port", str(vals["port"])]
    if s.tp is not None:
        argv += ["--tp", str(s.tp)]
    if s.kv_cache_dtype:
        argv += ["--kv-cache-dtype", s.kv_cache_dtype]
    if s.method:
        argv += ["--speculative-algorithm", s.method.upper()]
    argv += _flags(_mapped(cfg), SGLANG_FLAGS)
    return [*argv, "--enable-metrics"]


def _llamacpp(cfg: ServerConfig, vals: dict[str, Any]) -> list[str]:
    s = cfg.spec
    argv = [_tool(cfg, "llama-server"), "-m", vals["model"], "--host", s.host, "--port", str(vals["port"])]
    return [*argv, "--metrics", *_flags(_mapped(cfg), LLAMACPP_FLAGS)]


# sim serve flags a parameter may set; other sim parameters describe the profile (metadata only).
SIM_FLAGS = ("seed", "faults", "served_model_name", "max_model_len", "truth")


def _sim(cfg: ServerConfig, vals: dict[str, Any]) -> list[str]:
    s = cfg.spec
    mapped = _mapped(cfg)
    profile = mapped.pop("profile", None)
    if profile is None:
        profile = substitute(s.profile or "", vals)
    argv = [python_exe(cfg), "-m", "specsweep", "sim", "serve", "--profile", str(profile)]
    argv += ["--host", s.host, "--port", str(vals["port"])]
    ts = mapped.pop("time_scale", s.time_scale)
    if ts is not None:
        argv += ["--time-scale", str(ts)]
    return argv + _flags({k: v for k, v in mapped.items() if k in SIM_FLAGS}, {})


def _command(cfg: ServerConfig, vals: dict[str, Any]) -> list[str]:
    unused = sorted(_mapped(cfg))
    if unused:
        raise ValueError(
            f"parameter(s) {unused} are not used: kind 'command' passes parameters only through "
            f"placeholders, e.g. '{{{unused[0]}}}' in argv or args"
        )
    return [substitute(a, vals) for a in cfg.spec.argv or []]


BUILDERS: dict[str, Callable[[ServerConfig, dict[str, Any]], list[str]]] = {
    "vllm": _vllm,
    "sglang": _sglang,
    "llamacpp": _llamacpp,
    "sim": _sim,
    "command": _command,
}


def build_argv(cfg: ServerConfig, port: int | str) -> list[str] | None:
    """The server's argv (None for kind 'url': nothing to start). Raises TemplateError/ValueError."""
    if cfg.spec.kind == "url":
        return None
    vals = cfg.values(port=port)
    vals.setdefault("model", "")
    argv = BUILDERS[cfg.spec.kind](cfg, vals)
    return argv + [substitute(a, vals) for a in cfg.spec.args]


def check_templates(cfg: ServerConfig) -> None:
    """Every template of ``cfg`` resolves and every parameter reaches the command line: builds its
    argv with a stand-in port. Raises TemplateError/ValueError naming the bad placeholder or
    parameter (specsweep.experiment.loader runs it on every configuration of a plan)."""
    build_argv(cfg, port=1)


def build_env(cfg: ServerConfig, port: int | str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: ours, plus the experiment's (``${VAR}`` from ours), plus the venv."""
    env = dict(os.environ if base is None else base)
    vals = cfg.values(port=port)
    vals.setdefault("model", "")
    for k, v in cfg.spec.env.items():
        env[k] = substitute(expand_env_refs(v, env), vals)
    if cfg.spec.venv:
        venv = str(Path(cfg.spec.venv).resolve())
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def version_argv(cfg: ServerConfig) -> list[str] | None:
    """A command that prints the engine version, for when the server has no /version endpoint."""
    kind = cfg.spec.kind
    if kind == "vllm":
        if cfg.spec.entrypoint == "module":
            return [python_exe(cfg), "-c", "import vllm; print(vllm.__version__)"]
        return [_tool(cfg, "vllm"), "--version"]
    if kind == "sglang":
        return [python_exe(cfg), "-c", "import sglang; print(sglang.__version__)"]
    if kind == "llamacpp":
        return [_tool(cfg, "llama-server"), "--version"]
    if kind == "sim":
        return [python_exe(cfg), "-m", "specsweep", "--version"]
    return None


def flag(argv: list[str], *names: str) -> str | None:
    """The value of ``--name V`` / ``--name=V`` (the last one wins); "" for a bare flag."""
    val = None
    for i, a in enumerate(argv):
        for n in names:
            if a == n:
                nxt = argv[i + 1] if i + 1 < len(argv) else ""
                val = "" if nxt.startswith("--") else nxt
            elif a.startswith(n + "="):
                val = a.split("=", 1)[1]
    return val


def engine_of(cfg: ServerConfig, argv: list[str]) -> str:
    """vllm | sglang | llamacpp | sim | other (a ``command`` running a vLLM fork counts as vllm)."""
    kind = cfg.spec.kind
    if kind == "command" and argv:
        exe = Path(argv[0]).name
        joined = " ".join(argv[:4])
        if exe == "vllm" or "vllm" in joined:
            return "vllm"
        if "sglang" in joined:
            return "sglang"
        if exe == "llama-server":
            return "llamacpp"
    return kind if kind in ("vllm", "sglang", "llamacpp", "sim") else "other"


def base_url(cfg: ServerConfig, port: int | str) -> str:
    if cfg.spec.kind == "url":
        return (cfg.spec.url or "").rstrip("/")
    host = cfg.spec.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"
