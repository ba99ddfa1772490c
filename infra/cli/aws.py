"""``doclake aws ...``: set up the AWS side of the lake (the Glue catalog and Athena views)."""

from __future__ import annotations

from typing import Annotated

import typer

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
    print_only: Annotated[bool, typer.Option("--print", help="Print the definitions (Glue "
                          "table inputs and Athena's CREATE VIEW) and call nothing.")] = False,
) -> None:
    """Create or update the Glue tables (partition projection) and the Athena views. On a
    database the CDK stack made, only the views: its raw tables are the stack's."""
    from rich.console import Console

    if print_only:
        import json

        from infra.aws.glue_catalog import catalog_definitions

        definitions = catalog_definitions(database, bucket, prefix,
                                          projection_start=projection_start)
        statements = definitions.pop("athena_views")
        print(json.dumps(definitions, indent=2))
        print(";\n\n".join(statements) + ";")
        return
    import boto3

    from infra.aws.glue_catalog import create_catalog

    glue = boto3.client("glue", region_name=region)
    changes = create_catalog(glue, database, bucket, prefix, projection_start=projection_start)
    owned = " (database and raw tables: the CDK stack's)" if changes.owned_by_stack else ""
    Console().print(f"created {len(changes.created)}, updated {len(changes.updated)}, "
                    f"unchanged {len(changes.unchanged)} tables and views in {database}{owned}")


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


def split_statements(query: str) -> list[str]:
    """The statements of ``query``, split by a SQL parser (sqlglot's tokenizer, Trino's dialect
    as Athena speaks it): a ``;`` inside a string or a comment does not end a statement. Each
    statement is sent as the user wrote it (its original text), not as sqlglot would print it."""
    from sqlglot import tokens
    from sqlglot.dialects.trino import Trino

    try:
        found = Trino().tokenize(query)
    except Exception as error:  # sqlglot's TokenError: an unclosed string or comment
        from infra.cli.errors import UserError

        raise UserError(f"the query cannot be read: {error}".splitlines()[0],
                        "close every quote and comment") from None
    statements, start = [], 0
    for token in found:
        if token.token_type == tokens.TokenType.SEMICOLON:
            statements.append(query[start:token.start])
            start = token.end + 1
    statements.append(query[start:])
    return [s.strip() for s in statements if s.strip()]


def athena_sql(query: str, output_format: str, *, environ=None, region: str | None = None) -> None:
    """Run the same SQL on Athena through awswrangler and print it like the DuckDB engine;
    AWS's refusals (no region, no credentials, a failed query) are ``UserError``s."""
    import awswrangler as wr
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    from infra.cli.errors import UserError
    from infra.cli.render.output import print_records

    settings = athena_settings(environ)
    statements = split_statements(query)
    session = boto3.Session(region_name=region)
    if session.region_name is None:
        raise UserError("no AWS region for --engine athena",
                        "pass --region, or set AWS_REGION (or AWS_DEFAULT_REGION)")
    for statement in statements:
        try:
            frame = wr.athena.read_sql_query(statement, database=settings["database"],
                                             workgroup=settings["workgroup"],
                                             s3_output=settings["s3_output"],
                                             ctas_approach=False, boto3_session=session)
        except NoCredentialsError:
            raise UserError("no AWS credentials for --engine athena", "set AWS_PROFILE, or "
                            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") from None
        except NoRegionError:
            raise UserError("no AWS region for --engine athena", "pass --region") from None
        except ClientError as error:
            raise UserError(f"Athena refused the query: {error}", "check the workgroup "
                            "(DOCLAKE_ATHENA_WORKGROUP), the database and your role") from None
        except (BotoCoreError, wr.exceptions.QueryFailed) as error:
            raise UserError(f"Athena: {error}".splitlines()[0][:500],
                            "the statement: " + statement[:200]) from None
        columns = [str(c) for c in frame.columns]
        rows = (tuple(None if _missing(v) else v for v in row)
                for row in frame.itertuples(index=False, name=None))
        print_records(columns, rows, output_format)


def _missing(value) -> bool:
    try:
        return value != value  # NaN and NaT
    except (TypeError, ValueError):
        return False
