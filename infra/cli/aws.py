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


# --- doclake sql --engine athena ----------------------------------------------------------------

ATHENA_SETTINGS = {
    "database": ("DOCLAKE_ATHENA_DATABASE", "doclake"),
    "workgroup": ("DOCLAKE_ATHENA_WORKGROUP", "doclake"),
    "s3_output": ("DOCLAKE_ATHENA_OUTPUT", None),
}


def athena_settings(environ=None) -> dict[str, str | None]:
    """The database, workgroup and result location, from ``DOCLAKE_ATHENA_*`` (the workgroup
    the CDK stack makes enforces its own result location; ``s3_output`` is for others)."""
    import os

    environ = os.environ if environ is None else environ
    return {key: environ.get(name) or default for key, (name, default) in ATHENA_SETTINGS.items()}


def athena_sql(query: str, output_format: str, *, environ=None) -> None:
    """Run the same SQL on Athena through awswrangler and print it like the DuckDB engine."""
    import awswrangler as wr

    from infra.cli.render.output import print_records

    settings = athena_settings(environ)
    for statement in [s.strip() for s in query.split(";") if s.strip()]:
        frame = wr.athena.read_sql_query(statement, database=settings["database"],
                                         workgroup=settings["workgroup"],
                                         s3_output=settings["s3_output"], ctas_approach=False)
        columns = [str(c) for c in frame.columns]
        rows = (tuple(None if _missing(v) else v for v in row)
                for row in frame.itertuples(index=False, name=None))
        print_records(columns, rows, output_format)


def _missing(value) -> bool:
    try:
        return value != value  # NaN and NaT
    except (TypeError, ValueError):
        return False
