"""The layout rules of CONTRIBUTING.md, checked: no import cycle in ``src/specsweep``, no module much
over 500 lines, and no module importing another module's private names.

The import graph is grimp's (every import, including those inside functions). An edge from a
package's ``__init__`` to its own submodules is its public surface, not a dependency, and is left out;
every other edge counts, so a submodule importing its parent package that re-exports it is a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "specsweep"
MAX_LINES = 520  # "about 500": a module past this holds more than one job


def _graph() -> dict[str, set[str]]:
    g = grimp.build_graph("specsweep")
    return {
        m: {d for d in g.find_modules_directly_imported_by(m) if not d.startswith(m + ".")} for m in g.modules
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_src() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (give the shared type or helper a neutral home): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_size(path: Path) -> None:
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(SRC)} has {n} lines: split it by concern"


def test_no_private_names_imported_across_modules() -> None:
    bad = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("specsweep")
            ):
                bad += [
                    f"{path.relative_to(SRC)}:{node.lineno} imports {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not bad, "private names imported from another module (make them public there): " + "; ".join(bad)
