"""The ``adaptive:`` section of experiment files (the sequential design of specsweep.adaptive) and
its checks against the rest of the file. Kept apart from specsweep.config, which uses it.

    adaptive:
      margin: 0.05        # configs within +-5% of each other are "equivalent"
      max_repeats: 4      # runs per config and cell at most, the first pass included
      budget: 75%         # or seconds (3600, 90m, 2h): launches and warmups included; null: none
      race: false         # true: the second generation (short first looks, two or three launches a config)
      launch_sd: 0.03     # racing: the sd of a launch's level its verdicts assume (log)
      launches: 3         # racing: launches a config at most (2 or 3)

``AdaptiveOptions.settings()`` maps the section onto the rules' DesignSettings, whose defaults are
the section's defaults (one source).
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)

from specsweep import config_checks as checks
from specsweep.adaptive.types import DesignSettings
from specsweep.errors import ConfigError

_DESIGN = DesignSettings()  # the design's defaults: one source for the file's keys and the rules
_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(%|s|m|h)?\s*$")
MAX_BUDGET_S = 366 * 86400.0  # a year of measurement: any larger number is a typo, not a budget
MIN_MARGIN = 0.001  # 0.1%: below it no run of a real server can show equivalence, and +-0% would print
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0}


class AdaptiveOptions(BaseModel):
    """The ``adaptive:`` section: a sequential design instead of fixed ``repeats`` (specsweep.adaptive).

    ``budget``: seconds at most, launches included (a number, or ``90m`` / ``2h``), or a share of
    what the same grid with ``repeats: 3`` would cost (``50%``); ``null``: no limit but
    ``max_repeats``. ``settings()`` maps the section onto the rules' DesignSettings."""

    model_config = ConfigDict(extra="forbid")

    margin: checks.Finite = Field(
        default=_DESIGN.margin, ge=MIN_MARGIN, lt=1
    )  # equivalence margin (relative)
    max_repeats: StrictInt = Field(
        default=_DESIGN.max_repeats, ge=2, le=100
    )  # runs per config and cell at most
    budget: StrictInt | StrictFloat | StrictStr | None = (
        f"{_DESIGN.budget_fraction:.0%}" if _DESIGN.budget_fraction is not None else _DESIGN.budget_s
    )

    race: StrictBool = _DESIGN.race  # the second generation: short first looks, 2-3 launches a config
    launch_sd: checks.Finite = Field(default=_DESIGN.launch_sd, ge=0, lt=1)  # a launch's level (log sd)
    launches: StrictInt = Field(default=_DESIGN.launches, ge=2, le=3)  # racing: launches a config at most

    @field_validator("budget", mode="before")
    @classmethod
    def _budget_ok(cls, v: int | float | str | None) -> int | float | str | None:
        parse_budget(v)
        return v

    def settings(self) -> DesignSettings:
        budget_s, fraction = parse_budget(self.budget)
        return DesignSettings(
            margin=self.margin, max_repeats=self.max_repeats, budget_s=budget_s, budget_fraction=fraction,
            level=_DESIGN.level, metric=_DESIGN.metric, race=self.race, launch_sd=self.launch_sd,
            launches=self.launches,
        )  # fmt: skip


def parse_budget(v: int | float | str | None) -> tuple[float | None, float | None]:
    """(budget_s, budget_fraction) of an ``adaptive.budget`` value (see AdaptiveOptions)."""
    accepted = "seconds (3600, '90m', '2h'), a share of the repeats: 3 grid's cost ('50%'), or null"
    if v is None:
        return None, None
    if isinstance(v, bool):
        raise ValueError(f"budget {v!r}: expected {accepted}")
    if isinstance(v, (int, float)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"budget {v!r}: expected {accepted}")
        return _seconds(float(v), v, accepted), None
    if not isinstance(v, str):  # YAML can give a list or a mapping here: never a regex on it
        raise ValueError(f"budget {_shown(v)} ({type(v).__name__}): expected {accepted}")
    m = _BUDGET.match(v)
    if not m or not math.isfinite(float(m.group(1))) or float(m.group(1)) <= 0:
        raise ValueError(f"budget {v!r}: expected {accepted}")
    x, unit = float(m.group(1)), m.group(2) or "s"
    if unit == "%":
        if x > 1000:
            raise ValueError(f"budget {v!r}: a share of at most 1000%; expected {accepted}")
        return None, x / 100
    return _seconds(x * _UNIT_S[unit], v, accepted), None


def _seconds(s: float, v: object, accepted: str) -> float:
    if s > MAX_BUDGET_S:
        raise ValueError(
            f"budget {v!r}: at most {MAX_BUDGET_S:.0f} s (a year) is accepted; expected {accepted}"
        )
    return s


def _shown(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_design(exp: Any, file: str | None = None) -> None:
    """The adaptive design chooses the repeats and runs in rounds: ``repeats`` > 1 or a blocked run
    order beside it is a contradiction, named at its key (``exp``: a specsweep.config.Experiment)."""
    if exp.adaptive is None:
        return
    if exp.repeats != 1:
        raise ConfigError(
            f"'repeats: {exp.repeats}' with the adaptive design: the design chooses the repeats (up to "
            "adaptive.max_repeats); remove 'repeats' or the 'adaptive' section",
            file=file, path="repeats",
        )  # fmt: skip
    if exp.run_order == "blocked":
        raise ConfigError(
            "'run_order: blocked' with the adaptive design: the design runs in rounds (one launch per "
            "config per round); remove 'run_order' or the 'adaptive' section",
            file=file, path="run_order",
        )  # fmt: skip
