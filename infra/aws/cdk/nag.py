"""cdk-nag's AwsSolutions checks on the stack, and every finding acknowledged with its reason.

``app.build()`` adds the checks (``cdk synth`` and ``cdk deploy`` fail on a finding nobody
explained) and ``tests/test_cdk.py`` synthesizes with them. cdk-nag 3 acknowledges each finding
by its exact id (``AwsSolutions-IAM5[Resource::<Lake5F1B88EA.Arn>/events/*]``), so the ids are
built here from the stack's own logical ids, one reason per kind: a new wildcard, a new bucket
or a new function's grant is a new finding, and it fails until a reason is written below.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations

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


def acknowledge_findings(stack) -> list[tuple[str, str]]:
    """Acknowledge each AwsSolutions finding the stack has on purpose; returns (id, reason)."""
    acknowledged: list[tuple[str, str]] = []

    def ack(finding: str, reason: str) -> None:
        Validations.of(stack).acknowledge(Acknowledgment(id=f"AwsSolutions-{finding}",
                                                         reason=reason))
        acknowledged.append((finding, reason))

    ack("IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "the Lambda basic execution role: its own log group's CreateLogGroup, CreateLogStream "
        "and PutLogEvents, nothing else; a hand-written copy would be the same three actions")
    for action in S3_GRANT_ACTIONS:
        ack(f"IAM5[Action::{action}]",
            "CDK's S3 grant action families (read, write, delete), each given on one bucket's "
            "objects under one key prefix (the Resource findings below)")
    buckets = {"uploads": stack.uploads, "results": stack.results, "lake": stack.lake}
    for name, prefixes in PREFIXES.items():
        logical = Stack.of(stack).get_logical_id(buckets[name].node.default_child)
        for prefix in prefixes:
            ack(f"IAM5[Resource::<{logical}.Arn>/{prefix}]",
                f"the {name} bucket's objects under {prefix.removesuffix('*')}: their keys hold "
                "document and job ids known only at run time")
    table = Stack.of(stack).get_logical_id(stack.table.node.default_child)
    ack(f"IAM5[Resource::<{table}.Arn>/index/*]",
        "the state table's own secondary indexes (queried by status and by sparse outbox)")
    ack("IAM5[Resource::*]",
        "dynamodb:ListStreams alone (CDK's DynamoEventSource): the action has no resource-level "
        "permission")
    ack(f"IAM5[Resource::arn:<AWS::Partition>:glue:<AWS::Region>:<AWS::AccountId>:table/"
        f"{stack.database_name}/*]",
        "the analyst policy reads every table and view of the lake's one database")
    ack("S1", "server access logs would need a fourth bucket and its own retention; object-level "
        "auditing is CloudTrail data events, which an account turns on once for every bucket")
    ack("SQS3", "PublisherFailures is the stream mapping's on-failure destination: a dead-letter "
        "queue in all but name (records the publisher gave up on)")
    if stack.gemini_key is not None:
        ack("SMG4", "the Gemini API key is issued by Google: no rotation function can mint "
            "one; the operator puts a new key with put-secret-value and the functions read it "
            "within a minute")
    return acknowledged


def add_checks(app) -> bool:
    """Run AwsSolutions on every stack of ``app`` at synth; False when cdk-nag is absent (the
    ``cdk`` extra brings it)."""
    try:
        from cdk_nag import AwsSolutionsChecks
    except ImportError:
        return False
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return True
