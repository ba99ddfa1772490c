"""Each module's private names stay its own: no module of ours imports another's ``_name``.

A ``_name`` is a promise that nothing outside the module depends on it, so it can change freely;
a name another module needs is made public (and listed in that module's ``__all__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lake", "extract", "ingest", "evals", "dashboards", "infra", "training")


def private_imports(paths: Iterable[Path], root: Path) -> list[str]:
    """``path:line: module._name`` for each import of one of our modules' private names."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module \
                    and node.module.split(".")[0] in PACKAGES:
                found += [f"{path.relative_to(root)}:{node.lineno}: {node.module}.{a.name}"
                          for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names():
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    assert len(paths) > 200
    assert private_imports(paths, ROOT) == []


def test_the_scan_finds_a_private_import(tmp_path):
    (tmp_path / "m.py").write_text("import os\nfrom lake.catalog import connect, _retryable\n"
                                   "from os import _exit\n")
    assert private_imports([tmp_path / "m.py"], tmp_path) == ["m.py:2: lake.catalog._retryable"]


def undeclared_surfaces(paths: Iterable[Path], root: Path) -> list[str]:
    """``path: why`` for each module with no literal ``__all__``, or one naming a name the module
    does not define or import at its top level (a typo there breaks ``from m import *`` only at
    the caller's run time)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared, defined = None, set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                defined.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                defined |= names
                if "__all__" in names and isinstance(node.value, (ast.List, ast.Tuple)):
                    declared = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
        where = str(path.relative_to(root))
        if declared is None:
            found.append(f"{where}: no __all__")
        else:
            found += [f"{where}: __all__ names {name}, which it does not define"
                      for name in declared if name not in defined]
    return found


def test_every_module_declares_its_public_surface():
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
             if p.name != "__main__.py"]
    assert undeclared_surfaces(paths, ROOT) == []


def test_the_surface_scan_finds_a_missing_and_a_wrong_all(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    pass\n")
    (tmp_path / "b.py").write_text("from os import path\n__all__ = [\"path\", \"g\"]\n")
    assert undeclared_surfaces([tmp_path / "a.py", tmp_path / "b.py"], tmp_path) == [
        "a.py: no __all__", "b.py: __all__ names g, which it does not define"]
