"""One received message, start to finish: route it, run it, and decide ack or retry.

The same function serves the local runtime and the Lambda edge. Errors are sorted here, once:

- success: ack.
- ``TerminalError``, or any error on the message's last allowed delivery: record the failure
  for good (the unit fails, or the job gets its error), ack. The poller then fails the job.
- any other error: record it as not final and leave the message for redelivery.
- ``ClaimHeld`` (a fields claim another worker holds): retried even on the last delivery, so the
  queue moves it to the dead-letter queue, whose handler settles a failed result.
- ``UnitBusy`` (another delivery is reading the unit): retried the same way, never failing the
  unit that its holder is reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pkgutil
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from extract.context import HAND_BACK, Delivery, HandlerContext
from extract.delivery_limits import stage_time_limit
from extract.errors import (
    StageTimeLimit,
    TerminalError,
    UnitBusy,
    error_type_of,
    final_at_once,
)
from extract.fields.claim import ClaimHeld, settle_failed_unclaimed
from extract.handlers.index import handle_index, index_together
from extract.handlers.read import handle_read
from extract.handlers.split import handle_split
from extract.handlers.split_together import split_together
from extract.handlers.unit_claim import emit_unit_failed
from extract.messages import (
    ConvertMessage,
    FieldsMessage,
    IndexMessage,
    Message,
    ReadSheetMessage,
    ReadUnitMessage,
    SplitMessage,
    parse_message,
)
from extract.ports import ReceivedMessage
from extract.state import UnitClaim
from lake.events import FailureRecorded, utc_now

__all__ = ["log", "STAGES", "Outcome", "handle_message", "settle_together", "crashes_parser",
           "handle_dead_letter"]

log = logging.getLogger(__name__)

STAGES = {"split": "split", "read_unit": "read", "index": "index", "fields": "fields",
          "convert": "convert", "read_sheet": "read"}


class Outcome(StrEnum):
    ACK = "ack"
    RETRY = "retry"


async def handle_message(ctx: HandlerContext, received: ReceivedMessage) -> Outcome:
    final = received.receive_count >= ctx.queue.max_receives
    try:
        message = parse_message(received.body)
    except ValidationError as error:
        delivery = Delivery(received.receive_count, None, None, ctx.worker, ctx.sink)
        delivery.emit(FailureRecorded, stage="dispatch", error_type="malformed_message",
                      message=str(error)[:2000], final=True, message_id=received.message_id)
        await delivery.commit()
        return Outcome.ACK

    delivery = _delivery(ctx, received, message)
    limit_s = stage_time_limit(received.queue, ctx.config)
    limit = asyncio.timeout(limit_s)
    try:
        async with limit:
            await _dispatch(ctx, message, delivery)
        return Outcome.ACK
    except Exception as caught:  # sorted here; only a failure to record it escapes
        error: Exception = final_at_once(caught)
        if isinstance(caught, TimeoutError) and limit.expired():
            error = StageTimeLimit(f"{message.type} ran past its stage's time limit of "
                                   f"{limit_s:g} s; handed back for another try")
        if isinstance(error, ClaimHeld | UnitBusy):  # never final: the holder settles it
            await _record_failure(ctx, message, delivery, error, final=False,
                                  message_id=received.message_id)
            return Outcome.RETRY
        give_up = isinstance(error, TerminalError) or final
        if final and delivery.attempt >= 2 and error_type_of(error) == "worker_crashed":
            error = crashes_parser(message, delivery.attempt)
        if not isinstance(error, TerminalError):
            log.warning("%s failed (attempt %d): %r", message.type, delivery.attempt, error)
        await _record_failure(ctx, message, delivery, error, final=give_up,
                              message_id=received.message_id)
        return Outcome.ACK if give_up else Outcome.RETRY


def _loaded_on_first_message(spec: str) -> Callable[..., Awaitable[Any]]:
    """The handler ``spec`` names ("module:function", the form of ``extract.readers.READERS``),
    imported when its stage's first message comes.

    The stages a run may never meet (LibreOffice's conversion, sheets, the fields and their
    models) are not imported by every process that handles messages: without them (and the
    readers it does not use, ``extract.readers.READERS``) a text run's process imports for 16 ms
    less before its first job. A stage met once costs its import once."""
    loaded: list[Callable[..., Awaitable[Any]]] = []

    async def handler(*args: Any) -> Any:
        if not loaded:
            loaded.append(pkgutil.resolve_name(spec))
        return await loaded[0](*args)

    handler.__name__ = handler.__qualname__ = spec.rpartition(":")[2]
    return handler


handle_convert = _loaded_on_first_message("extract.handlers.convert:handle_convert")
convert_together = _loaded_on_first_message("extract.handlers.convert_together:convert_together")
handle_fields = _loaded_on_first_message("extract.handlers.fields:handle_fields")
handle_sheet = _loaded_on_first_message("extract.handlers.sheet:handle_sheet")

_TOGETHER: dict[type[Message], Callable[[HandlerContext, Sequence[tuple[Any, Delivery]]],
                                        Awaitable[Sequence[Message]]]] = {
    IndexMessage: index_together, SplitMessage: split_together,
    ConvertMessage: convert_together}
"""The stages whose messages may be handled together, and how (each returns what it left)."""


async def settle_together(ctx: HandlerContext, received: Sequence[ReceivedMessage],
                          hand_back: Callable[[int], None] | None = None
                          ) -> tuple[dict[int, Outcome], list[int]]:
    """Messages of one queue received together, handled together where their stage allows
    (``index_together``, ``split_together``, ``convert_together``: one worker call, one
    commit). Returns the outcomes of those it settled, by position, and the positions it left
    (every one, when the batch fails): each of those must go through ``handle_message`` on its
    own, where its errors are sorted as for any message. A batch never decides a message's
    failure. ``hand_back`` (a position) takes a message the batch gives up early
    (``extract.context.hand_back``) to be handled alone at once; it is then neither settled nor
    left."""
    parsed: list[tuple[int, Message, Delivery]] = []
    for position, one in enumerate(received):
        with contextlib.suppress(ValidationError):
            message = parse_message(one.body)
            parsed.append((position, message, _delivery(ctx, one, message)))
    kinds = {type(message) for _, message, _ in parsed}
    together = _TOGETHER.get(kinds.pop()) if len(kinds) == 1 else None
    settled: dict[int, Outcome] = {}
    early: set[int] = set()
    positions = {id(message): position for position, message, _ in parsed}

    def give_back(messages: Sequence[Message]) -> list[Message]:
        if hand_back is None:
            return list(messages)
        for message in messages:
            early.add(positions[id(message)])
            hand_back(positions[id(message)])
        return []

    if together is not None and len(parsed) > 1:
        token = HAND_BACK.set(give_back)
        try:
            async with asyncio.timeout(stage_time_limit(received[0].queue, ctx.config)):
                left = await together(ctx, [(m, d) for _, m, d in parsed])
            kept = {id(message) for message in left}
            settled = {position: Outcome.ACK for position, message, _ in parsed
                       if id(message) not in kept and position not in early}
        except Exception as error:  # each one again on its own, with its own error sorting
            log.warning("handling %d %s messages together failed; one at a time now: %r",
                        len(parsed), parsed[0][1].type, error)
        finally:
            HAND_BACK.reset(token)
    return settled, [p for p in range(len(received)) if p not in settled and p not in early]


def _delivery(ctx: HandlerContext, received: ReceivedMessage, message: Message) -> Delivery:
    """This delivery of ``message``: its attempt is the queue's receive count."""
    return Delivery(received.receive_count, message.document_id, message.job_id, ctx.worker,
                    ctx.sink)


