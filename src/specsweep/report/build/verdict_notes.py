"""What the report says about its verdicts as a whole: the rule that decided them (test, level,
multiplicity adjustment, runs per config) and, for the ties, how large a difference the data could
have resolved and how many runs per config a target difference would take."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from specsweep.analysis.core import Noise, PairVerdict
from specsweep.analysis.model import Findings
from specsweep.analysis.outcomes import tie_reason
from specsweep.report.build.view import Msg, ReportView
from specsweep.stats import basic as stats
from specsweep.stats import planning as stats_plan


def _runs(vs: Sequence[PairVerdict]) -> str:
    ns = sorted({n for v in vs for n in (v.n_a, v.n_b)})
    return str(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"


def rule_msg(vs: Sequence[PairVerdict]) -> Msg | None:
    """The tests (each with how many verdicts it decided, the most common first), level, adjustment
    and family size of these verdicts."""
    if not vs:
        return None
    counts = Counter(v.method for v in vs).most_common()
    seq = "verdict.rule_race" if any(v.method == "race" for v in vs) else "verdict.rule_seq"
    return Msg(
        key=seq if any(v.sequential for v in vs) else "verdict.rule",
        args={"test": f"test.{counts[0][0]}", "tests": {f"test.{m}": n for m, n in counts}, "level": vs[0].level,
              "adj": f"adj.{vs[0].adjustment}", "m": vs[0].n_compared, "runs": _runs(vs)},
    )  # fmt: skip


def detectable(vs: Sequence[PairVerdict]) -> float | None:
    """Median smallest resolvable difference over the ties the runs could not resolve (over all
    verdicts when there is none)."""
    ties = [v.detectable_effect for v in vs if tie_reason(v) == "noise"] or [v.detectable_effect for v in vs]
    return float(median(ties)) if ties else None


def ties_msg(vs: Sequence[PairVerdict]) -> Msg | None:
    """For the ties the runs could not resolve: the detectable difference and the planning aid (runs
    per config for the target, with the power it plans for, in each comparison of this family, at the
    noise's upper bound). Ties whose gap is only under --min-effect are :func:`ties_min_msg`'s."""
    ties = [v for v in vs if tie_reason(v) == "noise"]
    det = detectable(vs)
    if not ties or det is None:
        return None
    sigma = float(median(v.noise_sd for v in ties))
    target = ties[0].target_effect
    needs = sorted(math.inf if v.repeats_needed is None else v.repeats_needed for v in ties)
    mid = needs[len(needs) // 2]
    need = None if math.isinf(mid) else int(mid)
    args: dict[str, Any] = {"ties": len(ties), "m": len(vs), "detectable": det, "runs": _runs(ties), "target": target,
            "sigma": sigma, "need": need if need is not None else stats_plan.MAX_RUNS, "power": stats.DEFAULT_POWER,
            "basis": "noise_basis.assumed" if all(v.method == "z_assumed_noise" for v in ties) else "noise_basis.measured"}  # fmt: skip
    if need is None:
        return Msg(key="verdict.ties_beyond", args=args)
    # nothing measured: the planning aid at the assumed noise is an upper bound; measuring comes first
    return Msg(
        key="verdict.ties_assumed" if args["basis"] == "noise_basis.assumed" else "verdict.ties", args=args
    )


def ties_min_msg(vs: Sequence[PairVerdict]) -> Msg | None:
    """The ties whose gap is under --min-effect: the gap is below the minimum that matters, whatever
    the noise (issue 26 item 6)."""
    below = [v for v in vs if tie_reason(v) == "min_effect"]
    if not below:
        return None
    return Msg(key="verdict.ties_min", args={"ties": len(below), "m": len(vs), "min_effect": below[0].min_effect,
                                             "largest": max(v.gain for v in below)})  # fmt: skip


def noise_msg(noise: Noise) -> Msg:
    return Msg(key=f"noise.{noise.source}", args={"floor": noise.floor, "n": noise.n, "sigma": noise.sigma})


def picked_configs(view: ReportView) -> Callable[[str, int], str] | None:
    """Compare reports: for a cell, the config each best-of method ran with there ("DSpark(st=3)");
    None when no method has more than one config (nothing was picked)."""
    multi = [c for c in view.configs if len(c.members) > 1]
    if view.kind != "compare" or not multi:
        return None

    def cell_text(s: str, c: int) -> str:
        picks = [view.cell(s, c, col.label) for col in multi]
        return ", ".join(p.picked for p in picks if p is not None and p.picked) or "-"

    return cell_text


def rests_on(basis: str) -> str:
    """The label key of what a verdict or recommendation rests on, from its basis ("repeats",
    "requests+default_floor", "aa_floor", ...)."""
    if basis == "repeats":
        return "rests.repeats"
    kind = "assumed" if "default" in basis else "measured"
    return f"rests.requests_{kind}" if basis.startswith("requests") else f"rests.{kind}"


def _where(domain: str) -> str:
    return "all runs" if domain == "clock" else Path(domain).name or domain


def model_notes(f: Findings, label: Callable[[str], str], vs: Sequence[PairVerdict] = ()) -> list[Msg]:
    """Notes on what the verdicts' noise model found (analysis.model.findings): each config's own
    noise, drift taken out or not accountable, blocked order, outlier runs, cells that differ in
    noise, and heavy tails under verdicts that rest on single runs (the shapes the rule cannot hold:
    docs/statistics.md)."""
    out: list[Msg] = []
    measured = [
        f"{label(c)} {s:.1%} ({df:.0f} df)" for c, v in f.noise.items() if v is not None for s, df in [v]
    ]
    unmeasured = [label(c) for c, v in f.noise.items() if v is None]
    if measured:
        out.append(Msg(key="note.noise_per_config", args={"list": "; ".join(measured)}))
        if unmeasured:
            out.append(
                Msg(
                    key="note.noise_unmeasured",
                    args={"list": ", ".join(unmeasured), "sigma": stats.DEFAULT_RUN_NOISE},
                )
            )
    for d in f.drift:
        if d.found and not f.unaligned:
            key = "note.drift_rounds" if d.rounds else "note.drift_linear"
            out.append(Msg(key=key, args={"size": math.expm1(d.size), "where": _where(d.domain)}))
        if d.unexplained:
            out.append(Msg(key="note.drift_unexplained", args={"where": _where(d.domain)}))
    if f.unaligned:
        size = max((d.size for d in f.drift if d.found), default=0.0)
        out.append(Msg(key="note.drift_unaligned", args={"size": math.expm1(size)}))
    if f.blocked:
        out.append(Msg(key="note.blocked_order", args={"where": ", ".join(_where(d) for d in f.blocked)}))
    out += launch_notes(f, label, vs)
    if f.outliers:
        cells = [f"{label(o.config)} {o.cell[0]} c={o.cell[1]} ({o.departure:+.0%})" for o in f.outliers
                 if isinstance(o.cell, tuple)]  # fmt: skip
        out.append(Msg(key="note.outliers", args={"n": len(f.outliers), "list": "; ".join(cells[:8])}))
    if f.heterogeneous:
        out.append(Msg(key="note.noise_differs", args={"list": ", ".join(label(c) for c in f.heterogeneous)}))
    if f.tails and any(v.method != "z_assumed_noise" for v in vs):
        out.append(Msg(key="note.heavy_tails", args={}))
    return out


def launch_notes(f: Findings, label: Callable[[str], str], vs: Sequence[PairVerdict] = ()) -> list[Msg]:
    """What the verdicts assumed of the server launches and sessions (stats_launch): the launch noise
    and where it came from, a fit that failed, drifts refused, and comparisons across unlinked
    sessions (with the anchor that would link them, for Next steps)."""
    out: list[Msg] = []
    lf = f.launch
    if lf is not None:
        src = lf.source.replace("+", "_")
        args: dict[str, Any] = {
            "tau": lf.tau,
            "df": lf.df if math.isfinite(lf.df) else 0,
            "name": lf.prior.name,
        }
        out.append(Msg(key=f"note.launch_{src}", args=args))
        if lf.failed:
            out.append(Msg(key="note.launch_fit_failed", args={"list": ", ".join(label(c) for c in lf.failed),
                                                               "tau": lf.tau}))  # fmt: skip
    for st in f.steps:
        key = "note.step_found" if st.identified else "note.step_widened"
        args = {"size": math.expm1(st.size), "after": st.after, "units": st.units, "where": _where(st.domain)}
        out.append(Msg(key=key, args=args))
    for d in f.refused:
        out.append(
            Msg(key="note.drift_refused", args={"size": math.expm1(d.size), "where": _where(d.domain)})
        )
    apart = [v for v in vs if v.unanchored]
    split = [v for v in apart if any({v.a, v.b} <= labels for labels in f.unlinked.values())]
    if split:  # each config in its own launch, one after another (analysis.model.unlinked_dirs)
        allow = max(math.expm1(1.96 * v.se_session) for v in split)
        pairs = sorted({f"{label(v.a)} / {label(v.b)}" for v in split})
        where = ", ".join(_where(d) for d in sorted(f.unlinked))
        out.append(Msg(key="note.launches_unanchored", args={"n": len(split), "allow": allow, "where": where,
                                                             "pairs": "; ".join(pairs[:4])}))  # fmt: skip
        out.append(Msg(key="next.interleave_rounds", args={"config": label(split[0].a)}))
    apart = [v for v in apart if all(v is not x for x in split)]
    if apart:
        allow = max(math.expm1(1.96 * v.se_session) for v in apart)
        pairs = sorted({f"{label(v.a)} / {label(v.b)}" for v in apart})
        out.append(Msg(key="note.sessions_unanchored", args={"n": len(apart), "allow": allow,
                                                             "pairs": "; ".join(pairs[:4])}))  # fmt: skip
        out.append(Msg(key="next.anchor_sessions", args={"config": label(apart[0].a)}))
    return out
