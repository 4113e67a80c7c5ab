"""Tokenizers: a local Hugging Face tokenizer when given, else the built-in word tokenizer.

The built-in tokenizer splits text into words and single punctuation marks; each is one token. The
simulator's generated text is words from a built-in vocabulary, so the client and the simulator
count the same tokens. Against a real model it only approximates the model's token counts, which is
why the runner records server-reported counts beside the nominal ones and warns when it is used.
"""

from __future__ import annotations

import json
import re
import warnings
import zlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from specsweep.errors import MissingDependency, UsageError

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


class Tokenizer(Protocol):
    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def count(self, text: str) -> int: ...

    @property
    def vocab_size(self) -> int: ...


@lru_cache(maxsize=1)
def corpus_text() -> str:
    """The English prose corpus shipped with the package (from Python's own documentation)."""
    return (Path(__file__).with_name("corpus.txt")).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def builtin_vocab() -> tuple[str, ...]:
    """Vocabulary of the built-in tokenizer: corpus words by first appearance, then punctuation."""
    seen: dict[str, None] = {}
    for m in _TOKEN_RE.finditer(corpus_text()):
        seen.setdefault(m.group(0), None)
    return tuple(seen)


@lru_cache(maxsize=1)
def generation_words() -> tuple[str, ...]:
    """Plain lowercase words the simulator emits (one token each under every tokenizer we ship)."""
    return tuple(w for w in builtin_vocab() if w.isalpha() and w.islower() and 2 <= len(w) <= 9)[:2048]


class BuiltinTokenizer:
    name = "builtin"

    def __init__(self) -> None:
        self._vocab = builtin_vocab()
        self._index = {w: i for i, w in enumerate(self._vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def _id(self, tok: str) -> int:
        i = self._index.get(tok)
        if i is None:  # unseen word: a stable id past the vocabulary
            return len(self._vocab) + (zlib.crc32(tok.encode()) % 100_000)
        return i

    def encode(self, text: str) -> list[int]:
        return [self._id(m.group(0)) for m in _TOKEN_RE.finditer(text)]

    def count(self, text: str) -> int:
        return sum(1 for _ in _TOKEN_RE.finditer(text))

    def decode(self, ids: list[int]) -> str:
        n = len(self._vocab)
        out: list[str] = []
        for i in ids:
            w = self._vocab[i % n]
            if out and (w[0].isalnum() or w[0] == "_" or w == "("):  # word chars must not merge
                out.append(" ")
            out.append(w)
        return "".join(out)


class HFTokenizer:
    """A local Hugging Face tokenizer: a tokenizer.json file or a model directory holding one."""

    def __init__(self, path: str) -> None:
        p = Path(path)
        file = p / "tokenizer.json" if p.is_dir() else p
        if not file.is_file():
            raise UsageError(
                f"--tokenizer {path!r}: no tokenizer.json there; give a tokenizer.json file or a local "
                "model directory that holds one (nothing is downloaded)"
            )
        try:
            from tokenizers import Tokenizer as _Tok
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise MissingDependency("a Hugging Face tokenizer", "hf") from e
        self._tok = _Tok.from_file(str(file))
        self.name = str(file)

    @property
    def vocab_size(self) -> int:
        return int(self._tok.get_vocab_size())

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids))


def load_tokenizer(path: str | None, *, warn: bool = True) -> Tokenizer:
    """Tokenizer from a local path, or the built-in one (with a warning that counts are approximate)."""
    if path:
        return HFTokenizer(path)
    if warn:
        warnings.warn(
            "no --tokenizer given: using the built-in word tokenizer; prompt lengths are nominal and "
            "server-reported token counts are recorded beside them",
            stacklevel=2,
        )
    return BuiltinTokenizer()


def export_hf_tokenizer(out_dir: str | Path) -> Path:
    """Write the built-in tokenizer as a Hugging Face tokenizer folder (tokenizer.json + config).

    Other clients (sglang.bench_serving, vllm bench serve, AIPerf) then count tokens exactly as
    specsweep and the simulator do: one token per word or punctuation mark. Needs ``tokenizers``.
    """
    try:
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MissingDependency("exporting the built-in tokenizer", "hf") from e
    import json

    vocab = {w: i for i, w in enumerate(builtin_vocab())}
    unk = "[UNK]"
    vocab.setdefault(unk, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(r"\w+|[^\w\s]"), behavior="isolated")]
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": unk, "model_max_length": 1 << 20}
        )
    )
    (out / "special_tokens_map.json").write_text(json.dumps({"unk_token": unk}))
    return out


def chat_template_of(tok: Tokenizer) -> Callable[[list[dict[str, str]]], str] | None:
    """The model's chat template from the local tokenizer's ``tokenizer_config.json`` (or
    ``chat_template.jinja``) beside its tokenizer.json, rendered with Jinja2; None when there is none.

    Completion endpoints then get the prompt the model was trained on; chat endpoints apply the
    server's own template and need none of this.
    """
    name = getattr(tok, "name", "")
    folder = Path(name).parent if name and name != "builtin" else None
    if folder is None or not folder.is_dir():
        return None
    cfg: dict[str, object] = {}
    cfg_file = folder / "tokenizer_config.json"
    if cfg_file.is_file():
        try:
            cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise UsageError(f"{cfg_file}: not readable JSON ({e})") from e
    src = cfg.get("chat_template")
    if isinstance(src, list):  # [{"name": "default", "template": ...}, ...]
        src = next(
            (t.get("template") for t in src if isinstance(t, dict) and t.get("name") == "default"), None
        )
    jinja_file = folder / "chat_template.jinja"
    if not isinstance(src, str) and jinja_file.is_file():
        src = jinja_file.read_text(encoding="utf-8")
    if not isinstance(src, str):
        return None
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise MissingDependency("chat templates (chat_template: true)", "hf") from e

    def special(key: str) -> str:
        v = cfg.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        return v if isinstance(v, str) else ""

    def raise_exception(msg: str) -> None:
        raise UsageError(f"chat template of {folder}: {msg}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(src)
    bos, eos = special("bos_token"), special("eos_token")

    def render(messages: list[dict[str, str]]) -> str:
        return str(
            template.render(messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos)
        )

    return render
