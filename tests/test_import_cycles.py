"""No import circles between our modules.

A circle between two modules means neither can be understood, tested or loaded without the
other, and it breaks at import time the day someone moves an import to module level. This test
builds the import graph of our packages with grimp (the engine of import-linter) and fails
listing every strongly connected component of more than one module.

Counted: every import grimp sees, at module level, inside functions, and under
``TYPE_CHECKING`` (a type-only circle is still a circle in the design).

Not counted: a module importing a package it lives in (``extract.readers.ocr`` importing
``extract.readers``). Such an edge only reaches the package's ``__init__``, which is already
being initialised when its child loads, and which re-exports its children. The other direction,
a package's ``__init__`` importing its children, *is* counted: importing a package runs its
``__init__``, so ``a -> pkg -> pkg.child -> a`` is a real circle.
"""

from __future__ import annotations

import grimp

PACKAGES = ("ingest", "extract", "lake", "evals", "dashboards", "infra", "training")


def _imports(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {
        module: {imported for imported in graph.find_modules_directly_imported_by(module)
                 if not module.startswith(imported + ".")}  # a child importing its own package
        for module in graph.modules
    }


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_finder_finds_a_circle_through_a_package_init() -> None:
    edges = {"a": {"pkg"}, "pkg": {"pkg.child"}, "pkg.child": {"a"}, "b": {"a"}}
    assert _circles(edges) == [["a", "pkg", "pkg.child"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    edges = _imports(graph)
    circles = _circles(edges)
    lines = []
    for circle in circles:
        members = set(circle)
        lines.append("circle: " + ", ".join(circle))
        for importer in circle:
            for imported in sorted(edges[importer] & members):
                details = graph.get_import_details(importer=importer, imported=imported)
                where = ", ".join(str(d["line_number"]) for d in details)
                lines.append(f"    {importer} -> {imported} (line {where})")
    assert not circles, "import circles:\n" + "\n".join(lines)
