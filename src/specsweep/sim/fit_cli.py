"""``specsweep sim fit`` on the command line: filter result rows, fit, write the profile YAML with
its provenance (the canonical command that reproduces it), print train and hold-out errors."""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specsweep.errors import UsageError, one_of
from specsweep.sim.fit import BOOL_FIELDS, SCAN_FIELDS, fit, median_abs_errors
from specsweep.sim.observed import METRICS, ObservedCell, load_cells, row_k
from specsweep.sim.profile import COST_PARAMS, Profile, load_profile


def _filter(cells: list[ObservedCell], method: str | None, ks: list[int] | None) -> list[ObservedCell]:
    return [c for c in cells if (method is None or c.method == method) and (ks is None or c.k in ks)]


def one_method(train: list[ObservedCell]) -> str | None:
    """The one method the training rows share: a profile models one method's drafts and step cost,
    so rows of several (DSpark and EAGLE of a comparison run) are refused, as several k are."""
    methods = sorted({c.method or "none" for c in train})
    if len(methods) > 1:
        counts = ", ".join(f"{m} ({sum((c.method or 'none') == m for c in train)} rows)" for m in methods)
        raise UsageError(
            f"training rows mix methods: {counts}; a profile models one method: fit each on its own "
            f"rows with --method {methods[0]} (then --method {methods[1]}, ...)"
        )
    return train[0].method if train else None


def _int_list(s: str | None) -> list[int] | None:
    if not s:
        return None
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError as e:
        raise UsageError(f"bad spec-token list {s!r}; expected comma-separated integers, e.g. 3,5") from e


def _print_errors(title: str, rows: list[dict[str, Any]]) -> None:
    w = sys.stdout.write
    w(f"{title} ({len(rows)} rows): median |err| % " + str(median_abs_errors(rows)) + "\n")
    for r in rows:
        parts = [f"{m.replace('_ms', '')} {100 * r[m]['err']:+6.1f}%" for m in METRICS if m in r]
        w(f"  {r['cell']:<48} " + "  ".join(parts) + "\n")


def parse_scan(items: Sequence[str]) -> dict[str, list[int]]:
    """``["prefill_chunk=1024,2048", "admit_delay_steps=3,4"]`` -> {name: [values]}."""
    out: dict[str, list[int]] = {}
    for item in items:
        name, _, vals = item.partition("=")
        name = name.strip()
        if name not in SCAN_FIELDS:
            raise UsageError(f"bad --scan {item!r}: {one_of(name, SCAN_FIELDS)}")
        try:
            out[name] = [int(v) for v in vals.split(",") if v.strip()]
        except ValueError as e:
            raise UsageError(
                f"bad --scan {item!r}; expected NAME=INT,INT,... e.g. prefill_chunk=2048,8192"
            ) from e
        if not out[name]:
            raise UsageError(f"bad --scan {item!r}; expected at least one value")
        if name in BOOL_FIELDS and any(v not in (0, 1) for v in out[name]):
            raise UsageError(f"bad --scan {item!r}; {name} takes 0 (off) or 1 (on)")
    return out


def command_line(args: argparse.Namespace) -> str:
    """The canonical ``specsweep sim fit`` command for these arguments (recorded in the profile)."""
    parts = ["specsweep", "sim", "fit", *map(str, args.results), "-o", str(args.output)]
    for flag in ("name", "method", "spec_tokens", "holdout_spec_tokens", "k", "acceptance", "base",
                 "spec_method", "model_name", "draft_steps", "description"):  # fmt: skip
        v = getattr(args, flag, None)
        if v is not None:
            parts += ["--" + flag.replace("_", "-"), str(v)]
    for item in args.fix:
        parts += ["--fix", item]
    for item in args.scan:
        parts += ["--scan", item]
    if args.loss != "soft_l1":
        parts += ["--loss", args.loss]
    if args.f_scale != 0.05:
        parts += ["--f-scale", str(args.f_scale)]
    if args.seed:
        parts += ["--seed", str(args.seed)]
    if args.pair_weight:
        parts += ["--pair-weight", str(args.pair_weight)]
    if args.replicates != 1:
        parts += ["--replicates", str(args.replicates)]
    return " ".join(shlex.quote(p) for p in parts)


def with_domain_acceptance(profile: Profile, paths: Sequence[str | Path]) -> Profile:
    """The profile with per-category acceptance curves learned from the results (sim.domains)."""
    from specsweep.sim import domains

    pts = domains.category_points(domains.rows_of(paths), row_k)
    curves = domains.category_survival(pts, profile.k)
    if not curves:
        return profile
    for cat, curve in curves.items():
        sys.stdout.write(
            f"acceptance {cat}: E({profile.k}) = {1 + sum(curve):.2f} from {len(pts[cat])} row(s)\n"
        )
    return profile.model_copy(update={"category_survival": curves})


def fit_main(args: argparse.Namespace) -> int:
    if args.replicates < 1:
        raise UsageError(
            f"bad --replicates {args.replicates}; expected a positive integer (1 = one run per cell)"
        )
    cells = load_cells(args.results)
    train_ks = _int_list(args.spec_tokens)
    ho_ks = _int_list(args.holdout_spec_tokens)
    train = _filter(cells, args.method, train_ks)
    method = one_method(train)
    holdout = _filter(cells, method, ho_ks) if ho_ks else []  # the profile's method, other k
    ks = sorted({c.k for c in train})
    if args.k is None and len(ks) != 1:
        raise UsageError(f"training rows have spec tokens {ks}; name the profile's k with --k")
    k = args.k if args.k is not None else ks[0]
    base = load_profile(args.base) if args.base else Profile(name="fit")
    fixed: dict[str, float] = {}
    for item in args.fix:
        name, _, val = item.partition("=")
        try:
            fixed[name.strip()] = float(val)
        except ValueError as e:
            raise UsageError(f"bad --fix {item!r}; expected NAME=VALUE, e.g. cliff_ms=0") from e
    out = Path(args.output)
    name = args.name or out.stem
    upd: dict[str, Any] = {"name": name}
    if args.description:
        upd["description"] = args.description
    method = args.spec_method if args.spec_method is not None else method
    upd["spec_method"] = None if (k == 0 or method in ("none", "")) else method
    if args.model_name:
        upd["model_name"] = args.model_name
    if args.draft_steps is not None:
        upd["draft_steps"] = args.draft_steps
    base = base.model_copy(update=upd)
    res = fit(train, base, k=k, acceptance=args.acceptance, holdout=holdout, fixed=fixed,
              loss=args.loss, f_scale=args.f_scale, seed=args.seed, scan=parse_scan(args.scan),
              pair_weight=args.pair_weight, replicates=args.replicates)  # fmt: skip
    prov = {
        "data": [str(p) for p in args.results],
        "command": command_line(args),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "acceptance": "from results' accept_length"
        if any(c.accept_length for c in train)
        else args.acceptance,
        "method_filter": args.method,
        "train_spec_tokens": train_ks,
        "holdout_spec_tokens": ho_ks,
    }
    profile = res.profile.model_copy(update={"provenance": {**base.provenance, **prov}})
    profile = with_domain_acceptance(profile, args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(profile.to_yaml(), encoding="utf-8")
    sys.stdout.write(
        "fitted: " + ", ".join(f"{n}={res.theta[i]:.5g}" for i, n in enumerate(COST_PARAMS)) + "\n"
    )
    _print_errors("train", res.train)
    if res.holdout:
        _print_errors("hold-out", res.holdout)
    sys.stdout.write(f"wrote {out}\n")
    return 0