_HANDLERS = {SplitMessage: handle_split, ReadUnitMessage: handle_read,
             ReadSheetMessage: handle_sheet, ConvertMessage: handle_convert,
             IndexMessage: handle_index, FieldsMessage: handle_fields}


async def _dispatch(ctx: HandlerContext, message: Message, delivery: Delivery) -> None:
    """The stage's handler for the message's type (one per queue)."""
    handler = _HANDLERS.get(type(message))
    if handler is not None:
        await handler(ctx, message, delivery)


def crashes_parser(message: Message, attempts: int) -> TerminalError:
    """The last delivery of a message killed its worker again: the bytes crash the parser.
    A final reason (``crashes_parser``), so later runs do not take the same bytes again and
    again (``ingest.planner.FINAL_REASONS``); ``--retry-failed`` still does, after an upgrade."""
    return TerminalError(f"the {message.type} step killed its worker process on delivery "
                         f"{attempts} as on those before: these bytes crash the parser",
                         error_type="crashes_parser")


async def _record_failure(ctx: HandlerContext, message: Message, delivery: Delivery,
                          error: BaseException, *, final: bool, message_id: str) -> None:
    error_type = error_type_of(error)
    text = str(error)[:2000] or repr(error)
    unit_id = getattr(message, "unit_id", None)
    delivery.emit(FailureRecorded, unit_id=unit_id, stage=STAGES[message.type],
                  error_type=error_type, message=text, final=final, message_id=message_id)
    await delivery.commit()
    if not final:
        return
    if isinstance(message, ReadUnitMessage | ReadSheetMessage):
        # The store's transition first, the event after: a unit another delivery finished
        # meanwhile is not failed, and gets no unit_failed row. A crash between the two is
        # repaired by the next delivery, which finds the unit failed (``emit_unit_failed``).
        if ctx.store.fail_unit(message.job_id, message.unit_id, error_type, text):
            await emit_unit_failed(ctx, delivery, message.job_id, message.unit_id)
    elif isinstance(message, SplitMessage | ConvertMessage):
        ctx.store.set_job_error(message.job_id, error_type)
    elif isinstance(message, IndexMessage):
        ctx.store.mark_index_failed(message.job_id, error_type)
    elif isinstance(message, FieldsMessage):  # no-op when the handler settled it already
        settle_failed_unclaimed(ctx.store, document_id=message.document_id,
                                job_id=message.job_id, strategy=message.strategy,
                                schema_name=message.schema_name, reason=error_type,
                                message=text, at=utc_now())
    ctx.notify()


