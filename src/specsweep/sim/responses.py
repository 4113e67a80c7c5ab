"""Bodies of the simulated server's replies (probes, errors, non-stream results), as vLLM and SGLang send.

Pure functions of the server's state; each names the engine source its shape follows (recorded examples
in tests/sim/fixtures/).
"""

from __future__ import annotations

import uuid
from typing import Any

from specsweep import __version__
from specsweep.sim.engine import Counters
from specsweep.sim.profile import Profile
from specsweep.sim.wire import EOS_TOKEN_ID, usage_dict

VLLM_COMPAT_VERSION = "0.10.1"  # what /version reports, for clients that parse a vLLM version


def error_body(status: int, message: str, etype: str, param: str | None) -> dict[str, Any]:
    """vLLM's ErrorResponse: {"error": {"message", "type", "param", "code"}}."""
    return {"error": {"message": message, "type": etype, "param": param, "code": status}}


def completion_body(
    rid: str,
    created: int,
    model: str,
    text: str,
    finish_reason: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    """vLLM CompletionResponse (serving_completion.py request_output_to_completion_response)."""
    return {
        "id": rid,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": finish_reason,
                "stop_reason": None,
                "prompt_logprobs": None,
            }
        ],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": {**usage_dict(prompt_tokens, completion_tokens), "prompt_tokens_details": None},
        "kv_transfer_params": None,
    }


def chat_body(
    rid: str,
    created: int,
    model: str,
    text: str,
    finish_reason: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    """vLLM ChatCompletionResponse (serving_chat.py chat_completion_full_generator)."""
    return {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "reasoning_content": None,
                    "content": text,
                    "tool_calls": [],
                },
                "logprobs": None,
                "finish_reason": finish_reason,
                "stop_reason": None,
            }
        ],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": {**usage_dict(prompt_tokens, completion_tokens), "prompt_tokens_details": None},
        "prompt_logprobs": None,
        "kv_transfer_params": None,
    }


def generate_body(
    rid: str,
    text: str,
    output_ids: list[int],
    finish_reason: str,
    prompt_tokens: int,
    verify_ct: int | None,
    e2e_latency: float,
) -> dict[str, Any]:
    """SGLang /generate reply (tokenizer_manager.py _handle_batch_output); verify_ct None without spec."""
    n = len(output_ids)
    fr = (
        {"type": "length", "length": n}
        if finish_reason == "length"
        else {"type": "stop", "matched": EOS_TOKEN_ID}
    )
    meta: dict[str, Any] = {
        "id": rid,
        "finish_reason": fr,
        "prompt_tokens": prompt_tokens,
        "weight_version": "default",
        "completion_tokens": n,
        "cached_tokens": 0,
    }
    if verify_ct is not None:
        meta["spec_verify_ct"] = verify_ct
    meta["e2e_latency"] = e2e_latency
    return {"text": text, "output_ids": output_ids, "meta_info": meta}


def models_body(model: str, created: int, max_model_len: int) -> dict[str, Any]:
    """vLLM GET /v1/models (serving_models.py show_available_models)."""
    perm = {
        "id": f"modelperm-{uuid.uuid4().hex}",
        "object": "model_permission",
        "created": created,
        "allow_create_engine": False,
        "allow_sampling": True,
        "allow_logprobs": True,
        "allow_search_indices": False,
        "allow_view": True,
        "allow_fine_tuning": False,
        "organization": "*",
        "group": None,
        "is_blocking": False,
    }
    card = {
        "id": model,
        "object": "model",
        "created": created,
        "owned_by": "vllm",
        "root": model,
        "parent": None,
        "max_model_len": max_model_len,
        "permission": [perm],
    }
    return {"object": "list", "data": [card]}


def model_info_body(model: str) -> dict[str, Any]:
    """SGLang GET /get_model_info."""
    return {
        "model_path": model,
        "tokenizer_path": model,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "specsweep-sim",
        "architectures": ["SimulatedForCausalLM"],
    }


def sim_info(profile: Profile, time_scale: float, seed: int, faults: str) -> dict[str, Any]:
    """What this server is, for /server_info and /version: a time-scaled server says so."""
    return {
        "engine": "specsweep-sim",
        "version": __version__,
        "profile": profile.name,
        "time_scale": time_scale,
        "seed": seed,
        "faults": faults,
    }


