"""The CDK app: ``make synth`` (or ``python -m infra.aws.cdk.app``) writes
``cdk.out/Doclake.template.json`` with no AWS account and no Docker; ``cdk deploy`` runs this
same file (``cdk.json`` at the repository's root names it)."""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

from infra.aws.cdk.settings import DeploySettings
from infra.aws.cdk.stack import DoclakeStack
from infra.aws.cdk.zips import ROOT


def build(outdir: str | None = None) -> tuple[cdk.App, DoclakeStack]:
    app = cdk.App(outdir=outdir or str(ROOT / "cdk.out"))
    settings = DeploySettings.from_context(app.node.try_get_context)
    stack = DoclakeStack(app, "Doclake", settings=settings, build_dir=ROOT / "build" / "zips",
                         description="doclake: documents to searchable text and an event lake")
    return app, stack


def main(argv: list[str]) -> int:
    app, _ = build(argv[1] if len(argv) > 1 else None)
    assembly = app.synth()
    print(Path(assembly.directory) / "Doclake.template.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
