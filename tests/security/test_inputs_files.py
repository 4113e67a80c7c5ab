"""Files that are too big or not files at all (issue 27, items 11 and 13): each is refused at once,
saying which bound was hit or what the path is; nothing is parsed for minutes, nothing hangs.

Speed and memory of each refusal are measured by benchmarks/hostile_inputs.py, not here; a test
that hangs on the old code fails on its pytest timeout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from specsweep.cli import main
from specsweep.errors import ConfigError
from specsweep.experiment import checks as config_checks
from specsweep.experiment.config import plan_experiment
from specsweep.experiment.loader import load_experiment, parse_experiment
from specsweep.orchestrate import create_run_dir
from specsweep.plan.traffic import load_traffic
from specsweep.sim.reference import find_reference_csv, reference_rows, write_results_dir

pytestmark = pytest.mark.timeout(60)

EXPERIMENT = {
    "name": "files",
    "servers": [{"name": "s", "kind": "sim", "profile": "toy"}],
    "workloads": [{"scenarios": ["chat_short"], "concurrency": [1]}],
}


# ---- item 11: size bombs -------------------------------------------------------------------------
def test_a_big_plain_yaml_is_refused_by_the_bound_on_bytes_read(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    pad = "# " + "x" * 98 + "\n"
    f.write_text(yaml.safe_dump(EXPERIMENT) + pad * (config_checks.MAX_FILE_BYTES // len(pad) + 1))
    with pytest.raises(ConfigError, match="bound on bytes read") as ei:
        load_experiment(f)
    assert str(f) in str(ei.value) and f"{config_checks.MAX_FILE_BYTES:,} bytes" in str(ei.value)


def test_nested_aliases_are_refused_by_the_bound_on_the_expanded_size(tmp_path: Path) -> None:
    """A short file whose aliases stay under the node bound but expand a long string many times
    (issue 27: 1 MB of YAML took 80 s and wrote a 44 MB manifest and a 44 MB report)."""
    long = "a" * 50_000
    text = f"description: &d {long}\n" + yaml.safe_dump(EXPERIMENT)
    text = text.replace("profile: toy", "profile: toy\n  args: [" + ", ".join(["*d"] * 100) + "]")
    f = tmp_path / "aliases.yaml"
    f.write_text(text)
    assert f.stat().st_size < config_checks.MAX_FILE_BYTES
    with pytest.raises(ConfigError, match="bound on the expanded size") as ei:
        load_experiment(f)
    assert f"{config_checks.MAX_EXPANDED_BYTES:,} bytes" in str(ei.value)


def test_the_planner_and_the_simulator_read_yaml_with_the_same_bounds(tmp_path: Path) -> None:
    bomb = Path(__file__).parent / "inputs" / "alias_bomb.yaml"
    with pytest.raises(ConfigError, match="expand to more than"):
        load_traffic(bomb)  # yaml.safe_load before: 90 s+ and 1.8 GB
    big = tmp_path / "traffic.yaml"
    big.write_bytes(b"mix: {chat: 1.0}\nload: {concurrency: 8}\n" + b"#" * config_checks.MAX_FILE_BYTES)
    with pytest.raises(ConfigError, match="bound on bytes read"):
        load_traffic(big)


def test_files_within_the_bounds_still_load(tmp_path: Path) -> None:
    f = tmp_path / "ok.yaml"
    anchors = "x-defaults: &d {kind: sim, profile: toy}\n"
    f.write_text(anchors.replace("x-defaults", "description") + yaml.safe_dump(EXPERIMENT))
    with pytest.raises(ConfigError, match="description"):  # a mapping is not a description: parsed
        load_experiment(f)
    f.write_text(yaml.safe_dump(EXPERIMENT) + "# " + "x" * (config_checks.MAX_FILE_BYTES // 2) + "\n")
    _exp, plan = load_experiment(f)
    assert len(plan.configs) == 1


# ---- item 13: FIFOs and devices --------------------------------------------------------------------
def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_import_reads_only_regular_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for src in ("/dev/zero", str(_fifo(tmp_path / "results.jsonl"))):
        assert (
            main(["import", "sglang", src, "--label", "x", "--method", "m", "-o", str(tmp_path / "r")]) == 2
        )
        err = capsys.readouterr().err
        assert src in err and ("a character device" in err or "a FIFO" in err), err
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_experiment_and_traffic_files_that_are_fifos_or_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = _fifo(tmp_path / "exp.yaml")
    assert main(["run", str(fifo), "--dry-run"]) == 2
    assert "a FIFO, not a regular file" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="a character device"):
        load_traffic("/dev/zero")


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    csv = find_reference_csv()
    assert csv is not None
    return write_results_dir(reference_rows(csv), tmp_path_factory.mktemp("ref"))


def test_a_fifo_summary_does_not_hang_the_report(
    reference_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    rd = tmp_path / "planted"
    shutil.copytree(reference_run, rd)
    (rd / "summary.jsonl").unlink()
    _fifo(rd / "summary.jsonl")
    assert main(["report", str(rd)]) == 2
    err = capsys.readouterr().err
    assert "summary.jsonl: cannot read (a FIFO, not a regular file" in err, err


def test_a_fifo_summary_or_records_file_does_not_hang_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_experiment(parse_experiment(EXPERIMENT))
    rd = create_run_dir(plan, tmp_path, None)
    _fifo(rd.path / "summary.jsonl")
    assert main(["run", "--resume", str(rd.path), "--quiet"]) == 2
    err = capsys.readouterr().err  # issue 38: every file is checked before the resume
    assert "cannot resume" in err and "summary.jsonl is a FIFO" in err
    (rd.path / "records").mkdir(exist_ok=True)
    path = rd.records_path("cell", 0)
    _fifo(path)
    with pytest.raises(Exception, match=r"cannot read records: .*a FIFO"):
        rd.read_records("cell", 0)
