from __future__ import annotations

import itertools
import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.errors import ConfigError, DataError, UsageError
from specsweep.workload.arrivals import arrival_offsets
from specsweep.workload.lengths import length_bounds, sample_lengths
from specsweep.workload.prompts import generate, warmup_specs
from specsweep.workload.scenarios import BUILTIN, Scenario, default_num_prompts, get_scenario, parse_scenarios
from specsweep.workload.tokenizer import BuiltinTokenizer, generation_words

TOK = BuiltinTokenizer()


def test_catalog_matches_reference_reports() -> None:
    want = {"chat_short": (512, 256), "chat_standard": (1024, 256), "decode_heavy": (512, 2048),
            "generation_standard": (1024, 1024), "long_context_probe": (16384, 512),
            "rag_medium": (4096, 512), "stress_standard": (1024, 256)}  # fmt: skip
    assert {k: (s.input_len, s.output_len) for k, s in BUILTIN.items()} == want
    assert all(s.range_ratio == 0 and s.range_mode == "sglang" for s in BUILTIN.values())
    assert [default_num_prompts(c) for c in (1, 4, 8, 16, 32, 64, 96, 128, 2, 200)] == [
        32, 32, 128, 256, 512, 512, 768, 1024, 32, 1600]  # fmt: skip


def test_range_ratio_semantics() -> None:
    assert length_bounds(1024, 0.0) == (1, 1024)  # sglang r=0: uniform [1, L]
    assert length_bounds(1024, 0.5) == (512, 1024)
    assert length_bounds(1024, 0.0, "vllm") == (1024, 1024)  # vLLM r=0: fixed
    assert length_bounds(1000, 0.1, "vllm") == (900, 1100)
    ins, _outs = sample_lengths(BUILTIN["chat_standard"], 4000, seed=3)
    assert min(ins) >= 1 and max(ins) <= 1024
    assert abs(sum(ins) / len(ins) - 512.5) < 15  # mean about L/2, as in the reference runs


def test_random_prompts_are_real_text_of_exact_length_and_reproducible() -> None:
    sc = Scenario(name="x", input_len=300, output_len=20)
    a = generate(sc, 20, TOK, seed=7)
    b = generate(sc, 20, TOK, seed=7)
    c = generate(sc, 20, TOK, seed=8)
    assert [s.prompt for s in a] == [s.prompt for s in b]
    assert [s.prompt for s in a] != [s.prompt for s in c]
    for s in a:
        assert isinstance(s.prompt, str)
        assert TOK.count(s.prompt) == s.prompt_len
        assert 1 <= s.output_len <= 20
    # long prompts tile the corpus
    long = generate(Scenario(name="l", input_len=60000, output_len=5, range_ratio=1.0), 1, TOK, seed=1)[0]
    assert TOK.count(long.prompt) == 60000  # type: ignore[arg-type]


def test_random_ids_and_shared_prefix() -> None:
    ids = generate(
        Scenario(name="i", input_len=50, output_len=5, dataset="random-ids", range_ratio=1.0), 3, TOK, 1
    )
    assert all(isinstance(s.prompt, list) and len(s.prompt) == 50 for s in ids)
    sp = Scenario(name="p", input_len=100, output_len=5, dataset="shared-prefix", num_groups=2, prefix_len=60,
                  range_ratio=1.0)  # fmt: skip
    ps = generate(sp, 6, TOK, 1)
    enc = [TOK.encode(s.prompt) for s in ps]  # type: ignore[arg-type]
    assert enc[0][:60] == enc[2][:60] != enc[1][:60]
    assert [s.group for s in ps] == [0, 1, 0, 1, 0, 1]


def test_file_sources(tmp_path) -> None:  # type: ignore[no-untyped-def]
    j = tmp_path / "p.jsonl"
    j.write_text('{"prompt": "hello there", "output_len": 7}\n{"prompt": "second one"}\n')
    specs = generate(
        Scenario(name="j", input_len=10, output_len=30, dataset="jsonl", dataset_path=str(j)), 4, TOK, 1
    )
    assert sorted({s.output_len for s in specs}) == [7, 30]
    sg = tmp_path / "sg.json"
    sg.write_bytes(orjson.dumps([{"conversations": [{"from": "human", "value": "why is the sky blue"},
                                                     {"from": "gpt", "value": "because of scattering"}]}]))  # fmt: skip
    specs = generate(
        Scenario(name="s", input_len=10, output_len=30, dataset="sharegpt", dataset_path=str(sg)), 2, TOK, 1
    )
    assert specs[0].prompt == "why is the sky blue" and specs[0].output_len == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"nope": 1}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2.*prompt"):
        generate(
            Scenario(name="b", input_len=1, output_len=1, dataset="jsonl", dataset_path=str(bad)), 2, TOK, 1
        )
    with pytest.raises(UsageError, match="needs --dataset-path"):
        generate(Scenario(name="b", input_len=1, output_len=1, dataset="jsonl"), 2, TOK, 1)


def test_warmup_is_copies_of_first_prompt_capped_at_32() -> None:
    first = generate(Scenario(name="x", input_len=30, output_len=500, range_ratio=1.0), 1, TOK, 1)[0]
    w = warmup_specs(first, 3)
    assert len(w) == 3 and all(s.is_warmup and s.prompt == first.prompt and s.output_len == 32 for s in w)


def test_user_scenarios_and_errors() -> None:
    sc = parse_scenarios({"mine": {"input_len": 100, "output_len": 10}})
    assert sc["mine"].input_len == 100
    assert get_scenario("mine", sc).name == "mine"
    with pytest.raises(ConfigError, match=r"scenarios\.mine\.output_len"):
        parse_scenarios({"mine": {"input_len": 100, "output_len": -1}}, file="f.yaml")
    with pytest.raises(UsageError, match="chat_short"):
        get_scenario("nope")


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 200), st.floats(0.1, 1000), st.floats(0.1, 10))
def test_arrivals_are_absolute_and_rate_correct(n: int, rate: float, burst: float) -> None:
    offs = arrival_offsets(n, rate, burst, seed=1)
    assert offs[0] == 0.0 and all(b >= a for a, b in itertools.pairwise(offs))
    assert offs == arrival_offsets(n, rate, burst, seed=1)


def test_arrival_rate_statistics() -> None:
    offs = arrival_offsets(20000, 50.0, 1.0, seed=2)
    assert offs[-1] / 19999 == pytest.approx(1 / 50, rel=0.03)
    assert arrival_offsets(3, math.inf, 1.0, 0) == [0.0, 0.0, 0.0]
    with pytest.raises(UsageError):
        arrival_offsets(3, -1, 1.0, 0)


def test_generation_words_are_single_tokens() -> None:
    words = generation_words()
    assert len(words) > 500
    assert all(TOK.count(w) == 1 for w in words)
    assert TOK.count(" ".join(words[:100])) == 100


def test_exported_hf_tokenizer_counts_like_builtin(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from specsweep.workload.tokenizer import HFTokenizer, export_hf_tokenizer

    hf = HFTokenizer(str(export_hf_tokenizer(tmp_path / "tok")))
    for s in generate(BUILTIN["chat_standard"], 10, TOK, 3):
        assert hf.count(s.prompt) == TOK.count(s.prompt) == s.prompt_len  # type: ignore[arg-type]
    odd = "Hello, world!! (it) is_a x.y 3.5 unseenword"
    assert hf.count(odd) == TOK.count(odd)
