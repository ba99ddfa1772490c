"""The settings an operator changes after the first deploy, as CloudFormation parameters.

``-c name=value`` (``settings.DeploySettings``) picks each parameter's default at synth; the
parameters themselves can then be changed in the console or with ``cdk deploy --parameters
Name=value`` without a new synth. Only what an operator tunes in operation is here: log
retention, how long intermediate objects are kept, the alarm e-mail, the concurrency caps.
"""

from __future__ import annotations

from aws_cdk import CfnCondition, CfnParameter, Fn, Token
from constructs import Construct

from infra.aws.cdk.settings import DeploySettings, FunctionSpec

__all__ = ["LOG_RETENTION_DAYS", "OperatorParameters"]

# What CloudWatch Logs accepts as a retention (days).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827,
                      2192, 2557, 2922, 3288, 3653)


class OperatorParameters:
    """The parameters, made once per stack; each value is a token CloudFormation resolves."""

    def __init__(self, scope: Construct, settings: DeploySettings,
                 specs: dict[str, FunctionSpec]) -> None:
        if settings.log_retention_days not in LOG_RETENTION_DAYS:
            raise ValueError(f"-c log_retention_days={settings.log_retention_days}: one of "
                             f"{', '.join(map(str, LOG_RETENTION_DAYS))}")
        self.log_retention = CfnParameter(
            scope, "LogRetentionDays", type="Number", default=str(settings.log_retention_days),
            allowed_values=[str(d) for d in LOG_RETENTION_DAYS],
            description="Days every function's log group keeps its logs")
        self.intermediate_days = CfnParameter(
            scope, "IntermediateRetentionDays", type="Number",
            default=settings.intermediate_retention_days, min_value=1, max_value=3650,
            description="Days the results bucket keeps page text (pages/), converted PDFs "
            "(converted/) and decrypted copies (decrypted/) before S3 expires them")
        self.alarm_email = CfnParameter(
            scope, "AlarmEmail", type="String", default=settings.alarm_email,
            allowed_pattern=r"^$|^[^@\s]+@[^@\s]+$",
            description="An e-mail address subscribed to the alarms topic (confirm the "
            "message AWS sends); empty: no subscription")
        self.has_alarm_email = CfnCondition(
            scope, "HasAlarmEmail",
            expression=Fn.condition_not(Fn.condition_equals(self.alarm_email.value_as_string, "")))
        self.caps: dict[str, CfnParameter] = {}
        for name, spec in specs.items():
            if spec.concurrency is None:
                continue
            self.caps[name] = CfnParameter(
                scope, f"Concurrency{_pascal(name)}", type="Number", default=spec.concurrency,
                min_value=2, max_value=1000,
                description=f"The most concurrent {name} functions its queue starts (2 to "
                "1000; the account's Lambda quota bounds their sum: doclake aws preflight)")

        for name in ("read", "convert"):  # the small documents' twins (infra.aws.routing)
            self.caps[f"{name}_small"] = CfnParameter(
                scope, f"Concurrency{_pascal(name)}Small", type="Number",
                default=getattr(settings, f"concurrency_{name}_small"), min_value=2, max_value=1000,
                description=f"The most concurrent {name} functions the small documents' queue "
                f"({name}-small) starts, beside the bulk queue's cap")

    def cap(self, name: str) -> int:
        """The function's concurrency cap as a number token (``ScalingConfig``)."""
        return Token.as_number(self.caps[name].value_as_number)


def _pascal(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))
