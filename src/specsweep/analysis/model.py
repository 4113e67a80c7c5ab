"""The noise model of a report's runs, per metric: every ok summary row of the dataset as one run with
its config, cell, oriented log value and place in the run order (:mod:`specsweep.stats.noise`).

Run order, per row: ``seq`` (rows of this wave's runs), else ``started_at``, else the summary file's
line. One order domain per run dir; when several run dirs all have ``started_at`` they share one
clock (one domain, ranked by time). Rounds (``round``, else ``repeat``) are time blocks only in run
dirs whose manifest says the order was interleaved or adaptive (``run_order.kind``).

A run dir whose manifest has a ``design`` record (``specsweep run --adaptive``) is judged by the
design's sequential rule (:mod:`specsweep.stats.sequential`) for every metric, so the run and its report
agree; :func:`design_of` finds it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from specsweep.analysis.data import Dataset
from specsweep.experiment.adaptive import DesignSettings, settings_of
from specsweep.stats.drift import Drift
from specsweep.stats.launch import ASSUMED, LaunchFit
from specsweep.stats.noise import NoiseModel, Outlier
from specsweep.stats.sequential import Runs
from specsweep.stats.step import Step
from specsweep.store import launch_noise

BLOCK_ORDERS = ("interleaved", "adaptive")


@dataclass(frozen=True)
class MetricRuns:
    """One metric's runs (one entry per ok run with a positive value) and each order domain's
    recorded run order ("" unknown)."""

    runs: Runs
    order_kinds: dict[str, str]
    unlinked: tuple[str, ...] = ()  # run dirs whose configs' launches nothing links (unlinked_dirs)

    def model(self) -> NoiseModel:
        return self.runs.model(diagnostics=True)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _time(v: Any) -> float | None:
    if not isinstance(v, str) or not v:
        return None
    try:
        return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


_Row = tuple[str, Hashable, float, str, "float | None", int, "float | None", int]


def idx_has(rows: list[_Row], idx: list[int]) -> tuple[bool, bool]:
    """Whether every row of a run dir has a seq, and whether every one has a start time."""
    return all(rows[i][6] is not None for i in idx), all(rows[i][4] is not None for i in idx)


def _order_key(row: _Row, has: tuple[bool, bool]) -> tuple[float, int]:
    """A row's place in its run dir: seq, else start time, else the summary file's line."""
    seq, start = row[6], row[4]
    if has[0] and seq is not None:
        return seq, row[7]
    if has[1] and start is not None:
        return start, row[7]
    return float(row[7]), row[7]


def manifest_of(ds: Dataset) -> dict[str, dict[str, Any]]:
    return {str(rd.path): m for rd, m in zip(ds.run_dirs, ds.manifests, strict=True)}


def order_kind(man: dict[str, Any]) -> str:
    ro = man.get("run_order")
    k = ro.get("kind") if isinstance(ro, dict) else None
    return k if isinstance(k, str) else ""


def design_of(ds: Dataset) -> DesignSettings | None:
    """The design's settings when the dataset is one run dir made by it; None otherwise (the plain
    rule applies: several run dirs are no longer the design's data alone)."""
    mans = list(manifest_of(ds).values())
    return settings_of(mans[0]) if len(mans) == 1 else None


