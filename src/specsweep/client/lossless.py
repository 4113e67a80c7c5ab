"""Losslessness check: the same prompts, greedy, against two servers; how many outputs are identical,
and where each differing pair first departs (token index and the text around it on both sides).

Speculative decoding must not change greedy outputs; a drafter run below its block size, a numerics
change in the verify kernel or a scheduler bug shows up here as a divergence. Tokens for locating the
divergence are words and punctuation marks (the built-in tokenizer's rule), so the index reads the
same for any server.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from specsweep.client import kstamp
from specsweep.errors import BenchError, DataError, UsageError, one_of

BACKENDS = ("openai", "openai-chat", "sglang")
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
CONTEXT_TOKENS = 6


@dataclass
class PairResult:
    index: int
    identical: bool
    token_index: int | None = None
    a_context: str = ""
    b_context: str = ""
    a_error: str | None = None
    b_error: str | None = None


@dataclass
class LosslessResult:
    base_urls: list[str]
    backend: str
    model: str | None
    max_tokens: int
    n_prompts: int
    identical: int
    errors: int
    pairs: list[PairResult] = field(default_factory=list)

    @property
    def share_identical(self) -> float:
        compared = self.n_prompts - self.errors
        return self.identical / compared if compared else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["share_identical"] = self.share_identical
        d["divergences"] = [
            {
                "index": p.index,
                "token_index": p.token_index,
                "a_context": p.a_context,
                "b_context": p.b_context,
            }
            for p in self.pairs
            if not p.identical and p.token_index is not None
        ]
        return d


def first_divergence(a: str, b: str, context: int = CONTEXT_TOKENS) -> tuple[int, str, str] | None:
    """(token index of the first difference, text around it in a, text around it in b); None if equal.

    Tokens are words and single punctuation marks; whitespace differences alone do not count.
    """
    ta = list(_TOKEN_RE.finditer(a))
    tb = list(_TOKEN_RE.finditer(b))
    n = min(len(ta), len(tb))
    i = next((k for k in range(n) if ta[k].group(0) != tb[k].group(0)), n)
    if i == len(ta) == len(tb):
        return None

    def around(text: str, toks: list[re.Match[str]]) -> str:
        if not toks:
            return ""
        lo = toks[max(0, i - context)].start()
        hi = toks[min(len(toks), i + context + 1) - 1].end() if i < len(toks) else len(text)
        return text[lo:hi]

    return i, around(a, ta), around(b, tb)


def _prompts(n: int, seed: int, max_tokens: int) -> list[str]:
    """Real English text prompts from the workload module (seeded)."""
    from specsweep.workload.prompts import generate
    from specsweep.workload.scenarios import Scenario
    from specsweep.workload.tokenizer import BuiltinTokenizer

    sc = Scenario(name="lossless", input_len=256, output_len=max_tokens, range_ratio=0.25)
    return [str(s.prompt) for s in generate(sc, n, BuiltinTokenizer(), seed)]


async def _model_id(session: Any, base: str) -> str | None:
    try:
        async with session.get(f"{base}/v1/models") as r:
            if r.status != 200:
                return None
            data = await r.json(content_type=None)
            items = data.get("data") or []
            return str(items[0]["id"]) if items else None
    except Exception:  # no OpenAI model listing (e.g. SGLang native only): send without a model
        return None


async def _complete(
    session: Any, base: str, backend: str, model: str | None, prompt: str, max_tokens: int
) -> str:
    if backend == "sglang":
        url = f"{base}/generate"
        body: dict[str, Any] = {
            "text": prompt,
            "sampling_params": {"temperature": 0.0, "max_new_tokens": max_tokens},
        }
    elif backend == "openai-chat":
        url = f"{base}/v1/chat/completions"
        body = {
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
        }
    else:
        url = f"{base}/v1/completions"
        body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0}
    if model and backend != "sglang":
        body["model"] = model
    async with session.post(url, json=body) as r:
        raw = await r.read()
        if r.status != 200:
            raise RuntimeError(f"HTTP {r.status}: {raw[:200].decode(errors='replace')}")
    data = orjson.loads(raw)
    if backend == "sglang":
        return str(data.get("text", ""))
    choice = (data.get("choices") or [{}])[0]
    if backend == "openai-chat":
        return str((choice.get("message") or {}).get("content") or "")
    return str(choice.get("text") or "")


async def _collect(
    base_url: str,
    backend: str,
    model: str | None,
    prompts: list[str],
    max_tokens: int,
    concurrency: int,
    timeout_s: float,
) -> tuple[str | None, list[tuple[str | None, str | None]]]:
    """(model used, [(text, error) per prompt]) from one server."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        m = (model or await _model_id(session, base_url)) if backend != "sglang" else None
        sem = asyncio.Semaphore(concurrency)

        async def one(p: str) -> tuple[str | None, str | None]:
            async with sem:
                try:
                    return await _complete(session, base_url, backend, m, p, max_tokens), None
                except Exception as e:  # failures are data: counted and reported per prompt
                    return None, f"{type(e).__name__}: {e}"

        return m, list(await asyncio.gather(*(one(p) for p in prompts)))


