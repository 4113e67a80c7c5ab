#!/usr/bin/env python3
"""Make a tiny Llama whose greedy output cycles through fixed word sequences (no downloads).

    python tests/engines/make_tiny_model.py OUT_DIR

writes
    OUT_DIR/hf/                    config.json, model.safetensors, tokenizer.json,
                                   tokenizer_config.json, special_tokens_map.json, generation_config.json
    OUT_DIR/tiny-cycle-llama.gguf  the same model and tokenizer for llama.cpp (F32)
    OUT_DIR/cycles.json            the cycles (token ids and words) and the successor of each word

Why a cycle: n-gram / prompt-lookup speculation drafts the tokens that followed an earlier
occurrence of the current suffix. Random weights never repeat an n-gram, so such drafting would
propose nothing; a model whose greedy output repeats a short cycle lets drafts be accepted, so the
engines' real spec-decode counters move.

How: the tokenizer is a byte-level BPE (GPT-2 pre-tokenizer regex, so llama.cpp's "gpt2" pre-type
tokenizes identically) trained on specsweep's own corpus. N_CYCLES disjoint cycles of CYCLE_LEN
whole-word tokens (" word", re-tokenizing to itself; no cycle bigram occurs in the corpus) are the
only tokens the model ever emits: every token i has a successor next(i) - the following word of its
cycle for cycle words, a fixed cycle word for every other token. The layers' output projections
(o_proj, down_proj) are zero, so the residual stream is the token embedding alone and attention is
ignored; embed[i] = u[next(i)] and lm_head[w] = SCALE * u[w] for orthonormal u, zero rows for
non-cycle tokens, so argmax logits = next(last token) with a wide margin.

Needs numpy, tokenizers and gguf (the setup script puts llama.cpp's own gguf-py on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

HIDDEN = 128
N_HEADS = 2
N_KV_HEADS = 2
HEAD_DIM = HIDDEN // N_HEADS
N_LAYERS = 2
INTERMEDIATE = 256
VOCAB_TARGET = 1024
CONTEXT = 4096
RMS_EPS = 1e-5
ROPE_THETA = 10000.0
N_CYCLES = 8
CYCLE_LEN = 6
SCALE = 2.0
SEED = 20261202
BOS, EOS = "<s>", "</s>"
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
NAME = "specsweep-tiny-cycle-llama"


def corpus_text() -> str:
    try:
        from specsweep.workload.tokenizer import corpus_text as _corpus
    except ImportError:  # run from a checkout without the package installed
        root = Path(__file__).resolve().parents[2]
        return (root / "src/specsweep/workload/corpus.txt").read_text(encoding="utf-8")
    return _corpus()


def train_tokenizer(corpus: str):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_TARGET,
        min_frequency=2,
        special_tokens=[BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus.splitlines(), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, tok.token_to_id(BOS))]
    )
    return tok


def choose_cycles(tok, corpus: str, rng: np.random.Generator) -> list[list[int]]:
    """N_CYCLES disjoint cycles of whole-word tokens; no bigram of a cycle occurs in the corpus."""
    corpus_words = set(re.findall(r"[a-z]+", corpus))
    words = []
    for t, i in sorted(tok.get_vocab().items(), key=lambda kv: kv[1]):
        w = t[1:]
        whole_word = t.startswith("Ġ") and w.isalpha() and w.islower() and len(w) >= 3 and w in corpus_words
        if whole_word and tok.encode(" " + w, add_special_tokens=False).ids == [i]:
            words.append(i)
    need = N_CYCLES * CYCLE_LEN
    if len(words) < need:
        raise SystemExit(f"tokenizer has only {len(words)} whole-word tokens; need {need}")
    ids = tok.encode(corpus, add_special_tokens=False).ids
    corpus_bigrams = set(itertools.pairwise(ids))
    for _ in range(1000):
        pick = [int(x) for x in rng.choice(words, size=need, replace=False)]
        cycles = [pick[c * CYCLE_LEN : (c + 1) * CYCLE_LEN] for c in range(N_CYCLES)]
        pairs = {(c[j], c[(j + 1) % CYCLE_LEN]) for c in cycles for j in range(CYCLE_LEN)}
        if not pairs & corpus_bigrams:
            return cycles
    raise SystemExit("could not place cycles whose bigrams avoid the corpus")


def successor_table(vocab_size: int, cycles: list[list[int]]) -> np.ndarray:
    members = [t for c in cycles for t in c]
    nxt = np.array([members[i % len(members)] for i in range(vocab_size)], dtype=np.int64)
    for c in cycles:
        for j, t in enumerate(c):
            nxt[t] = c[(j + 1) % len(c)]
    return nxt


def make_weights(vocab_size: int, cycles: list[list[int]], rng: np.random.Generator) -> dict[str, np.ndarray]:
    members = [t for c in cycles for t in c]
    nxt = successor_table(vocab_size, cycles)
    # orthonormal target directions, one per cycle word
    q, _ = np.linalg.qr(rng.standard_normal((HIDDEN, len(members))))
    u = {t: q[:, k] for k, t in enumerate(members)}
    embed = np.stack([u[int(nxt[i])] for i in range(vocab_size)]).astype(np.float32)
    lm_head = np.zeros((vocab_size, HIDDEN), dtype=np.float32)
    for t in members:
        lm_head[t] = SCALE * u[t]

    def small(*shape: int) -> np.ndarray:
        return (0.02 * rng.standard_normal(shape)).astype(np.float32)

    w: dict[str, np.ndarray] = {"model.embed_tokens.weight": embed}
    kv = N_KV_HEADS * HEAD_DIM
    for n in range(N_LAYERS):
        p = f"model.layers.{n}."
        w[p + "input_layernorm.weight"] = np.ones(HIDDEN, np.float32)
        w[p + "self_attn.q_proj.weight"] = small(N_HEADS * HEAD_DIM, HIDDEN)
        w[p + "self_attn.k_proj.weight"] = small(kv, HIDDEN)
        w[p + "self_attn.v_proj.weight"] = small(kv, HIDDEN)
        w[p + "self_attn.o_proj.weight"] = np.zeros((HIDDEN, N_HEADS * HEAD_DIM), np.float32)
        w[p + "post_attention_layernorm.weight"] = np.ones(HIDDEN, np.float32)
        w[p + "mlp.gate_proj.weight"] = small(INTERMEDIATE, HIDDEN)
        w[p + "mlp.up_proj.weight"] = small(INTERMEDIATE, HIDDEN)
        w[p + "mlp.down_proj.weight"] = np.zeros((HIDDEN, INTERMEDIATE), np.float32)
    w["model.norm.weight"] = np.ones(HIDDEN, np.float32)
    w["lm_head.weight"] = lm_head
    return w


def greedy_next(w: dict[str, np.ndarray], token: int) -> int:
    """The model's forward pass for the last position (the layers add zero to the residual)."""
    h = w["model.embed_tokens.weight"][token].astype(np.float64)
    h = h / np.sqrt(np.mean(h * h) + RMS_EPS) * w["model.norm.weight"]
    return int(np.argmax(w["lm_head.weight"] @ h))


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, a in tensors.items():
        assert a.dtype == np.float32, name
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a).tobytes())


