"""The design's next batch (pure, deterministic): what to run in the next round, with launches as cost.

``plan_next(observations, configs, points, settings, launch_s) -> DesignState`` is what the
orchestrator (specsweep.design.loop) calls after every round:

- no observations: the first pass (every config and cell once, one launch per config);
- otherwise the rules (:mod:`specsweep.design.rules`) read the data, and every cell still running
  gets one more run of each config still in it (a config's runs of the round in one launch; the
  configs' order alternates from round to round). A config whose noise rests on fewer than
  MIN_NOISE_CELLS cells with repeats gets repeats of its cheapest other cells too, so that its single
  runs are judged against a measured noise;
- the budget (``budget_s``, or ``budget_fraction`` of what ``repeats: 3`` would cost, the smaller)
  caps the round: cells are taken in order of the chance their next look resolves them per second
  (their runs plus the launches they add), while the round fits; nothing fits: the design stops and
  the cells still running say "budget".

Costs: a run's ``cost_s`` (its wall time, warmup included) and each config's ``launch_s`` per launch.
``baseline_s`` is the same grid with ``repeats: 3`` as specsweep runs it (interleaved: 3 rounds, a
launch per config per round), from the runs' measured costs.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

from specsweep.design.costs import Costs, baseline, spent
from specsweep.design.rules import (
    PLAN_NOISE,
    Assessment,
    assess,
    chance,
    chances,
    futile,
    open_pairs,
    pair_status,
)
from specsweep.design.types import Batch, CellStatus, DesignState, Launch, Observation, PairStatus, Point
from specsweep.experiment.adaptive import DesignSettings
from specsweep.stats.sequential import SINGLE_TAILS, PairKey, look_sizes, look_weights

MIN_NOISE_CELLS = 4  # cells with repeats a config's noise rests on before its single runs are judged
WAIT = 0.9  # round 1: a cell this likely decided from its single runs once noise is measured waits


def budget_limit(settings: DesignSettings, base: float) -> float | None:
    lims = [x for x in (settings.budget_s, settings.budget_fraction * base if settings.budget_fraction else None)
            if x is not None]  # fmt: skip
    return min(lims) if lims else None


def _stopped(a: Assessment, p: Point, settings: DesignSettings) -> str | None:
    """Why the cell needs no more runs (None: it is running)."""
    present = [c for (c, q), n in a.runs.items() if q == p and n > 0]
    if len(present) < 2:
        return "no_data"
    open_ = open_pairs(a, p)
    if not open_:
        return "decided" if len(a.contenders[p]) == 1 else "equivalent"
    if all(a.runs.get((c, p), 0) >= settings.max_repeats for c in a.contenders[p]):
        return "max_repeats"
    if all(futile(a, k, settings) for k in open_):
        return "futile"
    return None


def target(n: int, settings: DesignSettings) -> int:
    """The runs a side a running cell is taken to next: the next look size (1 -> 2 -> max_repeats)."""
    return next((j for j in look_sizes(settings.max_repeats) if j > n), settings.max_repeats)


def _level(a: Assessment, k: PairKey, settings: DesignSettings, n: int) -> float:
    """The per-pair level of a look at ``n`` runs a side if one more pair of ``k``'s family were
    decided there (BH within the family)."""
    w = look_weights(settings.max_repeats)
    size, won, _eq = a.family(k, settings)
    return settings.level * w[min(n, settings.max_repeats)] * (won + 1) / max(size, 1)


def _value(a: Assessment, p: Point, settings: DesignSettings) -> float:
    """The chance the cell's next look resolves one of its open pairs (the most likely one); before
    the noise is measured, planned at PLAN_NOISE."""
    best = 0.0
    for k in open_pairs(a, p):
        sp = a.seq.get(k)
        if sp is None:
            continue
        t = sp.last.test
        measured = t.measured_a and t.measured_b
        n = target(min(t.n_a, t.n_b), settings)
        best = max(best, chances(a, k, t, n, settings, None if measured else PLAN_NOISE))
    return best


def _waits(a: Assessment, p: Point, settings: DesignSettings) -> bool:
    """Round 1 (no noise measured yet): whether the cell's single runs are likely to decide it at the
    look with measured noise (planned at PLAN_NOISE), so its repeats can wait for that look."""
    keys = [k for k in open_pairs(a, p) if k in a.seq]
    if not keys or (a.model is not None and a.model.kurtosis >= SINGLE_TAILS):
        return False
    return all(
        chance(a.seq[k].last.test, 1, _level(a, k, settings, 1), settings.margin, PLAN_NOISE)[0] >= WAIT
        for k in keys
    )


def _noise_runs(a: Assessment, running: Todo, costs: Costs) -> dict[str, list[Point]]:
    """Extra repeats for configs in the running cells whose noise rests on too few cells: their
    cheapest cells with a single run."""
    out: dict[str, list[Point]] = {}
    for lab in sorted({c for cs in running.values() for c, _k in cs}):
        repeated = {q for (c, q), n in a.runs.items() if c == lab and n >= 2}
        soon = {
            p for p, cs in running.items() if any(c == lab for c, _k in cs) and a.runs.get((lab, p), 0) == 1
        }
        short = MIN_NOISE_CELLS - len(repeated | soon)
        if short <= 0:
            continue
        single = sorted((q for (c, q), n in a.runs.items() if c == lab and n == 1 and q not in soon),
                        key=lambda q: (costs.run(lab, q), repr(q)))  # fmt: skip
        if single[:short]:
            out[lab] = single[:short]
    return out


Todo = dict[Point, tuple[tuple[str, int], ...]]  # running cell -> (config, runs this round)


def _trim(running: Todo, values: dict[Point, float], costs: Costs, room: float | None) -> Todo:
    """The running cells that fit in ``room`` seconds, best chance per second first (a cell's runs plus
    the launches of configs not yet in the round)."""
    if room is None:
        return running
    out: Todo = {}
    launched: set[str] = set()
    used = 0.0

    def cost(p: Point) -> float:
        return sum(costs.run(c, p) * k for c, k in running[p]) + sum(
            costs.launch(c) for c, _k in running[p] if c not in launched
        )

    order = sorted(running, key=lambda p: (-values[p] / max(cost(p), 1e-9), repr(p)))
    for p in order:
        c = cost(p)
        if used + c <= room:
            out[p] = running[p]
            used += c
            launched.update(c for c, _k in running[p])
    return out


def plan_next(
    obs: Sequence[Observation],
    configs: Sequence[str],
    points: Sequence[Point],
    settings: DesignSettings,
    launch_s: Mapping[str, float],
) -> DesignState:
    """The rules' state after ``obs`` and the next round (None: the design is finished)."""
    return step(obs, configs, points, settings, launch_s)[0]


