"""`make demo` installs only what the pipeline needs (issue 26, finding 7).

Three checks, each on the real thing: the runtime dependency list of pyproject.toml, resolved
through the distributions installed here, reaches none of the test and deployment tool chain; the
Makefile's demo target installs that list alone; and the demo's own commands run with the tool
chain's packages made unimportable (so nothing the demo does quietly needs them).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The test, lint and deployment tool chain: none of it may come with a runtime install.
TOOL_CHAIN = {"aws-cdk-lib", "constructs", "moto", "cfn-lint", "scipy", "sympy", "scikit-learn",
              "great-expectations", "pytest", "boto3", "jsii"}
# Their import names, blocked while the demo's commands run.
BLOCKED_IMPORTS = ("aws_cdk", "moto", "cfnlint", "scipy", "sympy", "sklearn", "great_expectations",
                   "boto3", "awswrangler", "pytest", "datasketch")


def _closure(requirements: list[str]) -> set[str]:
    """Every distribution the requirements pull in, as installed here (extras left out)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(Requirement(r) for r in (metadata.requires(name) or []))
        except metadata.PackageNotFoundError:
            continue
    return seen


def test_runtime_dependencies_leave_out_the_tool_chain() -> None:
    runtime = _closure(PYPROJECT["project"]["dependencies"])
    assert "duckdb" in runtime and "pyarrow" in runtime  # the resolution itself worked
    assert runtime & TOOL_CHAIN == set()
    # Everything left out is still one extra away for `make test`.
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "doclake[aws,cdk,check,finetune]" in extras["dev"]
    everything = _closure([r for name in ("dev", "aws", "cdk", "check", "finetune")
                           for r in extras[name]
                           if not r.startswith("doclake[")])
    assert {"moto", "aws-cdk-lib", "great-expectations", "scikit-learn"} <= everything


def test_license_is_an_spdx_expression() -> None:
    """A table ``{text = ...}`` makes setuptools>=77 print its deprecation box on every install."""
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    requires = PYPROJECT["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(7[7-9]|[89]\d)(\.\d+)*", r) for r in requires)


def test_make_demo_installs_the_runtime_set_alone() -> None:
    dry = subprocess.run(["make", "-n", "-B", "demo", "VENV=/nonexistent-venv"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    installs = [line for line in dry.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert installs and all(line.rstrip().endswith("-e .") for line in installs), installs
    assert "[dev]" not in dry


@pytest.fixture
def blocking_python(tmp_path: Path) -> Path:
    """A ``sitecustomize`` that makes the tool chain's packages fail to import, as they fail
    where they are not installed (``ModuleNotFoundError`` naming the package)."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        f"BLOCKED = {BLOCKED_IMPORTS!r}\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Block())\n")
    return folder


def test_demo_commands_run_without_the_tool_chain(tmp_path: Path, blocking_python: Path) -> None:
    env = {"PYTHONPATH": f"{blocking_python}:{ROOT}", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    home = tmp_path / "home"
    examples = sorted((ROOT / "examples").glob("*.pdf"))[:2]

    def doclake(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "infra.cli.main", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    doclake("run", *map(str, examples), "--home", str(home), "--fields", "nda")
    assert "succeeded" in doclake("sql", "--home", str(home), "SELECT status FROM jobs")
    doclake("search", "--home", str(home), "confidential information", "--limit", "3")
    doclake("dashboard", "--home", str(home), "--out", str(tmp_path / "d.html"))
    assert (tmp_path / "d.html").stat().st_size > 0


def test_a_command_whose_extra_is_missing_names_the_extra(tmp_path: Path,
                                                          blocking_python: Path) -> None:
    """In the runtime install, ``doclake aws alarms`` (the CDK) says which extra brings what it
    needs, exit 2, no traceback; and a usage error's hint names the command as typed."""
    env = {"PYTHONPATH": f"{blocking_python}:{ROOT}", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    usage = subprocess.run([sys.executable, "-m", "infra.cli.main", "fields", "cv", "--folds",
                            "x"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert usage.returncode == 2 and "see `doclake fields cv --help`" in usage.stderr, usage.stderr
    for args, extra in ((["aws", "alarms"], "cdk"),):
        done = subprocess.run([sys.executable, "-m", "infra.cli.main", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=240)
        assert done.returncode == 2, (args, done.stdout, done.stderr[-2000:])
        assert f"the {extra!r} extra" in done.stderr and f"pip install -e '.[{extra}]'" in \
            done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
