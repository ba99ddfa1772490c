"""One moto server per test process, for the contract suite's factories (which get no fixtures)
and for the AWS tests: boto3 clients on 127.0.0.1, never a real account."""

from __future__ import annotations

import atexit
import logging
import os
import uuid
from collections.abc import Sequence

import pytest

REGION = "us-east-1"
_server = None
_endpoint: str | None = None


def endpoint() -> str:
    global _server, _endpoint
    if _endpoint is None:
        server_module = pytest.importorskip("moto.server", reason="moto[server] is not installed")
        pytest.importorskip("boto3", reason="boto3 is not installed (pip install -e '.[aws]')")
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            os.environ.setdefault(name, "testing")  # pyarrow's S3 client reads these
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        _server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        _server.start()
        host, port = _server.get_host_and_port()
        _endpoint = f"http://{host}:{port}"
        atexit.register(_server.stop)
    return _endpoint


def client(service: str):
    import boto3

    return boto3.client(service, endpoint_url=endpoint(), region_name=REGION,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def bucket() -> str:
    name = unique("doclake")
    client("s3").create_bucket(Bucket=name)
    return name


def lake_uri(bucket_name: str, prefix: str = "lake") -> str:
    """An s3:// lake URI that names the moto endpoint itself (``lake.s3.open_s3``)."""
    host = endpoint().split("://", 1)[1]
    return f"s3://{bucket_name}/{prefix}?endpoint_override={host}&scheme=http&region={REGION}"


# --- factories for tests/test_contracts.py ------------------------------------------------------


def s3_object_store(tmp):
    from infra.aws.s3 import S3ObjectStore

    return S3ObjectStore(client("s3"), bucket(), prefix="objects")


def sqs_queue(tmp, *, max_receives: int = 2):
    from infra.aws.sqs import SqsQueue

    sqs = client("sqs")
    urls = create_queues(sqs, ["work"], prefix=unique("q") + "-", max_receives=max_receives,
                         visibility_timeout_s=30)
    return SqsQueue(sqs, urls, max_receives=max_receives)


def dynamo_job_store(tmp):
    from infra.aws.dynamo.store import DynamoJobStore, create_table

    table = unique("jobs")
    dynamodb = client("dynamodb")
    create_table(dynamodb, table)
    return DynamoJobStore(dynamodb, table)


def s3_event_sink(tmp):
    from infra.aws.sink import InvocationCommitter
    from lake.writer import ParquetEventWriter

    uri = lake_uri(bucket())
    return InvocationCommitter(ParquetEventWriter.for_uri(uri)), uri


def create_queues(client, names: Sequence[str], *, prefix: str = "doclake-",
                  max_receives: int = 5, visibility_timeout_s: int = 360,
                  retention_s: int = 1_209_600) -> dict[str, str]:
    """Each queue with its DLQ and a redrive policy, as the CDK app declares them; returns the
    port-name -> URL map ``SqsQueue`` takes. Idempotent (CreateQueue returns an existing URL)."""
    import json

    from extract.messages import dead_letter_queue

    urls: dict[str, str] = {}
    for name in names:
        dlq = dead_letter_queue(name)
        urls[dlq] = client.create_queue(QueueName=f"{prefix}{dlq}", Attributes={
            "MessageRetentionPeriod": str(retention_s)})["QueueUrl"]
        arn = client.get_queue_attributes(QueueUrl=urls[dlq], AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        urls[name] = client.create_queue(QueueName=f"{prefix}{name}", Attributes={
            "VisibilityTimeout": str(visibility_timeout_s),
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn,
                                         "maxReceiveCount": str(max_receives)}),
        })["QueueUrl"]
    return urls