def metric_runs(ds: Dataset, metric: str, higher_is_better: bool) -> MetricRuns:
    rows: list[_Row] = []
    for (label, s, c), cell in ds.cells.items():
        for r in cell.ok:
            v = r.get(metric)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
                continue
            y = math.log(v) if higher_is_better else -math.log(v)
            d = str(r.get("_run_dir", ""))
            seq = _int(r.get("seq"))
            rnd = _int(r.get("round"))
            rnd = rnd if rnd is not None else _int(r.get("repeat")) or 0
            rows.append((label, (s, c), y, d, _time(r.get("started_at")), rnd,
                         float(seq) if seq is not None else None, _int(r.get("_line")) or 0))  # fmt: skip
    mans = manifest_of(ds)
    kinds = {d: order_kind(m) for d, m in mans.items()}
    sessions = session_ids(rows)
    launches = tuple(
        f"{ses}|{x[0]}|{x[5]}" if kinds.get(x[3]) in BLOCK_ORDERS else f"{ses}|{x[0]}"
        for x, ses in zip(rows, sessions, strict=True)
    )
    unlinked = unlinked_dirs(rows, kinds)
    sessions = tuple(
        f"{ses}|{x[0]}" if x[3] in unlinked else ses for x, ses in zip(rows, sessions, strict=True)
    )
    prior = launch_noise.prior_for(mans, calibration_keys(ds)) or ASSUMED
    dirs = {x[3] for x in rows}
    common = len(dirs) > 1 and all(x[4] is not None for x in rows)
    pos = np.empty(len(rows))
    doms: list[str] = []
    if common:  # one clock: rank by time, ties by each dir's own order
        order = sorted(
            range(len(rows)), key=lambda i: (rows[i][4], rows[i][3], rows[i][6] or 0.0, rows[i][7])
        )
        for rank, i in enumerate(order):
            pos[i] = rank
        doms = ["clock"] * len(rows)
        blocks: frozenset[str] = frozenset()
        kinds = {"clock": ""}
    else:
        for d in dirs:
            idx = [i for i, x in enumerate(rows) if x[3] == d]
            has = idx_has(rows, idx)
            for rank, i in enumerate(sorted(idx, key=lambda i: _order_key(rows[i], has))):
                pos[i] = rank
        doms = [x[3] for x in rows]
        blocks = frozenset(d for d in dirs if kinds.get(d) in BLOCK_ORDERS)
    runs = Runs(tuple(x[0] for x in rows), tuple(x[1] for x in rows), np.array([x[2] for x in rows]), pos,
                np.array([x[5] for x in rows], dtype=int), tuple(doms), blocks, launches, sessions, prior)  # fmt: skip
    return MetricRuns(runs, kinds, unlinked)


def unlinked_labels(ds: Dataset) -> dict[str, frozenset[str]]:
    """The run dirs of :func:`unlinked_dirs` with the configs that ran in each (the report's wording)."""
    kinds = {d: order_kind(m) for d, m in manifest_of(ds).items()}
    rows: list[_Row] = []
    for (label, _s, _c), cell in ds.cells.items():
        for r in cell.ok:
            rnd = _int(r.get("round"))
            rnd = rnd if rnd is not None else _int(r.get("repeat")) or 0
            rows.append((label, None, 0.0, str(r.get("_run_dir", "")), None, rnd, None, 0))
    return {d: frozenset(x[0] for x in rows if x[3] == d) for d in unlinked_dirs(rows, kinds)}


def launches_apart(ds: Dataset, a: str, b: str) -> bool:
    """Whether configs ``a`` and ``b`` ran one after the other in a run dir whose launches nothing links."""
    return any({a, b} <= labels for labels in unlinked_labels(ds).values())


def unlinked_dirs(rows: list[_Row], kinds: dict[str, str]) -> tuple[str, ...]:
    """Native run dirs of several configs whose launches nothing links: blocked order (each config in
    its own launch, one after another), or rounds with a single round (one launch per config: the
    same data). Nothing there measures the launch noise, and a change of the host between one
    config's launch and the next cannot be told from their difference: each config's runs there are
    a session of their own (the between-session allowance, the cell's wording; docs/statistics.md,
    "Sessions"). Interleaved rounds (2 or more) link them: a round's level is shared by every config,
    and the launches measure the launch noise."""
    out = []
    for d in sorted({x[3] for x in rows}):
        k = kinds.get(d, "")
        mine = [x for x in rows if x[3] == d]
        if len({x[0] for x in mine}) < 2:
            continue
        if k == "blocked" or (k in BLOCK_ORDERS and len({x[5] for x in mine}) < 2):
            out.append(d)
    return tuple(out)


SESSION_GAP_S = 6 * 3600.0  # runs of one run dir more than this apart (a resume days later): two sessions


