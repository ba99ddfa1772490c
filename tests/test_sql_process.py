"""`doclake sql` as a fresh process imports only what a query needs (issue 26, finding 6).

No timing is asserted (``doclake bench sql`` prints the figures): what is checked is what made
a small query slow, on the real command in a real subprocess. Its import graph holds no pyarrow,
numpy, pandas, pydantic-settings, rich, boto3, event models or extract package; the catalog's
SQL comes from a cache keyed by the code (``lake.catalog_plan``) and equals what the code gives;
views still follow the lake as it gains event types and files; rows fetched without Arrow print
as rows fetched through it; the lake is located as ``Settings`` locates it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.cli.main import app
from lake import catalog_plan
from lake.catalog import NATIVE_MAX_FILES, connect
from tests.support.homes import empty_home

ROOT = Path(__file__).resolve().parents[1]
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2",
        "DOCLAKE_CPU_WORKERS": "1", "DOCLAKE_SIMULATED_LATENCY_SCALE": "0.05"}
NOT_FOR_A_QUERY = ("pyarrow", "numpy", "pandas", "pydantic_settings", "rich", "boto3", "botocore",
                   "extract", "lake.events", "lake.schema", "lake.views", "infra.settings",
                   "infra.evals_wiring", "sqlglot")

PROBE = """
import json, sys
from infra.cli.main import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted({heavy!r}[i] for i, m in enumerate({heavy!r})
                        if any(n == m or n.startswith(m + ".") for n in sys.modules))))
"""


def _sql_process(cache_home: Path, *args: str) -> tuple[str, list[str]]:
    """Run ``doclake <args>`` in a fresh interpreter; its output and the listed modules it held."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=NOT_FOR_A_QUERY), *args], cwd=ROOT,
        capture_output=True, text=True, timeout=180,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cache_home)})
    assert done.returncode == 0, done.stderr
    *output, loaded = done.stdout.strip().splitlines()
    return "\n".join(output), json.loads(loaded)


def _run(*args: str) -> None:
    assert CliRunner().invoke(app, list(args), env=FAST, catch_exceptions=False).exit_code == 0


@pytest.fixture
def home(tmp_path, pdf_factory) -> str:
    pdf_factory("a.pdf", 3)
    pdf_factory("b.pdf", 1)
    home = str(tmp_path / "home")
    _run("run", str(tmp_path / "docs"), "--home", home, "--reader", "text")
    return home


@pytest.mark.parametrize("output_format", ["csv", "json"])
def test_a_query_process_imports_none_of_the_heavy_libraries(tmp_path, home, output_format):
    cache_home = tmp_path / "user"
    args = ("sql", "--home", home, "--format", output_format,
            "SELECT status, count(*) AS n FROM jobs GROUP BY 1")
    first, _ = _sql_process(cache_home, *args)  # builds the catalog plan and caches it
    assert list((cache_home / ".cache" / "doclake").glob("catalog-plan-*.json"))
    answer, loaded = _sql_process(cache_home, *args)
    assert answer == first
    assert loaded == []
    if output_format == "json":
        assert json.loads(answer) == [{"status": "succeeded", "n": 2}]
    else:
        assert answer.splitlines() == ["status,n", "succeeded,2"]


def test_a_year_of_files_is_read_without_the_dataset_layer(tmp_path):
    """A type with more files than ``NATIVE_MAX_FILES``: a one-shot query reads them with DuckDB
    (a session of many statements would use an Arrow dataset), with the same answer."""
    from infra.bench.lake_data import build_stream, write_lake
    from lake.compaction import compact

    lake = tmp_path / "home" / "lake"
    write_lake(str(lake), build_stream(3_000, days=NATIVE_MAX_FILES + 16, seed=3))
    compact(str(lake))
    assert len(list((lake / "events" / "event_type=page_read").iterdir())) > NATIVE_MAX_FILES
    query = "SELECT dt, count(*) AS n FROM pages GROUP BY dt ORDER BY dt"
    _sql_process(tmp_path / "user", "sql", "--home", str(lake.parent), "--format", "json",
                 query)  # the first call builds the catalog plan's cache
    answer, loaded = _sql_process(tmp_path / "user", "sql", "--home", str(lake.parent),
                                  "--format", "json", query)
    assert loaded == []
    with connect(str(lake)) as session:  # datasets beyond NATIVE_MAX_FILES
        expected = [{"dt": row["dt"].isoformat(), "n": row["n"]}
                    for row in session.table(query).to_pylist()]
    assert json.loads(answer) == expected and len(expected) > NATIVE_MAX_FILES


