"""The reference data ships inside the repository (issue 19, item 17): the simulator's profiles, the
calibration script, the docs and the tests all cite the one in-repo copy, and nothing reads a folder
beside the checkout."""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from specsweep.sim.profile import load_profile
from specsweep.sim.reference import REFERENCE_CSV, REFERENCE_CSV_NAME, find_reference_csv, reference_rows

REPO = Path(__file__).resolve().parents[1]


def test_shipped_csv_is_the_one_everything_cites(reference_dir: Path) -> None:
    assert find_reference_csv() == REFERENCE_CSV == reference_dir / "seed-results.csv"
    assert (REPO / REFERENCE_CSV_NAME).resolve() == REFERENCE_CSV.resolve()
    rows = reference_rows(REFERENCE_CSV)
    assert len(rows) == 54 and {r["method"] for r in rows} == {"dspark", "eagle"}
    for name in ("v4flash-dspark-st3", "v4flash-dspark-st5", "v4flash-eagle", "v4flash-nospec"):
        assert load_profile(name).name == name
        path = REPO / "src" / "specsweep" / "sim" / "profiles" / f"{name}.yaml"
        data = yaml.safe_load(path.read_text(encoding="utf-8"))["provenance"]["data"]
        cited = [d.split(" ")[0] for d in data]
        assert cited == [REFERENCE_CSV_NAME], (name, data)
        assert (REPO / cited[0]).is_file()


def test_nothing_reads_beside_the_checkout() -> None:
    for top in ("src", "scripts", "tests", "docs"):
        for p in (REPO / top).rglob("*"):
            if p.suffix in {".py", ".md", ".yaml", ".sh"} and p.name != Path(__file__).name:
                text = p.read_text(encoding="utf-8", errors="replace")
                assert "shared/reference" not in text, p.relative_to(REPO)


def test_winner_tables_agree_with_the_results(reference_dir: Path) -> None:
    """The winner tables copied from the reports are consistent with seed-results.csv (gain =
    winner/loser - 1, two decimals), so a transcription error cannot hide."""
    seed = {
        (r["scenario"], r["concurrency"], r["method"], r["spec_tokens"]): float(r["total_throughput"])
        for r in csv.DictReader((reference_dir / "seed-results.csv").open(encoding="utf-8"))
    }
    for name in ("winners-spec-tokens.csv", "winners-vs-eagle.csv"):
        rows = list(csv.DictReader((reference_dir / name).open(encoding="utf-8")))
        assert len(rows) == 18
        for w in rows:
            a, b = (float(v) for k, v in w.items() if k.endswith("_total_throughput"))
            assert f"{(max(a, b) / min(a, b) - 1) * 100:.2f}" == w["gain_pct"], (name, w)
            if name.startswith("winners-spec"):
                key = (w["scenario"], w["concurrency"], "dspark")
                assert (seed[(*key, "3")], seed[(*key, "5")]) == (a, b)
            else:
                assert seed[(w["scenario"], w["concurrency"], "eagle", "")] == b
