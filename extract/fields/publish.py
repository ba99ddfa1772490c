"""The publisher: a stored result becomes the caller's JSON and the lake's rows, once.

It reacts to the job store's change, never to the extractor directly, so the extractor has one
job (the result, by a conditional write) and the JSON one writer. Locally the change is read as an
outbox (``JobStore.unpublished_results``: terminal claims with no ``published_at``), woken by the
handlers and checked on a timer; on AWS the same ``publish_results`` is fed by the DynamoDB
stream's terminal images.

Order for each batch: the JSON objects, then the events (``ResultPublished`` and one
``ResultFieldExtracted`` per value, one commit), then ``published_at``. A publisher that dies in
between publishes the batch again: the same bytes at the same key and the same event ids (the
views deduplicate), so each document version is published exactly once as far as any reader
can tell. Only the document's latest version writes ``results/{document_id}.json``: an older
job's result, published late, goes to the lake but never replaces a newer one's JSON.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

from extract.context import HandlerContext
from extract.fields.result import FieldResult
from extract.state import FieldClaim
from lake.events import Event, ResultFieldExtracted, ResultPublished, utc_now
from lake.layout import result_key

__all__ = ["publish_pending", "publish_results", "result_events"]

NDA_COLUMNS = ("effective_date", "jurisdiction", "party", "term")


def result_events(result: FieldResult, worker: str | None = None,
                  extracted_at: datetime | None = None) -> list[Event]:
    """``ResultPublished`` (NDA values also as typed columns) and one row per value;
    ``extracted_at``: when the result was stored (its claim's ``finished_at``), for the lake's
    ``stage_timings``."""
    envelope = {"document_id": result.document_id, "job_id": result.job_id, "worker": worker}
    typed = {}
    if result.schema_name == "nda" and result.extracted_fields:
        typed = {k: result.extracted_fields.get(k) for k in NDA_COLUMNS}
        typed["party"] = list(typed["party"] or [])
    events: list[Event] = [ResultPublished(
        **envelope, **typed, status=result.status, strategy=result.strategy,
        model_version=result.model_version, input_tokens=result.input_tokens,
        output_tokens=result.output_tokens, processing_ms=float(result.processing_ms),
        schema_name=result.schema_name, failure_reason=result.failure_reason,
        document_kind=result.document_kind, applies=result.applies,
        applicability_score=result.applicability_score, extracted_at=extracted_at)]
    events += [ResultFieldExtracted(
        **envelope, field=row.field, value=row.value, value_index=row.value_index,
        strategy=result.strategy, model_version=result.model_version,
        schema_name=result.schema_name, page_number=row.page_number,
        char_offset=row.char_offset, confidence=row.confidence,
        evidence=row.evidence, evidence_start=row.evidence_start, evidence_end=row.evidence_end,
        flag=row.flag) for row in result.values]
    return events


async def publish_results(ctx: HandlerContext, rows: Sequence[FieldClaim]) -> int:
    """Publish these terminal claim rows; returns how many this call marked published."""
    stored = [(FieldResult.model_validate_json(row.result), row.finished_at)
              for row in rows if row.result]
    results = [result for result, _ in stored]
    latest: dict[str, str | None] = {}
    objects: dict[str, tuple[str, bytes, dict[str, str] | None]] = {}
    for result in results:
        if result.document_id not in latest:
            document = ctx.store.get_document(result.document_id)
            latest[result.document_id] = document.latest_job_id if document else None
        if latest[result.document_id] in (result.job_id, None):
            key = result_key(result.document_id)  # two strategies of one job: the later wins
            job = ctx.store.get_job(result.job_id)
            source_path = (job.source_path or job.source_name) if job is not None else None
            objects[key] = (key, result.published_bytes(source_path),
                            {"job_id": result.job_id, "strategy": result.strategy})
    if objects:  # one batch, off the event loop: the folder store fsyncs each file and folder
        await asyncio.to_thread(ctx.objects.put_many, list(objects.values()))
    await ctx.sink.commit([e for result, extracted_at in stored
                           for e in result_events(result, ctx.worker, extracted_at)])
    at = utc_now()
    marked = sum(ctx.store.mark_result_published(r.job_id, r.strategy, at) for r in results)
    if marked:
        ctx.notify()
    return marked


async def publish_pending(ctx: HandlerContext, *, batch: int = 100) -> int:
    """Drain the outbox: every stored result not yet published. Returns results published."""
    published = 0
    while rows := ctx.store.unpublished_results(batch):
        published += await publish_results(ctx, rows)
        if len(rows) < batch:
            break
    return published