def step(
    obs: Sequence[Observation],
    configs: Sequence[str],
    points: Sequence[Point],
    settings: DesignSettings,
    launch_s: Mapping[str, float],
    prior: Assessment | None = None,
) -> tuple[DesignState, Assessment | None]:
    """:func:`plan_next`, and the rules' reading it rests on (``prior``: the reading after the earlier
    rounds of the same observations, for a replay that calls it round after round)."""
    if settings.race:  # the second generation (specsweep.design.race): short looks, two launches
        from specsweep.design import race_plan

        state, _a = race_plan.step(obs, configs, points, settings, launch_s)
        return state, None
    configs, points = list(configs), list(points)
    costs = Costs(obs, launch_s)
    if not obs:
        first = Batch(
            0,
            tuple(Launch(lab, tuple(points)) for lab in configs),
            reason="first pass: every config and cell once",
        )
        return DesignState(cells=tuple(CellStatus(p, "running", None) for p in points), next=first, spent_s=0.0,
                           worst_case_s=0.0, baseline_s=0.0), None  # fmt: skip
    a = assess(obs, configs, points, settings, prior)
    rnd = max(o.round for o in obs) + 1
    base = baseline(configs, points, costs)
    used = spent(obs, costs)
    limit = budget_limit(settings, base)
    stops = {p: _stopped(a, p, settings) for p in points}
    running: Todo = {}
    for p in points:
        if stops[p] is not None or (rnd == 1 and _waits(a, p, settings)):
            continue
        todo = tuple(
            (c, target(a.runs.get((c, p), 0), settings) - a.runs.get((c, p), 0)) for c in a.contenders[p]
        )
        running[p] = tuple((c, k) for c, k in todo if k > 0)
    values = {p: _value(a, p, settings) for p in running}
    room = None if limit is None else limit - used
    extra = _noise_runs(a, running, costs)
    if room is not None:
        room -= sum(costs.run(lab, q) for lab, qs in extra.items() for q in qs)
    chosen = _trim(running, values, costs, room)
    runs: dict[str, list[Point]] = {lab: [] for lab in configs}
    for p in points:
        for lab, k in chosen.get(p, ()):
            runs[lab] += [p] * k
    for lab, qs in extra.items():
        if runs[lab]:  # only for a config launched anyway: a launch for noise alone is not worth it
            runs[lab] += qs
    order = configs if rnd % 2 == 0 else list(reversed(configs))
    launches = tuple(Launch(lab, tuple(runs[lab])) for lab in order if runs[lab])
    cut = set(running) - set(chosen)
    nxt = None
    if launches:
        reason = f"round {rnd}: {len(chosen)} undecided cell(s)" + (
            f", {len(cut)} left for the budget" if cut else ""
        )
        if any(runs[lab] for lab in extra):
            reason += "; repeats measuring the noise of " + ", ".join(lab for lab in extra if runs[lab])
        nxt = Batch(rnd, launches, reason=reason)
    cells = tuple(_cell(a, p, settings, stops[p], stops[p] is None, nxt is None) for p in points)
    worst = used + _remaining(a, running, settings, costs)
    noise = {c: (n.sigma, n.df_eff) for c, n in (a.model.configs.items() if a.model else ()) if n.measured}
    return DesignState(cells=cells, next=nxt, spent_s=used, worst_case_s=min(worst, limit) if limit else worst,
                       baseline_s=base, noise=noise), a  # fmt: skip


