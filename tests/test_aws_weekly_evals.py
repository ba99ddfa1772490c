"""Issue 13's weekly report on AWS, against moto's S3: the scheduled function scores the lake in
the lake bucket and writes ``reports/weekly-<date>.md`` and ``.html`` to the results bucket (the
schedule and its IAM are checked on the template in ``tests/test_cdk.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from support import awsmoto

from lake import events as ev

NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
DOC, SHA = "0196a0b0-0000-7000-8000-000000000001", "ab" * 32
JOB = "0196a0b0-0000-7000-8000-000000000002"


def test_the_scheduled_function_writes_the_weekly_report_to_the_results_bucket(
        tmp_path: Path, monkeypatch):
    endpoint = awsmoto.endpoint()
    from evals.label_import import import_labels
    from evals.lakeio import write_events
    from infra.aws.lambdas import weekly_evals

    lake_bucket, results = awsmoto.bucket(), awsmoto.bucket()
    lake = awsmoto.lake_uri(lake_bucket)
    write_events(lake, [
        ev.DocumentRegistered(document_id=DOC, job_id=JOB, source_name="nda.pdf", sha256=SHA,
                              bytes=10, occurred_at=NOW - timedelta(hours=2)),
        ev.ResultPublished(document_id=DOC, job_id=JOB, status="succeeded", strategy="rules",
                           model_version="v1", schema_name="nda",
                           occurred_at=NOW - timedelta(hours=1)),
        *(ev.ResultFieldExtracted(document_id=DOC, job_id=JOB, field="party", value=v,
                                  value_index=i, strategy="rules", model_version="v1",
                                  page_number=2, occurred_at=NOW - timedelta(hours=1))
          for i, v in enumerate(["Acme Inc.", "Beta"]))])
    labels = tmp_path / "labels.csv"
    labels.write_text(f"sha256,field,value,labelled_at\n{SHA},party,Acme Inc.,2026-05-01T00:00:00Z\n")
    import_labels(lake, labels, "csv", labeller="ann", now=NOW)

    for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": awsmoto.REGION,
                        "DOCLAKE_LAKE_URI": lake, "DOCLAKE_RESULTS_BUCKET": results}.items():
        monkeypatch.setenv(name, value)
    # EventBridge's scheduled event: its time is the report's end (a retry writes the same week)
    written = weekly_evals.handler({"detail-type": "Scheduled Event", "source": "aws.events",
                                    "time": "2026-05-04T12:00:00Z"})
    assert written == {"md": f"s3://{results}/reports/weekly-2026-05-04.md",
                       "html": f"s3://{results}/reports/weekly-2026-05-04.html"}
    s3 = awsmoto.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=results)["Contents"]]
    assert sorted(keys) == ["reports/weekly-2026-05-04.html", "reports/weekly-2026-05-04.md"]
    markdown = s3.get_object(Bucket=results, Key=keys[0] if keys[0].endswith(".md") else keys[1])[
        "Body"].read().decode()
    assert "# Field accuracy, week 2026-W18 (2026-04-27 to 2026-05-03)" in markdown
    assert "| v1 | rules | 1 | 66.67 |" in markdown
    quoted = markdown.split("eval run ", 1)[1].split(" ", 1)[0]
    from lake.catalog import query

    runs = query(lake, "SELECT eval_run_id, week_by FROM eval_runs").to_pylist()
    assert runs == [{"eval_run_id": quoted, "week_by": "label"}]  # the run it quotes
    assert "<table>" in s3.get_object(Bucket=results, Key="reports/weekly-2026-05-04.html")[
        "Body"].read().decode()

