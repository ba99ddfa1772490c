"""The AWS deployment in moto, wired as the CDK app wires it, and a small SQS poller that invokes
the Lambda handlers in-process (Lambda itself does not run in moto).

``Deployment`` creates the buckets, the queues with their DLQs and redrive, the table with its
stream, and the S3 -> EventBridge -> SQS route; ``env`` is what the stack sets on each function.
``invoke_queue`` plays the event source mapping: receive a batch, build Lambda's SQS event,
call the handler, delete what the partial batch response did not report failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from extract.messages import (
    CONVERT_QUEUE,
    FIELDS_QUEUE,
    INDEX_QUEUE,
    READ_QUEUE,
    SHEET_QUEUE,
    SPLIT_QUEUE,
)
from support import awsmoto

INGEST_QUEUE = "ingest"
# Every queue the stack has: the poller reads the depth of each (convert and sheet included).
PIPELINE_QUEUES = (SPLIT_QUEUE, CONVERT_QUEUE, READ_QUEUE, SHEET_QUEUE, INDEX_QUEUE, FIELDS_QUEUE)


@dataclass
class FakeContext:
    """The LambdaContext attributes the handlers and Powertools read."""

    function_name: str = "doclake-test"
    aws_request_id: str = "req-1"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:doclake-test"
    remaining_ms: int = 120_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class Deployment:
    max_receives: int = 2
    prefix: str = field(default_factory=lambda: awsmoto.unique("dl") + "-")

    def __post_init__(self):
        from infra.aws.dynamo.table import create_table
        from infra.aws.sqs import create_queues

        self.s3 = awsmoto.client("s3")
        self.sqs = awsmoto.client("sqs")
        self.dynamodb = awsmoto.client("dynamodb")
        self.events = awsmoto.client("events")
        self.uploads, self.results, self.lake = (awsmoto.bucket() for _ in range(3))
        self.table = f"{self.prefix}state"
        create_table(self.dynamodb, self.table)
        self.urls = create_queues(self.sqs, [INGEST_QUEUE, *PIPELINE_QUEUES], prefix=self.prefix,
                                  max_receives=self.max_receives, visibility_timeout_s=30)
        self._route_uploads()

    def _route_uploads(self) -> None:
        """S3 emits to EventBridge (the bucket property the CDK app overrides); a rule sends the
        uploads bucket's Object Created events to the ingest queue."""
        self.s3.put_bucket_notification_configuration(
            Bucket=self.uploads, NotificationConfiguration={"EventBridgeConfiguration": {}})
        rule = f"{self.prefix}uploads"
        self.events.put_rule(Name=rule, EventPattern=json.dumps({
            "source": ["aws.s3"], "detail-type": ["Object Created"],
            "detail": {"bucket": {"name": [self.uploads]}}}))
        self.events.put_targets(Rule=rule, Targets=[{"Id": "ingest", "Arn": self.arn(INGEST_QUEUE)}])

    def arn(self, queue: str) -> str:
        return self.sqs.get_queue_attributes(QueueUrl=self.urls[queue], AttributeNames=[
            "QueueArn"])["Attributes"]["QueueArn"]

    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": awsmoto.endpoint(), "AWS_DEFAULT_REGION": awsmoto.REGION,
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "DOCLAKE_TABLE": self.table, "DOCLAKE_UPLOADS_BUCKET": self.uploads,
            "DOCLAKE_RESULTS_BUCKET": self.results, "DOCLAKE_LAKE_URI": f"s3://{self.lake}/lake",
            "DOCLAKE_QUEUE_URLS": json.dumps(self.urls),
            "DOCLAKE_MAX_RECEIVES": str(self.max_receives), "DOCLAKE_READER": "text",
            "POWERTOOLS_METRICS_NAMESPACE": "doclake", "POWERTOOLS_DEV": "false",
        }

    def sqs_event(self, queue: str, messages: list[dict]) -> dict:
        arn = self.arn(queue)
        return {"Records": [{
            "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
            "attributes": {"ApproximateReceiveCount": m["Attributes"]["ApproximateReceiveCount"],
                           "SentTimestamp": "0", "SenderId": "test",
                           "ApproximateFirstReceiveTimestamp": "0"},
            "messageAttributes": {}, "md5OfBody": m.get("MD5OfBody", ""),
            "eventSource": "aws:sqs", "eventSourceARN": arn, "awsRegion": awsmoto.REGION,
        } for m in messages]}

    def receive(self, queue: str, *, visibility_s: int = 30) -> list[dict]:
        return self.sqs.receive_message(
            QueueUrl=self.urls[queue], MaxNumberOfMessages=10, VisibilityTimeout=visibility_s,
            MessageSystemAttributeNames=["ApproximateReceiveCount"]).get("Messages", [])

    def invoke_queue(self, queue: str, handler, *, context=None) -> tuple[int, int]:
        """One batch from ``queue`` through ``handler``; returns (records, failures)."""
        messages = self.receive(queue)
        if not messages:
            return 0, 0
        response = handler(self.sqs_event(queue, messages), context or FakeContext())
        failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
        for m in messages:
            if m["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.urls[queue], ReceiptHandle=m["ReceiptHandle"])
        return len(messages), len(failed)

    def stream_records(self) -> list[dict]:
        """Every record of the table's stream so far (what the publisher's trigger delivers)."""
        streams = awsmoto.client("dynamodbstreams")
        arn = self.dynamodb.describe_table(TableName=self.table)["Table"]["LatestStreamArn"]
        records = []
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                                  ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            records += streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
        return records
