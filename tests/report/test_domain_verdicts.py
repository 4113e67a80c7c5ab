"""Per-domain verdicts are calibrated: the winners and speedup verdicts of the per-domain section are
Benjamini-Hochberg adjusted like the main report's, so an A/A comparison over many domains names a
false winner no more often than the nominal rate, while a real difference is still found."""

from __future__ import annotations

import numpy as np
import pytest

from specsweep.analysis.core import Noise
from specsweep.analysis.data import CellData, ConfigMeta, Dataset
from specsweep.report.build.domains import build_domains
from specsweep.stats import basic as stats

DOMAINS = [f"d{i:02d}" for i in range(12)]
SIGMA = 0.03  # run-to-run noise (log sd) of every metric


def _dataset(
    rng: np.random.Generator, repeats: int, gain: dict[str, float] | None = None, sigma: float = SIGMA
) -> Dataset:
    """Configs ``base`` and ``spec`` over DOMAINS in one cell; ``spec`` = ``base`` x (1 + gain[domain])."""
    gain = gain or {}
    configs = {lab: ConfigMeta(label=lab, method=lab, params={}, server=lab, order=i)
               for i, lab in enumerate(("base", "spec"))}  # fmt: skip
    cells = {}
    for lab in configs:
        ok = []
        for _ in range(repeats):
            per = {}
            for d in DOMAINS:
                f = 1 + (gain.get(d, 0.0) if lab == "spec" else 0.0)
                thr, tpot = 1000 * f * np.exp(rng.normal(0, sigma)), 20 / f * np.exp(rng.normal(0, sigma))
                per[d] = {"completed": 10, "total_throughput": thr, "output_throughput": thr / 2,
                          "per_request_tok_s": thr / 20, "mean_tpot_ms": tpot, "accept_length": None,
                          "tokens_per_chunk": 1.0}  # fmt: skip
            ok.append({"per_category": per})
        cells[(lab, "s", 4)] = CellData(label=lab, scenario="s", concurrency=4, ok=ok)
    return Dataset(run_dirs=[], manifests=[], configs=configs, cells=cells)


NOISE = Noise(stats.DEFAULT_NOISE_FLOOR, "default", 0, 0.0)


@pytest.mark.parametrize("repeats", [1, 3])
def test_aa_over_many_domains_names_false_winners_at_most_at_the_nominal_rate(repeats: int) -> None:
    rng = np.random.default_rng(17 + repeats)
    # single runs are judged on the assumed run noise: the worst case is real noise that large
    sigma = NOISE.sigma if repeats == 1 else SIGMA
    trials, false_winner, false_speedup, raw_hits = 80, 0, 0, 0
    for _ in range(trials):
        ds = _dataset(rng, repeats, sigma=sigma)
        rows, view = build_domains(ds, NOISE, "base")
        assert view.n_compared == len(DOMAINS) and len(view.winners) == len(DOMAINS)
        false_winner += any(w.winner is not None for w in view.winners)
        false_speedup += any(r.speedup_verdict in ("faster", "slower") for r in rows)
        # unadjusted (each domain at 5% alone), the same data would name a false winner in ~46% of trials
        raw_hits += any(_raw_p(ds, d, repeats) <= stats.DEFAULT_LEVEL for d in DOMAINS)
    # under the complete null BH holds the family-wise rate at the level: 5%, + 3 binomial sd
    bound = stats.DEFAULT_LEVEL + 3 * np.sqrt(stats.DEFAULT_LEVEL * (1 - stats.DEFAULT_LEVEL) / trials)
    assert false_winner / trials <= bound
    assert false_speedup / trials <= bound
    assert raw_hits / trials > 0.25  # without the adjustment this A/A would crown false winners often


def _raw_p(ds: Dataset, d: str, repeats: int) -> float:
    a = [r["per_category"][d]["per_request_tok_s"] for r in ds.cells[("spec", "s", 4)].ok]
    b = [r["per_category"][d]["per_request_tok_s"] for r in ds.cells[("base", "s", 4)].ok]
    if repeats >= 2:
        return stats.log_test_repeats(a, b, higher_is_better=True).p_value
    return stats.log_test_noise(a, b, higher_is_better=True, sigma=NOISE.sigma).p_value


def test_a_real_gain_in_one_domain_is_still_found_among_many() -> None:
    ds = _dataset(np.random.default_rng(3), 5, {"d07": 0.3})  # found in 18 of seeds 0-19
    rows, view = build_domains(ds, NOISE, "base")
    won = {w.category: w.winner for w in view.winners if w.winner}
    assert won == {"d07": "spec"}
    spec = next(r for r in rows if r.category == "d07" and r.config == "spec")
    assert spec.speedup_verdict == "faster" and spec.speedup_ci is not None and spec.speedup_ci[0] > 1.0
    assert spec.speedup == pytest.approx(1.3, rel=0.1)
    assert next(a for a in view.advice if a.category == "d07").config == "spec"
    assert view.accept_sources == ["chunk_proxy"] and view.proxy_used  # no server counts: the proxy, said
