"""How long a grid takes: a guess per cell and per server start before anything ran, and an ETA that
learns per configuration from its own finished cells.

The guesses, stated in ``assumptions()``:

- a simulated config (kind ``sim``): its own engine - its profile run in virtual time on the cell's
  scenario, concurrency, prompts, seed and arrival process (what ``sim predict`` computes; the server
  runs the same engine on the wall clock), divided by its time scale; warmup as ceil(warmup /
  concurrency) rounds of 32 tokens at the predicted TPOT. Each profile gets its own figure (EAGLE's
  cells take about three times DSpark's), not one fixed guess for every simulated config;
- any other engine, a workload model: a cell's requests run in ceil(num_prompts / concurrency)
  closed-loop rounds; a round takes prefill + mean output tokens x the time per output token (TPOT),
  TPOT growing with load as (1 + c/16). For llama.cpp the TPOT and start time follow from the model
  file's size (a CPU decode step reads the weights once: size / 10 GB/s, plus 1 ms; loading reads
  them at 1 GB/s, plus 1 s); other engines get fixed guesses (GPU engines: 5 ms/token at c=1, 300 s
  start). Speculation is ignored (it only shortens runs).

Every server starts once. ``Eta`` scales each config's remaining guesses by measured / guessed time of
that config's finished cells; a config with none finished yet, by all finished cells' (the host's
pace); server starts likewise. ``--resume`` skips finished cells and learns the same way from their rows.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from specsweep.experiment.argv import build_argv, flag
from specsweep.experiment.config import Cell, Plan, ServerConfig
from specsweep.workload.lengths import length_bounds

log = logging.getLogger(__name__)

CPU_BANDWIDTH_B_PER_S = 10e9  # a decode step reads every weight once (memory bound)
LOAD_B_PER_S = 1e9  # model load from the page cache / disk
STARTUP_GUESS_S = {"sim": 3.0, "url": 0.0, "command": 300.0, "vllm": 300.0, "sglang": 300.0, "llamacpp": 30.0}
TPOT_GUESS_MS = {"sim": 5.0, "url": 5.0, "command": 5.0, "vllm": 5.0, "sglang": 5.0, "llamacpp": 40.0}
PREFILL_S_PER_TOKEN = 0.00002  # 50k tokens/s at c=1 (GPU); CPU engines: TPOT / 8 per token


def _model_bytes(cfg: ServerConfig) -> int | None:
    path = cfg.spec.model
    try:
        return os.path.getsize(path) if path and os.path.isfile(path) else None
    except OSError:
        return None


def tpot_guess_s(cfg: ServerConfig) -> float:
    """Seconds per output token of one request at concurrency 1."""
    kind = cfg.spec.kind
    if kind == "llamacpp" and (size := _model_bytes(cfg)) is not None:
        return size / CPU_BANDWIDTH_B_PER_S + 0.001
    tpot = TPOT_GUESS_MS.get(kind, 5.0) / 1000
    if kind == "sim":
        tpot /= time_scale(cfg)
    return tpot


def startup_guess_s(cfg: ServerConfig) -> float:
    if cfg.spec.kind == "llamacpp" and (size := _model_bytes(cfg)) is not None:
        return size / LOAD_B_PER_S + 1.0
    return STARTUP_GUESS_S.get(cfg.spec.kind, 60.0)


def sim_profile_name(cfg: ServerConfig) -> str | None:
    """The profile a simulated config's server loads (its ``sim serve --profile``)."""
    if cfg.spec.kind != "sim":
        return None
    with contextlib.suppress(ValueError):
        return flag(build_argv(cfg, 1) or [], "--profile") or None
    return None


def time_scale(cfg: ServerConfig) -> float:
    return float(cfg.params.get("time_scale", cfg.spec.time_scale or 1.0))


_SIM_CELLS: dict[tuple[Any, ...], tuple[float, float]] = {}  # -> (virtual duration s, mean TPOT s)
_PROFILES: dict[str, Any] = {}  # profile name -> Profile, loaded once