def _remaining(a: Assessment, running: Todo, settings: DesignSettings, costs: Costs) -> float:
    """Every remaining run up to max_repeats, and a launch per remaining look size for the configs."""
    todo = [(c, p) for p, cs in running.items() for c, _k in cs]
    runs = sum((settings.max_repeats - a.runs.get((c, p), 0)) * costs.run(c, p) for c, p in todo)
    n = min((a.runs.get((c, p), 0) for c, p in todo), default=settings.max_repeats)
    rounds = sum(1 for j in look_sizes(settings.max_repeats) if j > n)
    return runs + rounds * sum(costs.launch(c) for c in {c for c, _p in todo})


_KIND = {"decided": "decided", "equivalent": "equivalent", "no_data": "no_data"}


def _cell(
    a: Assessment, p: Point, settings: DesignSettings, stop: str | None, running: bool, finished: bool
) -> CellStatus:
    why = "budget" if running and finished else stop
    pairs = tuple(pair_status(a, k, settings, why) for k in sorted(a.seq, key=repr) if k[0] == p)
    runs = {c: n for (c, q), n in sorted(a.runs.items()) if q == p}
    leader = _leader(a, p, pairs)
    if why is None:
        return CellStatus(p, "running", leader, runs, pairs)
    status = _KIND.get(why, "budget" if why == "budget" else "undecided")
    stopped = "" if why == "no_data" else why
    return CellStatus(p, status, leader, runs, pairs, stopped_by=stopped)  # type: ignore[arg-type]


def _leader(a: Assessment, p: Hashable, pairs: Sequence[PairStatus]) -> str | None:
    """The config left when one is (decided), else the best estimate among those left."""
    cs = a.contenders.get(p, ())
    if len(cs) == 1:
        return cs[0]
    score: dict[str, float] = dict.fromkeys(cs, 0.0)
    for ps in pairs:
        if ps.a in score and ps.b in score:
            e = math.log1p(ps.effect)
            score[ps.a] += e
            score[ps.b] -= e
    return max(score, key=lambda c: (score[c], c)) if score else None
