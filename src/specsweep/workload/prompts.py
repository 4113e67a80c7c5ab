"""Prompt sources: seeded, reproducible, nothing downloaded.

- ``random``: real English text (the corpus shipped with the package) cut or tiled to the exact
  token length under the active tokenizer, from a random offset.
- ``random-ids``: uniformly random token ids (like sglang's random-ids); meaningless for speculative
  decoding acceptance, and flagged as such.
- ``sharegpt``: a ShareGPT-format JSON file (first human turn is the prompt; the reply's length is
  the output length unless the scenario fixes it).
- ``jsonl``: one JSON object per line: {"prompt": str, "output_len": int (optional), "category": str (optional)}.
- ``shared-prefix``: ``num_groups`` groups; prompts of a group share their first ``prefix_len`` tokens.
- ``spec-bench``, ``mt-bench``, ``speed-bench``, ``humaneval``, ``gsm8k``, ``instructcoder``, ``hf``:
  published datasets from local files, and ``mix``: a weighted mix of them (:mod:`specsweep.workload.datasets`).

Every request carries a ``category``: the dataset's domain, or the synthetic source's name.
"""

from __future__ import annotations

import numpy as np

from specsweep.errors import UsageError
from specsweep.measure.records import RequestSpec
from specsweep.workload.datasets import FILE_DATASETS, WHERE, DatasetRef, dataset_specs
from specsweep.workload.lengths import sample_lengths
from specsweep.workload.scenarios import Scenario
from specsweep.workload.tokenizer import Tokenizer, corpus_text

_CORPUS_IDS: dict[str, np.ndarray] = {}


def _corpus_ids(tok: Tokenizer) -> np.ndarray:
    ids = _CORPUS_IDS.get(tok.name)
    if ids is None:
        ids = np.asarray(tok.encode(corpus_text()), dtype=np.int64)
        _CORPUS_IDS[tok.name] = ids
    return ids


def _text_of_len(tok: Tokenizer, rng: np.random.Generator, n: int) -> tuple[str, list[int]]:
    ids = _corpus_ids(tok)
    start = int(rng.integers(0, len(ids)))
    reps = (start + n) // len(ids) + 1
    window = np.tile(ids, reps)[start : start + n] if reps > 1 else ids[start : start + n]
    token_ids = [int(x) for x in window]
    return tok.decode(token_ids), token_ids


def generate(
    scenario: Scenario,
    num_prompts: int,
    tok: Tokenizer,
    seed: int,
    *,
    output_len: int | None = None,
    pool: int | None = None,
) -> list[RequestSpec]:
    """The measured requests of a run (index 0..n-1). ``pool``: the run is the first ``num_prompts``
    requests of a run of ``pool`` (a shorter run of a cell measures the cell's own first prompts,
    the same ones at the same positions; without it, n requests of the same seed are other prompts
    than a longer run's first n: their output lengths are drawn after all the input lengths)."""
    if num_prompts <= 0:
        raise UsageError(f"--num-prompts must be > 0, got {num_prompts}")
    if pool is not None and pool > num_prompts:
        return generate(scenario, pool, tok, seed, output_len=output_len)[:num_prompts]
    rng = np.random.default_rng(seed)
    ds = scenario.dataset
    if ds == "mix" or ds in FILE_DATASETS:
        return _from_datasets(scenario, num_prompts, tok, rng, output_len)
    ins, outs = sample_lengths(scenario, num_prompts, seed)
    if output_len is not None:
        outs = [output_len] * num_prompts
    specs: list[RequestSpec] = []
    if ds == "random":
        for i, (li, lo) in enumerate(zip(ins, outs, strict=True)):
            text, _ = _text_of_len(tok, rng, li)
            specs.append(RequestSpec(i, text, li, lo, category=ds))
    elif ds == "random-ids":
        vocab = max(2, tok.vocab_size)
        for i, (li, lo) in enumerate(zip(ins, outs, strict=True)):
            ids = [int(x) for x in rng.integers(0, vocab, size=li)]
            specs.append(RequestSpec(i, ids, li, lo, category=ds))
    elif ds == "shared-prefix":
        plen = scenario.prefix_len
        prefixes = [_text_of_len(tok, rng, plen)[1] for _ in range(scenario.num_groups)]
        for i, (li, lo) in enumerate(zip(ins, outs, strict=True)):
            g = i % scenario.num_groups
            _, suffix = _text_of_len(tok, rng, max(1, li - plen))
            ids = prefixes[g] + suffix
            specs.append(RequestSpec(i, tok.decode(ids), len(ids), lo, group=g, category=ds))
    else:  # pragma: no cover - pydantic restricts the names
        raise UsageError(f"unknown dataset {ds!r}")
    return specs


def _from_datasets(
    scenario: Scenario, n: int, tok: Tokenizer, rng: np.random.Generator, output_len: int | None
) -> list[RequestSpec]:
    if scenario.mix:
        refs = list(scenario.mix)
    else:
        if not scenario.dataset_path:
            raise UsageError(f"dataset {scenario.dataset!r} needs --dataset-path (a local file; nothing is "
                             f"downloaded): get {WHERE.get(str(scenario.dataset), 'the dataset file')}")  # fmt: skip
        refs = [DatasetRef(name=scenario.dataset, path=scenario.dataset_path)]  # type: ignore[arg-type]
    template = None
    if scenario.chat_template:
        from specsweep.workload.tokenizer import chat_template_of

        template = chat_template_of(tok)
    return dataset_specs(
        refs, n, tok.count, rng, scenario.output_len, template=template, output_len=output_len
    )


def warmup_specs(first: RequestSpec, n: int) -> list[RequestSpec]:
    """sglang's warmup: n copies of the first prompt, output capped at 32 tokens."""
    return [
        RequestSpec(
            -(i + 1),
            first.prompt,
            first.prompt_len,
            min(32, first.output_len),
            is_warmup=True,
            category=first.category,
        )
        for i in range(n)
    ]