def sim_cell_s(plan: Plan, cfg: ServerConfig, cell: Cell) -> float | None:
    """A simulated config's cell as its own engine runs it (module docstring), in wall seconds; None
    when it cannot be simulated here (no such profile, a dataset file missing)."""
    name = sim_profile_name(cfg)
    if name is None:
        return None
    c = plan.experiment.client
    sc = plan.scenarios[cell.scenario]
    rate = c.request_rate if c.request_rate is not None else math.inf
    key = (name, sc, cell.max_concurrency, cell.num_prompts, c.seed, rate, c.burstiness)
    if key not in _SIM_CELLS:
        try:
            from specsweep.sim.predict import predict_cell
            from specsweep.sim.profile import load_profile

            if name not in _PROFILES:
                _PROFILES[name] = load_profile(name)
            row = predict_cell(_PROFILES[name], sc, cell.max_concurrency, num_prompts=cell.num_prompts,
                               seed=c.seed, request_rate=rate, burstiness=c.burstiness)  # fmt: skip
        except Exception as e:  # a guess never stops a run: the workload model stands in
            log.debug("no simulated guess for %s %s: %s", cfg.label, cell.cell_id, e)
            return None
        _SIM_CELLS[key] = (float(row["duration"]), float(row.get("mean_tpot_ms") or 0.0) / 1000)
    duration, tpot = _SIM_CELLS[key]
    warm = (
        math.ceil(c.warmup_requests / cell.max_concurrency) * 32 * tpot + c.warmup_sleep_s
        if c.warmup_requests
        else 0.0
    )
    return (duration + warm) / time_scale(cfg) + plan.experiment.cooldown_s


def cell_guess_s(plan: Plan, cfg: ServerConfig, cell: Cell) -> float:
    """One repeat of one cell: a simulated config's own engine (``sim_cell_s``), else rounds x
    (prefill + mean output x TPOT(c)) + warmup + cooldown."""
    if (sim := sim_cell_s(plan, cfg, cell)) is not None:
        return sim
    sc = plan.scenarios[cell.scenario]
    lo, hi = length_bounds(sc.output_len, sc.range_ratio, sc.range_mode)
    ilo, ihi = length_bounds(sc.input_len, sc.range_ratio, sc.range_mode)
    load = 1 + cell.max_concurrency / 16
    tpot = tpot_guess_s(cfg) * load
    cpu = cfg.spec.kind == "llamacpp"
    prefill = (ilo + ihi) / 2 * (tpot / 8 if cpu else PREFILL_S_PER_TOKEN * load)
    rounds = math.ceil(cell.num_prompts / cell.max_concurrency)
    c = plan.experiment.client
    warm = (
        math.ceil(c.warmup_requests / cell.max_concurrency) * 32 * tpot + c.warmup_sleep_s
        if c.warmup_requests
        else 0.0
    )
    return rounds * (prefill + (lo + hi) / 2 * tpot) + warm + plan.experiment.cooldown_s


def assumptions(plan: Plan) -> list[str]:
    """What the estimate assumes, one line per server config, in words."""
    out = []
    for cfg in plan.configs:
        prof = sim_profile_name(cfg)
        if prof is not None and all(sim_cell_s(plan, cfg, c) is not None for c in plan.cells[cfg.label]):
            out.append(f"{cfg.label}: start {startup_guess_s(cfg):.0f} s; each cell as its engine runs it (profile "
                       f"{prof} in virtual time, as sim predict) / time scale {time_scale(cfg):g}")  # fmt: skip
            continue
        size = _model_bytes(cfg) if cfg.spec.kind == "llamacpp" else None
        basis = (
            f"from the model file ({size / 1e6:.0f} MB)"
            if size is not None
            else f"a fixed guess for '{cfg.spec.kind}'"
        )
        out.append(
            f"{cfg.label}: start {startup_guess_s(cfg):.0f} s, {tpot_guess_s(cfg) * 1000:.1f} ms per output token "
            f"at concurrency 1, x(1 + c/16) under load ({basis}); closed-loop rounds of ceil(num_prompts / "
            "concurrency) requests of mean length; speculation ignored"
        )
    out.append("each config's guesses are scaled by its own finished cells' measured / guessed time (a config "
               "with none yet: all finished cells')")  # fmt: skip
    return out


def _scales(spent: dict[str, list[float]]) -> tuple[dict[str, float], float]:
    """Per config measured / guessed (configs with finished cells), and over all of them (1.0: none)."""
    own = {k: v[0] / v[1] for k, v in spent.items() if v[1] > 0 and v[0] > 0}
    meas, guess = sum(v[0] for v in spent.values()), sum(v[1] for v in spent.values())
    return own, meas / guess if meas > 0 and guess > 0 else 1.0


@dataclass
class PlanEstimate:
    total_s: float
    todo: int  # benchmark runs (cell x repeat) still to do
    skipped: int  # finished already (resume)
    scale: float = 1.0  # measured / guessed, from finished cells (1.0 without any)


