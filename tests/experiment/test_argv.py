"""Launcher command lines for every kind: argv lists, never a shell."""

from __future__ import annotations

import json
import sys
from typing import Any

from specsweep.experiment.argv import base_url, build_argv, build_env, version_argv
from specsweep.experiment.config import ServerConfig, ServerSpec
from specsweep.store.redact import redact_argv, redact_env


def cfg(**kw: Any) -> ServerConfig:
    point = kw.pop("point", {})
    spec = ServerSpec(**kw, grid={k: [v] for k, v in point.items()})
    return ServerConfig(label=spec.name, spec=spec, params={**spec.params, **point}, grid_params=point)


def test_vllm_serve() -> None:
    c = cfg(
        name="v",
        kind="vllm",
        model="deepseek-ai/DeepSeek-V4-Flash",
        method="eagle3",
        tp=8,
        kv_cache_dtype="fp8",
        params={"draft_model": "org/draft", "max_num_seqs": 128, "enforce_eager": True, "x_off": False},
        point={"spec_tokens": 3},
    )
    argv = build_argv(c, 8000)
    assert argv is not None
    assert argv[:3] == ["vllm", "serve", "deepseek-ai/DeepSeek-V4-Flash"]
    assert argv[argv.index("--port") + 1] == "8000" and argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8"
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 3}
    assert argv[argv.index("--max-num-seqs") + 1] == "128"
    assert "--enforce-eager" in argv and "--x-off" not in argv


def test_vllm_module_entrypoint_and_venv_python() -> None:
    c = cfg(name="v", kind="vllm", model="m", entrypoint="module", venv="/opt/vllm-cpu")
    argv = build_argv(c, 1234)
    assert argv is not None
    assert argv[:5] == [
        "/opt/vllm-cpu/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "m",
    ]
    assert "--speculative-config" not in argv  # no method, no params: a baseline
    env = build_env(c, 1234, base={"PATH": "/usr/bin"})
    assert env["PATH"].split(":")[0].endswith("/opt/vllm-cpu/bin") and env["VIRTUAL_ENV"].endswith("vllm-cpu")
    assert version_argv(c) == ["/opt/vllm-cpu/bin/python", "-c", "import vllm; print(vllm.__version__)"]


def test_vllm_speculative_config_template_keeps_types() -> None:
    c = cfg(
        name="v",
        kind="vllm",
        model="m",
        method="ngram",
        speculative_config={"num_speculative_tokens": "{k}", "prompt_lookup_max": 4, "note": "k={k}"},
        point={"k": 5},
    )
    argv = build_argv(c, 1)
    assert argv is not None
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "note": "k=5"}


def test_sglang() -> None:
    c = cfg(
        name="e",
        kind="sglang",
        model="M",
        method="eagle",
        tp=8,
        kv_cache_dtype="fp8_e4m3",
        python="/venvs/sgl/bin/python",
        params={
            "draft_model": "D",
            "num_steps": 3,
            "eagle_topk": 1,
            "num_draft_tokens": 4,
            "mem_fraction_static": 0.8,
        },
    )
    argv = build_argv(c, 30000)
    assert argv == [
        "/venvs/sgl/bin/python", "-m", "sglang.launch_server", "--model-path", "M",
        "--host", "127.0.0.1", "--port", "30000", "--tp", "8", "--kv-cache-dtype", "fp8_e4m3",
        "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "D",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4", "--mem-fraction-static", "0.8", "--enable-metrics",
    ]  # fmt: skip


def test_llamacpp() -> None:
    c = cfg(
        name="l",
        kind="llamacpp",
        model="/m/target.gguf",
        binary="/opt/llama.cpp/build/bin/llama-server",
        params={"draft_model": "/m/draft.gguf", "draft_min": 1, "ctx_size": 4096},
        point={"spec_tokens": 8},
        args=["-ngl", "0"],
    )
    argv = build_argv(c, 9)
    assert argv == [
        "/opt/llama.cpp/build/bin/llama-server", "-m", "/m/target.gguf", "--host", "127.0.0.1", "--port", "9",
        "--metrics", "--model-draft", "/m/draft.gguf", "--spec-draft-n-min", "1", "--ctx-size", "4096",
        "--spec-draft-n-max", "8", "-ngl", "0",
    ]  # fmt: skip
    assert version_argv(c) == ["/opt/llama.cpp/build/bin/llama-server", "--version"]


