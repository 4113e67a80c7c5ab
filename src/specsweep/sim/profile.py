"""Simulator profiles: the cost model's parameters, the acceptance profile and the engine limits.

A profile is a data file (YAML) shipped in ``specsweep/sim/profiles/`` or anywhere on disk; ``sim fit``
writes them, ``sim serve`` and ``sim predict`` read them. Iteration time (ms) of one engine step with
B sequences decoding, N = B*(k+1) verified tokens, sum_ctx the summed context of those sequences, I
new prompt tokens prefilled in the step and A = sum over the prefilled chunks of chunk * (context after
the chunk) (attention is per sequence; one whole prompt of I tokens gives A = I^2) and G the tokens the
CUDA graph would have to cover: N, or N + I with ``graph_counts_prefill`` (docs/simulator.md)::

    T = t0 + c_tok*N + c_kv*sum_ctx/1000 + p*I + p2*A/1000 + admit*[step admits]
        + cliff*[G > graph_cap] + draft_step*draft_steps*[B > 0] + moe*(1 - exp(-N/moe_n0))
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from specsweep.errors import ConfigError, UsageError, one_of
from specsweep.store.strict_yaml import read_yaml_file

PROFILES_DIR = Path(__file__).parent / "profiles"

# Cost parameters in the order of the engine's step feature vector (see Engine.step_features).
COST_PARAMS = (
    "t0_ms",
    "c_tok_ms",
    "c_kv_ms",
    "prefill_ms_per_tok",
    "prefill_ms_per_tok2",
    "admit_ms",
    "cliff_ms",
    "draft_step_ms",
    "moe_ms",
)


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    model_name: str = "sim-model"  # the served model id (/v1/models)
    spec_method: str | None = None  # "dspark", "eagle", ... ; None without speculation
    k: int = Field(default=0, ge=0, le=64)  # draft tokens verified per step; 0 = no speculation
    survival: list[float] = Field(default_factory=list)  # S_i = P(first i drafts accepted), len k
    # per-domain acceptance: a survival curve (len k) per request category ("coding", "math", ...);
    # a request whose category is not listed uses ``survival`` (docs/simulator.md, per-domain acceptance)
    category_survival: dict[str, list[float]] = Field(default_factory=dict)
    draft_steps: int = Field(default=0, ge=0)  # drafter forward passes per step (chain drafters)
    # cost model (ms)
    t0_ms: float = Field(default=5.0, ge=0)
    c_tok_ms: float = Field(default=0.02, ge=0)
    c_kv_ms: float = Field(default=0.0, ge=0)  # per 1000 context tokens of each decoding sequence
    prefill_ms_per_tok: float = Field(default=0.01, ge=0)
    prefill_ms_per_tok2: float = Field(default=0.0, ge=0)  # times A/1000 (A = I^2 for one prompt)
    admit_ms: float = Field(default=0.0, ge=0)
    cliff_ms: float = Field(default=0.0, ge=0)
    graph_cap: int = Field(default=512, ge=1)  # CUDA-graph capture limit (tokens per step)
    # vLLM V1 picks a CUDA graph by the step's total scheduled tokens (decode + verify + prefill
    # chunk), so a mixed step over graph_cap runs eager too; off: only the verified tokens count
    # (SGLang captures decode batches by batch size; its prefill batches never use graphs)
    graph_counts_prefill: bool = False
    draft_step_ms: float = Field(default=0.0, ge=0)
    # MoE expert loading: a step's distinct experts grow as 1 - exp(-N / moe_n0) and saturate
    moe_ms: float = Field(default=0.0, ge=0)
    moe_n0: float = Field(default=32.0, gt=0)
    # a request becomes admissible only after this many engine iterations (the server's input
    # pipeline: API server -> scheduler); an engine with only such requests runs empty iterations (t0)
    admit_delay_steps: int = Field(default=0, ge=0, le=1000)
    # limits
    max_batch: int = Field(default=256, ge=1)  # running sequences (vLLM max_num_seqs)
    kv_tokens: int = Field(default=1_000_000, ge=1)  # KV-cache capacity in tokens
    prefill_chunk: int = Field(default=8192, ge=1)  # prompt tokens prefilled per step
    # vLLM: max_num_batched_tokens covers decode + verify tokens too (prefill gets what is left);
    # SGLang: chunked_prefill_size is for prefill alone
    chunk_includes_decode: bool = False
    # vLLM mixes prefill chunks into decode iterations; SGLang by default does not: an iteration with
    # prefill work is a prefill batch and the decoding sequences wait for the next one
    mixed_prefill: bool = True
    # where the numbers come from, and how well they fit
    provenance: dict[str, Any] = Field(default_factory=dict)
    fit: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_survival(self) -> Profile:
        for name, curve in [("survival", self.survival)] + [
            (f"category_survival.{c}", v) for c, v in self.category_survival.items()
        ]:
            if len(curve) != self.k:
                raise ValueError(f"{name} has {len(curve)} entries; k={self.k} needs {self.k}")
            prev = 1.0
            for i, s in enumerate(curve, 1):
                if not 0.0 <= s <= prev + 1e-12:
                    raise ValueError(f"{name}[{i}]={s} must be in [0, S_{i - 1}={prev}] (non-increasing)")
                prev = s
        return self

    def survival_for(self, category: str | None) -> list[float]:
        """The acceptance curve of a request of ``category`` (the default curve when not listed)."""
        if category is not None and category in self.category_survival:
            return self.category_survival[category]
        return self.survival

    @property
    def expected_tokens_per_step(self) -> float:
        """E(k) = 1 + S_1 + ... + S_k."""
        return 1.0 + sum(self.survival)

    def cost_vector(self) -> list[float]:
        return [float(getattr(self, n)) for n in COST_PARAMS]

    def to_yaml(self) -> str:
        data = self.model_dump(mode="json")
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def parse_acceptance(spec: str, k: int) -> list[float]:
    """A survival profile from "0.58,0.45,0.32" (S_1..S_n, used up to k) or "const:a" (S_i = a^i).

    A list shorter than k is extended geometrically with its last ratio.
    """
    spec = spec.strip()
    if k == 0:
        return []
    if spec.startswith("const:"):
        try:
            a = float(spec.split(":", 1)[1])
        except ValueError as e:
            raise UsageError(f"bad acceptance {spec!r}; expected 'const:A' with 0<=A<=1") from e
        if not 0 <= a <= 1:
            raise UsageError(f"bad acceptance {spec!r}; expected 'const:A' with 0<=A<=1")
        return [a**i for i in range(1, k + 1)]
    try:
        vals = [float(x) for x in spec.split(",") if x.strip()]
    except ValueError as e:
        raise UsageError(f"bad acceptance {spec!r}; expected 'S1,S2,...' or 'const:A'") from e
    if not vals or any(not 0 <= v <= 1 for v in vals) or any(b > a for a, b in itertools.pairwise(vals)):
        raise UsageError(f"bad acceptance {spec!r}; expected non-increasing values in [0, 1]")
    while len(vals) < k:
        ratio = vals[-1] / vals[-2] if len(vals) > 1 and vals[-2] > 0 else vals[-1]
        vals.append(vals[-1] * ratio)
    return vals[:k]


def list_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def load_profile(name_or_path: str | Path) -> Profile:
    """A shipped profile by name, or a profile file by path."""
    s = str(name_or_path)
    p = Path(s)
    if not (p.suffix in (".yaml", ".yml", ".json") or "/" in s or p.is_file()):
        p = PROFILES_DIR / f"{s}.yaml"
        if not p.is_file():
            raise UsageError(
                f"unknown simulator profile: {one_of(s, list_profiles())} (or a path to a .yaml)"
            )
    data = read_yaml_file(p, "profile")
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping of profile fields", file=str(p))
    try:
        return Profile(**data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "profile"
        raise ConfigError(f"{err['msg']} (got {err.get('input')!r})", file=str(p), path=loc) from e
