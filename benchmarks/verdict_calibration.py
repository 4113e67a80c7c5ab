"""How often the verdict rule names a false winner (A/A), and how often it finds a real difference (A/B).

Every simulated cell goes through the functions `specsweep report` uses (specsweep.stats:
log_test_repeats, log_test_noise, adjust; specsweep.analysis.requests.log_se_of_mean), on values
``true * exp(N(0, noise))``: ``noise`` is the sd of one run's log value, i.e. its run-to-run
coefficient of variation. A/A: both configs equal, any "a" or "b" is a false winner. A/B: a is 15%
better (throughput x1.15, or latency /1.15); "power" is the share decided for a, "wrong" for b.
Each basis is run for a higher-is-better metric (throughput) and a lower-is-better one (latency):

- repeats n_a x n_b (Welch's t on log values);
- one run a side with per-request records (200 requests, per-request CV 50%): the run's own sampling
  error plus the assumed run-to-run noise (stats.DEFAULT_RUN_NOISE, 10%);
- one run a side, aggregates only, with the assumed 10% noise;
- one run a side, aggregates only, with the noise measured from 6 A/A pairs elsewhere in the data.

Per cell the test is at level 5% (one comparison: what a cell's verdict promises). The grid rows
apply Benjamini-Hochberg over 18 cells, as reports do. Two lines go with the table: what the assumed
noise does when the real noise exceeds it (BEYOND), and the run-to-run noise the reference data's own
A/A pairs show (chat_standard and stress_standard have the same definition), the evidence the assumed
value is checked against.

    python3 benchmarks/verdict_calibration.py --cells 2000 --write docs/statistics.md

prints the Markdown table and, with --write, replaces the generated section of that file.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specsweep import stats
from specsweep.analysis.requests import log_se_of_mean

LEVEL = stats.DEFAULT_LEVEL
ASSUMED = stats.DEFAULT_RUN_NOISE
EFFECT = 0.15
NOISES = (0.01, 0.03, 0.05, 0.10)
BEYOND = (0.15, 0.20)  # real noise above the assumed one: not covered, and shown as such
REPEATS = ((2, 2), (3, 3), (5, 5), (10, 10), (2, 5), (3, 10), (2, 10))
BEGIN, END = "<!-- verdict-calibration:begin -->", "<!-- verdict-calibration:end -->"


@dataclass(frozen=True)
class Row:
    basis: str
    n: str
    noise: float
    cells: int
    false_hi: float  # A/A false-winner rate, higher-is-better metric
    false_lo: float  # A/A, lower-is-better metric
    power_hi: float  # A/B: decided for the better config
    power_lo: float
    wrong: float  # A/B: decided for the worse config (both directions)
    detectable: float  # median smallest decidable difference in the A/A cells

    @property
    def false_max(self) -> float:
        return max(self.false_hi, self.false_lo)


Test = Callable[[np.random.Generator, float, float, bool], stats.LogTest]


def _runs(rng: np.random.Generator, n: int, true: float, noise: float) -> list[float]:
    return list(true * np.exp(rng.normal(0.0, noise, n)))


def _repeats(na: int, nb: int) -> Test:
    def f(rng: np.random.Generator, noise: float, ratio: float, hib: bool) -> stats.LogTest:
        a = _runs(rng, na, 1000.0 * (ratio if hib else 1 / ratio), noise)
        b = _runs(rng, nb, 1000.0, noise)
        return stats.log_test_repeats(a, b, higher_is_better=hib)

    return f


def _requests(rng: np.random.Generator, noise: float, ratio: float, hib: bool) -> stats.LogTest:
    vals, ses = [], []
    for true in (1000.0 * (ratio if hib else 1 / ratio), 1000.0):
        x = (
            true
            * math.exp(rng.normal(0.0, noise))
            * rng.lognormal(-0.5 * math.log(1.25), math.sqrt(math.log(1.25)), 200)
        )
        vals.append(float(np.mean(x)))
        ses.append(log_se_of_mean(x) or 0.0)
    return stats.log_test_noise(
        [vals[0]], [vals[1]], higher_is_better=hib, sigma=ASSUMED, within_se=(ses[0], ses[1])
    )


def _assumed(rng: np.random.Generator, noise: float, ratio: float, hib: bool) -> stats.LogTest:
    a = _runs(rng, 1, 1000.0 * (ratio if hib else 1 / ratio), noise)
    b = _runs(rng, 1, 1000.0, noise)
    return stats.log_test_noise(a, b, higher_is_better=hib, sigma=ASSUMED)


def _measured(rng: np.random.Generator, noise: float, ratio: float, hib: bool) -> stats.LogTest:
    a = _runs(rng, 1, 1000.0 * (ratio if hib else 1 / ratio), noise)
    b = _runs(rng, 1, 1000.0, noise)
    pairs = list(zip(_runs(rng, 6, 500.0, noise), _runs(rng, 6, 500.0, noise), strict=True))
    sd = stats.sigma_from_pairs(pairs)
    assert sd is not None
    return stats.log_test_noise(a, b, higher_is_better=hib, sigma=sd[0], sigma_df=sd[1])


def bases() -> list[tuple[str, str, Test]]:
    out: list[tuple[str, str, Test]] = [
        ("repeats (Welch t)", f"{na} x {nb}", _repeats(na, nb)) for na, nb in REPEATS
    ]
    out += [
        (f"single run, per-request records, assumed {ASSUMED:.0%} noise", "1 x 1", _requests),
        (f"single run, aggregates, assumed {ASSUMED:.0%} noise", "1 x 1", _assumed),
        ("single run, aggregates, noise measured from 6 A/A pairs", "1 x 1", _measured),
    ]
    return out


def rate(
    rng: np.random.Generator, test: Test, noise: float, ratio: float, hib: bool, cells: int
) -> tuple[float, float, float]:
    """(share decided for a, share decided for b, median detectable difference) over ``cells``."""
    a = b = 0
    det = []
    for _ in range(cells):
        t = test(rng, noise, ratio, hib)
        if t.p_value <= LEVEL:
            a += t.log_effect > 0
            b += t.log_effect < 0
        det.append(math.expm1(t.half_width(LEVEL)))
    return a / cells, b / cells, float(np.median(det))


def calibrate(
    cells: int,
    seed: int = 0,
    noises: tuple[float, ...] = NOISES,
    which: list[tuple[str, str, Test]] | None = None,
) -> list[Row]:
    rng = np.random.default_rng(seed)
    rows = []
    for name, n, test in which or bases():
        for noise in noises:
            fa_h, fb_h, det = rate(rng, test, noise, 1.0, True, cells)
            fa_l, fb_l, _ = rate(rng, test, noise, 1.0, False, cells)
            pa_h, pb_h, _ = rate(rng, test, noise, 1.0 + EFFECT, True, cells)
            pa_l, pb_l, _ = rate(rng, test, noise, 1.0 + EFFECT, False, cells)
            rows.append(
                Row(name, n, noise, cells, fa_h + fb_h, fa_l + fb_l, pa_h, pa_l, (pb_h + pb_l) / 2, det)
            )
    return rows


def grid(grids: int, seed: int = 0, n: int = 3, noise: float = 0.03, size: int = 18) -> dict[str, float]:
    """Benjamini-Hochberg over grids of ``size`` cells (repeats n x n): all-equal grids (A/A) and
    grids where half the cells hold a real +15% difference."""
    rng = np.random.default_rng(seed)
    test = _repeats(n, n)
    any_false = false_wins = 0
    mixed_false = mixed_nulls = mixed_hits = mixed_real = 0
    for _ in range(grids):
        p = [test(rng, noise, 1.0, True).p_value for _ in range(size)]
        rej = stats.adjust(p, "bh") <= LEVEL
        false_wins += int(rej.sum())
        any_false += bool(rej.any())
        ts = [test(rng, noise, 1.0 + EFFECT if i % 2 else 1.0, True) for i in range(size)]
        rej = stats.adjust([t.p_value for t in ts], "bh") <= LEVEL
        for i, (t, r) in enumerate(zip(ts, rej, strict=True)):
            if i % 2:
                mixed_real += 1
                mixed_hits += bool(r and t.log_effect > 0)
            else:
                mixed_nulls += 1
                mixed_false += bool(r)
    return {
        "grids": grids, "size": size, "n": n, "noise": noise,
        "aa_false_wins_per_grid": false_wins / grids, "aa_any_false": any_false / grids,
        "mixed_false_rate": mixed_false / mixed_nulls, "mixed_power": mixed_hits / mixed_real,
    }  # fmt: skip


def beyond(cells: int, seed: int = 0) -> list[tuple[float, float]]:
    """(real noise, A/A false-winner rate) of single runs on the assumed noise when the real noise is
    larger than assumed (BEYOND): the limit of an assumption, measured rather than claimed."""
    rng = np.random.default_rng(seed + 1)
    out = []
    for noise in BEYOND:
        fa, fb, _ = rate(rng, _assumed, noise, 1.0, True, cells)
        out.append((noise, fa + fb))
    return out


def reference_aa() -> tuple[list[str], float, float] | None:
    """The reference data's own A/A pairs: scenarios with the same definition (input and output
    lengths) measured for the same config at the same concurrency. Returns the pairs' differences
    (text), the run-to-run noise sd (log) they give and its degrees of freedom."""
    import csv

    from specsweep.sim.reference import REFERENCE_DIR
    from specsweep.workload.scenarios import BUILTIN

    with (REFERENCE_DIR / "seed-results.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    vals = {
        (r["scenario"], r["method"], r["spec_tokens"], r["concurrency"]): float(r["total_throughput"])
        for r in rows
    }
    same = [(x, y) for x in BUILTIN.values() for y in BUILTIN.values() if x.name < y.name
            and (x.input_len, x.output_len) == (y.input_len, y.output_len)]  # fmt: skip
    pairs, text = [], []
    for x, y in same:
        for (sc, m, st, c), v in sorted(vals.items()):
            w = vals.get((y.name, m, st, c))
            if sc == x.name and w is not None:
                pairs.append((v, w))
                text.append(f"{m}{'(st=' + st + ')' if st else ''} c={c}: {abs(v / w - 1):.1%}")
    sd = stats.sigma_from_pairs(pairs)
    return (text, *sd) if sd is not None else None


def sampling_error(rate: float, cells: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / cells)


def markdown(
    rows: list[Row],
    g: dict[str, float],
    command: str,
    over: list[tuple[float, float]] | None = None,
    aa: tuple[list[str], float, float] | None = None,
) -> str:
    def pct(x: float) -> str:
        return f"{x * 100:.1f}%"

    se = sampling_error(LEVEL, rows[0].cells) if rows else 0.0
    out = [
        f"Generated by `{command}` ({rows[0].cells if rows else 0} cells per row and direction; the sampling "
        f"error of a rate near {pct(LEVEL)} is +-{pct(se)}). Noise is one run's run-to-run sd (coefficient of "
        'variation); "thr" is a higher-is-better metric (throughput), "lat" a lower-is-better one (TPOT, '
        "TTFT, E2E). Rates are per cell at level 5%.",
        "",
        "| basis | runs a x b | noise | A/A false winners thr | A/A false winners lat | +15% decided (thr) | "
        "+15% decided (lat) | +15% wrong side | detectable (median) | within level |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ok = "yes" if r.false_max <= LEVEL + 2 * sampling_error(LEVEL, r.cells) else "**no**"
        out.append(
            f"| {r.basis} | {r.n} | {pct(r.noise)} | {pct(r.false_hi)} | {pct(r.false_lo)} | {pct(r.power_hi)} | "
            f"{pct(r.power_lo)} | {pct(r.wrong)} | {pct(r.detectable)} | {ok} |"
        )
    out += [
        "",
        f"Grids of {g['size']:.0f} cells (repeats {g['n']:.0f} x {g['n']:.0f}, {pct(g['noise'])} noise, "
        f"{g['grids']:.0f} grids), Benjamini-Hochberg at 5%: with every cell equal, "
        f"{g['aa_false_wins_per_grid']:.3f} false winners per grid and a grid with any false winner "
        f"{pct(g['aa_any_false'])} of the time; with half the cells +15% better, "
        f"{pct(g['mixed_false_rate'])} of the equal cells got a winner and {pct(g['mixed_power'])} of the "
        "better ones were found.",
    ]
    if over:
        cells = rows[0].cells if rows else 0
        worse = "; ".join(f"{pct(n)} real noise: {pct(r)}" for n, r in over)
        out += [
            "",
            f"Beyond the assumption (not covered): single runs on aggregates with the assumed {pct(ASSUMED)} "
            f"noise name false winners (throughput, {cells} cells each) at {worse}.",
        ]
    if aa:
        text, sd, df = aa
        out += [
            "",
            f"The reference data's own A/A pairs (chat_standard and stress_standard have the same definition): "
            f"{', '.join(text)} apart; run-to-run noise {pct(sd)} per run ({df:.0f} degrees of freedom).",
        ]
    return "\n".join(out)


def write_section(path: Path, body: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{BEGIN}\n{body}\n{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--cells", type=int, default=2000, help="simulated cells per row and metric direction")
    p.add_argument("--grids", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--write", metavar="FILE", help="replace the generated section of this Markdown file")
    a = p.parse_args(argv)
    if a.cells < 10 or a.grids < 1:
        p.error(f"--cells must be >= 10 and --grids >= 1, got {a.cells} and {a.grids}")
    rows = calibrate(a.cells, a.seed)
    g = grid(a.grids, a.seed)
    cmd = f"python3 benchmarks/verdict_calibration.py --cells {a.cells} --grids {a.grids} --seed {a.seed}"
    md = markdown(rows, g, cmd, beyond(a.cells, a.seed), reference_aa())
    print(md)
    if a.write:
        write_section(Path(a.write), md)
        print(f"wrote {a.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
