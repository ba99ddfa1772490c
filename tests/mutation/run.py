"""Run each deliberate break (``mutants.MUTANTS``) on a copy of the repository and check that its
named tests fail: ``python -m tests.mutation.run`` (``make mutants``; ``make test`` runs it last).

Why a copy: the working tree is never edited, so a crash or Ctrl-C leaves nothing broken behind,
and two runs never see each other's breaks. The copy holds the files git tracks or would track
(not ``.venv``, not ignored build output); its tests import the copy, and so do the ``doclake``
processes they start (``PYTHONPATH`` puts the copy ahead of the editable install's path).

First the named tests run once on the unbroken copy: each must pass and none may skip (a mutant
whose tests skip here proves nothing). Then, per mutant, a fresh copy is broken and its tests run
with ``-x``; the mutant is *killed* when pytest reports a failed test (exit 1). It *survives* on
exit 0, and the run ends 1. Any other exit (no tests collected, a collection error) is an error
of the mutant table itself, as is an anchor found nowhere or twice: also exit 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.mutation.mutants import MUTANTS, Mutant

__all__ = ["AnchorMissing", "apply", "main"]

ROOT = Path(__file__).resolve().parents[2]
PYTEST_FAILED = 1


class AnchorMissing(RuntimeError):
    """An edit's anchor is not found exactly once in the mutant's files: update the mutant."""


def _tracked(root: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, check=True, capture_output=True).stdout
    return [name for name in listed.decode().split("\0") if name and (root / name).is_file()]


def copy_repository(root: Path, into: Path) -> Path:
    """A copy of the repository's tracked and trackable files under ``into``."""
    for name in _tracked(root):
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return into


def _files(root: Path, globs: tuple[str, ...]) -> list[Path]:
    found: dict[Path, None] = {}
    for pattern in globs:
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                found[path] = None
    return list(found)


def apply(mutant: Mutant, root: Path) -> list[str]:
    """Break the copy at ``root``; the files changed, relative to it. Raises ``AnchorMissing``."""
    changed = []
    for edit in mutant.edits:
        hits = [(path, path.read_text(encoding="utf-8")) for path in _files(root, mutant.files)]
        hits = [(path, text) for path, text in hits if edit.anchor in text]
        count = sum(text.count(edit.anchor) for _, text in hits)
        if count != 1:
            raise AnchorMissing(f"{mutant.name}: anchor {edit.anchor!r} found {count} times in "
                                f"{', '.join(mutant.files)} (expected once): update "
                                f"tests/mutation/mutants.py")
        path, text = hits[0]
        path.write_text(text.replace(edit.anchor, edit.new), encoding="utf-8")
        changed.append(path.relative_to(root).as_posix())
    changed = list(dict.fromkeys(changed))
    return changed


def _pytest(copy: Path, tests: tuple[str, ...], *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    env.setdefault("DOCLAKE_SHARED_DIR", str(_shared()))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-o", "addopts=", *extra, *tests],
                          cwd=copy, env=env, capture_output=True, text=True)


def _shared() -> Path:
    """Where the original's tests find the team's data (the copy has no ``../shared``)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import SHARED
    return Path(SHARED).resolve()


def _summary(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def baseline(copy: Path, tests: list[str]) -> str | None:
    """None when every named test passes unbroken and none skips; else what went wrong."""
    done = _pytest(copy, tuple(dict.fromkeys(tests)), "-rs")
    summary = _summary(done.stdout)
    if done.returncode != 0 or re.search(r"\bskipped\b", summary):
        return f"the unbroken copy: exit {done.returncode}, {summary}\n{done.stdout[-3000:]}"
    return None


def _check(mutant: Mutant, clean: Path, scratch: Path) -> tuple[str, str]:
    """(verdict, the lines to print) for one mutant, on its own copy of ``clean``."""
    copy = scratch / mutant.name
    shutil.copytree(clean, copy)
    began = time.perf_counter()
    try:
        changed = apply(mutant, copy)
    except AnchorMissing as missing:
        return "ERROR", f"ERROR    {mutant.name}: {missing}"
    done = _pytest(copy, mutant.tests, "-x")
    shutil.rmtree(copy, ignore_errors=True)
    verdict = {PYTEST_FAILED: "killed", 0: "SURVIVED"}.get(done.returncode, "ERROR")
    report = (f"{verdict:8} {mutant.name} ({', '.join(changed)}; "
              f"{time.perf_counter() - began:.1f} s): {mutant.promise} -> {_summary(done.stdout)}")
    if verdict != "killed":
        report += "\n" + done.stdout[-3000:] + "\n" + done.stderr[-2000:]
    return verdict, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these mutants (default: all)")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1),
                        help="mutants checked at once (default: the cores, at most 4)")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    started = time.perf_counter()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="doclake-mutants-") as scratch:
        clean = copy_repository(ROOT, Path(scratch) / "clean")
        problem = baseline(clean, [t for m in chosen for t in m.tests])
        if problem:
            print(f"mutants: not run: {problem}")
            return 1
        print(f"baseline: {len(chosen)} mutants' tests pass unbroken "
              f"({time.perf_counter() - started:.1f} s)")
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for verdict, report in pool.map(lambda m: _check(m, clean, Path(scratch)), chosen):
                print(report, flush=True)
                failed += verdict != "killed"
    print(f"mutants: {len(chosen) - failed} of {len(chosen)} killed in "
          f"{time.perf_counter() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
