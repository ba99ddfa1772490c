"""Create the lake's Glue database, raw tables and Athena views, idempotently.

``create_catalog`` is safe to run on every deploy: what is missing is created, what differs from
the generated definition is updated (with ``replace=True``), and what already matches is left
alone, so repeated runs do not pile up Glue table versions. The definitions themselves come from
the pure modules ``lake.glue`` (raw tables, partition projection) and ``lake.athena`` (views).

Who writes what: the database and the raw tables go through awswrangler's catalog functions
(``wr.catalog.create_database``; ``wr.catalog.create_parquet_table`` with
``athena_partition_projection_settings``: the date type, range, format, interval and the storage
location template). Two things stay hand-written, because awswrangler has no call for them:
``projection.dt.interval.unit`` (passed as a plain table parameter beside the projection
settings) and the views, which are Glue ``VIRTUAL_VIEW`` tables (``_put_table`` below) or
Athena ``CREATE VIEW`` statements. The "does it already match" check stays ours too: awswrangler
rewrites an existing table on every call, which would add a table version each deploy.

Views go straight into Glue as ``VIRTUAL_VIEW`` tables, which needs no Athena workgroup, no
results bucket and no running query. ``create_views_with_athena`` is the other road: it sends
``CREATE OR REPLACE VIEW`` through Athena, which makes Athena check each view against the real
tables. Under moto that road proves only the API calls: moto records the query and reports
success without parsing or running it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from lake.athena import athena_views, create_view_statements, view_table_inputs
from lake.glue import (
    DEFAULT_PROJECTION_START,
    PARTITION_KEY,
    database_input,
    raw_table_inputs,
)

__all__ = ["ATHENA_CATALOG", "OWNER_PARAMETER", "CatalogError", "AthenaQueryFailed", "CatalogChanges",
           "stack_owned", "catalog_definitions", "wrangler_table_arguments", "create_catalog",
           "create_views_with_athena"]

ATHENA_CATALOG = "AwsDataCatalog"
OWNER_PARAMETER = "doclake_owner"
"""A database whose parameters say ``cloudformation`` here is the CDK stack's: its raw tables
are the stack's alone, and ``create_catalog`` writes only the views (one owner, no drift)."""


class CatalogError(Exception):
    """A Glue or Athena call failed while creating the catalog."""


class AthenaQueryFailed(CatalogError):
    """Athena ran a statement and it ended FAILED or CANCELLED, or did not end in time."""


@dataclass
class CatalogChanges:
    """What one ``create_catalog`` run did, table by table (the database counts as a table)."""

    database: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    athena_queries: list[str] = field(default_factory=list)
    owned_by_stack: bool = False
    """The database and raw tables are the CDK stack's: only the views were written."""


def stack_owned(glue_client, database: str) -> bool:
    """Whether the CDK stack made ``database`` (and so owns its raw tables)."""
    try:
        existing = glue_client.get_database(Name=database)["Database"]
    except ClientError as error:
        if _code(error) != "EntityNotFoundException":
            raise
        return False
    return existing.get("Parameters", {}).get(OWNER_PARAMETER) == "cloudformation"


def catalog_definitions(database: str, bucket: str, prefix: str = "", *,
                        projection_start: str = DEFAULT_PROJECTION_START) -> dict[str, Any]:
    """What ``create_catalog`` would write, computed without an AWS call: the database, the raw
    tables (Glue ``TableInput``) and the views (Glue's, and Athena's ``CREATE VIEW``)."""
    return {"database": database_input(database),
            "raw_tables": raw_table_inputs(bucket, prefix, projection_start=projection_start),
            "views": view_table_inputs(database),
            "athena_views": create_view_statements(database)}


def _code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


