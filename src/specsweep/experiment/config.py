"""Experiment files: pydantic models, validation with the path to the bad key, and grid expansion.

An experiment is ``servers`` (each a launch recipe plus a parameter ``grid``) x ``workloads``
(scenarios x concurrency levels) x ``repeats``. Expansion is pure:

    Experiment --expand_configs--> [ServerConfig]  (one launch each; the grid's product)
               --plan_experiment--> Plan: [Cell] per config (x scenario x concurrency, stable cell_id)

Templates: string fields that build a command line (``args``, ``argv``, ``model``, ``profile``,
``speculative_config`` values, ``label``, ``env`` values) may hold ``{name}`` placeholders: the grid
and fixed ``params``, plus ``{port}``, ``{host}``, ``{model}``, ``{name}`` and ``{label}`` (the last
three only where already known); specsweep.experiment.templates substitutes them and expands ``${VAR}``.
Reading a file (YAML, ``${VAR}``, validation messages) is specsweep.experiment.loader's job; it also checks
that every template resolves (specsweep.experiment.argv), so a typo fails before any launch.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from specsweep.errors import ConfigError, one_of
from specsweep.experiment import checks
from specsweep.experiment.adaptive import AdaptiveOptions, check_design
from specsweep.experiment.labels import default_label, label_values, make_cell_id
from specsweep.experiment.templates import TemplateError, substitute
from specsweep.workload.datasets.ref import DatasetRef
from specsweep.workload.scenarios import BUILTIN, Scenario, default_num_prompts, parse_scenarios, with_dataset

ServerKind = Literal["vllm", "sglang", "llamacpp", "command", "url", "sim"]
Scalar = str | int | float | bool

# Dialect each kind speaks unless the experiment says otherwise.
DEFAULT_BACKEND = {
    "vllm": "vllm",
    "sglang": "sglang",
    "llamacpp": "openai",
    "command": "openai",
    "url": "openai",
    "sim": "vllm",
}

# Fields that only make sense for some kinds: field -> kinds that accept it.
_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "argv": ("command",),
    "url": ("url",),
    "entrypoint": ("vllm",),
    "speculative_config": ("vllm",),
    "tp": ("vllm", "sglang"),
    "kv_cache_dtype": ("vllm", "sglang"),
    "binary": ("vllm", "llamacpp"),
    "python": ("vllm", "sglang", "sim"),
    "venv": ("vllm", "sglang", "sim", "llamacpp", "command"),
    "profile": ("sim",),
    "time_scale": ("sim",),
}


# ---- models ------------------------------------------------------------------------------------
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClientOptions(_Model):
    """How each cell's benchmark client behaves (maps onto specsweep.client.bench.BenchConfig)."""

    backend: str | None = None  # dialect; None: the server kind's default (DEFAULT_BACKEND)
    tokenizer: str | None = None
    warmup_requests: int = Field(default=1, ge=0)
    warmup_sleep_s: checks.Finite = Field(default=1.0, ge=0)  # pause after warmup (sglang sleeps 1 s)
    seed: checks.Seed = 1
    request_rate: checks.Finite | None = Field(default=None, gt=0)  # req/s open loop; None: closed loop
    burstiness: checks.Finite = Field(default=1.0, gt=0)
    goodput: dict[Literal["ttft", "tpot", "e2el"], checks.PositiveMs] = Field(default_factory=dict)  # SLOs
    request_timeout_s: checks.Finite = Field(default=600.0, gt=0)
    temperature: checks.Finite = Field(default=0.0, ge=0)
    ignore_eos: bool = True
    extra_request_body: dict[str, Any] = Field(default_factory=dict)
    keep_text: bool = False
    scrape_metrics: bool = True
    workers: int = Field(default=1, ge=1)

    @field_validator("backend")
    @classmethod
    def _backend_ok(cls, v: str | None) -> str | None:
        return _check_backend(v)


def _check_backend(v: str | None) -> str | None:
    if v is None:
        return v
    from specsweep.client.dialects import DIALECTS  # here: the client's import stays off config's path

    if v not in DIALECTS:
        raise ValueError(one_of(v, DIALECTS))
    return v


