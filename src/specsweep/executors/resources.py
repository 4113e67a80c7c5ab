"""What one configuration asks a Ray cluster for: pure functions of its ServerConfig.

GPUs = tensor-parallel size x pipeline-parallel size for kinds that load a model on GPUs (vllm,
sglang, llamacpp), or for any kind whose parameters name a tensor-parallel size (a ``command`` fork
with ``tp`` in its grid). CPUs = the client's worker processes (at least 1). The server's
``resources`` mapping adds custom Ray resources and may override ``GPU`` / ``CPU``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specsweep.errors import ConfigError
from specsweep.experiment.config import ServerConfig

GPU_KINDS = ("vllm", "sglang", "llamacpp")
TP_KEYS = ("tp", "tensor_parallel_size", "tp_size")
PP_KEYS = ("pp", "pipeline_parallel_size", "pp_size")


@dataclass(frozen=True)
class Demand:
    num_cpus: float
    num_gpus: float
    custom: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        """Ray's resource names: CPU, GPU and the custom ones (zeros left out)."""
        out = {"CPU": self.num_cpus, "GPU": self.num_gpus, **self.custom}
        return {k: v for k, v in out.items() if v}

    def options(self) -> dict[str, Any]:
        """Keyword arguments for ``remote_fn.options(...)``."""
        return {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus, "resources": dict(self.custom)}


def _first_int(params: dict[str, Any], keys: tuple[str, ...], label: str) -> int | None:
    for k in keys:
        if k in params:
            v = params[k]
            try:
                n = int(v)
            except (TypeError, ValueError):
                raise ConfigError(f"{label}: parameter {k}={v!r} is not a whole number of GPUs") from None
            if n < 1:
                raise ConfigError(f"{label}: parameter {k}={v!r} must be >= 1")
            return n
    return None


def config_demand(cfg: ServerConfig, workers: int = 1) -> Demand:
    """Resources of one configuration (its server and its client), from the module docstring's rules."""
    tp = cfg.spec.tp or _first_int(cfg.params, TP_KEYS, cfg.label)
    pp = _first_int(cfg.params, PP_KEYS, cfg.label) or 1
    gpus = float((tp or 1) * pp) if (cfg.spec.kind in GPU_KINDS or tp is not None) else 0.0
    custom = dict(getattr(cfg.spec, "resources", None) or {})
    bad = {k: v for k, v in custom.items() if v < 0}
    if bad:
        raise ConfigError(f"{cfg.label}: resources must be >= 0, got {bad}")
    gpus = float(custom.pop("GPU", gpus))
    cpus = float(custom.pop("CPU", max(1, workers)))
    return Demand(num_cpus=cpus, num_gpus=gpus, custom={k: float(v) for k, v in custom.items()})


def infeasible(demand: Demand, nodes: list[dict[str, float]]) -> str | None:
    """Why no node of the cluster (each a mapping of total resources) can ever run ``demand``."""
    want = demand.as_dict()
    if not nodes:
        return "the Ray cluster has no live node"
    for node in nodes:
        if all(node.get(k, 0.0) >= v for k, v in want.items()):
            return None
    best = max(nodes, key=lambda n: sum(min(n.get(k, 0.0), v) / v for k, v in want.items()))
    short = ", ".join(f"{k}={v:g} (largest node has {best.get(k, 0.0):g})" for k, v in want.items()
                      if best.get(k, 0.0) < v)  # fmt: skip
    return f"no node of the Ray cluster has the resources this configuration needs: {short}"
