"""Glue table definitions for the raw event tables, generated from the event schemas.

Each event type gets one external table ``raw_<type>`` over
``s3://<bucket>/<prefix>/events/event_type=<type>/``, partitioned by ``dt`` (the UTC date folder
the writer uses). Partitions are never registered: partition projection tells Athena to compute
the ``dt=YYYY-MM-DD`` folders from a date range, so a new day's files are queryable the moment they
land, with no crawler and no ``MSCK REPAIR TABLE``.

This module builds plain ``TableInput`` dicts (the shape of Glue's CreateTable/UpdateTable API)
and never talks to AWS; ``infra/aws/glue_catalog.py`` sends them.

Schema evolution: Athena reads Parquet columns by name, and with projection there are no
per-partition schemas, so an additive change to an event model (a new optional field) only needs
the table updated; files written before the change read the new column as NULL.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from lake.events import EVENT_TYPES, SCHEMA_VERSION
from lake.layout import event_type_prefix
from lake.schema import columns
from lake.views import raw_view

__all__ = ["PARTITION_KEY", "PARTITION_TYPE", "DT_FORMAT_JAVA", "DEFAULT_PROJECTION_START",
           "PARQUET_STORAGE", "check_name", "lake_uri", "table_location", "projection_parameters",
           "glue_columns", "raw_table_input", "raw_table_inputs", "database_input",
           "create_table_statement", "create_table_statements"]

PARTITION_KEY = "dt"
PARTITION_TYPE = "date"
"""The partition key is a DATE in Glue, not a string: a filter ``dt >= DATE '...'`` on any view
then reaches the table as a range on the key itself, which partition projection turns into the
list of days to read (Trino's ``DateProjection`` filters its projected values by the query's
domain on the column; a ``CAST(dt AS DATE)`` over a string key gives it no domain). Projection
of type ``date`` accepts a DATE column; the folder names stay ``dt=YYYY-MM-DD``."""
DT_FORMAT_JAVA = "yyyy-MM-dd"  # lake.layout.event_partition's %Y-%m-%d, in Java's spelling
DEFAULT_PROJECTION_START = "2025-01-01"
"""First day Athena looks for. Set it to the lake's first day: earlier days are invisible, and
every day in the range costs a listing when a query has no ``dt`` filter."""

PARQUET_STORAGE = {
    "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    "SerdeInfo": {
        "SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
        "Parameters": {"serialization.format": "1"},
    },
}

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def check_name(name: str) -> str:
    """Glue and Athena fold names to lower case; refuse anything that would need quoting."""
    if not _NAME.match(name):
        raise ValueError(f"not a plain lower-case identifier: {name!r}")
    return name


def lake_uri(bucket: str, prefix: str = "") -> str:
    """``s3://bucket/prefix`` without a trailing slash: the root the writer writes under."""
    if not _BUCKET.match(bucket):
        raise ValueError(f"not an S3 bucket name: {bucket!r}")
    prefix = prefix.strip("/")
    return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"


def table_location(bucket: str, prefix: str, event_type: str) -> str:
    """The folder holding every ``dt=`` partition of one event type, with a trailing slash."""
    return f"{lake_uri(bucket, prefix)}/{event_type_prefix(event_type)}/"


def projection_parameters(location: str, start: str = DEFAULT_PROJECTION_START) -> dict[str, str]:
    """Partition-projection settings for a daily ``dt`` partition from ``start`` to today (UTC).

    ``start`` is checked here because Athena only reports a bad range when a query runs.
    """
    try:
        date.fromisoformat(start)
    except ValueError as error:
        raise ValueError(f"projection start must be YYYY-MM-DD, got {start!r}") from error
    if not location.endswith("/"):
        raise ValueError(f"table location must end with '/': {location!r}")
    key = PARTITION_KEY
    return {
        "projection.enabled": "true",
        f"projection.{key}.type": "date",
        f"projection.{key}.format": DT_FORMAT_JAVA,
        f"projection.{key}.range": f"{start},NOW",
        f"projection.{key}.interval": "1",
        f"projection.{key}.interval.unit": "DAYS",
        "storage.location.template": f"{location}{key}=${{{key}}}",
    }