def test_the_cached_plan_is_the_plan_the_code_gives(tmp_path):
    built = catalog_plan.build()
    assert catalog_plan.load(tmp_path) == built  # built, then written
    (cached,) = tmp_path.glob("catalog-plan-*.json")
    assert catalog_plan.load(tmp_path) == built  # read back
    # A cache written by other code (another key inside) is not trusted: rebuilt and rewritten.
    stale = json.loads(cached.read_text())
    stale["key"], stale["sql"]["jobs"] = "other", "SELECT 1 AS stale"
    cached.write_text(json.dumps(stale))
    assert catalog_plan.load(tmp_path) == built
    assert json.loads(cached.read_text())["key"] == catalog_plan.cache_key()
    cached.write_text("{not json")
    assert catalog_plan.load(tmp_path) == built


def test_a_session_sees_event_types_and_files_that_appear_after_it_opened(tmp_path, home,
                                                                          pdf_factory):
    """Views defined lazily, from the cached plan, over the listing before each statement: a
    session opened after a text-only run shows the model calls and failures a later simulated
    vision run and a broken file add, as a fresh `doclake sql` does."""
    questions = {"model_calls": "SELECT count(*) AS n FROM model_calls",
                 "failures": "SELECT count(*) AS n FROM failures",
                 "jobs": "SELECT count(*) AS n FROM jobs"}
    with connect(f"{home}/lake", refresh_after_s=0) as session:
        before = {name: session.rows(sql).rows[0][0] for name, sql in questions.items()}
        assert before == {"model_calls": 0, "failures": 0, "jobs": 2}
        more = tmp_path / "more"
        more.mkdir()
        (more / "c.pdf").write_bytes(pdf_factory("c.pdf", 2, word="penguin").read_bytes())
        (more / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a pdf at all")
        CliRunner().invoke(app, ["run", str(more), "--home", home, "--reader", "simulated"],
                           env=FAST)
        after = {name: session.rows(sql).rows[0][0] for name, sql in questions.items()}
    fresh = {name: json.loads(_sql_process(tmp_path / "user", "sql", "--home", home, "--format",
                                           "json", sql)[0])[0]["n"]
             for name, sql in questions.items()}
    assert after == fresh
    assert after["model_calls"] > 0 and after["failures"] >= 1 and after["jobs"] == 4


def test_rows_fetched_without_arrow_are_the_rows_arrow_gives(home):
    """Every type DuckDB fetches itself, beside types that must go through Arrow, and columns
    that share a name (a dict per row would drop one)."""
    plain = ("SELECT 1::TINYINT AS a, 2::UBIGINT AS b, 1.5::DOUBLE AS c, 'x' AS d, "
             "DATE '2024-01-02' AS e, TIMESTAMP '2024-01-02 03:04:05.123456' AS f, "
             "TIMESTAMPTZ '2024-01-02 03:04:05.5+00' AS g, 1.25::DECIMAL(10,3) AS h, "
             "'ab'::BLOB AS i, true AS j, ['a', 'b'] AS k, [[1], [2]] AS l, TIME '01:02:03' AS m, "
             "NULL AS n, 'nan'::DOUBLE AS o, 7 AS a")
    arrow_only = ("SELECT INTERVAL 3 MONTH + INTERVAL 2 SECOND AS p, "
                  "'8c3b5f1e-9a4d-4c1b-8f0e-2d7c6b5a4e3f'::UUID AS q, 2::HUGEINT AS r, "
                  "{'s': 1} AS s, MAP {'k': 1} AS t, 1 AS a")
    with connect(f"{home}/lake") as session:
        for sql in (plain, arrow_only):
            rows = session.rows(sql)
            table = session.table(sql)
            assert rows.columns == table.column_names
            expected = list(zip(*(column.to_pylist() for column in table.columns), strict=True))
            assert repr(rows.rows) == repr(expected)
    out = CliRunner().invoke(app, ["sql", "--home", home, "--format", "csv",
                                   "SELECT 1 AS a, 2 AS a, INTERVAL 3 MONTH AS i"]).output
    assert out.splitlines() == ["a,a,i", "1,2,P3M"]


@pytest.mark.parametrize("environ", [
    {}, {"DOCLAKE_HOME": "{tmp}/h"}, {"doclake_home": "{tmp}/h"},
    {"DOCLAKE_HOME": "{tmp}/h", "DOCLAKE_LAKE_URI": "{tmp}/elsewhere"},
    {"DOCLAKE_LAKE_URI": ""}, {"DOCLAKE_CONCURRENCY": "64"}])
@pytest.mark.parametrize("given", [False, True])
def test_the_sql_command_finds_the_lake_settings_would(tmp_path, monkeypatch, environ, given):
    from infra.cli.home import open_lake_location
    from infra.settings import Settings

    monkeypatch.chdir(tmp_path)
    for name in [n for n in list(__import__("os").environ) if n.upper().startswith("DOCLAKE_")]:
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    home = tmp_path / "given" if given else None
    settings = Settings(**({"home": home} if given else {}))
    Path(settings.lake).mkdir(parents=True, exist_ok=True)
    empty_home(Path(settings.home))
    assert open_lake_location(home) == settings.lake
