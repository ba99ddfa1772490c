"""The Lambda images build from what was tested (issue 48): the base by digest, every Python
dependency from one lock with hashes, ``awslambdaric`` pinned, the project installed with no
resolution of its own, provenance off for the push, and the test environment on the lock's
versions. Static: no Docker engine here."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "infra" / "aws" / "images"
LOCK = IMAGES / "requirements.lock"
# In the images only: the runtime client (and what it brings), and the build backend.
IMAGE_ONLY = {"awslambdaric", "simplejson", "snapshot-restore-py", "setuptools"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of each pin of the lock."""
    pins: dict[str, tuple[str, list[str]]] = {}
    current = None
    for line in LOCK.read_text().splitlines():
        found = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if found:
            current = _norm(found[1])
            pins[current] = (found[2], [])
        for digest in re.findall(r"--hash=sha256:([0-9a-f]{64})", line):
            pins[current][1].append(digest)
    return pins


def _dockerfile_lines(path: Path) -> list[str]:
    text = path.read_text().replace("\\\n", " ")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_both_images_start_from_the_same_base_by_digest():
    bases = set()
    for dockerfile in IMAGES.glob("*.Dockerfile"):
        (base,) = [line.split(None, 1)[1] for line in _dockerfile_lines(dockerfile)
                   if line.startswith("FROM ")]
        assert re.fullmatch(r"python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base), dockerfile
        bases.add(base)
    assert len(bases) == 1


def test_the_images_install_the_lock_with_hashes_and_the_project_without_resolving():
    for dockerfile in IMAGES.glob("*.Dockerfile"):
        installs = [line for line in _dockerfile_lines(dockerfile) if "pip install" in line]
        assert len(installs) == 2, installs
        lock, project = installs
        assert "--require-hashes" in lock and "-r /tmp/requirements.lock" in lock, lock
        assert "--no-deps" in project and project.rstrip().endswith(" ."), project
        assert "awslambdaric" not in project  # pinned in the lock, not named at build time


def test_the_lock_pins_every_runtime_and_aws_dependency_with_hashes():
    pins = _lock()
    assert pins and all(hashes for _, hashes in pins.values())
    assert pins["awslambdaric"][0] == "4.2.2"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["aws"]]
    for requirement in wanted:
        name = _norm(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0])
        assert name in pins, requirement


def test_the_tests_run_on_the_locks_versions():
    """The venv (``make install`` constrains it to the lock's pins) holds the versions the images
    install: a package drifting from the lock fails here, not in production."""
    drift = {}
    for name, (version, _) in _lock().items():
        if name in IMAGE_ONLY:
            continue
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed != version:
            drift[name] = (version, installed)
    assert drift == {}


def test_the_makefile_installs_on_the_locks_pins_and_deploys_without_provenance():
    makefile = (ROOT / "Makefile").read_text()
    assert "LOCK := infra/aws/images/requirements.lock" in makefile
    installs = [line.strip() for line in makefile.splitlines()
                if "pip install" in line and "-e " in line]
    assert installs and all("-c $(PINS)" in line for line in installs), installs
    (deploy,) = [line.strip() for line in makefile.splitlines() if "cdk deploy" in line]
    assert deploy.startswith("BUILDX_NO_DEFAULT_ATTESTATIONS=1 cdk deploy")
