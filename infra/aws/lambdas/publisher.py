"""The publisher: reads the DynamoDB table's stream and publishes ``results/{document_id}.json``.

It runs in the extraction image (pydantic and pyarrow), not as a thin zip: a fields result is
published by ``extract.fields.publish.publish_results``, the same code as locally, which writes
the JSON *and* the lake's ``ResultPublished`` / ``ResultFieldExtracted`` events (Parquet) and then
flags the claim published in a DynamoDB transaction. A thin zip would have to re-implement all of
that without pydantic and pyarrow, a second writer of the same JSON and events that could drift
from the local one. The price is an image cold start on a stream consumer, which no caller waits
on synchronously (they poll the result address).

The stream filter (``infra.aws.cdk.stack``) passes two kinds of record; everything else that
reaches here (a replayed batch, a same-status update) is skipped:

- a claim item (``sk = claim#<strategy>``) settled by the fields handler: terminal, still in the
  ``unpublished`` outbox (``gsi_unpublished``). Re-read with a consistent read and skipped once
  ``published_at`` is set, so a replayed stream batch publishes nothing twice;
- a job item whose ``status`` changed to succeeded or failed and whose run asked for **no**
  fields: its status is published with empty fields (``extract.result_json``), so a caller
  polling the address learns that the document is done. A job that asked for fields is left to
  its fields result (which a failed job gets too: ``job_failed``), as ``doclake serve`` does.
"""

from __future__ import annotations

import asyncio

from aws_lambda_powertools import Logger

from extract.context import HandlerContext
from extract.fields.publish import publish_results
from extract.result_json import TERMINAL, publish_result
from extract.state import FieldClaim
from infra.aws.deadline import Deadline
from infra.aws.dynamo.items import claim_from_item, decode_item
from infra.aws.runtime import DirectSink, shared

__all__ = ["logger", "CLAIM_PREFIX", "finished_jobs", "settled_claims", "OutOfTime", "publish", "handler"]

logger = Logger(service="doclake-publisher")

CLAIM_PREFIX = "claim#"


def _image(raw: dict | None) -> dict:
    return decode_item(raw or {})


def finished_jobs(event: dict) -> list[dict]:
    """The job images of the stream records that moved a job without fields to a terminal
    status."""
    jobs = []
    for record in event.get("Records", []):
        change = record.get("dynamodb", {})
        new, old = _image(change.get("NewImage")), _image(change.get("OldImage"))
        if new.get("sk") != "job" or new.get("status") not in TERMINAL:
            continue
        if old.get("status") == new.get("status") or new.get("fields_strategy"):
            continue
        jobs.append(new)
    return jobs


def settled_claims(event: dict) -> list[FieldClaim]:
    """The claim images of the stream records that put a settled result in the outbox."""
    claims: dict[tuple[str, str], FieldClaim] = {}
    for record in event.get("Records", []):
        new = _image(record.get("dynamodb", {}).get("NewImage"))
        if not str(new.get("sk", "")).startswith(CLAIM_PREFIX) or not new.get("gsi_unpublished"):
            continue
        claim = claim_from_item(new)
        if claim.status.terminal and claim.result and claim.published_at is None:
            claims[(claim.job_id, claim.strategy)] = claim  # the latest image of each claim
    return list(claims.values())


class OutOfTime(TimeoutError):
    """The invocation's deadline came before the batch was published: the stream delivers the
    batch again (bisected), and publishing a result twice writes the same JSON."""


async def publish(event: dict, ctx: HandlerContext, deadline: Deadline | None = None) -> int:
    """Publish what this stream batch settled; returns the results published by this call.
    With ``deadline``, each result starts only while it allows."""
    published = 0
    for job in finished_jobs(event):
        if deadline is not None and not deadline.allows():
            raise OutOfTime(f"published {published}; the rest of the batch comes again")
        document = ctx.store.get_document(job["document_id"])
        published += publish_result(ctx.objects, job, document.latest_job_id if document else None)
    fresh = [ctx.store.get_field_claim(c.job_id, c.strategy) for c in settled_claims(event)]
    rows = [c for c in fresh if c is not None and c.published_at is None and c.result]
    if rows and deadline is not None and not deadline.allows():
        raise OutOfTime(f"published {published}; the settled claims stay in the outbox")
    if rows:
        published += await publish_results(ctx, rows)
    return published


@logger.inject_lambda_context
def handler(event, context):
    runtime = shared()
    ctx = runtime.context(DirectSink(runtime.writer), f"aws:{context.function_name}")
    published = asyncio.run(publish(event, ctx, Deadline.of(context, 10)))
    logger.info("published", extra={"records": len(event.get("Records", [])),
                                    "published": published})
    return {"published": published}
