"""The second generation's decisions and rounds (pure): what :mod:`specsweep.design.race` judges,
adjusted over the grid, and the next round with its run lengths. ``step`` has the signature of
:func:`specsweep.design.schedule.step` and returns the same DesignState, so the loop, the log and
the report read either generation alike.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from specsweep.design.costs import FullCosts, baseline, spent
from specsweep.design.race import (
    LENGTHS,
    RELAX,
    SHARES,
    Noise,
    RacePair,
    Side,
    best_weight,
    components,
    held_at_look0,
    look0,
    look1,
    measured_bias,
    measured_noise,
    sides,
)
from specsweep.design.rules import PLAN_NOISE, POWER, pair_keys
from specsweep.design.types import Batch, CellStatus, DesignState, Launch, Observation, PairStatus, Point
from specsweep.experiment.adaptive import DesignSettings
from specsweep.stats import basic as stats
from specsweep.stats.sequential import PairKey

RELAUNCH_PASS = 0.5  # round 1's runs: this share of a full-length pass of its contenders' cells
MAX_RUNS = 4  # round 1: at most this many x max_repeats runs a config and cell
MIN_RUNS = 3  # round 1: at least this many (a Huber estimate needs 3 to tell a heavy-tailed run)


def prior_bias(settings: DesignSettings) -> float:
    """The short runs' bias scale per config at an eighth: ``short_bias`` is the sd of a pair's
    difference, so each config's is short_bias / sqrt(2)."""
    return settings.short_bias / math.sqrt(2.0)


@dataclass(frozen=True)
class RaceAssessment:
    pairs: dict[PairKey, RacePair]
    winner: dict[PairKey, str]
    equivalent: frozenset[PairKey]
    level_by: dict[PairKey, float]
    contenders: dict[Hashable, tuple[str, ...]]
    runs: dict[tuple[str, Point], int]
    noise: Noise
    last_round: int
    sides: dict[tuple[str, Point], Side]
    held: frozenset[PairKey] = frozenset()  # far off their other cells at look 0: not decided there


def shares(settings: DesignSettings) -> tuple[float, ...]:
    """The level's shares of the looks: W0 for look 0, the rest over the later launches."""
    return SHARES[3] if settings.launches >= 3 else SHARES[2]


def assess(obs: Sequence[Observation], configs: Sequence[str], points: Sequence[Point],
           settings: DesignSettings) -> RaceAssessment:  # fmt: skip
    s = sides(obs, settings.metric)
    h = measured_noise(s, settings)
    noise = Noise(h, prior_bias(settings))
    # the bias from the relaunch alone: one launch a config, its level common to every cell (a third
    # launch in some cells only would leave its level in the short-minus-long differences)
    est = measured_bias({k: _upto(v, 1) for k, v in s.items()}, configs, points, noise, settings)
    noise = Noise(h, max(noise.bias, est or 0.0))
    held = held_at_look0(s, configs, points)
    sh = shares(settings)
    pairs: dict[PairKey, RacePair] = {}
    for k in pair_keys(configs, points):
        p, x, y = k
        a, b = s.get((x, p)), s.get((y, p))  # type: ignore[arg-type]
        if a is None or b is None:
            continue
        looks = []
        if a.y0 and b.y0:
            looks.append(look0(a, b, settings, noise.bias, k in held))
        for r in sorted(set(a.rounds) & set(b.rounds)):  # each later look on the runs up to its round
            ar, br = _upto(a, r), _upto(b, r)
            looks.append(look1(ar, br, noise.of(x), noise.of(y), settings, noise.bias, k not in held,
                               min(r, len(sh) - 1)))  # fmt: skip
        if looks:
            pairs[k] = RacePair(k, tuple(looks), len(a.y0) + len(a.y1), len(b.y0) + len(b.y1), sh)
    winner, eq, level_by = decide(pairs, configs, points, settings)
    runs = {k: len(v.y0) + len(v.y1) for k, v in s.items()}
    contenders: dict[Hashable, tuple[str, ...]] = {}
    for p in points:
        behind = {lab for k, w in winner.items() if k[0] == p for lab in (k[1], k[2]) if lab != w}
        contenders[p] = tuple(c for c in configs if runs.get((c, p), 0) > 0 and c not in behind)
    last = max((o.round for o in obs), default=-1)
    return RaceAssessment(pairs, winner, frozenset(eq), level_by, contenders, runs, noise, last, s,
                          frozenset(held))  # fmt: skip


def _upto(x: Side, r: int) -> Side:
    keep = [i for i, q in enumerate(x.rounds) if q <= r]
    return Side(x.y0, x.f0, tuple(x.y1[i] for i in keep), tuple(x.lengths[i] for i in keep),
                tuple(x.rounds[i] for i in keep))  # fmt: skip


