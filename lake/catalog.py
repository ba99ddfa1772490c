"""DuckDB over the lake: every table of the contract as a view, queried from Python or the CLI.

``connect`` opens a ``LakeSession``: an in-memory DuckDB with the views defined, which lists the
lake's files again before every statement and retries a statement that failed because a file it
had listed was gone. ``query`` runs one statement and returns an Arrow table. Nothing is
downloaded: extensions are never auto-installed, and an S3 lake is read through pyarrow's S3
filesystem registered as Arrow datasets, so no httpfs is needed.

Why a session and not a bare connection: compaction (``lake.compaction``) writes a new file and
then deletes the files it replaces, at any time. A reader can meet that in three ways, and each
is handled here, locally and on S3 alike:

1. it listed a file that is deleted before it is read: the statement fails; the session lists
   again and reruns it (``retries`` times, with a short backoff);
2. its listing ran while the compaction ran, and saw neither the new file (written behind the
   listing's position) nor the deleted inputs (gone before the listing reached them): no error,
   rows silently missing. The session lists twice and trusts the listing only when the second
   adds no ``compacted-*`` file and loses no file (new ``part-*`` files of running writers are
   fine): a compaction output created during the first listing is then in it;
3. a long-lived session (``doclake sql`` interactive) would keep a file list from its start:
   the raw views are redefined whenever the listing changes, before each statement.

The internal layers (``raw_<type>``, ``ev_<type>``, ``lake.views``) live in their own DuckDB
schema, ``internal`` (``internal.raw_page_read``), so ``SHOW TABLES`` lists only the contract
tables and derived views an analyst should query. Athena keeps them in the lake's database.

Every raw view exposes ``dt`` (DATE) from the ``dt=`` folder, and a filter on it skips the other
days' files: ``read_parquet``'s hive file filter for a local type of few files, Arrow dataset
partition pruning otherwise (many local files, and S3; see ``NATIVE_MAX_FILES``).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from lake import catalog_plan, read_only
from lake.catalog_plan import INTERNAL_SCHEMA, Plan, internal_name
from lake.files import is_local, local_root, open_lake
from lake.layout import COMPACTED_PREFIX, EVENTS_PREFIX, event_type_prefix, name_fingerprint

__all__ = ["DEFAULT_RETRIES", "LISTING_ATTEMPTS", "BACKOFF_S", "MAX_BACKOFF_S", "T", "NATIVE_MAX_FILES",
           "REFRESH_AFTER_S", "Listing", "duckdb_sql", "layers", "list_event_files", "stable_listing",
           "Rows", "plain_type", "LakeSession", "SHAPES_PREFIX", "shape_file", "write_shape_files",
           "define_views", "confine", "connect", "query"]

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs

DEFAULT_RETRIES = 8
LISTING_ATTEMPTS = 10
BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0  # 8 retries wait up to ~4.5 s in all: longer than a partition's compaction
T = TypeVar("T")
NATIVE_MAX_FILES = 64
"""Locally, an event type with at most this many files is read by DuckDB's own Parquet reader
(the fastest scans), beyond it through an Arrow dataset: the native reader binds every listed
file on every query (~27 us a file, plus filter evaluation, measured on 365 files), so a one-day
query on a year of partitions paid 15 to 40 ms per table before reading a byte; a dataset binds
in constant time and drops the other days' fragments on the ``dt`` filter before opening any
(docs/lake.md, "dt: the day of the job"). That holds for a session that runs many statements; a one-shot
``doclake sql "..."`` passes ``native_max_files`` higher, because importing the dataset layer
(pyarrow.dataset, which loads pandas) costs it more than binding a year of files: measured on
365 days, a one-day ``pages`` query 0.39 s CPU natively against 0.86 s through datasets."""
REFRESH_AFTER_S = 1.0  # a session lists the lake again before a statement once its list is older

Listing = dict[str, tuple[str, ...]]  # event type -> its data files, sorted

def duckdb_sql(sql: str) -> str:
    """SQL written with unqualified ``raw_<type>`` and ``ev_<type>`` names (``lake.views``, the
    dashboard's and evals' queries: Athena reads them so, in the lake's database) with those
    references in the internal schema. A ``LakeSession`` applies it to every statement too, so
    such queries keep working in doclake while ``SHOW TABLES`` lists only the analyst tables."""
    return layers().duckdb_sql(sql)


_PLAN: Plan | None = None


def layers() -> Plan:
    """The catalog's SQL (``lake.catalog_plan``): read from its cache, or worked out from the
    event models, once per process. ``Plan.needed`` closes a statement's names over what each
    view reads, so a session defines only the views a statement reaches (``jobs`` needs 5 raw
    and 6 other views of the ~75): DuckDB binds every view it creates, and defining all of them
    was most of a small query's time."""
    global _PLAN
    if _PLAN is None:
        _PLAN = catalog_plan.load()
    return _PLAN


def _define_layers(con) -> None:
    """The ``ev_*`` views (over the raw views), then ``events`` and every derived view."""
    for name, sql in layers().sql.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")


def _duckdb():
    import duckdb

    return duckdb


def _retryable() -> tuple[type[BaseException], ...]:
    """The errors a file deleted under a statement can raise: DuckDB's, the OS's and, once
    pyarrow is loaded (Arrow datasets, S3), Arrow's. A session over a few local files never
    imports pyarrow, so no Arrow error can come from it."""
    errors: tuple[type[BaseException], ...] = (_duckdb().Error, OSError)
    arrow = sys.modules.get("pyarrow")
    return (*errors, arrow.ArrowException) if arrow is not None else errors


def _is_local_fs(filesystem: pafs.FileSystem | None) -> bool:
    """None stands for the local filesystem: a session over a local lake passes it, so listing
    needs no pyarrow."""
    if filesystem is None:
        return True
    import pyarrow.fs as pafs

    return isinstance(filesystem, pafs.LocalFileSystem)


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def list_event_files(filesystem: pafs.FileSystem | None, root: str) -> Listing:
    """Every data file of every known event type, by type: ``events/event_type=T/dt=D/*.parquet``
    (locally three levels of ``os.scandir``; on S3 one recursive, paged ListObjectsV2).
    ``filesystem`` None: the local one."""
    found: dict[str, list[str]] = {t: [] for t in layers().event_types}
    if _is_local_fs(filesystem):
        for event_type, path in _local_files(f"{root}/{EVENTS_PREFIX}"):
            if event_type in found:
                found[event_type].append(path)
        return {t: tuple(sorted(files)) for t, files in found.items()}
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(f"{root}/{EVENTS_PREFIX}", recursive=True, allow_not_found=True)
    for info in filesystem.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        name = _basename(info.path)
        if not name.endswith(".parquet") or name.startswith("."):
            continue
        parts = info.path[len(root) + len(EVENTS_PREFIX) + 2:].split("/")
        if len(parts) != 3 or not parts[1].startswith("dt="):
            continue
        event_type = parts[0].removeprefix("event_type=")
        if event_type in found:
            found[event_type].append(info.path)
    return {t: tuple(sorted(files)) for t, files in found.items()}


def _local_files(events: str):
    """(event type, path) of every data file under a local ``events/`` folder."""
    try:
        types = list(os.scandir(events))
    except FileNotFoundError:
        return
    for type_entry in types:
        if not type_entry.name.startswith("event_type="):
            continue
        event_type = type_entry.name.removeprefix("event_type=")
        try:
            days = list(os.scandir(type_entry.path))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for day in days:
            if not day.name.startswith("dt="):
                continue
            try:
                names = os.listdir(day.path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in names:
                if name.endswith(".parquet") and not name.startswith("."):
                    yield event_type, f"{day.path}/{name}"


def stable_listing(filesystem: pafs.FileSystem | None, root: str, *,
                   attempts: int = LISTING_ATTEMPTS) -> Listing:
    """A listing no compaction could have cut in half (see the module docstring, case 2).

    Lists until two listings in a row agree: the second loses no file and adds no compacted
    file. Writers adding ``part-*`` files meanwhile do not count: their rows are simply newer
    than the query. After ``attempts`` listings the last one is returned."""
    before = list_event_files(filesystem, root)
    for _ in range(attempts - 1):
        after = list_event_files(filesystem, root)
        if _consistent(before, after):
            return after
        before = after
    return before


def _consistent(before: Listing, after: Listing) -> bool:
    for event_type, files in after.items():
        old = set(before.get(event_type, ()))
        new = set(files)
        if old - new:
            return False
        if any(_basename(path).startswith(COMPACTED_PREFIX) for path in new - old):
            return False
    return True


def _empty_select(event_type: str) -> str:
    return layers().empty[event_type]


def _raw_name(event_type: str) -> str:
    """``internal.raw_<type>``."""
    return internal_name(layers().raw_views[event_type])


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _read_parquet(files: list[str], union_by_name: bool) -> str:
    listed = ", ".join(_sql_string(f) for f in files)
    return (f"SELECT * FROM read_parquet([{listed}], hive_partitioning = true, "
            "hive_types = {'dt': DATE}, hive_types_autocast = false, "
            f"union_by_name = {'true' if union_by_name else 'false'})")


def _define_local_raw(con, event_type: str, groups: list[list[str]]) -> None:
    """A raw view over exactly these Parquet files, one ``read_parquet`` per schema (files of one
    schema need no per-file reconciliation when a query binds the view: measured 17 ms against
    46 ms over 365 files); columns missing from old files read as NULL; ``dt`` comes from the
    folder name (hive partitioning), so a filter on it skips files."""
    empty = _empty_select(event_type)
    if not groups:
        con.execute(f"CREATE OR REPLACE VIEW {_raw_name(event_type)} AS {empty}")
        return
    names = layers().columns[event_type]
    parts = " UNION ALL BY NAME ".join(_read_parquet(g, False) for g in groups)
    con.execute(f"CREATE OR REPLACE VIEW {_raw_name(event_type)} AS "
                f"SELECT {names}, dt FROM ({empty} UNION ALL BY NAME {parts})")


def _define_remote_raw(con, filesystem: pafs.FileSystem, root: str, event_type: str,
                       files: tuple[str, ...]) -> None:
    """A raw view over an Arrow dataset of these files (any pyarrow filesystem, S3 included),
    partitioned by ``dt`` so a filter on it skips files."""
    import pyarrow as pa
    import pyarrow.dataset as pads  # here, not at the top: it loads pandas (~0.4 s)

    from lake.events import EVENT_TYPES
    from lake.schema import arrow_schema

    schema = arrow_schema(EVENT_TYPES[event_type]).append(pa.field("dt", pa.date32()))
    partitioning = pads.partitioning(pa.schema([("dt", pa.date32())]), flavor="hive")
    dataset = pads.dataset(list(files), schema=schema, format="parquet", filesystem=filesystem,
                           partitioning=partitioning,
                           partition_base_dir=f"{root}/{event_type_prefix(event_type)}")
    con.register(f"_ds_{event_type}", dataset)
    con.execute(f"CREATE OR REPLACE VIEW {_raw_name(event_type)} AS "
                f"SELECT * FROM _ds_{event_type}")


class Rows(NamedTuple):
    """A statement's result as Python values (``LakeSession.rows``)."""

    columns: list[str]
    rows: list[tuple]


_PLAIN_SCALARS = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR", "DATE", "TIME", "TIMESTAMP",
    "TIMESTAMP WITH TIME ZONE", "BLOB", '"NULL"'})
