"""The per-domain section of a report: acceptance, TPOT, throughput and speedup over no speculation,
per request category (domain), per cell; the winner per domain and cell; a recommendation per domain.

Inputs are the runs' ``per_category`` objects (metrics_category; recomputed from stored records when
a run predates them). Per category and cell:

- ``accept_length``: the server's acceptance (its counters differenced over the cell when the cell held
  that category alone; SGLang's per-request verify counts otherwise), else the client's tokens-per-chunk
  proxy, marked ``accept_length_source="chunk_proxy"``;
- ``speedup`` = total_throughput(config) / total_throughput(baseline) in the same cell and category,
  ``tpot_speedup`` = mean_tpot(baseline) / mean_tpot(config); intervals and verdicts from
  :mod:`specsweep.stats` (bootstrap over repeats, else the noise floor), null without a baseline.

The baseline is the config the report is given, else the one whose server an experiment marked
``baseline: true``. Speculation should be switched off for a domain from the lowest concurrency above
which, in every measured level, the baseline beats every speculative config (a clear verdict).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from specsweep import stats
from specsweep.analysis.core import Noise
from specsweep.analysis.data import CellData, Dataset
from specsweep.metrics_category import per_category

SYNTHETIC = frozenset({"random", "random-ids", "shared-prefix", "uncategorized"})
Key = tuple[str, str, int, str]  # category, scenario, concurrency, config


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DomainRow(_Frozen):
    category: str
    scenario: str
    concurrency: int
    config: str
    accept_length: float | None
    accept_length_source: Literal["server_counters", "verify_ct", "chunk_proxy"] | None = None
    mean_tpot_ms: float | None
    total_throughput: float | None
    output_throughput: float | None = None
    completed: int = 0
    repeats: int = 1
    speedup: float | None = None  # total throughput vs the baseline in the same cell and category
    speedup_ci: tuple[float, float] | None = None
    speedup_verdict: Literal["faster", "slower", "tie"] | None = None
    tpot_speedup: float | None = None  # baseline TPOT / this TPOT (> 1: faster per token)
    tpot_speedup_ci: tuple[float, float] | None = None


class DomainWinner(_Frozen):
    category: str
    scenario: str
    concurrency: int
    leader: str
    winner: str | None  # None: the leader's lead over the runner-up is not significant
    runner_up: str | None = None
    gain: float | None = None
    ci: tuple[float, float] | None = None


class DomainAdvice(_Frozen):
    category: str
    config: str | None  # the recommended config: most clear wins, else most leads (``clear`` False)
    clear: bool = False  # the config won at least one cell with a clear verdict
    is_baseline: bool = False  # the recommendation is to run without speculation
    wins: int = 0
    cells: int = 0
    off_from: list[tuple[str, int]] = []  # (scenario, concurrency) from which speculation loses
    best_speedup: float | None = None


class DomainsView(_Frozen):
    baseline: str | None
    output_length: Literal["fixed", "natural", "mixed", "unknown"] = "unknown"
    categories: list[str]
    configs: list[str]
    proxy_used: bool = False
    winners: list[DomainWinner] = []
    advice: list[DomainAdvice] = []

    @property
    def shown(self) -> bool:
        """Whether reports show the section: some real (not synthetic) category was measured, or there
        is a baseline (the section then gives every cell's speedup over it)."""
        return bool(self.categories) and (
            self.baseline is not None or any(c not in SYNTHETIC for c in self.categories)
        )


def baseline_label(ds: Dataset) -> str | None:
    """The label of the config whose server an experiment marked ``baseline: true`` (one config)."""
    names: set[str] = set()
    for m in ds.manifests:
        cfg = m.get("config")
        for s in (cfg.get("servers") if isinstance(cfg, dict) else None) or []:
            if isinstance(s, dict) and s.get("baseline") is True and s.get("name"):
                names.add(str(s["name"]))
    labels = [c.label for c in ds.configs.values() if c.server in names]
    return labels[0] if len(labels) == 1 else None


def _per_repeat(cell: CellData) -> list[dict[str, dict[str, Any]]]:
    reps = [r["per_category"] for r in cell.ok if isinstance(r.get("per_category"), dict)]
    if reps:
        return reps
    out = []
    for i, recs in enumerate(cell.records):  # older runs: recompute from the stored records
        al = cell.ok[i].get("accept_length") if i < len(cell.ok) else None
        out.append(per_category(recs, al if isinstance(al, (int, float)) else None))
    return out


def _nums(reps: list[dict[str, Any]], key: str) -> list[float]:
    out = []
    for m in reps:
        v = m.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


@dataclass(frozen=True)
class _Verdict:
    verdict: Literal["a", "b", "tie"]
    effect: float
    ci_low: float
    ci_high: float
    gain: float


def _compare(a: list[float], b: list[float], higher: bool, noise: Noise) -> _Verdict | None:
    """One per-domain comparison with the report's verdict tests (``stats.log_test_repeats`` for
    repeats, else against the measured or assumed run-to-run noise) at ``stats.DEFAULT_LEVEL``."""
    if not a or not b or min(a) <= 0 or min(b) <= 0:
        return None
    if len(a) >= 2 and len(b) >= 2:
        test = stats.log_test_repeats(a, b, higher_is_better=higher, floor_sigma=noise.sigma)
    else:
        test = stats.log_test_noise(a, b, higher_is_better=higher, sigma=noise.sigma, sigma_df=noise.sigma_df)
    lo, hi = test.interval(stats.DEFAULT_LEVEL)
    gain = math.expm1(abs(test.log_effect))
    v: Literal["a", "b", "tie"] = "tie"
    if test.p_value <= stats.DEFAULT_LEVEL and gain >= noise.min_effect and test.effect != 0:
        v = "a" if test.effect > 0 else "b"
    return _Verdict(v, test.effect, lo, hi, gain)


def _output_length(ds: Dataset) -> Literal["fixed", "natural", "mixed", "unknown"]:
    vals = {
        r.get("ignore_eos") for c in ds.cells.values() for r in c.ok if isinstance(r.get("ignore_eos"), bool)
    }
    if vals == {True}:
        return "fixed"
    if vals == {False}:
        return "natural"
    return "mixed" if vals else "unknown"


def build_domains(ds: Dataset, noise: Noise, baseline: str | None) -> tuple[list[DomainRow], DomainsView]:
    """Every per-domain number (rows: the report's ``domains``) and verdict of the run dirs (see the
    module docstring)."""
    data: dict[Key, list[dict[str, Any]]] = {}
    for (label, scenario, c), cell in ds.cells.items():
        for rep in _per_repeat(cell):
            for cat, m in rep.items():
                if isinstance(m, dict):
                    data.setdefault((str(cat), scenario, c, label), []).append(m)
    order = {m.label: m.order for m in ds.configs.values()}
    rows: list[DomainRow] = []
    proxy = False
    for key in sorted(data, key=lambda k: (k[0], k[1], k[2], order.get(k[3], 0))):
        cat, s, c, label = key
        reps = data[key]
        al = _mean(_nums(reps, "accept_length"))
        srcs = {m.get("accept_length_source") for m in reps} - {None}
        src: Any = srcs.pop() if len(srcs) == 1 else ("server_counters" if al is not None else None)
        if label == baseline:  # no speculation: nothing to accept
            al, src = None, None
        elif al is None and (tpc := _mean(_nums(reps, "tokens_per_chunk"))) is not None:
            al, src, proxy = tpc, "chunk_proxy", True
        extra: dict[str, Any] = {}
        base = data.get((cat, s, c, baseline)) if baseline else None
        if base is not None and label != baseline:
            thr = _compare(_nums(reps, "total_throughput"), _nums(base, "total_throughput"), True, noise)
            if thr is not None:
                extra.update(speedup=1 + thr.effect, speedup_ci=(1 + thr.ci_low, 1 + thr.ci_high),
                             speedup_verdict={"a": "faster", "b": "slower", "tie": "tie"}[thr.verdict])  # fmt: skip
            tp = _compare(_nums(reps, "mean_tpot_ms"), _nums(base, "mean_tpot_ms"), False, noise)
            if tp is not None:
                extra.update(tpot_speedup=1 + tp.effect, tpot_speedup_ci=(1 + tp.ci_low, 1 + tp.ci_high))
        elif base is not None:
            extra.update(speedup=1.0, tpot_speedup=1.0)
        rows.append(DomainRow(
            category=cat, scenario=s, concurrency=c, config=label, accept_length=al, accept_length_source=src,
            mean_tpot_ms=_mean(_nums(reps, "mean_tpot_ms")), total_throughput=_mean(_nums(reps, "total_throughput")),
            output_throughput=_mean(_nums(reps, "output_throughput")),
            completed=int(sum(_nums(reps, "completed"))), repeats=len(reps), **extra,
        ))  # fmt: skip
    winners = _winners(data, noise)
    view = DomainsView(
        baseline=baseline, output_length=_output_length(ds), categories=sorted({k[0] for k in data}),
        configs=sorted({k[3] for k in data}, key=lambda x: order.get(x, 0)), proxy_used=proxy,
        winners=winners, advice=_advice(rows, winners, baseline),
    )  # fmt: skip
    return rows, view


def _winners(data: dict[Key, list[dict[str, Any]]], noise: Noise) -> list[DomainWinner]:
    cells: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    for (cat, s, c, label), reps in data.items():
        vals = _nums(reps, "total_throughput")
        if vals:
            cells.setdefault((cat, s, c), {})[label] = vals
    out = []
    for (cat, s, c), by in sorted(cells.items()):
        ranked = sorted(by, key=lambda lab: -(_mean(by[lab]) or 0.0))
        leader = ranked[0]
        if len(ranked) == 1:
            out.append(DomainWinner(category=cat, scenario=s, concurrency=c, leader=leader, winner=None))
            continue
        r = _compare(by[leader], by[ranked[1]], True, noise)
        out.append(DomainWinner(
            category=cat, scenario=s, concurrency=c, leader=leader, runner_up=ranked[1],
            winner=leader if r is not None and r.verdict == "a" else None,
            gain=r.gain if r is not None else None, ci=(r.ci_low, r.ci_high) if r is not None else None,
        ))  # fmt: skip
    return out


def _advice(rows: list[DomainRow], winners: list[DomainWinner], baseline: str | None) -> list[DomainAdvice]:
    out = []
    for cat in sorted({w.category for w in winners}):
        ws = [w for w in winners if w.category == cat]
        wins: dict[str, int] = {}
        leads: dict[str, int] = {}
        for w in ws:
            leads[w.leader] = leads.get(w.leader, 0) + 1
            if w.winner:
                wins[w.winner] = wins.get(w.winner, 0) + 1
        pool = wins or leads
        best = max(pool, key=lambda k: (pool[k], leads.get(k, 0))) if pool else None
        off: list[tuple[str, int]] = []
        if baseline:
            for s in sorted({w.scenario for w in ws}):
                levels = sorted(w.concurrency for w in ws if w.scenario == s)
                lost = {r.concurrency for r in rows if r.category == cat and r.scenario == s and r.config != baseline
                        and r.speedup_verdict is not None}  # fmt: skip
                slower = {lvl for lvl in lost if all(r.speedup_verdict == "slower" for r in rows if r.category == cat
                          and r.scenario == s and r.concurrency == lvl and r.config != baseline)}  # fmt: skip
                start = None
                for lvl in reversed(levels):
                    if lvl not in slower:
                        break
                    start = lvl
                if start is not None:
                    off.append((s, start))
        sp = [r.speedup for r in rows if r.category == cat and r.config != baseline and r.speedup is not None]
        out.append(DomainAdvice(
            category=cat, config=best, clear=bool(wins), is_baseline=best is not None and best == baseline,
            wins=wins.get(best, 0) if best else 0, cells=len(ws), off_from=off, best_speedup=max(sp) if sp else None,
        ))  # fmt: skip
    return out
