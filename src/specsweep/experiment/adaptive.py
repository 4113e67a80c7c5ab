"""The ``adaptive:`` section of experiment files (the sequential design of specsweep.design) and
its checks against the rest of the file. Kept apart from specsweep.experiment.config, which uses it.

    adaptive:
      margin: 0.05        # configs within +-5% of each other are "equivalent"
      max_repeats: 4      # runs per config and cell at most, the first pass included
      budget: 75%         # or seconds (3600, 90m, 2h): launches and warmups included; null: none
      race: false         # true: the second generation (short first looks, two or three launches a config)
      launch_sd: 0.03     # racing: the sd of a launch's level its verdicts assume (log)
      launch_df: null     # racing: launch_sd's degrees of freedom (null: taken as known)
      launches: 2         # racing: launches a config at most (2 or 3)

``AdaptiveOptions.settings()`` maps the section onto the rules' DesignSettings, whose defaults are
the section's defaults (one source).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
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

from specsweep.errors import ConfigError
from specsweep.experiment import checks
from specsweep.measure.steady import MIN_WAVES


@dataclass(frozen=True)
class DesignSettings:
    """The ``adaptive:`` section of an experiment file (docs/experiments.md gives the defaults).

    ``margin``: relative difference on ``metric`` below which two configs count as equivalent.
    ``max_repeats``: runs per (config, cell) at most, the first pass included.
    ``budget_s``: benchmark seconds at most, launches and warmups included (None: no limit but
    max_repeats); ``budget_fraction``: or at most this fraction of what the same grid with
    ``repeats: 3`` would cost (estimated from the first pass). The smaller of the two applies.
    ``level``: the false-winner rate per family the design keeps (Benjamini-Hochberg over the grid).
    ``families``: (config label, method) pairs. The pairs of two configs of one method (what a sweep
    report compares) form one family per method, the pairs across methods another, each adjusted on
    its own, so easy wins over a far-behind method cannot loosen the threshold for the close
    comparisons within a method; empty: one family. The orchestrator fills it from the plan.

    The second generation (``race``: specsweep.design.race) races on short runs and launches each
    config at most ``launches`` times (2: the first look and one relaunch; 3: a third launch for the
    cells still open that could still be decided). ``short_fraction``: the first look's run length,
    a share of the cell's reference run (``num_prompts``), rounded to whole waves of
    ``max_concurrency`` requests and at least ``min_waves`` waves (the steady-state minimum the
    report checks every run against, measure.steady.MIN_WAVES: a racing run is never one the report
    calls a burst). ``launch_sd``: the sd of one launch's level (log; shared by every run of that
    launch), the prior its verdicts use until the launch-noise calibration supplies one (default 3%:
    freshly restarted servers agree within about 3% on throughput, vllm#42484). ``launch_df``: the
    degrees of freedom of ``launch_sd`` (a calibration's launches - 1; None: taken as known),
    carried into each verdict's degrees of freedom (Welch-Satterthwaite).
    ``short_bias``: the sd of the difference between two configs' short-run bias at an eighth of
    the reference length (against full runs), scaled as (1/length - 1) for other lengths (default
    2%: at a sixteenth, st=5 against st=3 read +9.0% where the full run read +3.1%, issue 36).
    ``request_sd``: the sampling noise of one full-length run's requests (log sd; a run of length
    f has ``request_sd**2 / f``; default 1%: the simulator's 0.2-1.7%).
    """

    margin: float = 0.05
    max_repeats: int = 4
    budget_s: float | None = None
    budget_fraction: float | None = 0.75
    level: float = 0.05
    metric: str = "total_throughput"
    families: tuple[tuple[str, str], ...] = ()
    race: bool = False
    launches: int = 2
    short_fraction: float = 0.125
    min_waves: int = int(MIN_WAVES)  # the report's steady-state minimum: a shorter run is a burst
    launch_sd: float = 0.03
    launch_df: float | None = None
    short_bias: float = 0.02
    request_sd: float = 0.01

    def family(self, a: str, b: str) -> str:
        """The family of the pair (a, b): ``within:METHOD`` or ``across`` (``all`` without families)."""
        fam = dict(self.families)
        if not fam:
            return "all"
        fa, fb = fam.get(a, a), fam.get(b, b)
        return f"within:{fa}" if fa == fb else "across"


def settings_of(manifest: Mapping[str, Any]) -> DesignSettings | None:
    """The DesignSettings of a run made with the design (its manifest's ``design`` record), else
    None. Keys this version does not know are left out (a newer writer's)."""
    d = manifest.get("design")
    if not isinstance(d, dict) or d.get("kind") != "adaptive" or not isinstance(d.get("settings"), dict):
        return None
    known = {f.name for f in dataclasses.fields(DesignSettings)}
    kw = {k: v for k, v in d["settings"].items() if k in known}
    fams = kw.pop("families", None) or ()  # JSON lists back to the frozen tuple of (label, method)
    families = tuple((str(x[0]), str(x[1])) for x in fams if isinstance(x, (list, tuple)) and len(x) == 2)
    return DesignSettings(**kw, families=families)


_DESIGN = DesignSettings()  # the design's defaults: one source for the file's keys and the rules
_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(%|s|m|h)?\s*$")
MAX_BUDGET_S = 366 * 86400.0  # a year of measurement: any larger number is a typo, not a budget
MIN_MARGIN = 0.001  # 0.1%: below it no run of a real server can show equivalence, and +-0% would print
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0}


class AdaptiveOptions(BaseModel):
    """The ``adaptive:`` section: a sequential design instead of fixed ``repeats`` (specsweep.design).

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
    launch_df: checks.Finite | None = Field(default=_DESIGN.launch_df, gt=0)  # its df (null: known)
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
            launch_df=self.launch_df, launches=self.launches,
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
    order beside it is a contradiction, named at its key (``exp``: a specsweep.experiment.config.Experiment)."""
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