async def handle_dead_letter(ctx: HandlerContext, received: ReceivedMessage) -> Outcome:
    """A message that used up its deliveries without an answer (its worker kept dying).

    Its unit, or its job, fails at once with reason ``dead_letter`` (a fields message: its result
    is settled failed, taking over the claim a dead worker left); the failure row keeps the
    message so an operator can look at it. Once: the message stays in the dead-letter queue for
    people and is seen again on later passes, which find what it was about settled already and
    record nothing more.
    """
    try:
        message = parse_message(received.body)
    except ValidationError:
        return Outcome.ACK
    if _settled(ctx, message):
        return Outcome.ACK
    delivery = _delivery(ctx, received, message)
    if isinstance(message, ReadUnitMessage | ReadSheetMessage) and ctx.store.claim_unit(
            message.job_id, message.unit_id, received.receive_count, "dead-letter",
            0) is UnitClaim.HELD:
        return Outcome.ACK  # a duplicate of a unit its holder is reading: the holder settles it
    error = TerminalError(
        f"{message.type} message dead-lettered after {ctx.queue.max_receives} deliveries: "
        f"{received.body}",
        error_type="dead_letter",
    )
    await _record_failure(ctx, message, delivery, error, final=True,
                          message_id=received.message_id)
    return Outcome.ACK


def _settled(ctx: HandlerContext, message: Message) -> bool:
    """True when what a dead letter would fail has an outcome already (failed by an earlier pass
    over the same message, or finished before the message died)."""
    job = ctx.store.get_job(message.job_id)
    if job is None:
        return True
    if isinstance(message, ReadUnitMessage | ReadSheetMessage):
        unit = ctx.store.get_unit(message.job_id, message.unit_id)
        return job.status.terminal or unit is None or unit.status.terminal
    if isinstance(message, SplitMessage | ConvertMessage):
        return job.status.terminal or job.error is not None
    if isinstance(message, IndexMessage):
        return job.indexed_at is not None or job.index_error is not None
    if isinstance(message, FieldsMessage):
        claim = ctx.store.get_field_claim(message.job_id, message.strategy)
        return claim is not None and claim.status.terminal
    return False
