"""Checks on experiment files that keep hostile or careless input out of a run (docs/reliability.md).

- ``load_yaml``: YAML text -> data, refusing duplicate keys, nesting deeper than ``MAX_DEPTH``, and
  alias bombs (a document whose aliases expand to more than ``MAX_NODES`` nodes).
- Field types for the models in specsweep.config: finite floats, strict ints (``"1"`` or ``true`` is
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

import yaml
from pydantic import AfterValidator, Field, StrictInt
from yaml.composer import Composer
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode

from specsweep import inputs
from specsweep.errors import ConfigError, one_of

MAX_DEPTH = 64  # an experiment file needs about 6 levels
MAX_NODES = 1_000_000  # YAML nodes after aliases are expanded
MAX_FILE_BYTES = 1 << 20  # an experiment file is a few KB; parsing 1 MiB of YAML takes seconds
MAX_EXPANDED_BYTES = 4 << 20  # bytes of values after aliases are expanded
MAX_CONFIGS = 10_000  # server launches in one experiment
MAX_RUNS = 1_000_000  # cells x repeats in one experiment
MAX_CONCURRENCY = 1_000_000
MAX_REPEATS = 10_000


# ---- YAML ---------------------------------------------------------------------------------------
class _Bound(yaml.YAMLError):
    """A bound on the expanded document was passed (composition stops at once)."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that counts nesting depth, refuses duplicate keys, and keeps a running count of the
    document as it would be once its aliases are expanded: values (nodes) and bytes of scalar values.
    An alias adds the whole size of the node it names; each node's size is known once it is composed
    (an alias to a node still being composed is a recursive alias). So an alias bomb is refused as
    soon as it passes ``MAX_NODES`` or ``MAX_EXPANDED_BYTES``, before the rest of the file is read."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._bytes = 0
        self._sizes: dict[int, tuple[int, int]] = {}  # id(anchored node) -> (nodes, bytes), once composed

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise yaml.YAMLError(
                f"nesting deeper than {MAX_DEPTH} levels (line {mark.line + 1}); "
                "an experiment file needs about 6"
            )
        try:
            if self.check_event(AliasEvent):
                mark = self.peek_event().start_mark
                node = Composer.compose_node(self, parent, index)
                size = self._sizes.get(id(node))
                if size is None:
                    raise yaml.YAMLError(f"a recursive alias (line {mark.line + 1}): it would expand forever")
                self._count(*size)
                return node
            anchored = getattr(self.peek_event(), "anchor", None) is not None
            start = (self._nodes, self._bytes)
            node = Composer.compose_node(self, parent, index)
            self._count(1, len(node.value) if isinstance(node, ScalarNode) else 0)
            if anchored:  # only a node with an anchor can be named by an alias
                self._sizes[id(node)] = (self._nodes - start[0], self._bytes - start[1])
            return node
        finally:
            self._depth -= 1

    def _count(self, nodes: int, size: int) -> None:
        self._nodes += nodes
        self._bytes += size
        if self._nodes > MAX_NODES:
            raise _Bound(
                f"the YAML aliases (*name) expand to more than {MAX_NODES:,} values (bound on values "
                "after expansion); write the values out or use fewer aliases"
            )
        if self._bytes > MAX_EXPANDED_BYTES:
            raise _Bound(
                f"the YAML aliases (*name) expand to more than {MAX_EXPANDED_BYTES:,} bytes of values "
                "(bound on the expanded size); write the values out or use fewer aliases"
            )

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
                seen.setdefault(key, line)
            except TypeError:  # an unhashable key: the constructor reports it
                continue
            if first is not None:
                raise yaml.YAMLError(
                    f"duplicate key {key!r} (line {line}; first at line {first}); "
                    "each key may appear once in a mapping"
                )
        return super().construct_mapping(node, deep=deep)


def read_yaml_file(path: inputs.Source, what: str) -> Any:
    """A YAML file from outside (``what``: "experiment file", "traffic file", ...) -> data: a regular
    file of at most MAX_FILE_BYTES (the rest is never read), UTF-8, then ``load_yaml``."""
    try:
        raw = inputs.read_bytes(path, MAX_FILE_BYTES)
    except OSError as e:
        raise ConfigError(f"cannot read {what}: {e.strerror or e}", file=str(path)) from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start}): {e.reason}", file=str(path)) from e
    return load_yaml(text, file=str(path))


def load_yaml(text: str, *, file: str | None = None) -> Any:
    """One YAML document -> data; a ConfigError for bad YAML, duplicate keys, nesting too deep, or
    aliases that expand past MAX_NODES nodes or MAX_EXPANDED_BYTES bytes (a "billion laughs" file)."""
    try:
        loader = _StrictLoader(text)
    except yaml.YAMLError as e:  # e.g. a control character the reader refuses
        raise ConfigError(f"not valid YAML: {e}", file=file) from e
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return loader.construct_document(node)
    except _Bound as e:
        raise ConfigError(str(e), file=file) from e
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {e}", file=file) from e
    except RecursionError as e:  # belt and braces: MAX_DEPTH should stop it first
        raise ConfigError(f"nesting too deep (more than {MAX_DEPTH} levels)", file=file) from e
    finally:
        loader.dispose()


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
    specsweep.config.Experiment): configurations per server and in all, and cells x repeats."""
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
