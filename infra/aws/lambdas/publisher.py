"""The publisher: reads the DynamoDB table's stream and publishes a document's result JSON when
its latest job ends (``infra.serve_results``). Thin zip: boto3 (from the Lambda runtime) and the
standard library; no pydantic, no pyarrow.

A job item whose ``status`` changed to succeeded or failed is published; every other record
(units, leases, a job still running, the same status again) is skipped. Publishing is
idempotent (the result carries its job id), so a stream batch retried after a crash is safe.
"""

from __future__ import annotations

import os

from boto3.dynamodb.types import TypeDeserializer

from infra.aws.s3 import S3ObjectStore
from infra.serve_results import TERMINAL, publish_result

_DES = TypeDeserializer()
_clients: dict = {}


def _image(raw: dict | None) -> dict:
    return {k: _DES.deserialize(v) for k, v in (raw or {}).items()}


def finished_jobs(event: dict) -> list[dict]:
    """The job images of the stream records that moved a job to a terminal status."""
    jobs = []
    for record in event.get("Records", []):
        change = record.get("dynamodb", {})
        new, old = _image(change.get("NewImage")), _image(change.get("OldImage"))
        if new.get("sk") != "job" or new.get("status") not in TERMINAL:
            continue
        if old.get("status") == new.get("status"):
            continue
        jobs.append(new)
    return jobs


def publish(event: dict, *, dynamodb, objects, table: str) -> int:
    published = 0
    for job in finished_jobs(event):
        item = dynamodb.get_item(TableName=table, ConsistentRead=True, Key={
            "pk": {"S": f"doc#{job['document_id']}"}, "sk": {"S": "document"}}).get("Item")
        latest = _image(item).get("latest_job_id") if item else None
        published += publish_result(objects, job, latest)
    return published


def handler(event, context=None):
    if not _clients:
        import boto3

        _clients["dynamodb"] = boto3.client("dynamodb")
        _clients["objects"] = S3ObjectStore(boto3.client("s3"), os.environ["DOCLAKE_RESULTS_BUCKET"])
    return {"published": publish(event, dynamodb=_clients["dynamodb"],
                                 objects=_clients["objects"], table=os.environ["DOCLAKE_TABLE"])}
