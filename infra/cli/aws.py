"""``doclake aws ...``: make a deployed stack usable and check it (``setup``, ``smoke``), or set up
the Glue catalog of any lake (``catalog``). ``--stack NAME`` reads every name from the stack's
CloudFormation outputs (``infra.aws.outputs``): nothing is copied by hand."""

from __future__ import annotations

import json
from typing import Annotated

import typer

__all__ = ["aws_app", "StackOption", "RegionOption", "region_hint", "preflight", "setup", "smoke",
           "catalog", "ATHENA_SETTINGS", "STACK_VARIABLE", "athena_settings", "split_statements",
           "athena_sql", "alarms"]

aws_app = typer.Typer(no_args_is_help=True, help="AWS: set up and check a deployed stack; Glue "
                      "tables and Athena views.")

StackOption = Annotated[str, typer.Option("--stack", help="The CloudFormation stack's name "
                        "(cdk deploy's: Doclake).")]
RegionOption = Annotated[str | None, typer.Option(help="AWS region (default from the "
                         "environment).")]


def _session(region: str | None):
    import boto3

    from infra.cli.errors import UserError

    session = boto3.Session(region_name=region)
    if session.region_name is None:
        raise UserError("no AWS region", region_hint())
    return session


def region_hint(environ=None) -> str:
    """boto3 reads ``AWS_DEFAULT_REGION`` (or the profile's region), not ``AWS_REGION``: a user
    who set the latter is told so."""
    import os

    environ = os.environ if environ is None else environ
    ignored = (f" (AWS_REGION={environ['AWS_REGION']} is set, but boto3 does not read it)"
               if environ.get("AWS_REGION") else "")
    return f"pass --region, or set AWS_DEFAULT_REGION{ignored}"


