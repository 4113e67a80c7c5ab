"""Scenario catalog: the seven scenarios of the reference reports, plus user scenarios from YAML.

A scenario fixes the prompt source and the nominal maximum input/output lengths. With sglang's
``range_ratio`` r, lengths are uniform in [max(floor(L*r), 1), L]; r=0 gives uniform [1, L] (mean about
L/2), which is what the reference reports used. ``range_mode: vllm`` switches to vLLM's meaning
(uniform in [floor(L(1-r)), ceil(L(1+r))]).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from specsweep.errors import ConfigError, UsageError, one_of
from specsweep.store.strict_yaml import read_yaml_file
from specsweep.workload.datasets.ref import DatasetRef

DatasetName = Literal[
    "random", "random-ids", "shared-prefix", "mix",
    "sharegpt", "jsonl", "spec-bench", "mt-bench", "speed-bench", "humaneval", "gsm8k", "instructcoder", "hf",
]  # fmt: skip


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    input_len: int = Field(gt=0)
    output_len: int = Field(gt=0)
    range_ratio: float = Field(default=0.0, ge=0.0, le=1.0)
    range_mode: Literal["sglang", "vllm"] = "sglang"
    dataset: DatasetName = "random"
    dataset_path: str | None = None
    # shared-prefix groups: `num_groups` groups whose prompts share `prefix_len` tokens
    num_groups: int = Field(default=1, gt=0)
    prefix_len: int = Field(default=0, ge=0)
    # real prompts by domain: a weighted mix of dataset sources (dataset: mix); see workload.datasets
    mix: tuple[DatasetRef, ...] = ()
    # render dataset prompts with the local tokenizer's chat template (for completion endpoints;
    # chat endpoints apply the server's own template)
    chat_template: bool = False
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _mix_names_dataset(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("mix") and "dataset" not in data:
            return {**data, "dataset": "mix"}
        return data

    @model_validator(mode="after")
    def _mix_ok(self) -> Scenario:
        if (self.dataset == "mix") != bool(self.mix):
            raise ValueError("dataset 'mix' goes with a non-empty 'mix' list of {name, path, weight} sources")
        return self

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not v or any(c in v for c in "/\\\0") or v.startswith("."):
            raise ValueError(f"scenario name {v!r} must be non-empty without '/', '\\' or a leading '.'")
        return v


BUILTIN: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(name="chat_short", input_len=512, output_len=256, description="short chat turns"),
        Scenario(name="chat_standard", input_len=1024, output_len=256, description="typical chat"),
        Scenario(name="decode_heavy", input_len=512, output_len=2048, description="long generations"),
        Scenario(name="generation_standard", input_len=1024, output_len=1024, description="balanced"),
        Scenario(name="long_context_probe", input_len=16384, output_len=512, description="16K context"),
        Scenario(name="rag_medium", input_len=4096, output_len=512, description="4K retrieval context"),
        Scenario(name="stress_standard", input_len=1024, output_len=256, description="high-load stress"),
    ]
}


# Workload classes used by analysis and recommendations (by nominal input/output lengths).
def workload_class(s: Scenario) -> str:
    if s.input_len >= 8192:
        return "long_context"
    if s.input_len >= 2048:
        return "rag"
    if s.output_len >= 1024 and s.output_len >= s.input_len:
        return "decode_heavy" if s.output_len >= 2 * s.input_len else "generation"
    return "chat"


_DEFAULT_PROMPTS = {1: 32, 4: 32, 8: 128, 16: 256, 32: 512, 64: 512, 96: 768, 128: 1024}


def default_num_prompts(concurrency: int) -> int:
    """num_prompts the reference reports used per concurrency; else max(32, 8*c)."""
    return _DEFAULT_PROMPTS.get(concurrency, max(32, 8 * concurrency))


def load_scenarios(path: str | Path) -> dict[str, Scenario]:
    """User scenarios from YAML: either a mapping name -> fields or a list of {name, ...}."""
    p = Path(path)
    data = read_yaml_file(p, "scenarios")
    if isinstance(data, dict) and "scenarios" in data:
        data = data["scenarios"]
    return parse_scenarios(data, file=str(p))


def parse_scenarios(data: object, *, file: str | None = None, base: str = "scenarios") -> dict[str, Scenario]:
    items: list[tuple[str, object]]
    if isinstance(data, dict):
        items = [(str(k), {"name": k, **v} if isinstance(v, dict) else v) for k, v in data.items()]
    elif isinstance(data, list):
        items = [(str(i), v) for i, v in enumerate(data)]
    else:
        raise ConfigError(
            "expected a mapping of name -> scenario or a list of scenarios", file=file, path=base
        )
    out: dict[str, Scenario] = {}
    for key, v in items:
        if not isinstance(v, dict):
            raise ConfigError(f"expected a mapping, got {type(v).__name__}", file=file, path=f"{base}.{key}")
        try:
            s = Scenario(**v)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise ConfigError(
                f"{err['msg']} (got {err.get('input')!r})", file=file, path=f"{base}.{key}.{loc}"
            ) from e
        out[s.name] = s
    return out


def with_dataset(base: Scenario, ref: DatasetRef) -> Scenario:
    """``base``'s length rule with ``ref``'s prompts, named ``<base>@<ref label>`` (a workload's
    ``dataset``). A relative ``ref.path`` is relative to the working directory, like every path."""
    fields = {**base.model_dump(), "name": f"{base.name}@{ref.display()}", "dataset": "mix"}
    fields.update(dataset_path=None, mix=(ref,))
    return Scenario(**fields)


def get_scenario(name: str, extra: dict[str, Scenario] | None = None) -> Scenario:
    catalog = {**BUILTIN, **(extra or {})}
    if name not in catalog:
        raise UsageError(f"unknown scenario: {one_of(name, catalog)}")
    return catalog[name]
