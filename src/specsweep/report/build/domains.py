"""The per-domain section of a report: acceptance, TPOT, per-request throughput and speedup over no
speculation, per request category (domain), per cell; the winner per domain and cell; a
recommendation per domain.

What is measured per domain is what is measured per response (issue 28 item 4): in a cell that mixes
domains, throughput divides a domain's tokens by the whole cell's duration, so it is the cell's, not
the domain's; such a row leaves it out (``mixed``) and the results table has the cell's. Inputs are
the runs' ``per_category`` objects (metrics_category; recomputed from stored records when a run
predates them or their per-request throughput). Per category and cell:

- ``accept_length``: the server's acceptance: per request where the server reports it (SGLang's verify
  counts, llama-server's ``timings``), so per domain even in a cell that mixes domains; else its
  ``/metrics`` counters differenced over the cell when the cell held that category alone (vLLM); else
  the client's tokens-per-chunk proxy, marked ``accept_length_source="chunk_proxy"``;
- ``per_request_tok_s``: output tokens per second of request time over the domain's responses;
- ``speedup`` = per_request_tok_s(config) / per_request_tok_s(baseline) in the same cell and category,
  ``tpot_speedup`` = mean_tpot(baseline) / mean_tpot(config); null without a baseline;
- ``total_throughput``, ``output_throughput``: only when the cell held this domain alone.

Runs that are invalid or failed have no per-domain numbers: they are listed (``DomainsView.left_out``),
never dropped silently; a domain and cell where fewer than two configs have valid results has no
winner ("-") and no recommendation is made from it.

Verdicts follow the main report's rule (:func:`specsweep.analysis.verdicts.all_verdicts`): each comparison
is a log-ratio test (Welch's t over repeats, else against the measured or assumed run-to-run noise),
decided when its Benjamini-Hochberg adjusted p value is <= ``stats.DEFAULT_LEVEL`` and the gain reaches
``--min-effect``; intervals are drawn at the per-comparison level those decisions amount to. The
families adjusted together: every pairwise throughput comparison of configs within each (domain,
scenario, concurrency) (the winners: a winner is the leader whose comparison with the runner-up is
decided), and every config-vs-baseline throughput comparison (the speedup verdicts); the TPOT speedup
intervals use their own family's level. So many domains do not make false winners more likely.

The baseline is the config the report is given, else the one whose server an experiment marked
``baseline: true``. Speculation should be switched off for a domain from the lowest concurrency above
which, in every measured level, the baseline beats every speculative config (a clear verdict).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from specsweep.analysis.core import Noise
from specsweep.analysis.data import CellData, Dataset
from specsweep.measure.per_category import per_category
from specsweep.report.build.view_base import reason_msgs
from specsweep.stats import basic as stats

SYNTHETIC = frozenset({"random", "random-ids", "shared-prefix", "uncategorized"})
PER_DOMAIN = "per_request_tok_s"  # the throughput measured per domain in every cell (module docstring)
Key = tuple[str, str, int, str]  # category, scenario, concurrency, config


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DomainRow(_Frozen):
    category: str
    scenario: str
    concurrency: int
    config: str
    accept_length: float | None
    accept_length_source: Literal["server_counters", "verify_ct", "timings", "chunk_proxy"] | None = None
    mean_tpot_ms: float | None
    total_throughput: (
        float | None
    )  # None in a mixed cell: there it would be the cell's share, not the domain's
    output_throughput: float | None = None
    per_request_tok_s: float | None = None  # output tokens per second of request time, per response
    mixed: bool = False  # the cell held other domains too
    completed: int = 0
    repeats: int = 1
    speedup: float | None = None  # per-request tok/s vs the baseline in the same cell and category
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
    p_adjusted: float | None = None  # the leader-vs-runner-up p value after the BH adjustment


class DomainAdvice(_Frozen):
    category: str
    config: str | None  # the recommended config: most clear wins, else most leads (``clear`` False)
    clear: bool = False  # the config won at least one cell with a clear verdict
    is_baseline: bool = False  # the recommendation is to run without speculation
    wins: int = 0
    cells: int = 0  # cells of the domain with two or more valid configs (what the advice rests on)
    uncompared: int = 0  # cells of the domain where fewer than two configs have a valid result
    off_from: list[tuple[str, int]] = []  # (scenario, concurrency) from which speculation loses
    best_speedup: float | None = None


class LeftOut(_Frozen):
    """A run without per-domain numbers (invalid or failed), and why."""

    scenario: str
    concurrency: int
    config: str
    status: str  # "invalid" | "failed"
    reason: str = ""
    reasons: list[dict[str, Any]] = []  # an invalid run's reasons as messages (view_base.reason_msgs)


class DomainsView(_Frozen):
    baseline: str | None
    output_length: Literal["fixed", "natural", "mixed", "unknown"] = "unknown"
    categories: list[str]
    configs: list[str]
    proxy_used: bool = False
    # where the acceptance figures came from: verify_ct | timings | server_counters | chunk_proxy
    accept_sources: list[str] = []
    level: float = stats.DEFAULT_LEVEL  # the verdicts' false-winner rate
    adjustment: str = "bh"  # over each family (module docstring)
    n_compared: int = 0  # comparisons in the winners' family
    winners: list[DomainWinner] = []
    advice: list[DomainAdvice] = []
    left_out: list[LeftOut] = []
    mixed_cells: int = 0  # (scenario, concurrency, config) runs that held several domains

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
    fresh = all(isinstance(m, dict) and "per_request_tok_s" in m for rep in reps for m in rep.values())
    if reps and (fresh or len(cell.records) != len(cell.ok)):
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
    p_adjusted: float


def _test(a: list[float], b: list[float], higher: bool, noise: Noise) -> stats.LogTest | None:
    """a vs b with the main report's tests (``analysis.core.pair_test``): Welch's t on log values with
    >= 2 repeats a side (floored at the run noise only when the repeats are identical), else the log
    ratio against the measured or assumed run-to-run noise. None when a side has no positive value."""
    if not a or not b or min(a) <= 0 or min(b) <= 0:
        return None
    if len(a) >= 2 and len(b) >= 2:
        test = stats.log_test_repeats(a, b, higher_is_better=higher)
        if test.se == 0:
            test = stats.log_test_repeats(a, b, higher_is_better=higher, floor_sigma=noise.sigma)
        return test
    return stats.log_test_noise(a, b, higher_is_better=higher, sigma=noise.sigma, sigma_df=noise.sigma_df)


def _decide(
    tests: list[stats.LogTest],
    noise: Noise,
    *,
    level: float = stats.DEFAULT_LEVEL,
    adjustment: stats.Adjustment = "bh",
) -> list[_Verdict]:
    """One family's verdicts, as ``analysis.verdicts.all_verdicts`` decides them: adjusted p <= level and a
    gain of at least ``noise.min_effect``; intervals at the level the adjusted decisions amount to."""
    p = [t.p_value for t in tests]
    p_adj = stats.adjust(p, adjustment)
    eff = stats.effective_level(p, level, adjustment)
    out = []
    for t, pa in zip(tests, p_adj, strict=True):
        lo, hi = t.interval(eff)
        gain = math.expm1(abs(t.log_effect))
        v: Literal["a", "b", "tie"] = "tie"
        if pa <= level and gain >= noise.min_effect and t.effect != 0:
            v = "a" if t.effect > 0 else "b"
        out.append(_Verdict(v, t.effect, lo, hi, gain, float(pa)))
    return out


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
    left_out: list[LeftOut] = []
    for (label, scenario, c), cell in ds.cells.items():
        for rep in _per_repeat(cell):
            for cat, m in rep.items():
                if isinstance(m, dict):
                    data.setdefault((str(cat), scenario, c, label), []).append({**m, "_mixed": len(rep) > 1})
        for r in cell.bad:
            why = str(r.get("error") or r.get("invalid_reason") or "")
            lo = LeftOut(scenario=scenario, concurrency=c, config=label, status=str(r.get("status") or "failed"),
                         reason=why, reasons=reason_msgs(why, r.get("invalid_reasons")) if not r.get("error") else [])  # fmt: skip
            if lo not in left_out:
                left_out.append(lo)
    order = {m.label: m.order for m in ds.configs.values()}
    keys = sorted(data, key=lambda k: (k[0], k[1], k[2], order.get(k[3], 0)))
    # the speedup families: each config vs the baseline in its cell and domain (throughput, TPOT)
    thr_tests: dict[Key, stats.LogTest] = {}
    tpot_tests: dict[Key, stats.LogTest] = {}
    for key in keys:
        cat, s, c, label = key
        base = data.get((cat, s, c, baseline)) if baseline else None
        if base is None or label == baseline:
            continue
        reps = data[key]
        if (t := _test(_nums(reps, PER_DOMAIN), _nums(base, PER_DOMAIN), True, noise)) is not None:
            thr_tests[key] = t
        if (t := _test(_nums(reps, "mean_tpot_ms"), _nums(base, "mean_tpot_ms"), False, noise)) is not None:
            tpot_tests[key] = t
    thr = dict(zip(thr_tests, _decide(list(thr_tests.values()), noise), strict=True))
    tpot = dict(zip(tpot_tests, _decide(list(tpot_tests.values()), noise), strict=True))
    rows: list[DomainRow] = []
    proxy = False
    for key in keys:
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
        if (v := thr.get(key)) is not None:
            extra.update(speedup=1 + v.effect, speedup_ci=(1 + v.ci_low, 1 + v.ci_high),
                         speedup_verdict={"a": "faster", "b": "slower", "tie": "tie"}[v.verdict])  # fmt: skip
        if (v := tpot.get(key)) is not None:
            extra.update(tpot_speedup=1 + v.effect, tpot_speedup_ci=(1 + v.ci_low, 1 + v.ci_high))
        if baseline and label == baseline:
            extra.update(speedup=1.0, tpot_speedup=1.0)
        mixed = any(m["_mixed"] for m in reps)
        rows.append(DomainRow(
            category=cat, scenario=s, concurrency=c, config=label, accept_length=al, accept_length_source=src,
            mean_tpot_ms=_mean(_nums(reps, "mean_tpot_ms")), per_request_tok_s=_mean(_nums(reps, PER_DOMAIN)),
            total_throughput=None if mixed else _mean(_nums(reps, "total_throughput")),
            output_throughput=None if mixed else _mean(_nums(reps, "output_throughput")), mixed=mixed,
            completed=int(sum(_nums(reps, "completed"))), repeats=len(reps), **extra,
        ))  # fmt: skip
    winners, n_compared = _winners(data, noise)
    view = DomainsView(
        baseline=baseline, output_length=_output_length(ds), categories=sorted({k[0] for k in data}),
        configs=sorted({k[3] for k in data}, key=lambda x: order.get(x, 0)), proxy_used=proxy,
        accept_sources=sorted({r.accept_length_source for r in rows if r.accept_length_source}),
        n_compared=n_compared, winners=winners, advice=_advice(rows, winners, baseline), left_out=left_out,
        mixed_cells=len({(r.scenario, r.concurrency, r.config) for r in rows if r.mixed}),
    )  # fmt: skip
    return rows, view


def _winners(data: dict[Key, list[dict[str, Any]]], noise: Noise) -> tuple[list[DomainWinner], int]:
    """The winner per (domain, scenario, concurrency) on per-request throughput, and the family size:
    every pair of configs in every such cell is tested, the family adjusted together (module
    docstring)."""
    cells: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    for (cat, s, c, label), reps in data.items():
        vals = _nums(reps, PER_DOMAIN)
        if vals:
            cells.setdefault((cat, s, c), {})[label] = vals
    pairs: list[tuple[tuple[str, str, int], str, str]] = []
    tests: list[stats.LogTest] = []
    for cell, by in sorted(cells.items()):
        labels = sorted(by)
        for i, x in enumerate(labels):
            for y in labels[i + 1 :]:
                if (t := _test(by[x], by[y], True, noise)) is not None:
                    pairs.append((cell, x, y))
                    tests.append(t)
    verdicts = {(cell, x, y): v for (cell, x, y), v in zip(pairs, _decide(tests, noise), strict=True)}
    out = []
    for (cat, s, c), by in sorted(cells.items()):
        ranked = sorted(by, key=lambda lab: -(_mean(by[lab]) or 0.0))
        leader = ranked[0]
        if len(ranked) == 1:
            out.append(DomainWinner(category=cat, scenario=s, concurrency=c, leader=leader, winner=None))
            continue
        second = ranked[1]
        r = verdicts.get(((cat, s, c), leader, second))
        if (
            r is None and (r2 := verdicts.get(((cat, s, c), second, leader))) is not None
        ):  # orient: leader first
            inv = {"a": "b", "b": "a", "tie": "tie"}[r2.verdict]
            r = _Verdict(inv, 1 / (1 + r2.effect) - 1, 1 / (1 + r2.ci_high) - 1, 1 / (1 + r2.ci_low) - 1,  # type: ignore[arg-type]
                         r2.gain, r2.p_adjusted)  # fmt: skip
        out.append(DomainWinner(
            category=cat, scenario=s, concurrency=c, leader=leader, runner_up=second,
            winner=leader if r is not None and r.verdict == "a" else None,
            gain=r.gain if r is not None else None, ci=(r.ci_low, r.ci_high) if r is not None else None,
            p_adjusted=r.p_adjusted if r is not None else None,
        ))  # fmt: skip
    return out, len(tests)


def _advice(rows: list[DomainRow], winners: list[DomainWinner], baseline: str | None) -> list[DomainAdvice]:
    """Per domain, from the cells where two or more configs have valid results (a config alone in a
    cell, its competitors invalid, wins nothing)."""
    out = []
    for cat in sorted({w.category for w in winners}):
        every = [w for w in winners if w.category == cat]
        ws = [w for w in every if w.runner_up is not None]
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
            wins=wins.get(best, 0) if best else 0, cells=len(ws), uncompared=len(every) - len(ws), off_from=off,
            best_speedup=max(sp) if sp else None,
        ))  # fmt: skip
    return out