def glue_columns(event_type: str) -> list[dict[str, str]]:
    """The table's data columns (Glue/Hive types), in the order of ``lake.schema.columns``."""
    return [{"Name": c.name, "Type": c.glue} for c in columns(EVENT_TYPES[event_type])]


def raw_table_input(
    event_type: str, bucket: str, prefix: str = "", *,
    projection_start: str = DEFAULT_PROJECTION_START,
) -> dict[str, Any]:
    """The Glue ``TableInput`` of ``raw_<type>``: Parquet, partitioned by ``dt``, projected."""
    if event_type not in EVENT_TYPES:
        raise KeyError(f"unknown event type {event_type!r}")
    location = table_location(bucket, prefix, event_type)
    parameters = {
        "EXTERNAL": "TRUE",
        "classification": "parquet",
        "schema_version": str(SCHEMA_VERSION),
        "doclake.event_type": event_type,
        **projection_parameters(location, projection_start),
    }
    return {
        "Name": check_name(raw_view(event_type)),
        "Description": f"doclake {event_type} events as written (may hold duplicate event_id)",
        "TableType": "EXTERNAL_TABLE",
        "Parameters": parameters,
        "PartitionKeys": [{"Name": PARTITION_KEY, "Type": PARTITION_TYPE}],
        "StorageDescriptor": {
            "Columns": glue_columns(event_type),
            "Location": location,
            "Compressed": False,
            "StoredAsSubDirectories": False,
            **PARQUET_STORAGE,
        },
    }


def raw_table_inputs(
    bucket: str, prefix: str = "", *, projection_start: str = DEFAULT_PROJECTION_START,
) -> dict[str, dict[str, Any]]:
    """``TableInput`` of every event type's raw table, keyed by table name."""
    tables = (raw_table_input(t, bucket, prefix, projection_start=projection_start)
              for t in EVENT_TYPES)
    return {table["Name"]: table for table in tables}


def database_input(name: str, description: str = "doclake events, tables and views") -> dict:
    """The Glue ``DatabaseInput`` for the lake's database."""
    return {
        "Name": check_name(name),
        "Description": description,
        "Parameters": {"schema_version": str(SCHEMA_VERSION)},
    }


def _sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def create_table_statement(table: dict[str, Any], database: str | None = None) -> str:
    """Athena DDL (Hive's ``CREATE EXTERNAL TABLE``) for one ``TableInput`` of this module: the
    same columns, partition key, location and projection properties ``doclake aws catalog``
    sends to Glue, so a person can set the lake up from printed SQL alone."""
    storage = table["StorageDescriptor"]
    qualifier = f"{check_name(database)}." if database else ""
    columns = ",\n".join(f"  `{c['Name']}` {c['Type']}" for c in storage["Columns"])
    keys = ", ".join(f"`{k['Name']}` {k['Type']}" for k in table["PartitionKeys"])
    properties = ",\n".join(f"  {_sql_literal(k)}={_sql_literal(v)}"
                            for k, v in table["Parameters"].items() if k != "EXTERNAL")
    return (f"CREATE EXTERNAL TABLE IF NOT EXISTS {qualifier}{check_name(table['Name'])} (\n"
            f"{columns}\n)\n"
            f"COMMENT {_sql_literal(table['Description'])}\n"
            f"PARTITIONED BY ({keys})\n"
            "STORED AS PARQUET\n"
            f"LOCATION {_sql_literal(storage['Location'])}\n"
            f"TBLPROPERTIES (\n{properties}\n)")


def create_table_statements(bucket: str, prefix: str = "", *, database: str | None = None,
                            projection_start: str = DEFAULT_PROJECTION_START) -> list[str]:
    """``CREATE EXTERNAL TABLE`` of every raw table, to run before the views over them."""
    return [create_table_statement(t, database) for t in raw_table_inputs(
        bucket, prefix, projection_start=projection_start).values()]
