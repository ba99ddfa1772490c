"""`make demo`'s `pip install -e .` prints no "Editable installation" notice (issue 26, 7).

setuptools installs a flat project of several top-level packages through an import hook and
says so in a notice ("Please be careful with folders in your working directory..."); a project
whose package root is declared as the project folder (``package-dir = {"" = "."}``) and whose
packages all sit where that root puts them gets one ``.pth`` line instead, with nothing to say.
Building needs setuptools>=77 from the package index, which tests may not fetch, so this checks
setuptools' own rule for picking the ``.pth`` strategy (``editable_wheel._select_strategy``) on
this project's configuration; the install itself was checked with pip 26.3 and setuptools 84.2.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages
from setuptools.command import editable_wheel

ROOT = Path(__file__).resolve().parents[1]


def test_an_editable_install_is_one_pth_line_not_an_import_hook():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir = config.get("package-dir", {})
    packages = find_packages(where=ROOT, include=config["packages"]["find"]["include"])
    assert {"lake", "extract", "ingest", "evals", "dashboards", "infra", "infra.cli"} <= set(packages)
    assert set(package_dir) == {""}, "without a root, setuptools installs an import hook"
    assert editable_wheel._simple_layout(packages, package_dir, ROOT)
    # What the .pth line adds to sys.path: the folder every package lives in.
    assert all((ROOT / package_dir[""] / name.replace(".", "/") / "__init__.py").exists()
               for name in packages)
