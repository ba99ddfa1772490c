"""cdk-nag's AwsSolutions checks on the stack, and every finding acknowledged with its reason.

``app.build()`` adds the checks (``cdk synth`` and ``cdk deploy`` fail on a finding nobody
explained) and ``tests/test_cdk.py`` synthesizes with them. cdk-nag 3 acknowledges each finding
by its exact id (``AwsSolutions-IAM5[Resource::<Lake5F1B88EA.Arn>/events/*]``, the resource a
wildcard applies to) on one construct and what it holds, so the ids are built here from the
stack's own logical ids and given to the function, bucket or queue that has the finding: a new
wildcard, a new bucket's grant, a queue without a dead-letter queue or the same finding on
another construct fails until a reason is written below, on that construct.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations

__all__ = ["S3_GRANT_ACTIONS", "PREFIXES", "ANALYST_READS", "acknowledge_findings", "add_checks"]

# CDK's own grant methods (grant_read, grant_read_write, grant_delete) give these action
# families, each on one bucket's objects under one key prefix.
S3_GRANT_ACTIONS = ("s3:Abort*", "s3:DeleteObject*", "s3:GetBucket*", "s3:GetObject*",
                    "s3:List*")
# Each grant's key prefix, per bucket (``infra.aws.cdk.stack``): object keys hold a document or
# job id, known only at run time, so a grant names a prefix, never an object.
PREFIXES = {"uploads": ("uploads/*",),
            "results": ("converted/*", "decrypted/*", "pages/*", "results/*", "reports/*"),
            "lake": ("events/*", "athena-results/*",
                     "events/event_type=eval_run/*", "events/event_type=eval_score/*",
                     "events/event_type=eval_outcome/*")}

# What the analyst policy reads (and, for Athena's results, writes), per bucket.
ANALYST_READS = (("lake", "events/*"), ("lake", "athena-results/*"), ("results", "results/*"),
                 ("results", "reports/*"))


def acknowledge_findings(stack) -> list[tuple[str, str]]:
    """Acknowledge each AwsSolutions finding the stack has on purpose, on the construct that has
    it (a function and its role, a bucket, a queue), never stack-wide: the same finding on any
    other construct still fails the synth. Returns (finding, reason) pairs."""
    acknowledged: list[tuple[str, str]] = []

    def ack(scope, finding: str, reason: str) -> None:
        Validations.of(scope).acknowledge(Acknowledgment(id=f"AwsSolutions-{finding}",
                                                         reason=reason))
        acknowledged.append((finding, reason))

    functions = {**stack.functions, "presigner": stack.presigner}
    buckets = {"uploads": stack.uploads, "results": stack.results, "lake": stack.lake}
    table = Stack.of(stack).get_logical_id(stack.table.node.default_child)
    for function in functions.values():
        _acknowledge_grants(ack, function, buckets, table)
    ack(stack.publisher, "IAM5[Resource::*]",
        "dynamodb:ListStreams alone (CDK's DynamoEventSource): the action has no resource-level "
        "permission")
    ack(stack.analyst_policy, f"IAM5[Resource::arn:<AWS::Partition>:glue:<AWS::Region>:"
        f"<AWS::AccountId>:table/{stack.database_name}/*]",
        "the analyst policy reads every table and view of the lake's one database")
    for name, prefix in ANALYST_READS:
        logical = Stack.of(stack).get_logical_id(buckets[name].node.default_child)
        ack(stack.analyst_policy, f"IAM5[Resource::<{logical}.Arn>/{prefix}]",
            f"analysts read the {name} bucket's objects under {prefix.removesuffix('*')} "
            "(and write their own query results there, for athena-results/)")
    for bucket in buckets.values():
        ack(bucket, "S1", "server access logs would need a fourth bucket and its own retention; "
            "object-level auditing is CloudTrail data events, which an account turns on once "
            "for every bucket")
    ack(stack.publisher_failures, "SQS3", "the stream mapping's on-failure destination: a "
        "dead-letter queue in all but name (records the publisher gave up on)")
    if stack.gemini_key is not None:
        ack(stack.gemini_key_secret, "SMG4", "the Gemini API key is issued by Google: no "
            "rotation function can mint one; the operator puts a new key with put-secret-value "
            "and the functions read it within a minute")
    return acknowledged


def _acknowledge_grants(ack, function, buckets: dict, table: str) -> None:
    """A function's own grants: the basic execution role, CDK's S3 grant families on one
    bucket's prefix each, and the state table's indexes."""
    ack(function, "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "the Lambda basic execution role: its own log group's CreateLogGroup, CreateLogStream "
        "and PutLogEvents, nothing else; a hand-written copy would be the same three actions")
    for action in S3_GRANT_ACTIONS:
        ack(function, f"IAM5[Action::{action}]",
            "CDK's S3 grant action families (read, write, delete), each given on one bucket's "
            "objects under one key prefix (the Resource findings below)")
    for name, prefixes in PREFIXES.items():
        logical = Stack.of(function).get_logical_id(buckets[name].node.default_child)
        for prefix in prefixes:
            ack(function, f"IAM5[Resource::<{logical}.Arn>/{prefix}]",
                f"the {name} bucket's objects under {prefix.removesuffix('*')}: their keys hold "
                "document and job ids known only at run time")
    ack(function, f"IAM5[Resource::<{table}.Arn>/index/*]",
        "the state table's own secondary indexes (queried by status and by sparse outbox)")


def add_checks(app) -> bool:
    """Run AwsSolutions on every stack of ``app`` at synth; False when cdk-nag is absent (the
    ``cdk`` extra brings it)."""
    try:
        from cdk_nag import AwsSolutionsChecks
    except ImportError:
        return False
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return True