def write_hf(out: Path, tok, w: dict[str, np.ndarray]) -> None:
    out.mkdir(parents=True)
    vocab_size = tok.get_vocab_size()
    bos, eos = tok.token_to_id(BOS), tok.token_to_id(EOS)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": N_LAYERS,
        "num_attention_heads": N_HEADS,
        "num_key_value_heads": N_KV_HEADS,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": CONTEXT,
        "rms_norm_eps": RMS_EPS,
        "rope_theta": ROPE_THETA,
        "vocab_size": vocab_size,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "mlp_bias": False,
        "initializer_range": 0.02,
        "torch_dtype": "float32",
        "use_cache": True,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": bos, "eos_token_id": eos, "do_sample": False}, indent=2)
    )
    tok.save(str(out / "tokenizer.json"))
    tok_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "add_bos_token": True,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": CONTEXT,
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2))
    (out / "special_tokens_map.json").write_text(json.dumps({"bos_token": BOS, "eos_token": EOS}, indent=2))
    write_safetensors(out / "model.safetensors", w)


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """HF -> GGUF rotary layout of q/k rows (as llama.cpp's convert_hf_to_gguf.py does)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(path: Path, tok, w: dict[str, np.ndarray]) -> None:
    import gguf

    vocab = tok.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = {tok.token_to_id(BOS), tok.token_to_id(EOS)}
    types = [gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for i in range(len(tokens))]
    merges_raw = json.loads(tok.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges_raw]

    g = gguf.GGUFWriter(str(path), "llama")
    g.add_name(NAME)
    g.add_context_length(CONTEXT)
    g.add_embedding_length(HIDDEN)
    g.add_block_count(N_LAYERS)
    g.add_feed_forward_length(INTERMEDIATE)
    g.add_head_count(N_HEADS)
    g.add_head_count_kv(N_KV_HEADS)
    g.add_key_length(HEAD_DIM)
    g.add_value_length(HEAD_DIM)
    g.add_layer_norm_rms_eps(RMS_EPS)
    g.add_rope_dimension_count(HEAD_DIM)
    g.add_rope_freq_base(ROPE_THETA)
    g.add_vocab_size(len(tokens))
    g.add_file_type(gguf.LlamaFileType.ALL_F32)
    g.add_tokenizer_model("gpt2")
    g.add_tokenizer_pre("gpt-2")  # llama.cpp's name for the GPT-2 regex (HF ByteLevel)
    g.add_token_list(tokens)
    g.add_token_types(types)
    g.add_token_merges(merges)
    g.add_bos_token_id(tok.token_to_id(BOS))
    g.add_eos_token_id(tok.token_to_id(EOS))
    g.add_add_bos_token(True)
    g.add_add_eos_token(False)
    g.add_chat_template(CHAT_TEMPLATE)

    g.add_tensor("token_embd.weight", w["model.embed_tokens.weight"])
    for n in range(N_LAYERS):
        p, b = f"model.layers.{n}.", f"blk.{n}."
        g.add_tensor(b + "attn_norm.weight", w[p + "input_layernorm.weight"])
        g.add_tensor(b + "attn_q.weight", _permute(w[p + "self_attn.q_proj.weight"], N_HEADS))
        g.add_tensor(b + "attn_k.weight", _permute(w[p + "self_attn.k_proj.weight"], N_KV_HEADS))
        g.add_tensor(b + "attn_v.weight", w[p + "self_attn.v_proj.weight"])
        g.add_tensor(b + "attn_output.weight", w[p + "self_attn.o_proj.weight"])
        g.add_tensor(b + "ffn_norm.weight", w[p + "post_attention_layernorm.weight"])
        g.add_tensor(b + "ffn_gate.weight", w[p + "mlp.gate_proj.weight"])
        g.add_tensor(b + "ffn_up.weight", w[p + "mlp.up_proj.weight"])
        g.add_tensor(b + "ffn_down.weight", w[p + "mlp.down_proj.weight"])
    g.add_tensor("output_norm.weight", w["model.norm.weight"])
    g.add_tensor("output.weight", w["lm_head.weight"])
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()


def make(out: Path) -> None:
    rng = np.random.default_rng(SEED)
    corpus = corpus_text()
    tok = train_tokenizer(corpus)
    vocab_size = tok.get_vocab_size()
    cycles = choose_cycles(tok, corpus, rng)
    w = make_weights(vocab_size, cycles, rng)
    nxt = successor_table(vocab_size, cycles)
    bad = [i for i in range(vocab_size) if greedy_next(w, i) != nxt[i]]
    if bad:
        raise SystemExit(f"self-check failed: greedy next token wrong for ids {bad[:10]}")

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write_hf(tmp / "hf", tok, w)
    write_gguf(tmp / "tiny-cycle-llama.gguf", tok, w)

    def word(t: int) -> str:
        return tok.decode([t])

    info = {
        "name": NAME,
        "vocab_size": vocab_size,
        "cycle_len": CYCLE_LEN,
        "cycles": cycles,
        "cycle_text": ["".join(word(t) for t in c) for c in cycles],
        "successor": {
            word(c[j]).strip(): word(c[(j + 1) % len(c)]).strip() for c in cycles for j in range(len(c))
        },
    }
    (tmp / "cycles.json").write_text(json.dumps(info, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path, help="directory to create (replaced if it exists)")
    args = ap.parse_args(argv)
    make(args.out_dir.resolve())
    info = json.loads((args.out_dir / "cycles.json").read_text())
    print(f"wrote {args.out_dir} (vocab {info['vocab_size']}, cycles: {info['cycle_text'][:2]} ...)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
