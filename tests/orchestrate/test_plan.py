"""Dry-run helpers: preflight warnings and the duration estimate."""

from __future__ import annotations

from typing import Any

from specsweep.commands.progress import estimate_plan
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import parse_experiment
from specsweep.orchestrate import preflight

from .helpers import fake_argv


def plan(servers: list[dict[str, Any]], **w: Any) -> Any:
    work = {"scenarios": ["chat_short"], "concurrency": [1, 8], **w}
    return plan_experiment(parse_experiment({"name": "p", "servers": servers, "workloads": [work]}))


def test_preflight_names_missing_binaries_and_profiles() -> None:
    p = plan(
        [
            {"name": "fork", "kind": "command", "argv": ["/opt/nowhere/vllm", "serve", "--port", "{port}"]},
            {"name": "lc", "kind": "llamacpp", "model": "m.gguf", "binary": "no-such-llama-server-xyz"},
            {"name": "s", "kind": "sim", "profile": "no-such-profile"},
            {"name": "ok", "kind": "command", "argv": fake_argv()},
            {"name": "toy", "kind": "sim", "profile": "toy"},
        ]
    )
    w = preflight(p)
    assert w[0] == "fork: executable '/opt/nowhere/vllm' not found"
    assert w[1] == "lc: executable 'no-such-llama-server-xyz' not found"
    assert (
        w[2].startswith("s: unknown simulator profile: got 'no-such-profile'; expected one of:")
        and "toy" in w[2]
    )
    assert len(w) == 3


def test_estimate_grows_with_prompts_and_shrinks_with_time_scale() -> None:
    sim = [{"name": "s", "kind": "sim", "profile": "toy"}]
    small, big = (
        estimate_plan(plan(sim, num_prompts=8)).total_s,
        estimate_plan(plan(sim, num_prompts=64)).total_s,
    )
    assert 0 < small < big
    fast = estimate_plan(plan([{**sim[0], "time_scale": 10.0}], num_prompts=64)).total_s
    assert fast < big