class Timeouts(_Model):
    ready_s: checks.Finite = Field(default=900.0, gt=0)  # launch -> ready (model loading can take minutes)
    cell_s: checks.Finite | None = Field(default=None, gt=0)  # one cell's benchmark, warmup included
    stop_s: checks.Finite = Field(default=30.0, gt=0)  # SIGTERM -> SIGKILL grace


class ServerSpec(_Model):
    """One server recipe; its ``grid`` expands to one launch (a ServerConfig) per combination."""

    name: str
    kind: ServerKind
    model: str | None = None
    served_model: str | None = None  # model id the server must list; None: its first listed model
    method: str | None = None  # speculative method name (dspark, eagle, ngram, ...); None: none
    baseline: bool = False  # the no-speculation reference: reports show every config's speedup over it
    params: dict[str, Scalar] = Field(default_factory=dict)
    grid: dict[str, list[Scalar]] = Field(default_factory=dict)
    label: str | None = None  # template; default: name(abbrev=value, ...) over the grid keys
    host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=1, le=65535)  # None: a free port per launch
    # launch options
    entrypoint: Literal["serve", "module"] = "serve"  # vllm: `vllm serve` or python -m ...api_server
    binary: str | None = None  # vllm: the `vllm` executable; llamacpp: llama-server's path
    python: str | None = None  # python executable for python-module engines
    venv: str | None = None  # virtualenv dir: its bin/ goes first on PATH (and its python is used)
    tp: int | None = Field(default=None, ge=1)
    kv_cache_dtype: str | None = None
    speculative_config: dict[str, Any] | None = None  # vllm: extra keys of --speculative-config
    profile: str | None = None  # sim
    time_scale: checks.Finite | None = Field(default=None, gt=0)  # sim
    argv: list[checks.ArgStr] | None = None  # command: the whole argv template
    url: checks.HttpUrl | None = None  # url: base URL of a running server
    args: list[checks.ArgStr] = Field(default_factory=list)  # extra arguments appended (templates)
    env: dict[checks.EnvName, checks.ArgStr] = Field(default_factory=dict)
    backend: str | None = None  # client dialect for this server (overrides client.backend)
    health_path: str = "/health"
    ready_generate: bool = True  # readiness includes one real short generation
    ready_timeout_s: checks.Finite | None = Field(default=None, gt=0)  # overrides timeouts.ready_s
    # --executor ray: custom Ray resources per launch, e.g. {h200: 1}; GPU / CPU override the
    # derived demand (GPUs = tp x pp; CPUs = client workers). See docs/scale.md.
    resources: dict[str, float] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    @field_validator("backend")
    @classmethod
    def _backend_ok(cls, v: str | None) -> str | None:
        return _check_backend(v)

    @field_validator("grid")
    @classmethod
    def _grid_ok(cls, v: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"grid parameter {k!r} has no values; give a non-empty list")
            if len(set(map(repr, vals))) != len(vals):
                raise ValueError(f"grid parameter {k!r} repeats a value: {vals}")
        return v

    @model_validator(mode="after")
    def _kind_fields(self) -> ServerSpec:
        for fname, kinds in _KIND_FIELDS.items():
            default = type(self).model_fields[fname].default
            if getattr(self, fname) != default and self.kind not in kinds:
                raise ValueError(f"'{fname}' applies only to kind {' / '.join(kinds)}, not {self.kind!r}")
        both = set(self.params) & set(self.grid)
        if both:
            raise ValueError(f"parameter(s) {sorted(both)} are in both params and grid; keep one")
        if self.kind == "command" and not self.argv:
            raise ValueError("kind 'command' needs 'argv': the server's command line as a list")
        if self.kind == "url" and not self.url:
            raise ValueError("kind 'url' needs 'url': the base URL of the running server")
        if self.kind == "url" and (self.args or self.env):
            raise ValueError("kind 'url' starts nothing: 'args' and 'env' do not apply")
        if self.kind in ("vllm", "sglang", "llamacpp") and not self.model:
            raise ValueError(f"kind {self.kind!r} needs 'model' (a model path or hub id)")
        if self.kind == "sim" and not (self.profile or "profile" in self.params or "profile" in self.grid):
            raise ValueError("kind 'sim' needs 'profile' (a profile name or file), or a profile grid")
        if self.python and self.venv:
            raise ValueError("give 'python' or 'venv', not both")
        return self