def server_info_body(
    profile: Profile,
    counters: Counters,
    *,
    model: str,
    host: str,
    port: int,
    max_model_len: int,
    info: dict[str, Any],
) -> dict[str, Any]:
    """SGLang GET /server_info (and /get_server_info): server args, internal_states[0], version.

    ``avg_spec_accept_length`` is cumulative over the server's life, like SGLang's scheduler
    (tokens per verify step = 1 + accepted / drafts); it is absent without speculation.
    """
    p = profile
    c = counters
    spec = p.k > 0
    state: dict[str, Any] = {
        "last_gen_throughput": 0.0,
        "memory_usage": {"kvcache": round(c.kv_usage, 6), "token_capacity": p.kv_tokens},
        "num_running_reqs": c.requests_running,
        "num_waiting_reqs": c.requests_waiting,
    }
    if spec and c.num_drafts:
        state["avg_spec_accept_length"] = 1.0 + c.num_accepted_tokens / c.num_drafts
    return {
        "model_path": model,
        "served_model_name": model,
        "host": host,
        "port": port,
        "random_seed": info["seed"],
        "context_length": max_model_len,
        "max_running_requests": p.max_batch,
        "chunked_prefill_size": p.prefill_chunk,
        "max_total_tokens": p.kv_tokens,
        "speculative_algorithm": (p.spec_method or "SPEC").upper() if spec else None,
        "speculative_num_steps": (p.draft_steps or p.k) if spec else None,
        "speculative_num_draft_tokens": p.k + 1 if spec else None,
        "internal_states": [state],
        "version": __version__,
        "time_scale": info["time_scale"],
        "specsweep_sim": info,
    }


def version_body(info: dict[str, Any]) -> dict[str, Any]:
    """vLLM GET /version ({"version": ...}), plus what this simulator is and its time scale."""
    return {"version": VLLM_COMPAT_VERSION, "time_scale": info["time_scale"], "specsweep_sim": info}


def metrics_text(counters: Counters, model: str, spec: bool, created_epoch: float) -> str:
    """Prometheus text exposition 0.0.4, as vLLM's prometheus_client registry writes it.

    Counters are written as ``NAME_total`` then ``NAME_created`` for each label set; spec-decoding
    counters only exist when the profile speculates (k > 0), as in vLLM.
    """
    c = counters
    lab = f'engine="0",model_name="{_prom_escape(model)}"'
    created = go_float(created_epoch)
    out: list[str] = []

    def counter(name: str, help_: str, series: list[tuple[str, float]]) -> None:
        out.append(f"# HELP {name}_total {help_}")
        out.append(f"# TYPE {name}_total counter")
        for labels, v in series:
            out.append(f"{name}_total{{{lab}{labels}}} {go_float(v)}")
            out.append(f"{name}_created{{{lab}{labels}}} {created}")

    def gauge(name: str, help_: str, value: float) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} gauge")
        out.append(f"{name}{{{lab}}} {go_float(value)}")

    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", c.requests_running)
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", c.requests_waiting)
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", c.kv_usage)
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", [("", c.prompt_tokens_total)])
    counter(
        "vllm:generation_tokens", "Number of generation tokens processed.", [("", c.generation_tokens_total)]
    )
    counter("vllm:request_success", "Count of successfully processed requests.", [("", c.requests_finished)])
    if spec:
        counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", [("", c.num_drafts)])
        counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", [("", c.num_draft_tokens)])
        counter(
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            [("", c.num_accepted_tokens)],
        )
        counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [(f',position="{i}"', v) for i, v in enumerate(c.accepted_per_pos)],
        )
    return "\n".join(out) + "\n"


def _prom_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def go_float(v: float) -> str:
    """prometheus_client's floatToGoString: repr of the float; from 1e6 on, Go's exponent style."""
    d = float(v)
    if d != d:
        return "NaN"
    if d in (float("inf"), float("-inf")):
        return "+Inf" if d > 0 else "-Inf"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6 and "e" not in s:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1 :]}".rstrip("0").rstrip(".")
        return f"{mantissa}e+0{dot - 1}"
    return s
