"""The operational plane on CloudWatch: queue depth and age, busy workers, errors, throttles.

The lake's dashboard (``doclake dashboard``) answers the weekly questions from events; this one
answers the minute-to-minute one (is the queue draining, is the cap saturated) from metrics AWS
already keeps, so it needs no code in the functions.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

__all__ = ["PERIOD", "OperationsDashboard"]

PERIOD = Duration.minutes(1)


class OperationsDashboard(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, queues: dict[str, sqs.Queue],
                 functions: dict[str, lambda_.Function], dashboard_name: str) -> None:
        super().__init__(scope, construct_id)
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=dashboard_name)
        visible = [q.metric_approximate_number_of_messages_visible(period=PERIOD, label=name)
                   for name, q in queues.items()]
        oldest = [q.metric_approximate_age_of_oldest_message(period=PERIOD, label=name)
                  for name, q in queues.items()]
        busy = [f.metric("ConcurrentExecutions", statistic="Maximum", period=PERIOD, label=name)
                for name, f in functions.items()]
        errors = [f.metric_errors(period=PERIOD, label=name) for name, f in functions.items()]
        throttles = [f.metric_throttles(period=PERIOD, label=name)
                     for name, f in functions.items()]
        duration = [f.metric_duration(period=PERIOD, statistic="p90", label=name)
                    for name, f in functions.items()]
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Queue depth (messages visible)", left=visible, width=12),
            cloudwatch.GraphWidget(title="Oldest message (s)", left=oldest, width=12))
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Busy workers (concurrent executions)", left=busy,
                                   width=12),
            cloudwatch.GraphWidget(title="Duration p90 (ms)", left=duration, width=12))
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Errors", left=errors, width=12),
            cloudwatch.GraphWidget(title="Throttles (cap reached)", left=throttles, width=12))
