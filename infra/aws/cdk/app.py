"""The CDK app: ``make synth`` (or ``python3 infra/aws/cdk/app.py [OUTDIR]``) writes
``Doclake.template.json`` with no AWS account and no Docker; ``cdk deploy`` runs this same file
(``cdk.json`` at the repository's root names it). It works from any folder: every path it reads
is found from this file's place, and the assembly goes where the CDK CLI asks (``CDK_OUTDIR``),
else to the folder given, else ``cdk.out`` at the repository's root.

Run as a script by an interpreter without the CDK (the system's ``python3``), it starts again
with the repository's ``.venv`` (``make install`` makes it), so ``cdk.json`` needs no venv
activated."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["build", "main"]

if __name__ == "__main__":  # a script: the repository's packages on the path, the venv's python
    _root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(_root))
    try:
        import aws_cdk  # noqa: F401
    except ImportError:
        _venv = _root / ".venv" / "bin" / "python"
        if _venv.exists() and Path(sys.executable).resolve() != _venv.resolve():
            os.execv(str(_venv), [str(_venv), str(Path(__file__).resolve()), *sys.argv[1:]])
        raise

import aws_cdk as cdk  # noqa: E402

from infra.aws.cdk.nag import add_checks  # noqa: E402
from infra.aws.cdk.settings import DeploySettings  # noqa: E402
from infra.aws.cdk.stack import DoclakeStack  # noqa: E402
from infra.aws.cdk.zips import ROOT  # noqa: E402
from infra.aws.names import DEFAULT_STACK  # noqa: E402


def build(outdir: str | None = None) -> tuple[cdk.App, DoclakeStack]:
    """The app and its one stack, named ``Doclake`` or ``-c stack_name=NAME`` (a second stack in
    the same account: its database, workgroup and dashboard follow, ``infra.aws.names``)."""
    out = outdir or os.environ.get("CDK_OUTDIR") or str(ROOT / "cdk.out")
    app = cdk.App(outdir=out)
    settings = DeploySettings.from_context(app.node.try_get_context)
    name = app.node.try_get_context("stack_name") or DEFAULT_STACK
    # The thin zips are staged inside the output folder, never in the checkout.
    stack = DoclakeStack(app, name, settings=settings, build_dir=Path(out) / "staging",
                         description="doclake: documents to searchable text and an event lake")
    add_checks(app)  # cdk-nag's AwsSolutions: synth fails on a finding with no reason
    return app, stack


def main(argv: list[str]) -> int:
    app, stack = build(argv[1] if len(argv) > 1 else None)
    assembly = app.synth()
    print(Path(assembly.directory) / f"{stack.artifact_id}.template.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
