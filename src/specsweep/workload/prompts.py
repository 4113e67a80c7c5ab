"""Prompt sources: seeded, reproducible, nothing downloaded.

- ``random``: real English text (the corpus shipped with the package) cut or tiled to the exact
  token length under the active tokenizer, from a random offset.
- ``random-ids``: uniformly random token ids (like sglang's random-ids); meaningless for speculative
  decoding acceptance, and flagged as such.
- ``sharegpt``: a ShareGPT-format JSON file (first human turn is the prompt; the reply's length is
  the output length unless the scenario fixes it).
- ``jsonl``: one JSON object per line: {"prompt": str, "output_len": int (optional)}.
- ``shared-prefix``: ``num_groups`` groups; prompts of a group share their first ``prefix_len`` tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson

from specsweep.errors import DataError, UsageError
from specsweep.records import RequestSpec
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
    scenario: Scenario, num_prompts: int, tok: Tokenizer, seed: int, *, output_len: int | None = None
) -> list[RequestSpec]:
    """The measured requests of a run (index 0..n-1)."""
    if num_prompts <= 0:
        raise UsageError(f"--num-prompts must be > 0, got {num_prompts}")
    rng = np.random.default_rng(seed)
    ds = scenario.dataset
    if ds in ("sharegpt", "jsonl"):
        return _from_file(scenario, num_prompts, tok, rng)
    ins, outs = sample_lengths(scenario, num_prompts, seed)
    if output_len is not None:
        outs = [output_len] * num_prompts
    specs: list[RequestSpec] = []
    if ds == "random":
        for i, (li, lo) in enumerate(zip(ins, outs, strict=True)):
            text, _ = _text_of_len(tok, rng, li)
            specs.append(RequestSpec(i, text, li, lo))
    elif ds == "random-ids":
        vocab = max(2, tok.vocab_size)
        for i, (li, lo) in enumerate(zip(ins, outs, strict=True)):
            ids = [int(x) for x in rng.integers(0, vocab, size=li)]
            specs.append(RequestSpec(i, ids, li, lo))
    elif ds == "shared-prefix":
        plen = scenario.prefix_len
        prefixes = [_text_of_len(tok, rng, plen)[1] for _ in range(scenario.num_groups)]
        for i, (li, lo) in enumerate(zip(ins, outs, strict=True)):
            g = i % scenario.num_groups
            _, suffix = _text_of_len(tok, rng, max(1, li - plen))
            ids = prefixes[g] + suffix
            specs.append(RequestSpec(i, tok.decode(ids), len(ids), lo, group=g))
    else:  # pragma: no cover - pydantic restricts the names
        raise UsageError(f"unknown dataset {ds!r}")
    return specs


def _from_file(scenario: Scenario, n: int, tok: Tokenizer, rng: np.random.Generator) -> list[RequestSpec]:
    path = scenario.dataset_path
    if not path:
        raise UsageError(f"dataset {scenario.dataset!r} needs --dataset-path (a local file)")
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--dataset-path {path!r}: no such file")
    pairs: list[tuple[str, int | None]] = []
    if scenario.dataset == "jsonl":
        with p.open("rb") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as e:
                    raise DataError(f"not JSON: {e}", file=str(p), line=lineno) from e
                if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
                    raise DataError("expected an object with a string 'prompt'", file=str(p), line=lineno,
                                    field="prompt")  # fmt: skip
                ol = obj.get("output_len")
                pairs.append((obj["prompt"], int(ol) if isinstance(ol, int) else None))
    else:
        try:
            data = orjson.loads(p.read_bytes())
        except orjson.JSONDecodeError as e:
            raise DataError(f"not JSON: {e}", file=str(p)) from e
        if not isinstance(data, list):
            raise DataError("expected a JSON list of conversations (ShareGPT format)", file=str(p))
        for conv in data:
            turns = conv.get("conversations") if isinstance(conv, dict) else None
            if not isinstance(turns, list) or len(turns) < 2:
                continue
            q, a = turns[0].get("value"), turns[1].get("value")
            if isinstance(q, str) and isinstance(a, str) and q and a:
                pairs.append((q, max(1, tok.count(a))))
    if not pairs:
        raise DataError("no usable prompts in the file", file=str(p))
    order = rng.permutation(len(pairs))
    specs: list[RequestSpec] = []
    for i in range(n):
        text, ol = pairs[int(order[i % len(pairs)])]
        out = ol if ol is not None else scenario.output_len
        specs.append(RequestSpec(i, text, tok.count(text), out))
    return specs


def warmup_specs(first: RequestSpec, n: int) -> list[RequestSpec]:
    """sglang's warmup: n copies of the first prompt, output capped at 32 tokens."""
    return [
        RequestSpec(-(i + 1), first.prompt, first.prompt_len, min(32, first.output_len), is_warmup=True)
        for i in range(n)
    ]