def _contains(actual: Any, wanted: Any) -> bool:
    """True when every key we set is already there with our value (Glue adds keys of its own)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(
            _contains(actual.get(key), value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (isinstance(actual, list) and len(actual) == len(wanted)
                and all(_contains(a, w) for a, w in zip(actual, wanted, strict=True)))
    if wanted in ("", None) and actual in ("", None):
        return True  # Glue may drop empty strings, e.g. a view's Location
    return actual == wanted


@contextmanager
def _wrangler(glue_client, boto3_session):
    """awswrangler on the glue client's endpoint (moto, LocalStack or AWS) and region: it makes
    its own clients from a session, so the endpoint is lent through ``wr.config`` for the call."""
    import awswrangler as wr
    import boto3

    session = boto3_session or boto3.Session(region_name=glue_client.meta.region_name)
    before = wr.config.glue_endpoint_url
    wr.config.glue_endpoint_url = glue_client.meta.endpoint_url
    try:
        yield wr, session
    finally:
        if before is None:
            wr.config.reset("glue_endpoint_url")
        else:
            wr.config.glue_endpoint_url = before


def _ensure_database(glue, wr, session, name: str, replace: bool,
                     changes: CatalogChanges) -> None:
    wanted = database_input(name)
    try:
        existing = glue.get_database(Name=name)["Database"]
    except ClientError as error:
        if _code(error) != "EntityNotFoundException":
            raise CatalogError(f"get_database {name}: {error}") from error
        existing = None
    body = {k: v for k, v in wanted.items() if k != "Name"}
    if existing is not None and (not replace or _contains(existing, body)):
        changes.unchanged.append(name)
        return
    # exist_ok: creates it, or updates what differs (here: something does)
    wr.catalog.create_database(name, description=wanted["Description"], exist_ok=True,
                               database_input_args={"Parameters": wanted["Parameters"]},
                               boto3_session=session)
    (changes.updated if existing is not None else changes.created).append(name)


def wrangler_table_arguments(table: dict[str, Any]) -> dict[str, Any]:
    """``wr.catalog.create_parquet_table``'s arguments for a ``lake.glue.raw_table_input``: the
    same table, with the partition projection as awswrangler's settings. Only
    ``projection.<key>.interval.unit`` has no setting there and rides along as a parameter."""
    params = dict(table["Parameters"])
    key = PARTITION_KEY
    projection = {
        "projection_types": {key: params.pop(f"projection.{key}.type")},
        "projection_ranges": {key: params.pop(f"projection.{key}.range")},
        "projection_formats": {key: params.pop(f"projection.{key}.format")},
        "projection_intervals": {key: params.pop(f"projection.{key}.interval")},
        "projection_storage_location_template": params.pop("storage.location.template"),
    }
    params.pop("projection.enabled")  # awswrangler sets it with the settings
    storage = table["StorageDescriptor"]
    return {
        "table": table["Name"], "path": storage["Location"],
        "columns_types": {c["Name"]: c["Type"] for c in storage["Columns"]},
        "partitions_types": {p["Name"]: p["Type"] for p in table["PartitionKeys"]},
        "table_type": table["TableType"], "description": table["Description"],
        "parameters": params,  # EXTERNAL, schema_version, the event type, interval.unit
        "compression": None, "athena_partition_projection_settings": projection,
    }


def _existing_table(glue, database: str, name: str) -> dict[str, Any] | None:
    """The table's current definition, or None when it does not exist yet."""
    try:
        return glue.get_table(DatabaseName=database, Name=name)["Table"]
    except ClientError as error:
        if _code(error) != "EntityNotFoundException":
            raise CatalogError(f"get_table {database}.{name}: {error}") from error
        return None


def _put_raw_table(glue, wr, session, database: str, table: dict[str, Any], replace: bool,
                   changes: CatalogChanges) -> None:
    name = table["Name"]
    existing = _existing_table(glue, database, name)
    if existing is not None and (not replace or _contains(existing, table)):
        changes.unchanged.append(name)
        return
    # "overwrite" updates an existing table in place; versioning keeps the old definition
    # as a Glue table version, as UpdateTable does by default.
    wr.catalog.create_parquet_table(database=database, mode="overwrite", catalog_versioning=True,
                                    boto3_session=session, **wrangler_table_arguments(table))
    (changes.updated if existing is not None else changes.created).append(name)