def _outputs(session, stack: str, *required: str):
    """The stack's outputs, or a ``UserError`` saying why there are none; each key in
    ``required`` must be among them (an older stack lacks newer outputs)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from infra.aws.outputs import StackNotFound, stack_outputs
    from infra.cli.errors import UserError

    try:
        found = stack_outputs(session.client("cloudformation"), stack)
    except StackNotFound as error:
        raise UserError(str(error), f"the stack's name as cdk deploy printed it, in the region it "
                        f"was deployed to ({session.region_name}); not deployed yet: doclake aws "
                        "preflight, then cdk deploy") from None
    except (BotoCoreError, ClientError) as error:
        raise UserError(f"cannot read stack {stack}: {error}", "set AWS_PROFILE, or "
                        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") from None
    missing = [key for key in required if found.get(key) is None]
    if missing:
        raise UserError(f"stack {stack} has no output {', '.join(missing)} (it has: "
                        f"{', '.join(sorted(found.values)) or 'none'})",
                        "deploy this version of doclake to it first: cdk deploy (after doclake "
                        "aws preflight)")
    return found


@aws_app.command()
def preflight(
    stack: Annotated[str, typer.Option("--stack", help="The stack's name as it will be "
                     "deployed (cdk deploy -c stack_name=...).")] = "Doclake",
    region: RegionOption = None,
    context: Annotated[list[str] | None, typer.Option(
        "--context", "-c", help="A deploy setting as cdk deploy will get it (NAME=VALUE, "
        "e.g. -c concurrency_read=2); repeat for more.", show_default=False)] = None,
) -> None:
    """Before cdk deploy: read the account's Lambda concurrency quota and the names the stack
    will create (Glue database, Athena workgroup, dashboard) in the region, and say what would
    fail. Exit 1 when something would."""
    from infra.aws.cdk.settings import DeploySettings
    from infra.aws.names import stack_names
    from infra.aws.preflight import run_preflight
    from infra.cli.errors import UserError

    given = {}
    for item in context or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"-c {item}: not NAME=VALUE", "e.g. -c concurrency_read=2")
        given[name.strip()] = value.strip()
    from dataclasses import fields

    unknown = sorted(set(given) - {f.name for f in fields(DeploySettings)} - {"stack_name"})
    if unknown:
        raise UserError(f"-c {unknown[0]}: not a deploy setting", "see docs/aws.md's settings "
                        "table")
    try:
        stack_names(stack)
        settings = DeploySettings.from_context(given.get)
        settings.functions()
    except (ValueError, TypeError) as error:
        raise UserError(str(error), "see docs/aws.md for each setting") from None
    session = _session(region)
    print(f"stack {stack} in {session.region_name}")
    checks = run_preflight(session, stack, settings)
    for check in checks:
        print(f"{check.status:<8} {check.name}: {check.detail}")
    failed = [c for c in checks if c.status == "fail"]
    print(f"{len(failed)} of {len(checks)} checks would fail" if failed
          else f"nothing found that would fail ({len(checks)} checks)")
    if failed:
        raise typer.Exit(1)


@aws_app.command()
def setup(
    stack: StackOption,
    region: RegionOption = None,
    print_only: Annotated[bool, typer.Option("--print", help="Print the statements (the same "
                          "as doclake lake views --dialect athena) and run nothing.")] = False,
) -> None:
    """After cdk deploy: create the Athena database, raw tables and analyst views (jobs, results,
    daily_costs...) in the stack's workgroup, one query per statement, and print each."""
    from infra.aws import outputs as names
    from infra.aws.athena_setup import SetupFailed, run_setup, statements_for
    from infra.cli.errors import UserError

    session = _session(region)
    found = _outputs(session, stack, names.DATABASE, names.LAKE_BUCKET, names.WORKGROUP)
    statements = statements_for(found[names.DATABASE], found[names.LAKE_BUCKET],
                                found.get(names.PROJECTION_START) or "2025-01-01")
    if print_only:  # byte for byte what ``doclake lake views --dialect athena`` prints
        from lake.athena import setup_script

        print(setup_script(found[names.LAKE_BUCKET], database=found[names.DATABASE],
                           projection_start=found.get(names.PROJECTION_START) or "2025-01-01"),
              end="")
        return
    workgroup = found[names.WORKGROUP]
    print(f"stack {stack}: database {found[names.DATABASE]}, workgroup {workgroup}, "
          f"{len(statements)} statements")
    done = 0
    try:
        for ran in run_setup(statements, workgroup=workgroup, boto3_session=session):
            done += 1
            print(f"ok  {ran.summary}  ({ran.seconds:.1f} s, query {ran.query_id})")
    except SetupFailed as error:
        raise UserError(f"statement {done + 1} of {len(statements)} failed: {error}",
                        "the ones before it are done; fix the cause and run setup again "
                        "(every statement can run twice)") from None
    print(f"done: {done} statements in {workgroup}; try: DOCLAKE_AWS_STACK={stack} doclake sql "
          "--engine athena \"SELECT status, count(*) AS jobs FROM jobs GROUP BY status\"")


@aws_app.command()
def smoke(
    stack: StackOption,
    region: RegionOption = None,
    file: Annotated[str | None, typer.Option(help="The document to send (default: a "
                    "one-page text PDF made on the spot).", show_default=False)] = None,
    content_type: Annotated[str, typer.Option(help="Its content type.")] = "application/pdf",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the result.")] = 300,
) -> None:
    """One document through the stack's front door: a slot, the upload, the result JSON;
    prints its status and the time it took. Exit 1 when it failed or no result came in time
    (``not_applicable``: read and indexed, and the fields schema does not fit it, is a pass)."""
    from pathlib import Path

    from infra.aws import outputs as names
    from infra.aws.smoke import SmokeFailed, run_smoke, smoke_pdf
    from infra.cli.errors import UserError

    session = _session(region)
    found = _outputs(session, stack, names.FRONT_DOOR_URL)
    if file is None:
        data, name = smoke_pdf(), "doclake-smoke.pdf"
    else:
        try:
            data, name = Path(file).read_bytes(), Path(file).name
        except OSError as error:
            raise UserError(f"--file {file}: {error.strerror}", "a readable file") from None
    try:
        result = run_smoke(found[names.FRONT_DOOR_URL], session, data=data, source_name=name,
                           content_type=content_type, timeout_s=timeout)
    except SmokeFailed as error:
        print(f"smoke failed: {error}")
        raise typer.Exit(1) from None
    print(f"document {result.document_id}: {result.status} in {result.seconds:.1f} s")
    print(json.dumps(result.result, indent=2))
    if result.status == "failed":
        raise typer.Exit(1)


