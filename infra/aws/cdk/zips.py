"""Thin zips without Docker: copy the few modules a function imports into a staging folder,
which ``Code.from_asset`` zips at synth time. Only the presigner is one now: the publisher runs
in the extraction image (it writes lake events; ``infra.aws.lambdas.publisher``). The lists are
checked by a test that imports each entry point from its staged folder alone."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["ROOT", "THIN_ZIPS", "stage"]

ROOT = Path(__file__).resolve().parents[3]

THIN_ZIPS: dict[str, tuple[str, ...]] = {
    "presigner": ("infra/__init__.py", "infra/aws/__init__.py", "infra/aws/lambdas/__init__.py",
                  "infra/aws/lambdas/presigner.py", "lake/__init__.py", "lake/layout.py"),
}


def stage(name: str, out: Path) -> Path:
    """Copy the zip's files under ``out/name`` (a fresh folder) and return it."""
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    for relative in THIN_ZIPS[name]:
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target)
    return folder
