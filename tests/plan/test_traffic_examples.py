"""Each example traffic file plans from the results docs/planning.md says it needs (issue 28 defect 10):
the quickstart's own run has a traffic file of its own, and the doc's table is checked row by row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from specsweep.errors import ConfigError
from specsweep.experiment.loader import load_experiment
from specsweep.plan.planner import make_plan
from specsweep.plan.traffic import load_traffic
from specsweep.sim.reference import write_results_dir

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TRAFFIC = sorted(EXAMPLES.glob("traffic-*.yaml"))


def doc_rows() -> dict[str, str]:
    """docs/planning.md's table: traffic file name -> what its results come from."""
    text = (REPO / "docs" / "planning.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[(traffic-[\w-]+\.yaml)\]\([^)]*\) \|[^|]*\| (.+) \|$", text, re.M)
    return dict(rows)


def measured_by_every_config(experiment: Path) -> set[str]:
    _, plan = load_experiment(experiment)
    per_cfg = [{c.scenario for c in cells} for cells in plan.cells.values()]
    return set.intersection(*per_cfg)


def test_the_doc_names_the_results_of_every_traffic_example(reference_rows_: list[dict]) -> None:
    rows = doc_rows()
    assert sorted(rows) == sorted(p.name for p in TRAFFIC), rows
    reference = {r["scenario"] for r in reference_rows_}
    for path in TRAFFIC:
        mix = set(yaml.safe_load(path.read_text())["mix"])
        where = rows[path.name]
        sources = re.findall(r"examples/([\w-]+\.yaml)", where)
        if "scripts/plan_reference.py" in where:
            assert mix <= reference, (path.name, mix - reference)
        assert sources or "scripts/plan_reference.py" in where, where
        for exp in sources:
            missing = mix - measured_by_every_config(EXAMPLES / exp)
            assert not missing, f"{path.name}: {exp} does not measure {sorted(missing)}"
    # the quickstart's own traffic file exists and plans from the quickstart
    assert "examples/quickstart.yaml" in rows["traffic-quickstart.yaml"]


def quickstart_cells(reference_rows_: list[dict]) -> list[dict]:
    """What the quickstart measures (its configs, scenarios and levels), from the reference data the
    quickstart's profiles were fitted to: a quickstart-shaped run dir without three minutes of run."""
    _, plan = load_experiment(EXAMPLES / "quickstart.yaml")
    cells = {(c.scenario, c.max_concurrency) for cs in plan.cells.values() for c in cs}
    return [r for r in reference_rows_ if (r["scenario"], r["max_concurrency"]) in cells]


@pytest.mark.slow
def test_traffic_quickstart_plans_from_the_quickstarts_results(
    reference_rows_: list[dict], tmp_path: Path
) -> None:
    results = write_results_dir(quickstart_cells(reference_rows_), tmp_path)
    plan = make_plan([results], load_traffic(EXAMPLES / "traffic-quickstart.yaml"), gpus=16)
    assert plan.recommended and set(plan.mix) == {"chat_short", "rag_medium", "stress_standard"}
    # the other examples name a scenario the quickstart never measures: refused, naming it
    with pytest.raises(ConfigError, match="long_context_probe"):
        make_plan([results], load_traffic(EXAMPLES / "traffic-small.yaml"), gpus=16)
