"""Each module's private names stay its own: no module of ours imports another's ``_name``.

A ``_name`` is a promise that nothing outside the module depends on it, so it can change freely;
a name another module needs is made public (and listed in that module's ``__all__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lake", "extract", "ingest", "evals", "dashboards", "infra")


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
