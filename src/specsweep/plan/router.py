"""Production routing for a plan: a LiteLLM proxy config (an existing router), never our own.

Why LiteLLM: it is the OpenAI-compatible gateway many teams already run in front of vLLM/SGLang, its
tag-based routing (``litellm_params.tags`` + ``router_settings.enable_tag_filtering``; untagged requests
go to deployments tagged ``default``) maps one-to-one onto a plan's pools, and it load-balances several
deployments of a pool (``routing_strategy: least-busy``). LiteLLM does not count prompt tokens to route,
so the caller sets the tag: ``"tags": ["long"]`` in the request body when the prompt exceeds the plan's
threshold (the application knows its prompt length, or its domain for a split by domain). The replay in
``specsweep plan --validate`` uses a small test router in-process; that is a test harness, not a product.
"""

from __future__ import annotations

from typing import Any

import yaml

from specsweep.plan.options import Option

WHY = (
    "Router: LiteLLM proxy (tag-based routing). Chosen because it is an existing OpenAI-compatible gateway "
    "teams already run, its tag filtering maps each pool to a tag, and it balances the instances of a pool "
    "(least-busy). It does not route on prompt length by itself: the caller adds the pool's tag to the "
    'request body (`"tags": ["long"]`) for prompts above the threshold; untagged requests go to the '
    "`default` pool. Instance addresses are placeholders (POOL-N:8000) to fill in."
)


def litellm_config(opt: Option, model: str = "served-model") -> dict[str, Any]:
    deployments = []
    first = opt.pools[0].name if opt.pools else "all"
    for p in opt.pools:
        tags = [p.name] + (["default"] if p.name == first else [])
        for i in range(p.instances):
            deployments.append({
                "model_name": model,
                "litellm_params": {"model": f"hosted_vllm/{model}", "api_base": f"http://{p.name}-{i}:8000/v1",
                                   "tags": tags},
                "model_info": {"id": f"{p.name}-{i}", "specsweep_config": p.config},
            })  # fmt: skip
    return {
        "model_list": deployments,
        "router_settings": {"enable_tag_filtering": True, "routing_strategy": "least-busy"},
    }


def router_config(opt: Option, view: dict[str, Any]) -> dict[str, Any]:
    cfg = litellm_config(opt)
    rules = []
    for r in opt.rules:
        m = r["match"]
        if isinstance(m, dict) and "input_tokens_min" in m:
            upto = f" and at most {m['input_tokens_max']}" if "input_tokens_max" in m else ""
            rules.append(
                f'prompts of more than {m["input_tokens_min"] - 1}{upto} tokens: "tags": ["{r["pool"]}"]'
            )
    why = WHY
    if opt.kind == "adaptive":
        why += (" The load-adaptive option switches configs by sustained load: engines fix the number of "
                "speculative tokens at launch, so the switch is a redeploy of the pool (or shifting LiteLLM "
                "weights between a pool of each config); vLLM's speculative_config "
                '"disable_by_batch_size" only turns speculation off above a batch size.')  # fmt: skip
    if rules:
        why += " Caller tagging: " + "; ".join(rules) + "."
    return {"router": "litellm", "why": why, "config": yaml.safe_dump(cfg, sort_keys=False)}
