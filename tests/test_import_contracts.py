"""The stages as layers, checked: import-linter's contracts in pyproject.toml ([tool.importlinter]:
the ``layers`` of src/specsweep from commands down to errors, and the forbidden imports) are kept, and
every boundary in the layers is held by an import that exists, so the order written down is the
code's own (any two neighbouring layers swapped, the contract breaks).

The picture and the reading of each layer: docs/dev/layers.md. A new package must be placed in the
layers (the contract is exhaustive); the usual fix for a broken layer is a neutral home for what
both sides need, never an exception in the contract.
"""

from __future__ import annotations

import logging
from pathlib import Path

import grimp
import pytest
from importlinter import api

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _contracts() -> list[dict[str, object]]:
    return list(api.read_configuration(str(PYPROJECT))["contracts_options"])


def _layers() -> list[str]:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    names = layers["layers"]
    assert isinstance(names, list)
    return [str(x) for x in names]


def test_the_import_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    # import-linter's use case, not its command line: the command (importlinter.cli) configures
    # logging with dictConfig, which disables every logger already made in this process
    ours = logging.getLogger("specsweep.run")
    passed = api.use_cases.lint_imports(config_filename=str(PYPROJECT), cache_dir=None, no_logo=True)
    assert passed, "import-linter: a contract is broken\n" + capsys.readouterr().out
    assert not ours.disabled  # the loggers of the tests that share this worker still log


def test_the_layers_run_from_commands_to_errors_with_the_rules_of_the_architecture() -> None:
    layers = _layers()
    assert layers[0] == "commands" and layers[-1] == "errors"
    forbidden = {
        (str(c["source_modules"][0]), str(c["forbidden_modules"][0]))  # type: ignore[index]
        for c in _contracts()
        if c["type"] == "forbidden"
    }
    assert {
        ("specsweep.stats", "specsweep.client"),
        ("specsweep.report", "specsweep.servers"),
        ("specsweep.sim", "specsweep.report"),
    } <= forbidden


def _layer(spec: str) -> grimp.Layer:
    return grimp.Layer(*[x.strip() for x in spec.split("|")], independent=True)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("specsweep")


def test_every_boundary_between_layers_is_held_by_an_import(graph: grimp.ImportGraph) -> None:
    layers = [_layer(x) for x in _layers()]
    assert not graph.find_illegal_dependencies_for_layers(layers, containers={"specsweep"})
    loose = []
    for i in range(len(layers) - 1):
        swapped = [*layers[:i], layers[i + 1], layers[i], *layers[i + 2 :]]
        if not graph.find_illegal_dependencies_for_layers(swapped, containers={"specsweep"}):
            loose.append(f"{_layers()[i]} over {_layers()[i + 1]}")
    assert not loose, "layers whose order no import needs (make them siblings with `|`): " + "; ".join(loose)