def test_command_template_substitutes_per_element() -> None:
    c = cfg(
        name="DSpark",
        kind="command",
        model="deepseek-ai/DeepSeek-V4-Flash",
        argv=[
            "vllm-dspark",
            "serve",
            "{model}",
            "--port={port}",
            "--spec-method",
            "dspark",
            "--spec-tokens",
            "{st}",
        ],
        args=["--served-model-name", "{name}-{st}"],
        point={"st": 5},
    )
    argv = build_argv(c, 7000)
    assert argv == [
        "vllm-dspark", "serve", "deepseek-ai/DeepSeek-V4-Flash", "--port=7000", "--spec-method", "dspark",
        "--spec-tokens", "5", "--served-model-name", "DSpark-5",
    ]  # fmt: skip
    assert version_argv(c) is None


def test_hostile_values_stay_one_element() -> None:
    evil = "x; rm -rf / && echo $(whoami) `id` 'q' \"d\" {not_a_placeholder"
    c = cfg(name="c", kind="command", model=evil, argv=["srv", "{model}", "--flag", "{p}"], point={"p": evil})
    argv = build_argv(c, 1)
    assert argv == ["srv", evil, "--flag", evil]
    c2 = cfg(name="s", kind="sglang", model=evil, params={"draft_model": "; rm -rf ~"})
    argv2 = build_argv(c2, 1)
    assert argv2 is not None and evil in argv2 and "; rm -rf ~" in argv2


def test_json_braces_are_not_placeholders() -> None:
    raw = '{"method": "ngram", "num_speculative_tokens": 3}'
    c = cfg(name="c", kind="vllm", model="m", args=["--speculative-config", raw])
    argv = build_argv(c, 1)
    assert argv is not None and argv[-1] == raw


def test_sim_and_url() -> None:
    c = cfg(name="s", kind="sim", profile="v4flash-dspark-st{st}", time_scale=0.1, point={"st": 3})
    argv = build_argv(c, 5555)
    assert argv == [
        sys.executable, "-m", "specsweep", "sim", "serve", "--profile", "v4flash-dspark-st3",
        "--host", "127.0.0.1", "--port", "5555", "--time-scale", "0.1",
    ]  # fmt: skip
    c2 = cfg(name="s", kind="sim", point={"profile": "toy", "time_scale": 0.05, "seed": 3, "num_steps": 3})
    argv2 = build_argv(c2, 1)
    assert argv2 is not None and argv2[argv2.index("--profile") + 1] == "toy"
    assert argv2[argv2.index("--time-scale") + 1] == "0.05" and argv2[-2:] == ["--seed", "3"]
    assert "--num-steps" not in argv2  # describes the profile; the sim takes it from there
    u = cfg(name="u", kind="url", url="http://gpu-box:30000/")
    assert build_argv(u, 1) is None and base_url(u, 0) == "http://gpu-box:30000"


def test_base_url_for_wildcard_and_ipv6() -> None:
    assert base_url(cfg(name="a", kind="sim", profile="toy", host="0.0.0.0"), 80) == "http://127.0.0.1:80"
    assert base_url(cfg(name="a", kind="sim", profile="toy", host="::1"), 80) == "http://[::1]:80"


def test_env_expansion_and_redaction(monkeypatch: Any) -> None:
    c = cfg(
        name="c",
        kind="command",
        argv=["srv"],
        env={"HF_TOKEN": "${MY_HF}", "CUDA_VISIBLE_DEVICES": "0,1", "OPENAI_API_KEY": "sk-literal"},
    )
    env = build_env(c, 1, base={"MY_HF": "hf_secret"})
    assert env["HF_TOKEN"] == "hf_secret" and env["CUDA_VISIBLE_DEVICES"] == "0,1"
    red = redact_env(dict(c.spec.env))
    assert red == {"HF_TOKEN": "***", "CUDA_VISIBLE_DEVICES": "0,1", "OPENAI_API_KEY": "***"}
    assert redact_argv(["srv", "--api-key", "sk-1", "--hf-token=abc", "--spec-tokens", "3"]) == [
        "srv", "--api-key", "***", "--hf-token=***", "--spec-tokens", "3",
    ]  # fmt: skip
