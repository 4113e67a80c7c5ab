"""What an experiment or a scenario says about a dataset: its name, its local file, a weight in a mix.

``DatasetRef`` is the ``dataset: {name: ..., path: ...}`` mapping of experiment files (a workload's
``dataset``, a scenario's ``mix``); the loaders that read each name live in
:mod:`specsweep.workload.datasets.formats`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FileDataset = Literal[
    "sharegpt", "jsonl", "spec-bench", "mt-bench", "speed-bench", "humaneval", "gsm8k", "instructcoder", "hf"
]  # fmt: skip
FILE_DATASETS: tuple[str, ...] = FileDataset.__args__  # type: ignore[attr-defined]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")


def clean_category(c: object, default: str) -> str:
    """A category as a short ASCII token (it travels in an HTTP header and in file names)."""
    s = _UNSAFE.sub("_", str(c).strip()).strip("_")[:64] if c is not None else ""
    return s or default


class DatasetRef(BaseModel):
    """One dataset source: ``name`` (the format), ``path`` (a local file or folder), a mix ``weight``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: FileDataset
    path: str | None = None  # local file or folder; required by every name (nothing is downloaded)
    weight: float = Field(default=1.0, gt=0)  # share of the requests in a mix (normalised)
    categories: tuple[str, ...] | None = None  # keep only these categories of the file
    category: str | None = None  # label every prompt of this source with this category
    turns: Literal["first", "all"] = "first"  # multi-turn sets: the first turn, or the whole conversation
    # turns: all: a FastChat model-answer JSONL whose replies are the conversation's assistant turns
    # (else the question file's ``reference`` replies; see formats.load_answers)
    answers: str | None = None
    split: str | None = None  # hf: the split (default: the only one, else "test", else "train")
    prompt_field: str | None = None  # hf / jsonl: the field holding the prompt
    category_field: str = "category"  # the field holding each row's category, where the format has one
    label: str | None = None  # names the derived scenario "<scenario>@<label>" (default: category or name)

    @field_validator("label", "category")
    @classmethod
    def _token_ok(cls, v: str | None) -> str | None:
        if v is not None and clean_category(v, "") != v:
            raise ValueError(f"{v!r} must be letters, digits, '_', '.', '+' or '-'")
        return v

    @model_validator(mode="after")
    def _answers_need_all_turns(self) -> DatasetRef:
        if self.answers is not None and self.turns != "all":
            raise ValueError("'answers' gives the assistant turns of a conversation: set turns: all")
        return self

    def display(self) -> str:
        """The suffix of a derived scenario name."""
        if self.label:
            return self.label
        if self.category:
            return self.category
        if self.categories and len(self.categories) == 1:
            return clean_category(self.categories[0], self.name)
        return self.name