_DECIMAL = re.compile(r"DECIMAL\(\d+,\d+\)")


def plain_type(duckdb_type: str) -> bool:
    """Whether DuckDB's own fetch gives the same Python value as Arrow's ``to_pylist`` for a
    column of this type (lists of such types too). Not: INTERVAL (a timedelta that folds months
    into 30 days, against Arrow's months, days, nanoseconds), UUID (an object, not text), HUGEINT
    (int, not Decimal), structs, maps, unions, enums and the rest: those go through Arrow."""
    while duckdb_type.endswith("[]"):
        duckdb_type = duckdb_type[:-2]
    return duckdb_type in _PLAIN_SCALARS or _DECIMAL.fullmatch(duckdb_type) is not None


def _fetch_rows(relation) -> Rows:
    if all(plain_type(str(kind)) for kind in relation.types):
        return Rows(list(relation.columns), relation.fetchall())
    table = relation.to_arrow_table()
    return Rows(list(table.column_names),
                list(zip(*(column.to_pylist() for column in table.columns), strict=True)))


class LakeSession:
    """A DuckDB connection over the lake that keeps up with it (see the module docstring).

    ``sql`` returns a DuckDB relation like ``DuckDBPyConnection.sql`` (or None for a statement
    without a result), but over a result already read in full, so a retry never surfaces half
    way through a fetch. Anything else is passed to the underlying connection (``con``).
    """

    def __init__(self, lake_uri: str, *, threads: int | None = None,
                 retries: int = DEFAULT_RETRIES, refresh_after_s: float = REFRESH_AFTER_S,
                 confined: bool = True, native_max_files: int | None = None):
        config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
        if threads:
            config["threads"] = threads
        self.lake_uri = lake_uri
        self.retries = retries
        self.native_max_files = NATIVE_MAX_FILES if native_max_files is None else native_max_files
        self.refresh_after_s = refresh_after_s
        self.listed_at = float("-inf")
        # A local lake is listed with os.scandir and read by DuckDB: its Arrow filesystem is made
        # only if a type has so many files that it is read as a dataset (``filesystem``).
        self._filesystem: pafs.FileSystem | None = None
        if is_local(lake_uri):
            self.root = local_root(lake_uri)
        else:
            self._filesystem, self.root = open_lake(lake_uri)
        self.local = self._filesystem is None or _is_local_fs(self._filesystem)
        self.con = _duckdb().connect(":memory:", config=config)
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute("SET parquet_metadata_cache = true")  # views stack: read each footer once
        self.con.execute(f"CREATE SCHEMA IF NOT EXISTS {INTERNAL_SCHEMA}")
        if confined:
            confine(self.con, self.root if self.local else None)
        self.listing: Listing = {}
        self._tried: Listing = {}  # the listing the last attempt used (``_retried``)
        self._raw_files: dict[str, tuple[str, ...]] = {}  # defined raw views: over these files
        self._layers_defined: set[str] = set()  # the views above the raw ones defined so far
        self.refreshes = 0
        self.retried = 0
        self.refresh()

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The lake's Arrow filesystem (made on first use for a local lake)."""
        if self._filesystem is None:
            self._filesystem, self.root = open_lake(self.lake_uri)
        return self._filesystem

    @property
    def _lister(self) -> pafs.FileSystem | None:
        """What listing is given: None (os.scandir) for a local lake."""
        return None if self.local else self.filesystem

    # -- listing -------------------------------------------------------------------------------

    def refresh(self, *, define_all: bool = False) -> Listing:
        """List the lake; redefine the raw views whose files changed (``define_all``: and define
        every view now). Returns the listing.

        Defining a view reads the footers of its files, so it too can meet a file deleted since
        the listing: then the lake is listed again and the definition retried."""
        def attempt(_again: bool) -> Listing:
            listing = self._tried = stable_listing(self._lister, self.root)
            self._define(listing)
            if define_all:
                self.prepare("SHOW TABLES")
            return listing

        listing = self._retried(attempt)
        self.refreshes += 1
        self.listed_at = time.monotonic()
        return listing

    def _groups(self, files: tuple[str, ...]) -> list[list[str]]:
        """The files grouped by the schema fingerprint in their names (every writer puts it
        there); a file without one (written by hand) is a group of its own, never guessed."""
        groups: dict[str, list[str]] = {}
        for path in files:
            groups.setdefault(name_fingerprint(path) or path, []).append(path)
        return list(groups.values())

    def _define(self, listing: Listing) -> None:
        """Keep the listing; redefine the raw views already defined whose files changed."""
        for event_type, files in listing.items():
            if event_type in self._raw_files and files != self._raw_files[event_type]:
                self._define_raw(event_type, files)
        self.listing = dict(listing)

    @property
    def views_defined(self) -> frozenset[str]:
        """The views this session has defined so far (raw views by their internal name)."""
        return frozenset(self._layers_defined) | {_raw_name(t) for t in self._raw_files}

    def _define_raw(self, event_type: str, files: tuple[str, ...]) -> None:
        if self.local and len(files) <= self.native_max_files:
            _define_local_raw(self.con, event_type, self._groups(files))
        else:
            _define_remote_raw(self.con, self.filesystem, self.root, event_type, files)
        self._raw_files[event_type] = files

    def prepare(self, statement: str) -> None:
        """Define the views ``statement`` reaches that are not defined yet (``_Layers``), over
        the current listing; a statement run on ``con`` directly needs this first."""
        plan = layers()
        statement = duckdb_sql(statement)
        for event_type in plan.event_types:  # a raw view named by the statement itself
            if event_type not in self._raw_files and plan.raw_views[event_type] in statement:
                self._define_raw(event_type, self.listing.get(event_type, ()))
        for name in plan.needed(statement):
            if name in self._layers_defined:
                continue
            event_type = plan.raw.get(name)
            if event_type is not None and event_type not in self._raw_files:
                self._define_raw(event_type, self.listing.get(event_type, ()))
            self.con.execute(f"CREATE OR REPLACE VIEW {name} AS {plan.sql[name]}")
            self._layers_defined.add(name)

    def _files_vanished(self, listing: Listing) -> bool:
        now = list_event_files(self._lister, self.root)
        return any(set(files) - set(now.get(t, ())) for t, files in listing.items())

    # -- statements ----------------------------------------------------------------------------

    def table(self, query: str, parameters: list | Mapping | None = None) -> pa.Table | None:
        """Run one statement over a recent listing (at most ``refresh_after_s`` old); its result
        as an Arrow table (None when the statement has none). Retried over a new listing when it
        failed and a file it listed has since vanished.

        A listing up to a second old never hides a row that existed when it was taken: a
        compaction since then either has not deleted its inputs yet (they are read) or has
        (the read fails, and the statement is rerun over a new listing). It only misses rows
        written after it, for at most ``refresh_after_s``."""
        return self._run(query, parameters, lambda relation: relation.to_arrow_table())

    def rows(self, query: str, parameters: list | Mapping | None = None) -> Rows | None:
        """Run one statement as ``table`` does; its result as column names and rows of Python
        values, the values Arrow's ``to_pylist`` gives. Fetched by DuckDB itself when every
        column is of a type it converts the same way (``PLAIN_TYPES``), so the common answer
        never imports pyarrow (~0.2 s of a small ``doclake sql``); through Arrow otherwise
        (intervals keep their months, UUIDs print as text). Duplicate column names are kept."""
        return self._run(query, parameters, _fetch_rows)

    def _run(self, query: str, parameters: list | Mapping | None, fetch):
        statement = duckdb_sql(query)

        def attempt(again: bool):
            stale = time.monotonic() - self.listed_at >= self.refresh_after_s
            self._tried = self.refresh() if again or stale else self.listing
            self.prepare(statement)
            relation = self.con.sql(statement, params=parameters)
            return None if relation is None else fetch(relation)

        return self._retried(attempt)

    def _retried(self, attempt: Callable[[bool], T]) -> T:
        """``attempt(again)``, retried over a new listing (``again``) while it fails because a
        file of the listing it used (``self._tried``) has since vanished: up to ``retries``
        times, backing off exponentially from ``BACKOFF_S`` to ``MAX_BACKOFF_S`` (tenacity,
        imported only when a first attempt has failed so: ~45 ms off every ``doclake sql``)."""
        try:
            return attempt(False)
        except _retryable():
            if self.retries == 0 or not self._files_vanished(self._tried):
                raise
        import tenacity

        def counted(_state: tenacity.RetryCallState) -> None:
            self.retried += 1

        retrying = tenacity.Retrying(
            retry=(tenacity.retry_if_exception_type(_retryable())
                   & tenacity.retry_if_exception(lambda _: self._files_vanished(self._tried))),
            stop=tenacity.stop_after_attempt(self.retries),
            wait=tenacity.wait_exponential(multiplier=2 * BACKOFF_S, max=MAX_BACKOFF_S),
            before=counted, reraise=True)
        time.sleep(BACKOFF_S)  # before the first retry; tenacity waits before the later ones
        return retrying(attempt, True)

    def sql(self, query: str, params: list | Mapping | None = None):
        """Like ``DuckDBPyConnection.sql``: a relation (already computed) or None."""
        table = self.table(query, params)
        return None if table is None else self.con.from_arrow(table)

    def execute(self, query: str, parameters: list | Mapping | None = None):
        """Like ``DuckDBPyConnection.execute``: returns the connection with the result pending
        (``fetchone``, ``fetchall``, ``df``...), computed with ``table``'s retries."""
        table = self.table(query, parameters)
        if table is None:
            return self.con
        cursor = self.con.cursor()  # its own pending result; the session stays usable
        cursor.register("_lake_result", table)
        return cursor.execute("SELECT * FROM _lake_result")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> LakeSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getattr__(self, name: str):
        return getattr(self.con, name)


