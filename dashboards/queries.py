"""The dashboard's named queries: one ``.sql`` file per chart in ``dashboards/queries/``.

Each is written once in DuckDB SQL over the lake's contract views, runs locally through
``lake.catalog``, and is transpiled for Athena (Trino) with ``lake.athena.to_trino`` plus one fix
of our own: DuckDB's exact ``quantile_cont`` becomes Trino's ``approx_percentile`` (Trino has no
exact percentile aggregate; sqlglot would emit ``PERCENTILE_CONT(x, q)``, which Trino rejects).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import sqlglot
from sqlglot import exp

from lake.athena import to_trino

__all__ = ["FOLDER", "names", "sql", "athena_sql", "run"]

FOLDER = Path(__file__).with_name("queries")


def names() -> list[str]:
    """Every named query, sorted."""
    return sorted(p.stem for p in FOLDER.glob("*.sql"))


def sql(name: str) -> str:
    """The DuckDB text of one named query."""
    path = FOLDER / f"{name}.sql"
    if not path.is_file():
        raise KeyError(f"no dashboard query named {name!r}; known: {', '.join(names())}")
    return path.read_text()


def _approx_percentile(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Quantile | exp.PercentileCont) and not isinstance(
            node.parent, exp.WithinGroup):
        return exp.ApproxQuantile(this=node.this, quantile=node.args.get("quantile")
                                  or node.expression)
    return node


def athena_sql(name: str) -> str:
    """One named query as Athena engine v3 SQL (parsed back in the Trino dialect)."""
    tree = sqlglot.parse_one(sql(name), read="duckdb").transform(_approx_percentile)
    return to_trino(tree.sql(dialect="duckdb"))


def run(lake_uri: str, name: str) -> pa.Table:
    """One named query over a local or S3 lake, through DuckDB."""
    from lake.catalog import query

    return query(lake_uri, sql(name))
