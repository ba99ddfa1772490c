"""The lake's events stay: no worker deletes them, and a bug that does is undone by versioning.

Every function's role gets an explicit deny on deleting objects under the lake's ``events/``
(an explicit deny wins over any allow, including a later grant by mistake); compaction, which
replaces small files by their merged copy, may delete an object (a delete marker on the
versioned bucket) but never a version. The lake bucket is versioned, so what compaction or
anything else removes stays recoverable until the noncurrent version expires
(``NONCURRENT_EVENTS_DAYS``).

Cost tags go on every taggable resource of the stack: ``project`` and ``doclake:stack`` (turn
them on as cost allocation tags in the Billing console), plus ``doclake:function`` on each
function and its role.
"""

from __future__ import annotations

from aws_cdk import Stack, Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3

__all__ = ["NONCURRENT_EVENTS_DAYS", "cost_tags", "protect_lake_events", "tag_costs"]

NONCURRENT_EVENTS_DAYS = 30
EVENTS = "events/*"


def cost_tags(stack_name: str) -> dict[str, str]:
    """The tags every taggable resource of the stack ``stack_name`` carries."""
    return {"project": "doclake", "doclake:stack": stack_name}


def protect_lake_events(stack: Stack, lake: s3.IBucket, *, may_mark_deleted: set[str],
                        names: dict[lambda_.Function, str]) -> None:
    """Deny deletes under the lake's events to every function of ``stack``; those named in
    ``may_mark_deleted`` may still add a delete marker (``s3:DeleteObject``), never remove a
    version."""
    events = lake.arn_for_objects(EVENTS)
    for construct in stack.node.find_all():
        if not isinstance(construct, lambda_.Function):
            continue
        name = names.get(construct, construct.node.id)
        actions = ["s3:DeleteObjectVersion"] if name in may_mark_deleted else [
            "s3:DeleteObject", "s3:DeleteObjectVersion"]
        construct.add_to_role_policy(iam.PolicyStatement(
            sid="LakeEventsAreImmutable", effect=iam.Effect.DENY, actions=actions,
            resources=[events]))


def tag_costs(stack: Stack, functions: dict[str, lambda_.Function]) -> None:
    for key, value in cost_tags(stack.stack_name).items():
        Tags.of(stack).add(key, value)
    for name, function in functions.items():
        Tags.of(function).add("doclake:function", name)
