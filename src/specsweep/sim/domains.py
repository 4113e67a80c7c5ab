"""Per-domain acceptance for simulator profiles: learned from measured per-category acceptance.

Speculation accepts more on code and math than on open chat. A profile's ``category_survival`` holds
one survival curve per request category; ``sim fit`` learns it here from the results' per-category
acceptance lengths (the ``per_category`` object of each result row: per-response counts where the
server gives them - SGLang's verify counts, llama-server's timings - so from mixed cells too; else the
server's counters when the cell held one category).

Model: per category c, a constant per-token acceptance rate a_c, S_i = a_c^i, so that
E(k) = 1 + a + ... + a^k. With rows at several k, a_c minimises sum over rows (E_k(a) - L_row)^2
(grid over [0, 0.999] refined by bisection-free golden steps); with one k it is exact (observed.const_rate_for).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specsweep.store.run_dir import find_run_dirs

Points = dict[str, list[tuple[int, float]]]  # category -> [(k, measured acceptance length)]


def expected_length(a: float, k: int) -> float:
    """E(k) = 1 + a + ... + a^k."""
    return float(sum(a**i for i in range(k + 1)))


def category_points(rows: Sequence[dict[str, Any]], k_of: Any) -> Points:
    """(k, acceptance length) per category from result rows carrying ``per_category`` (k_of(row) -> k)."""
    out: Points = {}
    for row in rows:
        per = row.get("per_category")
        if not isinstance(per, dict) or row.get("status", "ok") != "ok":
            continue
        k = int(k_of(row))
        if k < 1:
            continue
        for cat, m in per.items():
            al = m.get("accept_length") if isinstance(m, dict) else None
            if isinstance(al, (int, float)) and not isinstance(al, bool) and al >= 1.0:
                out.setdefault(str(cat), []).append((k, float(al)))
    return out


def rows_of(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    return [row for rd in find_run_dirs(paths) for row in rd.summary()]


def fit_rate(points: Sequence[tuple[int, float]]) -> float:
    """The constant rate a in [0, 0.999] whose E_k(a) best matches the (k, L) points (least squares)."""
    if not points:
        raise ValueError("no points to fit")

    def sse(a: float) -> float:
        return sum((expected_length(a, k) - L) ** 2 for k, L in points)

    grid = [i / 1000 for i in range(1000)]
    best = min(grid, key=sse)
    lo, hi = max(0.0, best - 0.001), min(0.999, best + 0.001)
    for _ in range(40):  # ternary search: sse is unimodal near the grid minimum
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (lo, m2) if sse(m1) <= sse(m2) else (m1, hi)
    return (lo + hi) / 2


def category_survival(points: Points, k: int) -> dict[str, list[float]]:
    """{category: [a_c^1, ..., a_c^k]} for a profile of k draft tokens (sorted by category)."""
    if k < 1:
        return {}
    return {c: [fit_rate(pts) ** i for i in range(1, k + 1)] for c, pts in sorted(points.items()) if pts}
