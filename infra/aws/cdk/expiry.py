"""What expires: every function's logs, and the results bucket's intermediate objects.

Without a log group of its own a function writes to one Lambda creates on first use, kept
forever. Each function here names its own group (``LoggingConfig``), whose retention is the
``LogRetentionDays`` parameter. Page text, converted PDFs and decrypted copies are needed while
their job runs; the ``IntermediateRetentionDays`` parameter bounds how long S3 keeps them (the
poller removes a decrypted copy as soon as its job ends, and sweeps those a crash left:
``extract.poller.remove_stale_decrypted``). Result JSON and reports are what users read: kept.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

__all__ = ["INTERMEDIATE_PREFIXES", "function_log_group", "intermediate_rules"]

INTERMEDIATE_PREFIXES = ("pages/", "converted/", "decrypted/")


def function_log_group(scope: Construct, construct_id: str, retention_days) -> logs.LogGroup:
    """A log group whose retention is ``retention_days`` (a number token: the parameter)."""
    group = logs.LogGroup(scope, construct_id, retention=logs.RetentionDays.ONE_MONTH,
                          removal_policy=RemovalPolicy.DESTROY)
    group.node.default_child.add_property_override("RetentionInDays", retention_days)
    return group


def intermediate_rules(days) -> list[s3.LifecycleRule]:
    """One expiration rule per intermediate prefix, after ``days`` (a number token)."""
    return [s3.LifecycleRule(id=f"expire-{prefix.rstrip('/')}", prefix=prefix,
                             expiration=Duration.days(days)) for prefix in INTERMEDIATE_PREFIXES]
