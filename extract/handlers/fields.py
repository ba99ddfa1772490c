"""The fields handler: a finished job's page texts in, one schema's fields out, as a stored result.

Order, as in the write-up: claim (a conditional write, before any work), then the model or the
rules, then the ledger's events, then the terminal conditional write of the result. Publishing
is not done here: the publisher (``extract.fields.publish``) reacts to the stored result, so a
worker that dies after the write loses nothing, and the JSON is written by one writer only.

A schema that names a kind of document (the NDA schema does) runs only on documents of that kind
(``extract.fields.kinds``): any other is settled ``not_applicable`` with the classifier's score,
before any model strategy is built or paid for. An offline strategy (``strategies.OFFLINE``) is
built first, and one that checks the kind itself (``KindChecking``: the rules) does the check
and its extraction in one CPU call.

Every way this can end gives a result: a strategy that is missing or refuses the schema, output
that stayed invalid, a job that failed before its text was read, all settle a ``failed`` result
with a reason. Only an error a retry may fix is retried, with the claim released first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from extract.context import Delivery, HandlerContext
from extract.delivery_limits import stage_time_limit
from extract.errors import TerminalError, TransientError, error_type_of
from extract.fields.base import Extraction, KindChecking, PageText, Strategy
from extract.fields.claim import claim, settle, settle_failed_unclaimed
from extract.fields.kinds import applicability_in_worker, decided, scored_kind
from extract.fields.result import (
    FieldResult,
    failed_result,
    not_applicable_result,
    succeeded_result,
)
from extract.fields.schemas import SchemaLoadError, load_schema
from extract.fields.stored_pages import PagesOnDisk
from extract.fields.strategies import OFFLINE, build_strategy
from extract.handlers.split import job_context
from extract.messages import FIELDS_QUEUE, FieldsMessage
from extract.state import Job, JobStatus
from lake.events import utc_now
from lake.layout import page_number_of, pages_prefix

__all__ = ["handle_fields", "pages_on_disk", "read_pages"]

log = logging.getLogger(__name__)

T = TypeVar("T")

CLAIM_MARGIN_S = 30.0
"""A claim outlives its holder's stage time limit by this much before it may be taken over."""


async def handle_fields(ctx: HandlerContext, message: FieldsMessage, delivery: Delivery) -> None:
    job = ctx.store.get_job(message.job_id)
    if job is None:
        raise TerminalError(f"no job {message.job_id}", error_type="unknown_job")
    if job.status is JobStatus.FAILED:
        settle_failed_unclaimed(
            ctx.store, document_id=job.document_id, job_id=job.job_id,
            strategy=message.strategy, schema_name=message.schema_name, reason="job_failed",
            message=f"the job failed ({job.failure_reason}); there is no text to extract from",
            at=utc_now())
        ctx.results_stored()
        return
    if job.status is not JobStatus.SUCCEEDED:
        raise TransientError(f"job {job.job_id} is {job.status}, not finished yet",
                             error_type="job_not_finished")
    ctx = job_context(ctx, job)  # the job's run's choices (its reader names the model provider)

    claimant = f"{ctx.worker}/attempt-{delivery.attempt}"
    lease_s = stage_time_limit(FIELDS_QUEUE, ctx.config) + CLAIM_MARGIN_S
    if not claim(ctx.store, job_id=job.job_id, document_id=job.document_id,
                 strategy=message.strategy, claimant=claimant, at=utc_now(),
                 lease_s=lease_s).ours:
        return  # a redelivery: the result is already written
    started = time.perf_counter()
    built: dict[str, str] = {}  # the strategy's version, once it is known: failures carry it
    try:
        result = await _extract(ctx, message, job, delivery, started, built)
    except asyncio.CancelledError:  # a stop, or the stage's time limit: the claim goes back
        ctx.store.release_fields(job.job_id, message.strategy, claimant)
        raise
    except Exception as error:
        final = delivery.attempt >= ctx.queue.max_receives
        if isinstance(error, TerminalError) or final:
            await delivery.commit()
            settle(ctx.store, failed_result(
                document_id=job.document_id, job_id=job.job_id, strategy=message.strategy,
                schema_name=message.schema_name, reason=error_type_of(error),
                message=str(error) or repr(error),
                processing_ms=1000 * (time.perf_counter() - started),
                model_version=built.get("version")),
                claimant=claimant, at=utc_now())
            ctx.results_stored()
        else:
            ctx.store.release_fields(job.job_id, message.strategy, claimant)
        raise
    await delivery.commit()  # the ledger (model calls) before the database
    if not settle(ctx.store, result, claimant=claimant, at=utc_now()):
        log.warning("fields of %s/%s were settled by someone else while we worked; ours is "
                    "dropped", job.job_id, message.strategy)
    ctx.results_stored()