class Workload(_Model):
    """Scenarios x concurrency levels, with the number of prompts per cell."""

    scenarios: list[str] = Field(min_length=1)
    concurrency: list[checks.Concurrency] = Field(min_length=1)
    num_prompts: checks.NumPrompts = None  # int | {concurrency: int}; None: by concurrency
    rounds: int | None = Field(default=None, ge=1)  # num_prompts = rounds x concurrency
    servers: list[str] | None = None  # only these server names (default: all)
    # real prompts: each source gives every scenario a variant "<scenario>@<label>" (its length rule,
    # the source's prompts); a source may itself mix categories (docs/experiments.md, Datasets)
    dataset: DatasetRef | list[DatasetRef] | None = None

    def datasets(self) -> list[DatasetRef]:
        return (
            [] if self.dataset is None else self.dataset if isinstance(self.dataset, list) else [self.dataset]
        )

    @field_validator("concurrency")
    @classmethod
    def _conc_ok(cls, v: list[int]) -> list[int]:
        bad = [c for c in v if c < 1]
        if bad:
            raise ValueError(f"concurrency levels must be >= 1, got {bad}")
        if len(set(v)) != len(v):
            raise ValueError(f"concurrency repeats a level: {v}")
        return v

    @model_validator(mode="after")
    def _prompts_ok(self) -> Workload:
        if self.num_prompts is not None and self.rounds is not None:
            raise ValueError("give 'num_prompts' or 'rounds', not both")
        if isinstance(self.num_prompts, dict):
            missing = [c for c in self.concurrency if c not in self.num_prompts]
            if missing:
                raise ValueError(f"num_prompts mapping lacks concurrency level(s) {missing}")
        return self

    def prompts_for(self, concurrency: int) -> int:
        if self.rounds is not None:
            return self.rounds * concurrency
        if isinstance(self.num_prompts, dict):
            return self.num_prompts[concurrency]
        if isinstance(self.num_prompts, int):
            return self.num_prompts
        return default_num_prompts(concurrency)


class ReportOptions(_Model):
    """The reports written at the end of a run (report.md, report.html) by specsweep.report."""

    enabled: bool = True
    kind: Literal["auto", "sweep", "compare"] = "auto"  # auto: compare when several methods
    lang: Literal["en", "zh"] = "en"
    baseline: str | None = None  # label of a config without speculation
    formats: list[Literal["md", "html"]] = Field(default_factory=lambda: ["md", "html"])  # type: ignore[arg-type]


class LosslessOptions(_Model):
    """Greedy outputs of two configs compared prompt by prompt (speculation must not change them).

    Each of the two configs answers the same real-text prompts (temperature 0) after its cells, while
    its server is up; the report shows the share of identical outputs and each first divergence.
    """

    reference: str  # label of the reference config, e.g. one without speculation
    against: str | None = None  # the config to check; may be omitted when there are two configs
    num_prompts: int = Field(default=16, ge=1)
    max_tokens: int = Field(default=64, ge=1)
    backend: Literal["openai", "openai-chat", "sglang"] = "openai"
    seed: int = 1


