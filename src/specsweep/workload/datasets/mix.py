"""Requests from datasets: one source or a weighted mix of sources, each prompt with its category.

A mix of weights w_j over n requests gives source j round(n * w_j / sum(w)) requests (largest
remainder, so the counts add up to n); the sources' requests are interleaved in a seeded random
order, and each source's prompts are taken in a seeded random order (cycling when n exceeds them).
A multi-turn conversation (``turns: all``) goes to chat endpoints as its messages (the server applies
the model's template) and to completion endpoints as text (the local chat template, else role-labelled
turns). The output length of a request is the dataset's own (ShareGPT's reply, a jsonl ``output_len``) when it
has one, else the scenario's ``output_len``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from specsweep.errors import UsageError
from specsweep.measure.records import RequestSpec
from specsweep.workload.datasets.formats import Item, load_items
from specsweep.workload.datasets.ref import DatasetRef

ChatTemplate = Callable[[list[dict[str, str]]], str]


def split_counts(n: int, weights: Sequence[float]) -> list[int]:
    """Integers proportional to ``weights`` that add up to ``n`` (largest remainder; ties: first)."""
    if n < 0 or not weights or any(w <= 0 for w in weights):
        raise UsageError(f"mix weights must be > 0 and the count >= 0; got n={n}, weights={list(weights)}")
    total = float(sum(weights))
    exact = [n * w / total for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda j: (-(exact[j] - counts[j]), j))
    for j in order[: n - sum(counts)]:
        counts[j] += 1
    return counts


def messages(item: Item, turns: str) -> list[dict[str, str]]:
    """The chat messages of an item: its first turn; or (``turns="all"``) the conversation: every
    user turn with the assistant replies (a model's answers, else the file's reference) between them,
    ending on the last user turn. Without a reply to put between, the user turns go as one message."""
    if turns == "first" or len(item.turns) == 1:
        return [{"role": "user", "content": item.turns[0]}]
    if len(item.replies) >= len(item.turns) - 1:
        out: list[dict[str, str]] = []
        for i, t in enumerate(item.turns):
            out.append({"role": "user", "content": t})
            if i < len(item.turns) - 1:
                out.append({"role": "assistant", "content": item.replies[i]})
        return out
    return [{"role": "user", "content": "\n\n".join(item.turns)}]


def render(msgs: list[dict[str, str]], template: ChatTemplate | None) -> str:
    """Prompt text (completion endpoints): through the model's chat template when given; else one
    message's content as it is, a conversation with each turn under its role ("User:" / "Assistant:")."""
    if template is not None:
        return template(msgs)
    if len(msgs) == 1:
        return msgs[0]["content"]
    return "\n\n".join(f"{m['role'].capitalize()}: {m['content']}" for m in msgs) + "\n\nAssistant:"


def dataset_specs(
    refs: Sequence[DatasetRef],
    n: int,
    count: Callable[[str], int],
    rng: np.random.Generator,
    default_output_len: int,
    *,
    template: ChatTemplate | None = None,
    output_len: int | None = None,
) -> list[RequestSpec]:
    """``n`` requests drawn from ``refs`` (see the module docstring), each carrying its category."""
    pools: list[list[Item]] = [load_items(r, count) for r in refs]
    orders = [rng.permutation(len(p)) for p in pools]
    if len(refs) == 1:
        source = [0] * n
    else:
        counts = split_counts(n, [r.weight for r in refs])
        source = [int(j) for j in rng.permutation(np.repeat(np.arange(len(refs)), counts))]
    taken = [0] * len(refs)
    specs: list[RequestSpec] = []
    for i, j in enumerate(source):
        pool, order = pools[j], orders[j]
        item = pool[int(order[taken[j] % len(pool)])]
        taken[j] += 1
        msgs = messages(item, refs[j].turns)
        text = render(msgs, template)
        out = output_len if output_len is not None else (item.output_len or default_output_len)
        # chat endpoints get the messages themselves: never the text a local template made of them
        specs.append(RequestSpec(i, text, count(text), out, category=item.category, messages=msgs))
    return specs