@aws_app.command()
def catalog(
    bucket: Annotated[str | None, typer.Option(help="The lake bucket (or --stack).",
                      show_default=False)] = None,
    stack: Annotated[str | None, typer.Option(help="Read the bucket and database from this "
                     "stack's outputs.", show_default=False)] = None,
    database: Annotated[str, typer.Option(help="Glue database.")] = "doclake",
    prefix: Annotated[str, typer.Option(help="Key prefix of the lake in the bucket.")] = "",
    projection_start: Annotated[str, typer.Option(help="First day (YYYY-MM-DD) of the lake.")]
    = "2025-01-01",
    region: RegionOption = None,
    print_only: Annotated[bool, typer.Option("--print", help="Print the definitions (Glue "
                          "table inputs and Athena's CREATE VIEW) and call nothing.")] = False,
) -> None:
    """Create or update the Glue tables (partition projection) and the views straight in Glue,
    with no Athena query. On a database the CDK stack made, only the views: its raw tables are
    the stack's."""
    from rich.console import Console

    from infra.cli.errors import UserError

    if stack is not None:
        from infra.aws import outputs as names

        found = _outputs(_session(region), stack, names.LAKE_BUCKET, names.DATABASE)
        bucket, database = found[names.LAKE_BUCKET], found[names.DATABASE]
        projection_start = found.get(names.PROJECTION_START) or projection_start
    if bucket is None:
        raise UserError("doclake aws catalog needs --bucket or --stack",
                        "doclake aws catalog --stack Doclake")
    if print_only:
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


STACK_VARIABLE = "DOCLAKE_AWS_STACK"


def athena_settings(environ=None, session=None) -> dict[str, str | None]:
    """The database, workgroup and result location, from ``DOCLAKE_ATHENA_*``; with
    ``DOCLAKE_AWS_STACK`` set, the database and workgroup that stack's outputs name (a
    ``DOCLAKE_ATHENA_*`` variable still wins). The stack's workgroup enforces its own result
    location; ``s3_output`` is for others."""
    import os

    environ = os.environ if environ is None else environ
    found = {key: environ.get(name) for key, (name, _) in ATHENA_SETTINGS.items()}
    stack = environ.get(STACK_VARIABLE)
    if stack and session is not None:
        from infra.aws import outputs as names

        outputs = _outputs(session, stack, names.DATABASE, names.WORKGROUP)
        found["database"] = found["database"] or outputs[names.DATABASE]
        found["workgroup"] = found["workgroup"] or outputs[names.WORKGROUP]
    return {key: found[key] or default for key, (_, default) in ATHENA_SETTINGS.items()}


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

    statements = split_statements(query)
    session = boto3.Session(region_name=region)
    if session.region_name is None:
        raise UserError("no AWS region for --engine athena", region_hint())
    settings = athena_settings(environ, session)
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


@aws_app.command()
def alarms(
    template: Annotated[str | None, typer.Option(help="A synthesized template (default: "
                        "synthesize the stack now, with no account and no Docker).",
                        show_default=False)] = None,
) -> None:
    """Count the stack's CloudWatch alarms, by metric, from the template itself."""
    from collections import Counter
    from pathlib import Path

    from infra.cli.errors import UserError

    if template is None:
        import os
        import tempfile

        # jsii warns on every Node release it has not tested, on stderr, before the count.
        os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
        os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
        from infra.aws.cdk.app import build

        with tempfile.TemporaryDirectory(prefix="doclake-synth-") as folder:
            app, stack = build(folder)
            body = json.loads((Path(app.synth().directory) / f"{stack.artifact_id}"
                               ".template.json").read_text())
    else:
        try:
            body = json.loads(Path(template).read_text())
        except (OSError, ValueError) as error:
            raise UserError(f"--template {template}: {error}", "make synth writes "
                            "cdk.out/Doclake.template.json") from None
    found = Counter(resource["Properties"].get("MetricName", "(math)")
                    for resource in body.get("Resources", {}).values()
                    if resource.get("Type") == "AWS::CloudWatch::Alarm")
    for metric, count in sorted(found.items()):
        print(f"{count:4d}  {metric}")
    print(f"{sum(found.values()):4d}  alarms in all")
