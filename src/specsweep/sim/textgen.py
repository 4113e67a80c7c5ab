"""Deterministic generated text for the simulated server.

Every generated token is one word of ``generation_words()``, emitted as ``" word"``: the built-in word
tokenizer counts exactly one token per word, so client-side re-tokenization agrees with the server.

At temperature 0 the words depend only on the prompt (a BLAKE2 hash of its text or token ids), never on
the server's seed, profile or load: two sim servers with different speculative settings produce the same
text for the same prompt, which is what a losslessness check expects of a lossless method. With
temperature > 0 the words come from the server's seeded generator. The ``diverge`` fault breaks this on
purpose: a chosen request departs from the deterministic text from a seeded position onward.

Each prompt also has a natural length (where the "model" would emit EOS): ``natural_length`` tokens,
exponential with mean ``EOS_MEAN_TOKENS`` and at least ``EOS_MIN_TOKENS``; requests without
``ignore_eos`` stop there with finish reason "stop".
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from functools import lru_cache

from specsweep.workload.tokenizer import BuiltinTokenizer, generation_words

EOS_MEAN_TOKENS = 1000.0
EOS_MIN_TOKENS = 16


_RANGE = range(len(generation_words()))


@lru_cache(maxsize=1)
def word_table() -> tuple[tuple[bytes, ...], tuple[int, ...]]:
    """(`" word"` as UTF-8 bytes, the word's built-in tokenizer id) for every generation word."""
    tok = BuiltinTokenizer()
    words = generation_words()
    ids = tok.encode(" ".join(words))
    if len(ids) != len(words):  # a word that is not one token would break exact counting
        raise RuntimeError("generation_words() must be one built-in token each")
    return tuple((" " + w).encode("ascii") for w in words), tuple(ids)


def prompt_key(prompt: str | Sequence[int]) -> int:
    """A stable 64-bit key of a prompt's text or token ids (independent of PYTHONHASHSEED)."""
    h = hashlib.blake2b(digest_size=8)
    if isinstance(prompt, str):
        h.update(b"t")
        h.update(prompt.encode("utf-8", "surrogatepass"))
    else:
        h.update(b"i")
        h.update(",".join(str(int(i)) for i in prompt).encode("ascii"))
    return int.from_bytes(h.digest(), "little")


def natural_length(key: int) -> int:
    """Tokens until the simulated model would stop on its own (deterministic per prompt key)."""
    u = ((key >> 11) & ((1 << 52) - 1)) / float(1 << 52)
    return EOS_MIN_TOKENS + int(-EOS_MEAN_TOKENS * math.log1p(-u))


class WordStream:
    """Word indices of one request's output, drawn lazily in order, in blocks.

    ``key`` seeds the words (the prompt key at temperature 0, a server-drawn value otherwise);
    ``diverge_at`` (a token position) switches to an unrelated sequence from there on. Each position
    consumes one draw in order, so the sequence does not depend on how it is taken (chunk sizes).
    """

    __slots__ = ("_alt", "_buf", "_diverge_at", "_filled", "_pos", "_rng")

    BLOCK = 128

    def __init__(self, key: int, diverge_at: int | None = None) -> None:
        self._rng = random.Random(key)
        self._alt = random.Random(key ^ 0x5DEECE66D) if diverge_at is not None else None
        self._diverge_at = diverge_at if diverge_at is not None else -1
        self._buf: list[int] = []
        self._filled = 0  # positions drawn so far (buffer end)
        self._pos = 0  # positions taken so far

    def _fill(self, count: int) -> None:
        block = self._rng.choices(_RANGE, k=max(count, self.BLOCK))
        if self._alt is not None and self._filled + len(block) > self._diverge_at:
            n = len(_RANGE)
            for j in range(max(0, self._diverge_at - self._filled), len(block)):
                # never the same word as the lossless text at this position
                block[j] = (block[j] + 1 + self._alt.randrange(n - 1)) % n
        self._buf = self._buf[self._pos - (self._filled - len(self._buf)) :] + block
        self._filled += len(block)

    def take(self, count: int) -> list[int]:
        if self._pos + count > self._filled:
            self._fill(count)
        start = self._pos - (self._filled - len(self._buf))
        self._pos += count
        return self._buf[start : start + count]


def text_of(indices: Sequence[int]) -> str:
    words = word_table()[0]
    return b"".join(words[i] for i in indices).decode("ascii")


def lossless_text(prompt: str | Sequence[int], n_tokens: int) -> str:
    """The temperature-0 output of ``n_tokens`` tokens for ``prompt`` (what a lossless server emits)."""
    return text_of(WordStream(prompt_key(prompt)).take(n_tokens))
