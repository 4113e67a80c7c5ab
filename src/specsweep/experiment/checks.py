"""Checks on experiment files that keep hostile or careless input out of a run (docs/reliability.md).

- ``load_yaml``: YAML text -> data, refusing duplicate keys, nesting deeper than ``MAX_DEPTH``, and
  alias bombs (a document whose aliases expand to more than ``MAX_NODES`` nodes).
- Field types for the models in specsweep.experiment.config: finite floats, strict ints (``"1"`` or ``true`` is
  not a concurrency level), NUL-free strings for argv and env, env names without ``=``, HTTP base
  URLs (``base_url_problem``: no query string, which would hide the endpoint paths).
- ``check_plan_size``: the grid's size, computed before anything is expanded, with an upper bound.

Files are read by ``read_yaml_file``: a regular file (never a FIFO or a device) of at most
``MAX_FILE_BYTES``; and ``load_yaml`` also bounds the bytes of values the aliases expand to
(``MAX_EXPANDED_BYTES``), counting both bounds while the document is composed, so a bomb stops at
the alias that passes one.

Each error names the key path, the bad value and what is accepted (the loader turns pydantic errors
into a ConfigError).
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StrictInt

from specsweep.errors import ConfigError, one_of

# strict YAML reading, shared with the traffic, profile and scenario files
from specsweep.store.strict_yaml import MAX_DEPTH as MAX_DEPTH
from specsweep.store.strict_yaml import MAX_EXPANDED_BYTES as MAX_EXPANDED_BYTES
from specsweep.store.strict_yaml import MAX_FILE_BYTES as MAX_FILE_BYTES
from specsweep.store.strict_yaml import MAX_NODES as MAX_NODES
from specsweep.store.strict_yaml import load_yaml as load_yaml
from specsweep.store.strict_yaml import read_yaml_file as read_yaml_file

MAX_CONFIGS = 10_000  # server launches in one experiment
MAX_RUNS = 1_000_000  # cells x repeats in one experiment
MAX_CONCURRENCY = 1_000_000
MAX_REPEATS = 10_000


# ---- field types ---------------------------------------------------------------------------------
def _no_nul(v: str) -> str:
    if "\0" in v:
        raise ValueError(f"contains a NUL byte (\\0), which no command line or environment can carry: {v!r}")
    return v


def _env_name(v: str) -> str:
    _no_nul(v)
    if not v or "=" in v:
        raise ValueError(f"environment variable name {v!r} must be non-empty and without '='")
    return v


def base_url_problem(v: str) -> str | None:
    """What is wrong with ``v`` as a server's base URL (``url:``, ``bench --base-url``), or None.

    The client appends endpoint paths to a base URL (``/health``, ``/v1/models``,
    ``/v1/completions``), so a query string or a fragment would end up before the path
    (``http://h/?k=v/health``): the server would never be asked the right thing and readiness would
    wait out ``ready_s``. Neither is echoed: a query often carries a key (``?api_key=...``)."""
    bad = next((c for c in v if c.isspace() or unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:  # http.client refuses them mid-run (InvalidURL); say so when the file loads
        return (
            f"a URL cannot hold whitespace or control characters: {_no_query(v)!r} has "
            f"U+{ord(bad):04X} ({unicodedata.name(bad, 'a control character').lower()}); "
            "expected http://host[:port][/path], with a space written as %20"
        )
    try:
        parts = urlsplit(v)
        _ = parts.port  # a port that is not a number in range raises ValueError
    except ValueError as e:
        return f"not a valid URL {_no_query(v)!r}: {e}; expected http://host[:port][/path]"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"not an http(s) URL: {_no_query(v)!r}; expected http://host[:port][/path]"
    extra = [
        what for what, sep in (("a query string ('?...')", "?"), ("a fragment ('#...')", "#")) if sep in v
    ]
    if extra:
        return (
            f"{' and '.join(extra)} cannot be part of a base URL ({_no_query(v)!r}): specsweep appends "
            "the endpoint paths (/health, /v1/models, /v1/completions) to it, so no request would reach "
            "them; expected http://host[:port][/path] (send an API key as OPENAI_API_KEY, or put "
            "credentials in the URL as http://user:password@host)"
        )
    return None


def _no_query(v: str) -> str:
    """``v`` as an error may show it: without what follows a ``?`` or ``#`` and without the password
    of its userinfo (either may be a secret)."""
    cut = min((i for i in (v.find("?"), v.find("#")) if i >= 0), default=len(v))
    shown = v[:cut] + ("..." if cut < len(v) else "")
    shown = re.sub(r"(;[^;=/]*=)[^;/]*", r"\1***", shown)  # matrix parameters (;api_key=...)
    return re.sub(r"(//[^/@:]*):[^/@]*@", r"\1:***@", shown)


def _http_url(v: str) -> str:
    _no_nul(v)
    problem = base_url_problem(v)
    if problem:
        raise ValueError(problem)
    return v


ArgStr = Annotated[str, AfterValidator(_no_nul)]
EnvName = Annotated[str, AfterValidator(_env_name)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]


def _between(what: str, lo: int, hi: int) -> Any:
    def check(v: int) -> int:
        if not lo <= v <= hi:
            raise ValueError(f"{what} must be >= {lo} and <= {hi:,}, got {v:,}")
        return v

    return AfterValidator(check)


# Strict: "1", true or 8.5 is not an integer here (pydantic's lax mode would take them).
Concurrency = Annotated[StrictInt, _between("concurrency levels", 1, MAX_CONCURRENCY)]


def _num_prompts(v: Any) -> Any:
    """An integer >= 1, or a mapping {concurrency level: integer >= 1}."""
    if v is None:
        return v
    if isinstance(v, dict):  # JSON (a manifest's config) has string keys: "8" -> 8
        keys = [int(k) if isinstance(k, str) and k.isdigit() else k for k in v]
        bad = [k for k in keys if not isinstance(k, int) or isinstance(k, bool)]
        if bad:
            raise ValueError(
                f"num_prompts mapping keys must be concurrency levels (integers), got {bad[0]!r}"
            )
        v = dict(zip(keys, v.values(), strict=True))
    items = v.items() if isinstance(v, dict) else [(None, v)]
    for level, n in items:
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 10**9:
            where = f" for concurrency {level!r}" if level is not None else ""
            raise ValueError(
                f"num_prompts{where} must be an integer >= 1 and <= 1,000,000,000, got {n!r} "
                "(give one integer, or a mapping {concurrency level: prompts})"
            )
    return v


NumPrompts = Annotated[Any, AfterValidator(_num_prompts)]
Seed = Annotated[StrictInt, _between("seed", 0, 2**63 - 1)]
Repeats = Annotated[StrictInt, _between("repeats", 1, MAX_REPEATS)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
PositiveMs = Annotated[float, Field(gt=0, allow_inf_nan=False)]


# ---- size ------------------------------------------------------------------------------------------
def check_plan_size(exp: Any, file: str | None) -> None:
    """Refuse an experiment whose expansion is unreasonable, before expanding it (``exp``: a
    specsweep.experiment.config.Experiment): configurations per server and in all, and cells x repeats."""
    configs = 0
    runs = 0
    for i, srv in enumerate(exp.servers):
        n = math.prod(len(v) for v in srv.grid.values())
        if n > MAX_CONFIGS:
            raise ConfigError(
                f"the grid expands to {n:,} configurations; at most {MAX_CONFIGS:,} are accepted",
                file=file,
                path=f"servers[{i}].grid",
            )
        cells = sum(
            len(w.scenarios) * len(w.concurrency)
            for w in exp.workloads
            if w.servers is None or srv.name in w.servers
        )
        configs += n
        runs += n * cells * exp.repeats
    if configs > MAX_CONFIGS:
        raise ConfigError(
            f"the servers expand to {configs:,} configurations; at most {MAX_CONFIGS:,} are accepted",
            file=file,
            path="servers",
        )
    if runs > MAX_RUNS:
        raise ConfigError(
            f"the experiment plans {runs:,} cell runs (configurations x cells x repeats); "
            f"at most {MAX_RUNS:,} are accepted",
            file=file,
            path="repeats" if exp.repeats > 1 else "workloads",
        )


def check_baseline(baseline: str | None, labels: list[str], file: str | None) -> None:
    """``report.baseline`` must name a configuration (else the reports would be skipped at the end)."""
    if baseline is not None and baseline not in set(labels):
        raise ConfigError(
            f"unknown config label: {one_of(baseline, labels)}", file=file, path="report.baseline"
        )