class Experiment(_Model):
    name: str
    description: str = ""
    results_dir: str | None = None  # default for --results-dir (else ./results)
    scenarios: dict[str, Any] | list[Any] = Field(default_factory=dict)  # user scenarios, inline
    servers: list[ServerSpec] = Field(min_length=1)
    workloads: list[Workload] = Field(min_length=1)
    client: ClientOptions = Field(default_factory=ClientOptions)
    repeats: checks.Repeats = 1
    # how repeats are ordered: interleaved rounds (each config launched once per round, the order
    # alternating) or blocked (one launch per config, its repeats back to back)
    run_order: Literal["interleaved", "blocked"] = "interleaved"
    adaptive: AdaptiveOptions | None = None  # the sequential design (run --adaptive); replaces repeats
    timeouts: Timeouts = Field(default_factory=Timeouts)
    cooldown_s: checks.Finite = Field(default=0.0, ge=0)  # pause between cells
    max_restarts: int = Field(default=3, ge=0)  # per config: server restarts after it died
    report: ReportOptions = Field(default_factory=ReportOptions)
    lossless: LosslessOptions | None = None

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not v.strip() or "/" in v or v.startswith("."):
            raise ValueError(f"name {v!r} must be non-empty, without '/' or a leading '.'")
        return v

    @model_validator(mode="after")
    def _names_unique(self) -> Experiment:
        names = [s.name for s in self.servers]
        dup = sorted(n for n, k in Counter(names).items() if k > 1)
        if dup:
            raise ValueError(f"server names must be unique; repeated: {dup}")
        for i, w in enumerate(self.workloads):
            for s in w.servers or []:
                if s not in names:
                    raise ValueError(f"workloads[{i}].servers: unknown server {one_of(s, names)}")
        base = [s for s in self.servers if s.baseline]
        if len(base) > 1:
            raise ValueError(f"only one server may be the baseline; marked: {[s.name for s in base]}")
        if base and base[0].grid:
            raise ValueError(
                f"baseline server {base[0].name!r} must be one configuration; move its grid to params"
            )
        return self


# ---- resolved objects --------------------------------------------------------------------------
@dataclass(frozen=True)
class ServerConfig:
    """One launch: a server recipe with its grid point fixed."""

    label: str
    spec: ServerSpec
    params: dict[str, Scalar]  # fixed params + this grid point
    grid_params: dict[str, Scalar]  # the grid point alone

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def method(self) -> str | None:
        return self.spec.method

    def values(self, **runtime: Any) -> dict[str, Any]:
        """Template values: params, the server's name/label/model, and runtime ones (port, host)."""
        v: dict[str, Any] = {"name": self.spec.name, "label": self.label, "host": self.spec.host}
        if self.spec.model is not None:
            v["model"] = substitute(self.spec.model, {**self.params, **v})
        v.update(self.params)
        v.update(runtime)
        return v


@dataclass(frozen=True)
class Cell:
    cell_id: str
    label: str
    server: str
    method: str | None
    params: dict[str, Scalar]
    scenario: str
    max_concurrency: int
    num_prompts: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "cell_id": self.cell_id,
            "label": self.label,
            "server": self.server,
            "method": self.method,
            "params": dict(self.params),
            "scenario": self.scenario,
            "max_concurrency": self.max_concurrency,
            "num_prompts": self.num_prompts,
        }


@dataclass
class Plan:
    experiment: Experiment
    scenarios: dict[str, Scenario]
    configs: list[ServerConfig]
    cells: dict[str, list[Cell]] = field(default_factory=dict)  # label -> cells, in run order

    def all_cells(self) -> list[Cell]:
        return [c for cfg in self.configs for c in self.cells[cfg.label]]

    def todo(self, finished: Container[tuple[str, int]], label: str | None = None) -> list[tuple[Cell, int]]:
        """The (cell, repeat) runs not in ``finished`` (``(cell_id, repeat)`` pairs), in run order: each
        cell's repeats in turn. ``label``: one configuration's runs only."""
        cells = self.all_cells() if label is None else self.cells[label]
        return [
            (c, r) for c in cells for r in range(self.experiment.repeats) if (c.cell_id, r) not in finished
        ]


def expand_configs(exp: Experiment, *, file: str | None = None) -> list[ServerConfig]:
    out: list[ServerConfig] = []
    for i, spec in enumerate(exp.servers):
        keys = list(spec.grid)
        for combo in itertools.product(*(spec.grid[k] for k in keys)):
            point = dict(zip(keys, combo, strict=True))
            params = {**spec.params, **point}
            if spec.label:
                try:
                    label = substitute(spec.label, {"name": spec.name, **label_values(params)})
                except TemplateError as e:
                    raise ConfigError(str(e), file=file, path=f"servers[{i}].label") from e
            else:
                label = default_label(spec.name, point)
            out.append(ServerConfig(label=label, spec=spec, params=params, grid_params=point))
    dup = sorted(x for x, k in Counter(c.label for c in out).items() if k > 1)
    if dup:
        raise ConfigError(
            f"configuration labels must be unique; repeated: {dup} (set 'label' templates that differ)",
            file=file,
            path="servers",
        )
    return out