SHAPES_PREFIX = "_shapes"
"""Beside ``events/``: one empty, typed Parquet file per event type, written by ``define_views``
so that a saved view's glob always matches (DuckDB refuses a glob that matches nothing)."""


def shape_file(root: str, event_type: str) -> str:
    """The empty, typed file of an event type: ``_shapes/event_type=T/dt=1970-01-01/empty.parquet``
    (the same folder depth as the data, so one glob and one hive layout cover both)."""
    return f"{root}/{SHAPES_PREFIX}/event_type={event_type}/dt=1970-01-01/empty.parquet"


def write_shape_files(root: str) -> None:
    """One zero-row file per event type, with the type's current schema (rewritten each time, so
    a schema that gained columns is picked up; written aside and renamed, never half there)."""
    import pyarrow.parquet as pq

    from lake.events import EVENT_TYPES
    from lake.schema import arrow_schema

    for event_type, model in EVENT_TYPES.items():
        path = shape_file(root, event_type)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        part = f"{path}.{os.getpid()}.tmp"
        pq.write_table(arrow_schema(model).empty_table(), part)
        os.replace(part, path)


def _define_local_raw_glob(con, root: str, event_type: str) -> None:
    """A raw view over one glob that matches the type's data files under ``events/`` and its empty
    file under ``_shapes/``: expanded again by every query, so a client that keeps the view
    (``doclake lake views``) sees new and compacted files, and event types that had no file yet
    when the view was saved (model calls, failures) once they have one."""
    empty = _empty_select(event_type)
    glob = _sql_string(f"{root}/*/event_type={event_type}/dt=*/*.parquet")
    names = layers().columns[event_type]
    con.execute(
        f"CREATE OR REPLACE VIEW {_raw_name(event_type)} AS "
        f"SELECT {names}, dt FROM ({empty} UNION ALL BY NAME "
        f"SELECT * FROM read_parquet({glob}, hive_partitioning = true, "
        "hive_types = {'dt': DATE}, hive_types_autocast = false, union_by_name = true))"
    )


