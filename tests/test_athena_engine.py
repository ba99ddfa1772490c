"""``doclake sql --engine athena``: the SQL goes to ``wr.athena.read_sql_query`` with the
workgroup, database and result location from the settings, and prints like the DuckDB engine.
Only the plumbing: Athena's SQL does not run in moto (it records queries without running them)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

wr = pytest.importorskip("awswrangler")


def test_athena_engine_sends_each_statement_with_the_settings(monkeypatch):
    import pandas as pd

    from infra.cli.main import app

    calls = []

    def fake_read_sql_query(sql, **kwargs):
        calls.append((sql, kwargs))
        return pd.DataFrame({"status": ["succeeded", None], "n": [3, 1]})

    monkeypatch.setattr(wr.athena, "read_sql_query", fake_read_sql_query)
    monkeypatch.setenv("DOCLAKE_ATHENA_WORKGROUP", "doclake-prod")
    monkeypatch.setenv("DOCLAKE_ATHENA_OUTPUT", "s3://lake/athena-results/")
    # The command checks for a region and credentials first (issue 21): give it both.
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    result = CliRunner().invoke(app, ["sql", "--engine", "athena", "--format", "json",
                                      "SELECT status, count(*) AS n FROM jobs GROUP BY 1"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"status": "succeeded", "n": 3}, {"status": None, "n": 1}]
    ((sql, kwargs),) = calls
    assert sql.startswith("SELECT status")
    assert kwargs.pop("boto3_session").region_name == "us-east-1"  # --region, else the default
    assert kwargs == {"database": "doclake", "workgroup": "doclake-prod",
                      "s3_output": "s3://lake/athena-results/", "ctas_approach": False}


def test_athena_engine_needs_a_query():
    from infra.cli.main import app

    result = CliRunner().invoke(app, ["sql", "--engine", "athena"])
    assert result.exit_code == 2