def decide(pairs: Mapping[PairKey, RacePair], configs: Sequence[str], points: Sequence[Point],
           settings: DesignSettings) -> tuple[dict[PairKey, str], set[PairKey], dict[PairKey, float]]:  # fmt: skip
    """BH within each family over every pair of the grid (a pair without data: p = 1)."""
    fams: dict[str, list[PairKey]] = {}
    for k in pair_keys(configs, points):
        fams.setdefault(settings.family(k[1], k[2]), []).append(k)
    winner: dict[PairKey, str] = {}
    eq: set[PairKey] = set()
    level_by: dict[PairKey, float] = {}
    for keys in fams.values():
        ps = [pairs[k].p_seq if k in pairs else 1.0 for k in keys]
        adj = stats.adjust(ps, "bh")
        eff = stats.effective_level(ps, settings.level, "bh")
        for k, pa in zip(keys, adj, strict=True):
            level_by[k] = eff
            if k in pairs and pa <= settings.level and pairs[k].deciding.d != 0:
                winner[k] = k[1] if pairs[k].deciding.d > 0 else k[2]
        pe = [pairs[k].p_eq_seq if k in pairs else 1.0 for k in keys]
        for k, pa in zip(keys, stats.adjust(pe, "bh"), strict=True):
            if pa <= settings.level and k not in winner:
                eq.add(k)
    return winner, eq, level_by


def open_pairs(a: RaceAssessment, p: Hashable) -> list[PairKey]:
    cs = a.contenders.get(p, ())
    return [(p, cs[i], cs[j]) for i in range(len(cs)) for j in range(i + 1, len(cs))
            if (p, cs[i], cs[j]) not in a.winner and (p, cs[i], cs[j]) not in a.equivalent]  # fmt: skip


def plan_cell(a: RaceAssessment, p: Point, settings: DesignSettings, costs: FullCosts,
              family_open: int, rnd: int = 1) -> tuple[float, int] | None:  # fmt: skip
    """(length, runs a config) for the cell's launch in round ``rnd`` (the design plans round 1 by
    ``allocate``, round 2 here): the least run time reaching the standard error that decides a gap of twice the margin at POWER, or the cheapest within RELAX of
    the best reachable one. Round 1 plans at PLAN_NOISE inside a launch (nothing measured yet);
    round 2 with each contender's measured noise and runs so far, and only for a cell that could
    still be decided (None otherwise): an open pair's |gap| plus one standard error reaches what
    the best plan's error decides at the look's level."""
    from scipy import special  # at a look, not at import (a broken install keeps the first pass)

    sh = shares(settings)
    alpha = settings.level * sh[min(rnd, len(sh) - 1)] / max(family_open, 1)
    z_a = float(-special.ndtri(alpha / 2))
    target = math.log1p(2 * settings.margin) / (z_a + float(-special.ndtri(1 - POWER)))
    cs = a.contenders[p]
    f0 = sum(a.sides[(c, p)].f0 for c in cs) / len(cs)
    run_s = sum(costs.run(c, p) for c in cs)
    if rnd >= 2:
        h = math.sqrt(sum(a.noise.of(c)[0] ** 2 for c in cs) / len(cs))
        before = [a.sides[(c, p)] for c in cs]
    else:
        h, before = PLAN_NOISE, []
    options = []
    for f in LENGTHS:
        for k in range(2, settings.max_repeats + 1):
            if before:  # the worst pair of the cell's contenders, with k more runs each
                v = max(best_weight(*components(Side.planned(f0, k, f, x, rnd), Side.planned(f0, k, f, y, rnd),
                                                h, h, settings), a.noise.bias)[1]
                        for i, x in enumerate(before) for y in before[i + 1:])  # fmt: skip
            else:
                s = Side.planned(f0, k, f)
                v = best_weight(*components(s, s, h, h, settings), a.noise.bias)[1]
            options.append((math.sqrt(v), k * f * run_s, f, k))
    se_min = min(o[0] for o in options)
    if before:
        reach = max((abs(a.pairs[k].looks[-1].d) + a.pairs[k].looks[-1].se for k in open_pairs(a, p)
                     if k in a.pairs), default=0.0)  # fmt: skip
        if reach < z_a * se_min:
            return None  # futile: even the best plan would not decide what the cell shows
    ok = [o for o in options if o[0] <= max(target, RELAX * se_min)]
    best = min(ok, key=lambda o: (o[1], o[0]))
    return best[2], best[3]