def _put_table(glue, database: str, table: dict[str, Any], replace: bool,
               changes: CatalogChanges) -> None:
    name = table["Name"]
    existing = _existing_table(glue, database, name)
    if existing is None:
        glue.create_table(DatabaseName=database, TableInput=table)
        changes.created.append(name)
        return
    if replace and not _contains(existing, table):
        glue.update_table(DatabaseName=database, TableInput=table)
        changes.updated.append(name)
    else:
        changes.unchanged.append(name)


def create_catalog(
    glue_client,
    database: str,
    bucket: str,
    prefix: str = "",
    *,
    replace: bool = True,
    projection_start: str = DEFAULT_PROJECTION_START,
    owner: str | None = None,
    athena_client=None,
    athena_output_location: str | None = None,
    athena_workgroup: str | None = None,
    boto3_session=None,
) -> CatalogChanges:
    """Create or bring up to date the database, every ``raw_<type>`` table and every view.

    ``replace=False`` only adds what is missing and never touches an existing definition.
    With ``athena_client`` the views are created by Athena queries (see
    ``create_views_with_athena``) instead of written to Glue directly. The database and raw
    tables are written by awswrangler, with ``boto3_session`` (default: a session in the glue
    client's region, from the usual credential chain) on the glue client's endpoint.
    """
    changes = CatalogChanges(database=database)
    try:
        if stack_owned(glue_client, database):
            changes.owned_by_stack = True
        else:
            with _wrangler(glue_client, boto3_session) as (wr, session):
                _ensure_database(glue_client, wr, session, database, replace, changes)
                for table in raw_table_inputs(bucket, prefix,
                                              projection_start=projection_start).values():
                    _put_raw_table(glue_client, wr, session, database, table, replace, changes)
        if athena_client is None:
            for view in view_table_inputs(database, owner=owner).values():
                _put_table(glue_client, database, view, replace, changes)
    except ClientError as error:
        raise CatalogError(f"creating the {database} catalog: {error}") from error
    if athena_client is not None:
        changes.athena_queries = create_views_with_athena(
            athena_client, database, output_location=athena_output_location,
            workgroup=athena_workgroup,
        )
    return changes


def create_views_with_athena(
    athena_client,
    database: str,
    *,
    output_location: str | None = None,
    workgroup: str | None = None,
    poll_interval_s: float = 0.5,
    timeout_s: float = 120.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Run every ``CREATE OR REPLACE VIEW`` through Athena, one at a time, in dependency order.

    Each statement must succeed before the next starts, because Athena analyses a view against
    the views it reads. Returns the query execution ids; raises ``AthenaQueryFailed`` with
    Athena's reason. The raw tables must exist already (``create_catalog`` makes them first).
    """
    ids = []
    names = list(athena_views())
    for name, statement in zip(names, create_view_statements(database), strict=True):
        request: dict[str, Any] = {
            "QueryString": statement,
            "QueryExecutionContext": {"Database": database, "Catalog": ATHENA_CATALOG},
        }
        if output_location:
            request["ResultConfiguration"] = {"OutputLocation": output_location}
        if workgroup:
            request["WorkGroup"] = workgroup
        try:
            query_id = athena_client.start_query_execution(**request)["QueryExecutionId"]
        except ClientError as error:
            raise CatalogError(f"start_query_execution: {error}") from error
        _wait(athena_client, query_id, f"view {database}.{name}", poll_interval_s, timeout_s,
              sleep, clock)
        ids.append(query_id)
    return ids


def _wait(athena, query_id: str, what: str, poll_interval_s: float, timeout_s: float,
          sleep: Callable[[float], None], clock: Callable[[], float]) -> None:
    deadline = clock() + timeout_s
    while True:
        status = athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]["Status"]
        state = status["State"]
        if state == "SUCCEEDED":
            return
        if state in ("FAILED", "CANCELLED"):
            reason = status.get("StateChangeReason", "no reason given")
            raise AthenaQueryFailed(f"{what} ({query_id}) ended {state}: {reason}")
        if clock() >= deadline:
            raise AthenaQueryFailed(f"{what} ({query_id}) still {state} after {timeout_s:.0f} s")
        sleep(poll_interval_s)
