"""Pairwise verdicts of a table (docs/statistics.md, "How verdicts are decided").

Each metric's runs give a noise model (:mod:`specsweep.analysis.model`): each config's own pooled
noise, the host's drift, the measured residuals. Every pair of columns in every cell is tested
against it (:func:`specsweep.stats.compare.compare`) - or, for a run made by the adaptive design, by
the design's sequential rule (:mod:`specsweep.stats.sequential`), so a run and its report agree.

Families (what Benjamini-Hochberg adjusts over, and what "at most 5% false winners" is about):
the primary metric's verdicts are one family, at ``level``; the secondary metrics' verdicts (the
latency metrics) are one joint family, at ``level``, opened only when the primary family names a
winner (a gatekeeping order): a report of equal configs then names a winner on any metric at most
``level`` of the time, and the headline, read from the primary verdicts, too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from specsweep.analysis.core import METRICS, Noise, PairVerdict, Table, VerdictList
from specsweep.analysis.data import CellData
from specsweep.analysis.model import MetricRuns, design_of, metric_runs
from specsweep.analysis.requests import within_log_se
from specsweep.errors import UsageError
from specsweep.stats import basic as stats
from specsweep.stats.compare import PairTest, compare
from specsweep.stats.noise import NoiseModel
from specsweep.stats.planning import runs_to_decide
from specsweep.stats.sequential import SeqPair, sequential


@dataclass(frozen=True)
class _Found:
    s: str
    c: int
    a: str  # column labels
    b: str
    test: PairTest
    basis: str
    ma: float
    mb: float
    factor: int  # best-of selection factor (compare tables)
    seq: SeqPair | None = None

    @property
    def raw_p(self) -> float:
        return self.seq.p_seq if self.seq is not None else self.test.p_value

    @property
    def p(self) -> float:
        return min(1.0, self.raw_p * self.factor)


def within_run_se(d: CellData, key: str) -> float | None:
    """A single run's own sampling error (log) of ``key`` from its per-request records, if kept."""
    if len(d.ok) != 1 or len(d.records) != 1:
        return None
    return within_log_se(d.records[0], key)


def _basis(test: PairTest, source: str, requests: bool) -> str:
    if test.measured_a and test.measured_b and min(test.n_a, test.n_b) >= 2:
        return "repeats"
    # one side measured, the other not: that side's noise is assumed (never borrowed from the other)
    src = (
        source
        if test.measured_a and test.measured_b
        else f"{source}+default"
        if test.measured_a or test.measured_b
        else "default"
    )
    return f"requests+{src}_floor" if requests else f"{src}_floor"


def _tests(t: Table, metric: str, noise: Noise, runs: MetricRuns, model: NoiseModel) -> list[_Found]:
    m = METRICS[metric]
    labels = t.labels()
    members = {col.label: max(1, len(col.members)) for col in t.columns}
    design = design_of(t.dataset)
    found = []
    pairs: list[tuple[str, int, str, str, str, str]] = []
    for s, c in t.points:
        for i in range(len(labels)):
            for j in range(i + 1, len(labels)):
                ea, eb = t.entry(labels[i], s, c), t.entry(labels[j], s, c)
                if (
                    ea is None
                    or eb is None
                    or not ea.ok
                    or not eb.ok
                    or ea.picked is None
                    or eb.picked is None
                ):
                    continue
                pairs.append((s, c, labels[i], labels[j], ea.picked, eb.picked))
    seq: dict[Any, SeqPair] = {}
    if design is not None and pairs:
        seq = sequential(runs.runs, [((s, c), pa, pb) for s, c, _a, _b, pa, pb in pairs],
                         max_repeats=design.max_repeats, margin=design.margin)  # fmt: skip
    for s, c, a, b, pa, pb in pairs:
        ea, eb = t.entry(a, s, c), t.entry(b, s, c)
        assert ea is not None and eb is not None and ea.data is not None and eb.data is not None
        va, vb = ea.data.values(m.key), eb.data.values(m.key)
        if not va or not vb or min(va) <= 0 or min(vb) <= 0:
            continue
        within = None
        if len(va) == 1 and len(vb) == 1 and (model.noise(pa) is None or model.noise(pb) is None):
            wa, wb = within_run_se(ea.data, m.key), within_run_se(eb.data, m.key)
            within = (wa, wb) if wa is not None and wb is not None else None
        sp = seq.get(((s, c), pa, pb))
        test = sp.last.test if sp is not None else compare(model, (pa, (s, c)), (pb, (s, c)), within=within)
        if test is None:
            continue
        k = members[a] * members[b] if t.kind == "compare" else 1
        basis = _basis(test, noise.source, within is not None)
        found.append(_Found(s, c, a, b, test, basis, sum(va) / len(va), sum(vb) / len(vb), k, sp))
    return found


