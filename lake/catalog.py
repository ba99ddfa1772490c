"""DuckDB over the lake: every table of the contract as a view, queried from Python or the CLI.

``connect`` opens an in-memory DuckDB with the views defined; ``query`` runs one statement and
returns an Arrow table. Nothing is downloaded: extensions are never auto-installed, and an S3 lake
is read through pyarrow's S3 filesystem registered as Arrow datasets, so no httpfs is needed.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from lake.events import EVENT_TYPES
from lake.layout import event_type_prefix
from lake.schema import arrow_schema, columns
from lake.views import DERIVED_VIEWS, dedup_sql, dedup_view, events_sql, raw_view
from lake.writer import open_lake


def _duckdb():
    import duckdb

    return duckdb


def _parquet_files(filesystem: pafs.FileSystem, root: str, event_type: str) -> list[str]:
    selector = pafs.FileSelector(f"{root}/{event_type_prefix(event_type)}", recursive=True,
                                 allow_not_found=True)
    return sorted(
        info.path
        for info in filesystem.get_file_info(selector)
        if info.type == pafs.FileType.File and info.path.endswith(".parquet")
    )


def _empty_select(event_type: str) -> str:
    cols = ", ".join(f"CAST(NULL AS {c.duckdb}) AS {c.name}" for c in columns(EVENT_TYPES[event_type]))
    return f"SELECT {cols} WHERE false"


def _define_local_raw(con, root: str, event_type: str, files: list[str]) -> None:
    """A raw view over the type's Parquet files; columns missing from old files read as NULL."""
    empty = _empty_select(event_type)
    if not files:
        con.execute(f"CREATE OR REPLACE VIEW {raw_view(event_type)} AS {empty}")
        return
    glob = f"{root}/{event_type_prefix(event_type)}/*/*.parquet"
    names = ", ".join(c.name for c in columns(EVENT_TYPES[event_type]))
    con.execute(
        f"CREATE OR REPLACE VIEW {raw_view(event_type)} AS "
        f"SELECT {names} FROM ({empty} UNION ALL BY NAME "
        f"SELECT * FROM read_parquet('{glob}', hive_partitioning = false, union_by_name = true))"
    )


def _define_remote_raw(con, filesystem: pafs.FileSystem, files: list[str], event_type: str) -> None:
    """A raw view over an Arrow dataset: works on any pyarrow filesystem, S3 included."""
    schema = arrow_schema(EVENT_TYPES[event_type])
    dataset = pads.dataset(files, schema=schema, format="parquet", filesystem=filesystem)
    con.register(f"_ds_{event_type}", dataset)
    con.execute(f"CREATE OR REPLACE VIEW {raw_view(event_type)} AS SELECT * FROM _ds_{event_type}")


def define_views(con, lake_uri: str) -> None:
    """Create every view of the lake in an open DuckDB connection."""
    filesystem, root = open_lake(lake_uri)
    local = isinstance(filesystem, pafs.LocalFileSystem)
    for event_type in EVENT_TYPES:
        files = _parquet_files(filesystem, root, event_type)
        if local:
            _define_local_raw(con, root, event_type, files)
        else:
            _define_remote_raw(con, filesystem, files, event_type)
        con.execute(f"CREATE OR REPLACE VIEW {dedup_view(event_type)} AS {dedup_sql(event_type)}")
    con.execute(f"CREATE OR REPLACE VIEW events AS {events_sql()}")
    for name, sql in DERIVED_VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")


def connect(lake_uri: str, *, threads: int | None = None):
    """An in-memory DuckDB connection with the lake's views; never downloads an extension."""
    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    if threads:
        config["threads"] = threads
    con = _duckdb().connect(":memory:", config=config)
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET parquet_metadata_cache = true")  # views stack: read each footer once
    define_views(con, lake_uri)
    return con


def query(lake_uri: str, sql: str, parameters: list | None = None) -> pa.Table:
    """Run one SQL statement over the lake's views and return the result as an Arrow table.

    >>> query(".doclake/lake", "SELECT status, count(*) AS n FROM jobs GROUP BY status")
    """
    duckdb = _duckdb()
    for attempt in (1, 2):
        con = connect(lake_uri)
        try:
            return con.sql(sql, params=parameters).to_arrow_table()
        except duckdb.IOException:
            # Compaction may delete files between listing and reading: list again, once.
            if attempt == 2:
                raise
        finally:
            con.close()
    raise AssertionError("unreachable")
