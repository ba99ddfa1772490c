"""Alarms that reach someone, over every queue and function of the stack.

The alarms topic's resource policy replaces SNS's default one, so it must say that CloudWatch
may publish (only for alarms of this account: ``aws:SourceAccount``), or every alarm action
fails with "not authorized to perform SNS:Publish". A dead-letter queue's alarm counts the
messages it holds, visible and hidden: the poller reads dead letters every few seconds and hides
them for hours, so ``ApproximateNumberOfMessagesVisible`` alone stays at 0 while they wait.

``cover`` walks the stack's constructs: a queue added later (with its redrive) gets its
age alarm and its dead-letter queue the held-messages alarm, a function its errors and
throttles alarms, with no list to keep up to date.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

__all__ = ["AlarmsTopic", "held_messages"]

PERIOD = Duration.minutes(1)


def held_messages(queue: sqs.IQueue) -> cloudwatch.MathExpression:
    """Visible plus not visible (hidden by a receive): every message the queue holds."""
    return cloudwatch.MathExpression(
        expression="visible + hidden", label="messages held", period=PERIOD, using_metrics={
            "visible": queue.metric_approximate_number_of_messages_visible(
                period=PERIOD, statistic="Maximum"),
            "hidden": queue.metric_approximate_number_of_messages_not_visible(
                period=PERIOD, statistic="Maximum")})


class AlarmsTopic(Construct):
    """The SNS topic every alarm notifies, with the publish permission CloudWatch needs and an
    optional e-mail subscription (a parameter: empty, none)."""

    def __init__(self, scope: Construct, construct_id: str, *, email: str,
                 email_condition) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "Topic", display_name="doclake alarms", enforce_ssl=True)
        self.topic.add_to_resource_policy(iam.PolicyStatement(
            sid="CloudWatchAlarmsPublish", actions=["sns:Publish"],
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            resources=[self.topic.topic_arn],
            conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}))
        subscription = sns.CfnSubscription(self, "Email", protocol="email", endpoint=email,
                                           topic_arn=self.topic.topic_arn)
        subscription.cfn_options.condition = email_condition
        self._action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []

    def alarm(self, scope: Construct, name: str, metric: cloudwatch.IMetric, *,
              threshold: float, description: str) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            scope, name, metric=metric, threshold=threshold, evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description)
        alarm.add_alarm_action(self._action)
        self.alarms.append(alarm)
        return alarm

    def cover(self, stack: Stack, *, oldest_message_s: int, names: dict[Construct, str]) -> None:
        """An alarm for each queue and function in ``stack`` (``names``: how each is called in
        the alarm's description; others by their construct id)."""
        for construct in stack.node.find_all():
            label = names.get(construct, construct.node.id)
            if isinstance(construct, sqs.Queue):
                if construct.dead_letter_queue is not None:
                    self.alarm(construct, "OldestMessage",
                               construct.metric_approximate_age_of_oldest_message(period=PERIOD),
                               threshold=oldest_message_s,
                               description=f"the {label} queue's oldest message is waiting "
                               "too long")
                else:  # a dead-letter queue (or a stream's on-failure queue): holds failures
                    self.alarm(construct, "HoldsMessages", held_messages(construct),
                               threshold=0, description=f"messages in {label}, visible or "
                               "hidden by the poller: their work failed")
            elif isinstance(construct, lambda_.Function):
                self.alarm(construct, "ErrorsAlarm",
                           construct.metric_errors(period=Duration.minutes(5)), threshold=0,
                           description=f"{label} invocations failed")
                self.alarm(construct, "ThrottlesAlarm",
                           construct.metric_throttles(period=Duration.minutes(5)), threshold=0,
                           description=f"{label} was throttled (the account's concurrency "
                           "quota reached)")