def estimate_plan(
    plan: Plan, finished: Iterable[tuple[str, int]] = (), rows: Iterable[dict[str, Any]] = ()
) -> PlanEstimate:
    """The remaining duration: guesses for the cells not finished (and their servers' starts), each
    config's scaled by measured / guessed bench time of its finished cells' rows (``duration``), a
    config without any by all rows' (``scale``)."""
    done = set(finished)
    by_id = {c.cell_id: (cfg, c) for cfg in plan.configs for c in plan.cells[cfg.label]}
    spent: dict[str, list[float]] = {}
    for r in rows:
        hit = by_id.get(str(r.get("cell_id")))
        d = r.get("duration")
        if hit and isinstance(d, (int, float)) and d > 0 and r.get("status") == "ok":
            s = spent.setdefault(hit[0].label, [0.0, 0.0])
            s[0] += d
            s[1] += cell_guess_s(plan, *hit)
    own, scale = _scales(spent)
    total, todo = 0.0, 0
    interleaved = plan.experiment.run_order == "interleaved"
    for cfg in plan.configs:
        n = plan.todo(done, cfg.label)
        if n:  # interleaved: a launch per round with work (a blocked run: one)
            k = own.get(cfg.label, scale)
            launches = len({r for _c, r in n}) if interleaved else 1
            total += startup_guess_s(cfg) * launches + sum(cell_guess_s(plan, cfg, c) for c, _r in n) * k
            todo += len(n)
    skipped = sum(1 for c in by_id for r in range(plan.experiment.repeats) if (c, r) in done)
    return PlanEstimate(total, todo, skipped, scale)


@dataclass
class Eta:
    """Remaining time of a running grid: each config's guesses left, scaled by measured / guessed time
    of its own finished cells (a config with none yet: of all finished cells), plus the starts left,
    scaled by the starts so far.

    ``todo``: the runs to make ((cell, repeat), default: the plan's unfinished ones) and ``launches``:
    the server launches to make, by label in order (default: one per config with work; interleaved
    rounds launch a config once per round). The adaptive design adds each round's as it is decided
    (``add``)."""

    plan: Plan
    finished: set[tuple[str, int]] = field(default_factory=set)
    todo: list[tuple[Cell, int]] | None = None
    launches: list[str] | None = None
    _spent: dict[str, list[float]] = field(default_factory=dict)  # label -> [measured, guessed]
    _startup: list[float] = field(default_factory=lambda: [0.0, 0.0])

    def __post_init__(self) -> None:
        if self.todo is None:
            self.todo = self.plan.todo(self.finished)
        if self.launches is None:
            self.launches = list(dict.fromkeys(c.label for c, _r in self.todo))

    def add(self, runs: Iterable[tuple[Cell, int]], launches: Iterable[str]) -> None:
        """More work: a round the adaptive design decided on."""
        assert self.todo is not None and self.launches is not None
        self.todo.extend(runs)
        self.launches.extend(launches)

    def _cfg(self, label: str) -> ServerConfig | None:
        return next((c for c in self.plan.configs if c.label == label), None)

    def cell_done(self, cell: Cell, repeat: int, seconds: float) -> None:
        self.finished.add((cell.cell_id, repeat))
        cfg = self._cfg(cell.label)
        if cfg is not None and seconds > 0:
            s = self._spent.setdefault(cell.label, [0.0, 0.0])
            s[0] += seconds
            s[1] += cell_guess_s(self.plan, cfg, cell)

    def server_ready(self, label: str, seconds: float, restart: bool = False) -> None:
        """A launch made (a restart after a death is not one of the planned launches)."""
        cfg = self._cfg(label)
        assert self.launches is not None
        if cfg is not None and label in self.launches and not restart:
            self.launches.remove(label)
            self._startup[0] += seconds
            self._startup[1] += startup_guess_s(cfg)

    def remaining_s(self) -> float:
        assert self.todo is not None and self.launches is not None
        su = self._startup[0] / self._startup[1] if self._startup[1] > 0 else 1.0
        own, pace = _scales(self._spent)
        by_label = {c.label: c for c in self.plan.configs}
        total = sum(startup_guess_s(by_label[x]) * su for x in self.launches if x in by_label)
        for c, r in self.todo:
            cfg = by_label.get(c.label)
            if cfg is not None and (c.cell_id, r) not in self.finished:
                total += cell_guess_s(self.plan, cfg, c) * own.get(c.label, pace)
        return total