def allocate(a: RaceAssessment, cells: Sequence[Point], settings: DesignSettings,
             costs: FullCosts) -> dict[Point, tuple[float, int]]:  # fmt: skip
    """Round 1's (length, runs a config) per open cell. Its runs take RELAUNCH_PASS of one full-length
    pass of the cells' contenders, shared out by the Neyman rule (a cell's time proportional to the
    square root of its shortest run's cost: a cheap cell gets more runs, each worth as much), each
    cell at least MIN_RUNS of its shortest runs (the least a Huber estimate tells a heavy-tailed run
    by; the rest shared among the others); per cell, the length (LENGTHS) whose runs in that time give
    the least error, short runs' bias included; at most MAX_RUNS x max_repeats runs and
    max_repeats full runs' time."""
    if not cells:
        return {}
    run_s = {p: sum(costs.run(c, p) for c in a.contenders[p]) for p in cells}
    f0 = {p: sum(a.sides[(c, p)].f0 for c in a.contenders[p]) / len(a.contenders[p]) for p in cells}
    unit = {p: max(max(LENGTHS[0], f0[p]) * run_s[p], 1e-9) for p in cells}
    budget = RELAUNCH_PASS * sum(run_s.values())
    floor: set[Point] = set()  # cells held at MIN_RUNS: the Neyman share would give them fewer
    while True:
        free = [p for p in cells if p not in floor]
        room = budget - sum(MIN_RUNS * unit[p] for p in floor)
        root = sum(math.sqrt(unit[p]) for p in free)
        time_of = {p: room * math.sqrt(unit[p]) / root for p in free} if root > 0 else {}
        low = {p for p in free if time_of[p] < MIN_RUNS * unit[p]}
        if not low:
            break
        floor |= low
    time_of.update({p: MIN_RUNS * unit[p] for p in floor})
    h = PLAN_NOISE
    out: dict[Point, tuple[float, int]] = {}
    for p in cells:
        best: tuple[float, float, int] | None = None
        for f in LENGTHS:
            length = max(f, f0[p])
            cap = min(MAX_RUNS * settings.max_repeats, max(MIN_RUNS, int(settings.max_repeats / length)))
            k = min(cap, int(time_of[p] / max(length * run_s[p], 1e-9) + 1e-9))
            if k < MIN_RUNS and best is not None:
                continue  # MIN_RUNS runs of this length would not fit its time
            k = max(k, MIN_RUNS)
            sd = Side.planned(f0[p], k, length)
            v = best_weight(*components(sd, sd, h, h, settings), a.noise.bias)[1]
            if best is None or v < best[0] - 1e-12:
                best = (v, length, k)
        assert best is not None
        out[p] = (best[1], best[2])
    return out


def step(
    obs: Sequence[Observation],
    configs: Sequence[str],
    points: Sequence[Point],
    settings: DesignSettings,
    launch_s: Mapping[str, float],
    prior: object = None,
) -> tuple[DesignState, RaceAssessment | None]:
    """The rules' state after ``obs`` and the next round (None: finished); ``prior`` is ignored (the
    second generation has fixed looks: nothing to carry)."""
    configs, points = list(configs), list(points)
    costs = FullCosts(obs, launch_s)
    if not obs:
        f0 = settings.short_fraction
        first = Batch(0, tuple(Launch(c, tuple(points), (f0,) * len(points)) for c in configs),
                      reason=f"look 0: every config and cell once, short runs ({f0:.3g} of the reference)")  # fmt: skip
        return DesignState(cells=tuple(CellStatus(p, "running", None) for p in points), next=first,
                           spent_s=0.0, worst_case_s=0.0, baseline_s=0.0), None  # fmt: skip
    a = assess(obs, configs, points, settings)
    used, base = spent(obs, costs), baseline(configs, points, costs)
    limit = _limit(settings, base)
    rnd = a.last_round + 1  # the next round: a launch per config still in an open cell
    more = rnd < max(2, min(settings.launches, 3))
    running = [p for p in points if _stop(a, p) is None] if more else []
    fam_open: dict[str, int] = {}
    for p in running:
        for k in open_pairs(a, p):
            f = settings.family(k[1], k[2])
            fam_open[f] = fam_open.get(f, 0) + 1
    if rnd == 1:
        planned_cells: dict[Point, tuple[float, int] | None] = dict(allocate(a, running, settings, costs))
    else:
        planned_cells = {p: plan_cell(a, p, settings, costs, max(fam_open.get(settings.family(k[1], k[2]), 1)
                                                                 for k in open_pairs(a, p)), rnd) for p in running}  # fmt: skip
    plans = {p: pl for p, pl in planned_cells.items() if pl is not None}
    cut: set[Point] = set()
    if limit is not None and plans:
        plans, cut = _fit(a, plans, costs, limit - used)
    runs: dict[str, list[tuple[Point, float]]] = {c: [] for c in configs}
    for p in points:
        if p in plans:
            length, n = plans[p]
            for c in a.contenders[p]:
                runs[c] += [(p, length)] * n
    order = list(reversed(configs)) if rnd % 2 else list(configs)  # alternate the configs' order
    launches = tuple(
        Launch(c, tuple(q for q, _f in runs[c]), tuple(f for _q, f in runs[c])) for c in order if runs[c]
    )
    nxt = None
    if launches:
        reason = f"round {rnd}: one relaunch per config for {len(plans)} undecided cell(s)" + (
            f", {len(cut)} left for the budget" if cut else "")  # fmt: skip
        nxt = Batch(rnd, launches, reason=reason)
    planned = sum(costs.run(la.label, q) * la.length(i) for la in launches for i, q in enumerate(la.runs))
    planned += sum(costs.launch(la.label) for la in launches)
    cells = tuple(_cell(a, p, settings, p in plans, p in cut, nxt is None, p in planned_cells and p not in plans)
                  for p in points)  # fmt: skip
    noise = {c: (h, df) for c, (h, df) in a.noise.h.items()}
    worst = used + planned
    return DesignState(cells=cells, next=nxt, spent_s=used, worst_case_s=min(worst, limit) if limit else worst,
                       baseline_s=base, noise=noise), a  # fmt: skip