def compare_outputs(
    a: list[tuple[str | None, str | None]],
    b: list[tuple[str | None, str | None]],
    *,
    names: list[str],
    backend: str,
    model: str | None,
    max_tokens: int,
) -> LosslessResult:
    """Pair the i-th outputs of two servers: identical, first divergence, or an error."""
    pairs = []
    identical = errors = 0
    for i, ((ta, ea), (tb, eb)) in enumerate(zip(a, b, strict=True)):
        if ea or eb or ta is None or tb is None:
            errors += 1
            pairs.append(PairResult(i, False, a_error=ea, b_error=eb))
            continue
        d = first_divergence(ta, tb)
        if d is None:
            identical += 1
            pairs.append(PairResult(i, True))
        else:
            pairs.append(PairResult(i, False, d[0], d[1], d[2]))
    return LosslessResult(names, backend, model, max_tokens, len(a), identical, errors, pairs)


async def _run(
    base_urls: list[str],
    backend: str,
    model: str | None,
    prompts: list[str],
    max_tokens: int,
    concurrency: int,
    timeout_s: float,
) -> LosslessResult:
    ma, a = await _collect(base_urls[0], backend, model, prompts, max_tokens, concurrency, timeout_s)
    _, b = await _collect(base_urls[1], backend, model, prompts, max_tokens, concurrency, timeout_s)
    return compare_outputs(a, b, names=base_urls, backend=backend, model=model or ma, max_tokens=max_tokens)


def collect_outputs(
    base_url: str,
    *,
    backend: str = "openai",
    num_prompts: int = 16,
    max_tokens: int = 64,
    seed: int = 1,
    model: str | None = None,
    concurrency: int = 4,
    timeout_s: float = 300.0,
) -> list[dict[str, Any]]:
    """Greedy outputs of one server for the check's prompts: [{"text", "error"}] (JSON-ready), so two
    servers that never run at the same time (one launch per config) can be compared afterwards."""
    _, outs = kstamp.run(
        _collect(
            base_url.rstrip("/"),
            backend,
            model,
            _prompts(num_prompts, seed, max_tokens),
            max_tokens,
            concurrency,
            timeout_s,
        )
    )
    return [{"text": t, "error": e} for t, e in outs]


def compare_collected(
    a: list[dict[str, Any]], b: list[dict[str, Any]], *, names: list[str], backend: str, max_tokens: int
) -> LosslessResult:
    def pairs(x: list[dict[str, Any]]) -> list[tuple[str | None, str | None]]:
        return [(d.get("text"), d.get("error")) for d in x]

    if len(a) != len(b):
        raise DataError(f"the two configs answered different numbers of prompts ({len(a)} vs {len(b)})")
    return compare_outputs(
        pairs(a), pairs(b), names=names, backend=backend, model=None, max_tokens=max_tokens
    )


def check_lossless(
    base_urls: list[str],
    *,
    num_prompts: int = 16,
    backend: str = "openai",
    max_tokens: int = 64,
    model: str | None = None,
    seed: int = 1,
    concurrency: int = 4,
    timeout_s: float = 300.0,
) -> LosslessResult:
    if len(base_urls) != 2:
        raise UsageError(f"--base-url: give exactly two servers to compare, got {len(base_urls)}")
    if backend not in BACKENDS:
        raise UsageError(f"--backend: {one_of(backend, BACKENDS)}")
    if num_prompts < 1 or max_tokens < 1:
        raise UsageError(f"--num-prompts and --max-tokens must be >= 1, got {num_prompts} and {max_tokens}")
    urls = [u.rstrip("/") for u in base_urls]
    res = kstamp.run(
        _run(
            urls, backend, model, _prompts(num_prompts, seed, max_tokens), max_tokens, concurrency, timeout_s
        )
    )
    if res.errors == res.n_prompts:
        first = next((p.a_error or p.b_error for p in res.pairs), "")
        raise BenchError(f"every request failed; first error: {first}")
    return res