def _check_lossless_labels(opts: LosslessOptions, labels: list[str], file: str | None) -> None:
    if opts.reference not in labels:
        raise ConfigError(f"unknown config label {opts.reference!r}; {one_of(opts.reference, labels)}",
                          file=file, path="lossless.reference")  # fmt: skip
    if opts.against is None:
        others = [x for x in labels if x != opts.reference]
        if len(others) != 1:
            raise ConfigError(f"name the config to check against {opts.reference!r}: one of {others}",
                              file=file, path="lossless.against")  # fmt: skip
    elif opts.against not in labels or opts.against == opts.reference:
        raise ConfigError(f"{one_of(opts.against, [x for x in labels if x != opts.reference])}",
                          file=file, path="lossless.against")  # fmt: skip


def lossless_pair(opts: LosslessOptions, labels: list[str]) -> tuple[str, str]:
    """(reference, against) labels of an experiment's losslessness check."""
    against = opts.against or next(x for x in labels if x != opts.reference)
    return opts.reference, against


def plan_experiment(
    exp: Experiment, *, file: str | None = None, check_config: Callable[[ServerConfig], None] | None = None
) -> Plan:
    """Expand servers x grid and workloads into configs and cells; checks scenarios and labels.
    ``check_config`` runs on each configuration once they are expanded; a TemplateError/ValueError it
    raises becomes a ConfigError at that server's path (specsweep.experiment.loader passes the argv builders'
    template check: servers depend on config, not the reverse)."""
    extra = parse_scenarios(exp.scenarios, file=file) if exp.scenarios else {}
    catalog = {**BUILTIN, **extra}
    checks.check_plan_size(exp, file)
    configs = expand_configs(exp, file=file)
    if check_config is not None:
        index = {id(s): i for i, s in enumerate(exp.servers)}
        for cfg in configs:
            try:
                check_config(cfg)
            except (TemplateError, ValueError) as e:
                raise ConfigError(str(e), file=file, path=f"servers[{index[id(cfg.spec)]}]") from e
    if exp.lossless is not None:
        _check_lossless_labels(exp.lossless, [c.label for c in configs], file)
    checks.check_baseline(exp.report.baseline, [c.label for c in configs], file)
    check_design(exp, file)
    plan = Plan(experiment=exp, scenarios=catalog, configs=configs)
    for cfg in configs:
        cells: list[Cell] = []
        seen: set[str] = set()
        for wi, w in enumerate(exp.workloads):
            if w.servers is not None and cfg.name not in w.servers:
                continue
            for si, sname0 in enumerate(w.scenarios):
                if sname0 not in catalog:
                    raise ConfigError(
                        f"unknown scenario: {one_of(sname0, catalog)} (add it under 'scenarios')",
                        file=file,
                        path=f"workloads[{wi}].scenarios[{si}]",
                    )
                names = [sname0]
                if w.dataset is not None:  # one scenario per dataset source: "<scenario>@<label>"
                    derived = [with_dataset(catalog[sname0], ref) for ref in w.datasets()]
                    plan.scenarios.update((d.name, d) for d in derived)
                    names = [d.name for d in derived]
                for sname, c in itertools.product(names, w.concurrency):
                    cid = make_cell_id(cfg.label, sname, c)
                    if cid in seen:
                        raise ConfigError(
                            f"cell {cfg.label} x {sname} x concurrency {c} appears in two workloads",
                            file=file,
                            path=f"workloads[{wi}]",
                        )
                    seen.add(cid)
                    cells.append(
                        Cell(
                            cell_id=cid,
                            label=cfg.label,
                            server=cfg.name,
                            method=cfg.method,
                            params=dict(cfg.params),
                            scenario=sname,
                            max_concurrency=c,
                            num_prompts=w.prompts_for(c),
                        )
                    )
        plan.cells[cfg.label] = cells
    return plan