def session_ids(rows: list[_Row]) -> tuple[str, ...]:
    """Each row's session: its run dir (an import, another `specsweep run`: measured apart), split
    where its runs' start times leave a gap of more than SESSION_GAP_S (a resume hours or days
    later: another host state)."""
    out = [""] * len(rows)
    for d in {x[3] for x in rows}:
        idx = [i for i, x in enumerate(rows) if x[3] == d]
        timed = sorted((t, i) for i in idx if (t := rows[i][4]) is not None)
        part, prev = 0, None
        which: dict[int, int] = {}
        for t, i in timed:
            if prev is not None and t - prev > SESSION_GAP_S:
                part += 1
            which[i], prev = part, t
        for i in idx:
            k = which.get(i, 0)
            out[i] = d if k == 0 else f"{d}#{k}"
    return tuple(out)


def calibration_keys(ds: Dataset) -> list[str]:
    """The engine@host keys a stored calibration may be under for these runs."""
    hosts = []
    for m in ds.manifests:
        h = m.get("host")
        hosts.append(h.get("hostname") if isinstance(h, dict) else None)
    engines = [c.backend for c in ds.configs.values()]
    return [launch_noise.key_of(e, h) for h in dict.fromkeys(hosts) for e in dict.fromkeys(engines)]


TAILS_KURTOSIS = 1.0  # excess kurtosis of the measured noise from which single runs are warned about


@dataclass(frozen=True)
class Findings:
    """What the noise model says about the data, for the report's notes: each config's own noise
    (None: not measured), the drift per domain, run dirs recorded in blocked order with several
    configs, whether a found drift spans run dirs with no common clock, the runs flagged as outliers,
    the configs whose cells differ in noise (Bartlett), and whether the noise has heavy tails
    (outliers flagged or excess kurtosis >= TAILS_KURTOSIS)."""

    noise: dict[str, tuple[float, float] | None]
    drift: tuple[Drift, ...]
    order_kinds: dict[str, str]
    blocked: tuple[str, ...]
    unaligned: bool
    outliers: tuple[Outlier, ...]
    heterogeneous: tuple[str, ...] = ()
    tails: bool = False
    launch: LaunchFit | None = None  # the launch noise the verdicts used (stats_launch)
    refused: tuple[Drift, ...] = ()  # drifts refused as absurd for the data (stats.drift.Drift.refused)
    sessions: int = 1  # sessions in the data (run dirs; a resume more than SESSION_GAP_S later)
    steps: tuple[Step, ...] = ()  # steps of the host found in run order and taken out (stats_step)
    unlinked: dict[str, frozenset[str]] = field(default_factory=dict)  # unlinked_labels: dir -> its configs


def findings(ds: Dataset, metric: str, higher_is_better: bool) -> Findings:
    mr = metric_runs(ds, metric, higher_is_better)
    runs, m = mr.runs, mr.model()
    noise = {c: ((n.sigma, n.df_eff) if n.measured else None) for c, n in sorted(m.configs.items())}
    by_dom: dict[str, set[str]] = {}
    for c, d in zip(runs.configs, runs.domains, strict=True):
        by_dom.setdefault(d, set()).add(c)
    blocked = tuple(
        sorted(d for d, k in mr.order_kinds.items() if k == "blocked" and len(by_dom.get(d, ())) > 1)
    )
    found = [d for d in m.drift if d.found]
    unaligned = (
        bool(found) and len(by_dom) > 1 and any(len(cs) < len(set(runs.configs)) for cs in by_dom.values())
    )
    het = tuple(c for c, n in sorted(m.configs.items()) if n.heterogeneous)
    tails = bool(m.outliers) or m.kurtosis >= TAILS_KURTOSIS
    return Findings(noise, m.drift, mr.order_kinds, blocked, unaligned, m.outliers, het, tails, m.launch,
                    m.refused, len({s.split("|")[0] for s in runs.sessions}) or 1, m.steps, unlinked_labels(ds))  # fmt: skip