async def _extract(ctx: HandlerContext, message: FieldsMessage, job: Job, delivery: Delivery,
                   started: float, built: dict[str, str]) -> FieldResult:
    try:
        schema = load_schema(message.schema_name)
    except SchemaLoadError as error:
        raise TerminalError(str(error), error_type="schema_unavailable") from None
    if schema is None:
        raise TerminalError("the fields message names no schema (none)",
                            error_type="schema_unavailable")
    if callable(getattr(ctx.objects, "file_path", None)):  # a listing: inline, no thread
        pages: Sequence[PageText] = pages_on_disk(ctx, job)
    else:
        pages = await asyncio.to_thread(read_pages, ctx, job)  # file reads, off the event loop
    kind = scored_kind(schema)
    strategy: Strategy | None = None
    extraction: Extraction | None = None
    if message.strategy in OFFLINE:  # built before the check: it needs no key, pays nothing
        strategy = _built(message.strategy, ctx, delivery, schema, built)
    if kind is not None and isinstance(strategy, KindChecking):
        # The check and the extraction in one CPU call (``KindChecking``).
        score, extraction = await _validated(
            message.strategy, schema, strategy.extract_of_kind(kind, pages, schema))
        applies = decided(kind, score)
    else:
        if isinstance(pages, PagesOnDisk):  # used in this process from here (a model's
            pages = await asyncio.to_thread(pages.load)  # prompt): read now, off the loop
        applies = await applicability_in_worker(schema, pages, ctx.cpu,
                                                ctx.config.read_timeout_s)
    if not applies.applies:  # not the schema's kind of document: no strategy runs, no values
        return not_applicable_result(
            document_id=job.document_id, job_id=job.job_id, strategy=message.strategy,
            schema_name=message.schema_name, applicability=applies,
            processing_ms=1000 * (time.perf_counter() - started))
    if extraction is None:
        if strategy is None:
            strategy = _built(message.strategy, ctx, delivery, schema, built)
        extraction = await _validated(message.strategy, schema, strategy.extract(pages, schema))
    if not isinstance(extraction.fields, schema):
        raise TerminalError(f"the {message.strategy} strategy returned "
                            f"{type(extraction.fields).__name__}, not {schema.__name__}",
                            error_type="invalid_output")
    return succeeded_result(document_id=job.document_id, job_id=job.job_id,
                            strategy=message.strategy, schema_name=message.schema_name,
                            extraction=extraction,
                            processing_ms=1000 * (time.perf_counter() - started),
                            min_confidence=ctx.config.fields_min_confidence,
                            applicability=applies)


def _built(name: str, ctx: HandlerContext, delivery: Delivery, schema: type[BaseModel],
           built: dict[str, str]) -> Strategy:
    """The strategy, its version noted in ``built`` (a model's failures belong to its group)."""
    strategy = build_strategy(name, ctx, delivery)
    version = getattr(strategy, "version", None)
    built["version"] = version(schema) if callable(version) else strategy.model_version
    return strategy


async def _validated(name: str, schema: type[BaseModel], extracting: Awaitable[T]) -> T:
    """A strategy's answer, its schema's validation error made a terminal one."""
    try:
        return await extracting
    except ValidationError as error:
        raise TerminalError(f"the {name} strategy's output does not fit {schema.__name__}: "
                            f"{error}", error_type="invalid_output") from None


def read_pages(ctx: HandlerContext, job: Job) -> list[PageText]:
    """The job's stored page Markdown, in page order; every planned page must be there."""
    keys = _page_keys(ctx, job)
    pages = [PageText(page_number_of(key),
                      ctx.objects.get(key).decode("utf-8")) for key in keys]
    return sorted(pages, key=lambda page: page.number)


def pages_on_disk(ctx: HandlerContext, job: Job) -> PagesOnDisk:
    """``read_pages`` for a store that keeps objects as files here (``file_path``): the pages
    listed and checked now, their texts read by whoever uses them (``extract.fields.
    stored_pages``: the rules' worker process, not this one)."""
    return PagesOnDisk.of([(page_number_of(key), ctx.objects.file_path(key))
                           for key in _page_keys(ctx, job)])


def _page_keys(ctx: HandlerContext, job: Job) -> list[str]:
    keys = ctx.objects.list(pages_prefix(job.document_id, job.job_id))
    if job.pages is not None and len(keys) != job.pages:
        raise TerminalError(f"{len(keys)} pages stored, {job.pages} expected",
                            error_type="missing_pages")
    return keys
