"""Types an analyst can sort and count on (issue 26, finding 4): a size bucket that sorts, and
how many values each result holds."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from support.lakegen import succeeded_job, uuid7_at
from typer.testing import CliRunner

from infra.cli.main import app
from lake.catalog import query
from lake.writer import ParquetEventWriter

ROOT = Path(__file__).resolve().parents[1]
FAST = {"DOCLAKE_EVENT_FLUSH_S": "0.02", "DOCLAKE_POLL_INTERVAL_S": "0.2", "DOCLAKE_CPU_WORKERS": "1"}


def test_page_buckets_sort_by_their_first_page(tmp_path):
    lake = str(tmp_path / "lake")
    start = datetime(2026, 3, 1, 9, tzinfo=UTC)
    events = []
    for n, pages in enumerate((150, 5, 30, 400, 70)):
        at = start + timedelta(minutes=n)
        events += succeeded_job(uuid7_at(at, 0), uuid7_at(at, 1), start=at, pages=pages)
    ParquetEventWriter.for_uri(lake).write(events)
    rows = query(lake, "SELECT page_bucket FROM job_latency GROUP BY page_bucket "
                       "ORDER BY min(page_bucket_min)").column("page_bucket").to_pylist()
    assert rows == ["1-20", "21-50", "51-100", "101-300", "over 300"]


def test_results_count_the_values_found(tmp_path, pdf_factory):
    docs = tmp_path / "docs"
    pdf_factory("nothing.pdf", 1, word="weather report")
    shutil.copy(sorted((ROOT / "examples").glob("*.pdf"))[0], docs / "nda.pdf")
    home = str(tmp_path / "home")
    assert CliRunner().invoke(app, ["run", str(docs), "--home", home, "--fields", "nda"],
                              env=FAST).exit_code == 0
    rows = json.loads(CliRunner().invoke(app, [
        "sql", "--home", home, "--format", "json",
        "SELECT d.source_name, r.values_found, (SELECT count(*) FROM result_fields f WHERE "
        "f.job_id = r.job_id AND f.strategy = r.strategy) AS rows_in_result_fields "
        "FROM results r JOIN documents d USING (document_id) ORDER BY 1"], env=FAST).output)
    found = {r["source_name"]: (r["values_found"], r["rows_in_result_fields"]) for r in rows}
    assert found["nothing.pdf"] == (0, 0)
    assert found["nda.pdf"][0] == found["nda.pdf"][1] > 0