def _verdicts(
    found: list[_Found], metric: str, noise: Noise, level: float, adjustment: stats.Adjustment, gated: bool
) -> VerdictList:
    p = [f.p for f in found]
    p_adj = stats.adjust(p, adjustment)
    eff = stats.effective_level(p, level, adjustment) if not gated else level / max(len(p), 1)
    target = noise.min_effect if noise.min_effect > 0 else stats.DEFAULT_TARGET
    cells = len({(f.s, f.c) for f in found})
    out = []
    for f, pa in zip(found, p_adj, strict=True):
        test = f.test
        if f.seq is not None:
            lo_l, hi_l = f.seq.interval(eff / f.factor)
            e = f.seq.deciding.test.effect if pa <= level else test.effect
        else:
            h = min(test.half_width(eff / f.factor), 30.0)
            lo_l, hi_l = test.log_effect - h, test.log_effect + h
            e = test.effect
        gain = math.expm1(abs(math.log1p(e)))
        v: Literal["a", "b", "tie"] = "tie"
        if not gated and pa <= level and gain >= noise.min_effect and e != 0:
            v = "a" if e > 0 else "b"
        need = runs_to_decide(test.sigma, target, comparisons=len(found), level=level, cells=cells,
                              sigma_df=test.df)  # fmt: skip
        eq = f.seq is not None and f.seq.p_eq_seq <= level and v == "tie"
        out.append(
            PairVerdict(
                f.s, f.c, metric, f.a, f.b, v, test.effect, math.expm1(max(lo_l, -30.0)), math.expm1(min(hi_l, 30.0)),
                f.basis, noise.floor, noise.min_effect, f.ma, f.mb,
                f.a if v == "a" else f.b if v == "b" else None, f.a if test.effect >= 0 else f.b, math.expm1(abs(test.log_effect)),
                method=test.method, n_a=test.n_a, n_b=test.n_b, level=level,
                detectable_effect=math.expm1(min((hi_l - lo_l) / 2, 30.0)), p_value=f.raw_p, p_adjusted=float(pa),
                adjustment=adjustment, n_compared=len(found), noise_sd=test.sigma, target_effect=target,
                repeats_needed=need, se_log=test.se, df=None if math.isinf(test.df) else test.df,
                noise_a=test.sigma_a, noise_b=test.sigma_b, gated=gated, equivalent=eq,
                looks=len(f.seq.looks) if f.seq is not None else 1, se_shared=math.sqrt(test.shared_var),
                sequential=f.seq is not None, launch_noise=test.launch_sd, launch_source=test.launch_source,
                se_launch=math.sqrt(test.launch_var), se_session=math.sqrt(test.session_var),
                unanchored=test.unanchored, df_shared=None if math.isinf(test.shared_df) else test.shared_df,
            )
        )  # fmt: skip
    return VerdictList(out)


def report_verdicts(
    t: Table,
    noise: Noise,
    primary: str,
    secondary: Sequence[str] = (),
    *,
    level: float = stats.DEFAULT_LEVEL,
    adjustment: stats.Adjustment = "bh",
) -> dict[str, VerdictList]:
    """Every pairwise verdict on ``primary`` (one family) and on the ``secondary`` metrics (one joint
    family, opened only when the primary family names a winner)."""
    if not 0 < level < 1:
        raise UsageError(f"verdict level must be in (0, 1), got {level}")
    design = design_of(t.dataset)
    level = design.level if design is not None else level  # a design run: the level it was run at
    out: dict[str, VerdictList] = {}
    runs = metric_runs(t.dataset, primary, METRICS[primary].higher_is_better)
    fp = _tests(t, primary, noise, runs, runs.model())
    out[primary] = _verdicts(fp, primary, noise, level, adjustment, gated=False)
    if not secondary:
        return out
    found: list[tuple[str, _Found]] = []
    for metric in secondary:
        r = metric_runs(t.dataset, metric, METRICS[metric].higher_is_better)
        found += [(metric, f) for f in _tests(t, metric, noise, r, r.model())]
    gated = not any(v.winner for v in out[primary])
    joint = _verdicts([f for _m, f in found], "", noise, level, adjustment, gated)
    for (metric, _f), v in zip(found, joint, strict=True):
        out.setdefault(metric, VerdictList()).append(_with_metric(v, metric))
    for metric in secondary:
        out.setdefault(metric, VerdictList())
    return out


def _with_metric(v: PairVerdict, metric: str) -> PairVerdict:
    from dataclasses import replace

    return replace(v, metric=metric)


def all_verdicts(
    t: Table,
    metric: str,
    noise: Noise,
    *,
    level: float = stats.DEFAULT_LEVEL,
    adjustment: stats.Adjustment = "bh",
) -> VerdictList:
    """One metric's verdicts as one family (the primary metric of a report)."""
    return report_verdicts(t, noise, metric, level=level, adjustment=adjustment)[metric]
