"""The CloudWatch operations dashboard is in the synthesized template and names real metrics."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")


def test_operations_dashboard_graphs_queues_and_workers(tmp_path):
    from aws_cdk.assertions import Template

    from infra.aws.cdk.app import build

    _, stack = build(str(tmp_path))
    dashboards = Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard")
    assert len(dashboards) == 1
    body = json.dumps(next(iter(dashboards.values()))["Properties"]["DashboardBody"])
    for metric in ("ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage",
                   "ConcurrentExecutions", "Throttles", "Errors"):
        assert metric in body, metric
    assert body.count("ConcurrentExecutions") >= len(stack.functions)