def _limit(settings: DesignSettings, base: float) -> float | None:
    lims = [x for x in (settings.budget_s, settings.budget_fraction * base if settings.budget_fraction else None)
            if x is not None]  # fmt: skip
    return min(lims) if lims else None


def _stop(a: RaceAssessment, p: Point) -> str | None:
    if sum(1 for (c, q), n in a.runs.items() if q == p and n > 0) < 2:
        return "no_data"
    if not open_pairs(a, p):
        return "decided" if len(a.contenders[p]) == 1 else "equivalent"
    return None


def _fit(a: RaceAssessment, plans: dict[Point, tuple[float, int]], costs: FullCosts,
         room: float) -> tuple[dict[Point, tuple[float, int]], set[Point]]:  # fmt: skip
    """The round within ``room`` seconds: every cell's plan, else every cell at its cheapest (two
    runs of the shortest length), else the cheapest cells first."""

    def cost(pl: dict[Point, tuple[float, int]]) -> float:
        labs = {c for p in pl for c in a.contenders[p]}
        runs = sum(f * k * costs.run(c, p) for p, (f, k) in pl.items() for c in a.contenders[p])
        return runs + sum(costs.launch(c) for c in labs)

    if cost(plans) <= room:
        return plans, set()
    cheap = {p: (LENGTHS[0], 2) for p in plans}
    kept: dict[Point, tuple[float, int]] = {}
    for p in sorted(cheap, key=lambda q: (cost({q: cheap[q]}), repr(q))):
        if cost({**kept, p: cheap[p]}) <= room:
            kept[p] = cheap[p]
    return kept, set(plans) - set(kept)


def _cell(a: RaceAssessment, p: Point, settings: DesignSettings, planned: bool, cut: bool,
          finished: bool, futile: bool = False) -> CellStatus:  # fmt: skip
    pairs = tuple(pair_status(a, k, settings) for k in sorted(a.pairs, key=repr) if k[0] == p)
    runs = {c: n for (c, q), n in sorted(a.runs.items()) if q == p}
    stop = _stop(a, p)
    cs = a.contenders.get(p, ())
    leader = cs[0] if len(cs) == 1 else _leader(cs, pairs)
    if stop is None and (planned and not finished):
        return CellStatus(p, "running", leader, runs, pairs)
    if stop == "no_data":
        return CellStatus(p, "no_data", leader, runs, pairs)
    if stop is not None:
        return CellStatus(p, stop, leader, runs, pairs, stopped_by=stop)  # type: ignore[arg-type]
    why = "budget" if cut else "futile" if futile else "max_repeats"
    return CellStatus(p, "budget" if cut else "undecided", leader, runs, pairs, stopped_by=why)  # type: ignore[arg-type]


def _leader(cs: Sequence[str], pairs: Sequence[PairStatus]) -> str | None:
    score = dict.fromkeys(cs, 0.0)
    for ps in pairs:
        if ps.a in score and ps.b in score:
            e = math.log1p(ps.effect)
            score[ps.a] += e
            score[ps.b] -= e
    return max(score, key=lambda c: (score[c], c)) if score else None


def pair_status(a: RaceAssessment, k: PairKey, settings: DesignSettings) -> PairStatus:
    rp = a.pairs[k]
    p, x, y = k
    lo, hi = rp.interval(a.level_by.get(k, settings.level))
    win = a.winner.get(k)
    status = "decided" if win else "equivalent" if k in a.equivalent else "undecided"
    lk = rp.looks[-1]
    return PairStatus(p, x, y, status, win, math.expm1(lk.d), math.expm1(lo), math.expm1(hi),  # type: ignore[arg-type]
                      rp.n_a, rp.n_b, min(1.0, rp.p_seq), None, None)  # fmt: skip
