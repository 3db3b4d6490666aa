"""The shape of the code: no import cycle inside the core, no module a reader cannot hold in mind."""

from __future__ import annotations

from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500


def _cycles(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """Every import cycle among the modules of ``package`` (imports under TYPE_CHECKING count too)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    edges = {m: sorted(x for x in graph.find_modules_directly_imported_by(m) if x in modules) for m in modules}
    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in edges[m]:
            if state.get(n) == 1:
                found.append([*stack[stack.index(n):], n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in modules:
        if m not in state:
            visit(m)
    return found


def test_no_import_cycle_inside_the_core() -> None:
    graph = grimp.build_graph("rm", "common")
    assert _cycles(graph, "rm.core") == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph, "p") == [["p.a", "p.b", "p.c", "p.a"]]


def test_no_module_of_the_core_the_am_or_the_simulator_is_over_500_lines() -> None:
    long = {}
    for package in ("rm/core", "am", "sim"):
        for path in (ROOT / package).rglob("*.py"):
            lines = len(path.read_text().splitlines())
            if lines > MAX_LINES:
                long[str(path.relative_to(ROOT))] = lines
    assert long == {}
