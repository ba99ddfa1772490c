"""``doclake aws ...``: set up the AWS side of the lake (the Glue catalog and Athena views)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

aws_app = typer.Typer(no_args_is_help=True, help="AWS: Glue tables and Athena views.")


@aws_app.command()
def catalog(
    bucket: Annotated[str, typer.Option(help="The lake bucket.")],
    database: Annotated[str, typer.Option(help="Glue database.")] = "doclake",
    prefix: Annotated[str, typer.Option(help="Key prefix of the lake in the bucket.")] = "",
    projection_start: Annotated[str, typer.Option(help="First day (YYYY-MM-DD) of the lake.")]
    = "2025-01-01",
    region: Annotated[str | None, typer.Option(help="AWS region (default from the environment).")]
    = None,
) -> None:
    """Create or update the Glue tables (partition projection) and the Athena views."""
    import boto3

    from infra.aws.glue_catalog import create_catalog

    glue = boto3.client("glue", region_name=region)
    changes = create_catalog(glue, database, bucket, prefix, projection_start=projection_start)
    Console().print(f"created {len(changes.created)}, updated {len(changes.updated)}, "
                    f"unchanged {len(changes.unchanged)} tables and views in {database}")
