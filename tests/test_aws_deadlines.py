"""Every AWS function that loops or runs one long call takes its deadline from the invocation's
remaining time (``infra.aws.deadline``): compaction's days, the publisher's results, the weekly
report and the poller's passes stop in time, saying what is left, instead of being killed."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("aws_lambda_powertools")

from support.awsstack import LambdaContext  # noqa: E402

from infra.aws.deadline import Deadline  # noqa: E402


def test_the_deadline_is_the_remaining_time_less_the_margin():
    deadline = Deadline.of(LambdaContext(timeout_s=30), margin_s=10)
    assert 19 < deadline.left_s() <= 20
    assert deadline.allows(19) and not deadline.allows(21)
    assert Deadline.of(LambdaContext(timeout_s=5), margin_s=10).left_s() == 0


def test_compaction_starts_a_day_only_while_the_invocation_has_a_days_time(tmp_path):
    from infra.aws.lambdas.compaction import DAY_BUDGET_S, compact_days

    days = ["2026-11-29", "2026-11-30", "2026-12-01"]
    late = compact_days(str(tmp_path), days, Deadline(time.monotonic() + DAY_BUDGET_S / 2))
    assert (late["days"], late["left"]) == ([], days)
    early = compact_days(str(tmp_path), days, Deadline(time.monotonic() + 3 * DAY_BUDGET_S + 60))
    assert (early["days"], early["left"]) == (days, [])


def test_the_publisher_out_of_time_hands_the_batch_back_to_the_stream():
    import asyncio

    from infra.aws.lambdas.publisher import OutOfTime, finished_jobs, publish

    record = {"dynamodb": {
        "NewImage": {"pk": {"S": "doc#d"}, "sk": {"S": "job"}, "status": {"S": "succeeded"},
                     "document_id": {"S": "d"}, "job_id": {"S": "j"}},
        "OldImage": {"pk": {"S": "doc#d"}, "sk": {"S": "job"}, "status": {"S": "extracting"}}}}
    event = {"Records": [record]}
    assert len(finished_jobs(event)) == 1
    with pytest.raises(OutOfTime, match="comes again"):  # nothing touched: no context needed
        asyncio.run(publish(event, ctx=None, deadline=Deadline(time.monotonic())))


def test_a_weekly_report_that_outruns_the_invocation_fails_with_what_to_change(monkeypatch):
    from infra.aws.lambdas import weekly_evals

    monkeypatch.setattr(weekly_evals, "run", lambda now: time.sleep(2) or {})
    context = LambdaContext(timeout_s=weekly_evals.MARGIN_S + 0.2)
    started = time.monotonic()
    with pytest.raises(weekly_evals.ReportTooSlow, match="raise the function's timeout"):
        weekly_evals.handler({"time": "2026-12-07T06:00:00Z"}, context)
    assert time.monotonic() - started < 1.5  # it did not wait for the report
