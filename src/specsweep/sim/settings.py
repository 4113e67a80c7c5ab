"""What a sim server is started with: :class:`SimConfig` and the request defaults it copies from vLLM
and SGLang. A leaf module, so the engine driver, the HTTP surface and the process runner share it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from specsweep.sim.faults import Faults
from specsweep.sim.profile import Profile

DEFAULT_MAX_MODEL_LEN = 131072
DEFAULT_COMPLETIONS_MAX_TOKENS = 16  # vLLM's /v1/completions default
DEFAULT_GENERATE_MAX_NEW_TOKENS = 128  # SGLang's sampling_params default


@dataclass(kw_only=True)
class SimConfig:
    """Everything a sim server is started with (see :func:`specsweep.sim.server.start_server`); keywords only."""

    profile: Profile
    host: str = "127.0.0.1"
    port: int = 0
    seed: int = 0
    time_scale: float = 1.0
    truth: str | None = None
    faults: Faults = field(default_factory=Faults)
    served_model_name: str | None = None
    max_model_len: int = DEFAULT_MAX_MODEL_LEN
    spin_s: float = 0.0002  # the driver polls the clock for the last this-many seconds before a deadline
    on_crash: Callable[[], None] | None = None  # default: drop every connection and stop serving
    writer_threads: int = 0  # > 1: a step's socket writes are split over this many threads

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.profile.model_name