def define_views(con, lake_uri: str) -> None:
    """Create every view of the lake in a DuckDB connection that is not a ``LakeSession``: for
    clients outside doclake (``doclake lake views``). Locally the raw views read a glob that
    always matches (``write_shape_files``), so they follow the lake as it grows; such a client
    gets no retry when compaction deletes a file mid-query (rerun it). On S3 they are Arrow
    datasets over the files listed now."""
    filesystem, root = open_lake(lake_uri)
    local = _is_local_fs(filesystem)
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {INTERNAL_SCHEMA}")
    if local:
        write_shape_files(root)
        for event_type in layers().event_types:
            _define_local_raw_glob(con, root, event_type)
    else:
        for event_type, files in stable_listing(filesystem, root).items():
            _define_remote_raw(con, filesystem, root, event_type, files)
    _define_layers(con)


def confine(con, lake_root: str | None) -> None:
    """Limit a connection to reading the lake, then lock its configuration.

    DuckDB can read and write any file the user can (``read_csv('/etc/...')``, ``COPY ... TO``,
    ``ATTACH``) and one statement could turn extension autoinstall back on. Here external access
    is off except for the lake's own folder (``allowed_directories``; none for a lake in S3,
    read through Arrow datasets registered in the connection), and ``lock_configuration`` makes
    every later ``SET`` of these an error. Needs DuckDB 1.3 or later.

    ``allowed_directories`` allows writing as well as reading, and DuckDB adds its temporary
    directory (``<cwd>/.tmp`` for an in-memory database) to it: the temporary directory is
    switched off (a query larger than memory fails instead of spilling), and ``doclake sql``
    refuses every statement that is not a read before it runs (``infra.cli.sql_guard``)."""
    con.execute("SET temp_directory = ''")
    if lake_root is not None:
        folders = {os.path.join(path, "") for path in
                   (os.path.abspath(lake_root), os.path.realpath(lake_root))}
        con.execute("SET allowed_directories = [" + ", ".join(map(_sql_string, sorted(folders)))
                    + "]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def connect(lake_uri: str, *, threads: int | None = None, retries: int = DEFAULT_RETRIES,
            refresh_after_s: float = REFRESH_AFTER_S, confined: bool = True,
            native_max_files: int | None = None) -> LakeSession:
    """A DuckDB session with the lake's views; never downloads an extension. ``confined`` (the
    default): it reads the lake and nothing else, and writes no file (``confine``).
    ``native_max_files``: see ``NATIVE_MAX_FILES`` (its value by default)."""
    return LakeSession(lake_uri, threads=threads, retries=retries,
                       refresh_after_s=refresh_after_s, confined=confined,
                       native_max_files=native_max_files)


def query(lake_uri: str, sql: str, parameters: list | None = None) -> pa.Table:
    """Run one SQL statement over the lake's views and return the result as an Arrow table.
    Reads only: a statement that could write, set or load raises ``read_only.NotARead`` unrun
    (the confined connection may still write inside the lake folder, ``confine``).

    >>> query(".doclake/lake", "SELECT status, count(*) AS n FROM jobs GROUP BY status")
    """
    import pyarrow as pa

    with connect(lake_uri) as session:
        refused = read_only.first_refused(session.con, session.con.extract_statements(sql))
        if refused is not None:
            raise read_only.NotARead(f"{read_only.kind(refused)} statement refused: "
                                     f"{read_only.shown(refused)}")
        result = session.table(sql, parameters)
    return result if result is not None else pa.table({})
