"""Split and read handlers: five-page units, idempotent re-execution, pages never read twice."""

from __future__ import annotations

import pytest
from support.helpers import Harness

from extract.handlers.split import plan_pdf_units
from extract.handling import Outcome, handle_message
from extract.messages import READ_QUEUE, SPLIT_QUEUE, SplitMessage
from extract.state import UnitStatus
from lake.layout import page_key


def test_plan_pdf_units_makes_five_page_runs():
    units = plan_pdf_units(12, 5)
    assert [(u.first_page, u.last_page) for u in units] == [(1, 5), (6, 10), (11, 12)]
    assert [u.unit_id for u in units] == ["u00001", "u00002", "u00003"]
    assert plan_pdf_units(5, 5)[0].last_page == 5 and len(plan_pdf_units(5, 5)) == 1
    with pytest.raises(ValueError):
        plan_pdf_units(3, 0)


async def _split_and_read(harness: Harness, path):
    ingested = harness.planner.ingest(path)
    (split,) = harness.receive(SPLIT_QUEUE)
    assert await handle_message(harness.ctx, split) is Outcome.ACK
    harness.queue.delete(split)
    return ingested


async def test_split_plans_units_and_sends_one_message_per_unit(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 12))
    job = harness.store.get_job(ingested.job_id)
    assert (job.pages, job.units, job.detected_format) == (12, 3, "pdf")
    assert len(harness.receive(READ_QUEUE)) == 3
    planned = harness.sink.of_type("unit_planned")
    assert [(e.first_page, e.last_page) for e in planned] == [(1, 5), (6, 10), (11, 12)]


async def test_a_redelivered_split_sends_no_read_message_again(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 7))
    redelivered = SplitMessage(document_id=ingested.document_id, job_id=ingested.job_id)
    harness.queue.send(SPLIT_QUEUE, redelivered.model_dump_json())
    (again,) = harness.receive(SPLIT_QUEUE)
    await handle_message(harness.ctx, again)
    assert len(harness.receive(READ_QUEUE)) == 2  # the first delivery's two, no more
    assert len(harness.store.list_units(ingested.job_id)) == 2


async def test_a_split_that_died_while_sending_sends_only_the_rest(tmp_path, pdf_factory):
    """25 units, sent in batches of 10: the delivery dies after the first batch."""
    harness = Harness(tmp_path)
    ingested = harness.planner.ingest(pdf_factory("a.pdf", 125))
    real_send_batch = harness.queue.send_batch
    sent = {"batches": 0}

    def dies_after_one_batch(queue, bodies, **kwargs):
        if sent["batches"] == 1:
            raise OSError("killed while sending")
        sent["batches"] += 1
        return real_send_batch(queue, bodies, **kwargs)

    harness.queue.send_batch = dies_after_one_batch
    (split,) = harness.receive(SPLIT_QUEUE)
    assert await handle_message(harness.ctx, split) is Outcome.RETRY
    harness.queue.send_batch = real_send_batch
    harness.queue.change_visibility(split, 0)
    (again,) = harness.receive(SPLIT_QUEUE)
    assert await handle_message(harness.ctx, again) is Outcome.ACK
    bodies = [m.body for m in harness.receive(READ_QUEUE)]
    assert len(bodies) == 25 == len(set(bodies))
    assert len(harness.store.list_units(ingested.job_id)) == 25


async def test_read_stores_pages_then_marks_the_unit_done(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 3))
    (message,) = harness.receive(READ_QUEUE)
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    keys = harness.objects.list(f"pages/{ingested.document_id}/{ingested.job_id}/")
    assert [k.rsplit("/", 1)[1] for k in keys] == ["00001.md", "00002.md", "00003.md"]
    assert harness.objects.get(keys[1]).decode() == "hello a.pdf page 2\n"
    (unit,) = harness.store.list_units(ingested.job_id)
    assert unit.status is UnitStatus.DONE and unit.attempts == 1
    reads = harness.sink.of_type("page_read")
    assert [(e.page_number, e.reader, e.chars) for e in reads] == [
        (1, "text", 19), (2, "text", 19), (3, "text", 19)]


async def test_a_redelivered_unit_skips_stored_pages_and_keeps_event_ids(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 5))
    (message,) = harness.receive(READ_QUEUE)
    await handle_message(harness.ctx, message)
    first_ids = [e.event_id for e in harness.sink.of_type("page_read")]
    reads_before = [c for c in harness.cpu.calls if c[0] == "read_text_layer"]
    assert reads_before[0][1][1] == [1, 2, 3, 4, 5]

    # The worker "died" after storing pages 1-3 and before marking the unit done.
    harness.store._db.execute("UPDATE units SET status = 'running'")
    for page in (4, 5):
        key = page_key(ingested.document_id, ingested.job_id, page)
        harness.objects.delete_prefix(key)
    harness.queue.change_visibility(message, 0)
    (again,) = harness.receive(READ_QUEUE)
    assert again.receive_count == 2
    await handle_message(harness.ctx, again)

    reads = [c for c in harness.cpu.calls if c[0] == "read_text_layer"]
    assert len(reads) == 2 and reads[1][1][1] == [4, 5]
    page_events = harness.sink.of_type("page_read")
    assert [e.event_id for e in page_events[5:]] == first_ids
    done = harness.sink.of_type("unit_done")
    assert done[-1].pages_skipped == 3


async def test_a_done_unit_is_a_no_op_on_redelivery(tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    await _split_and_read(harness, pdf_factory("a.pdf", 2))
    (message,) = harness.receive(READ_QUEUE)
    await handle_message(harness.ctx, message)
    calls, events = len(harness.cpu.calls), len(harness.sink.events)
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    assert len(harness.cpu.calls) == calls and len(harness.sink.events) == events


async def test_a_transient_error_retries_until_the_last_delivery_fails_the_unit(
        tmp_path, pdf_factory):
    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 2))

    async def broken(fn, *args, timeout_s):
        raise OSError("disk hiccup")

    harness.ctx.cpu.run = broken
    outcomes = []
    for _ in range(3):
        (message,) = harness.receive(READ_QUEUE)
        outcomes.append(await handle_message(harness.ctx, message))
        harness.queue.change_visibility(message, 0)
    assert outcomes == [Outcome.RETRY, Outcome.RETRY, Outcome.ACK]
    (unit,) = harness.store.list_units(ingested.job_id)
    assert unit.status is UnitStatus.FAILED and unit.error_type == "OSError"
    failures = harness.sink.of_type("failure")
    assert [f.final for f in failures] == [False, False, True]
    assert len(harness.sink.of_type("unit_failed")) == 1


async def test_a_malformed_message_is_recorded_and_dropped(tmp_path):
    harness = Harness(tmp_path)
    harness.queue.send(READ_QUEUE, '{"type": "read_unit"}')
    (message,) = harness.receive(READ_QUEUE)
    assert await handle_message(harness.ctx, message) is Outcome.ACK
    (failure,) = harness.sink.of_type("failure")
    assert failure.error_type == "malformed_message" and failure.final


async def test_a_dead_lettered_unit_fails_its_job_at_once(tmp_path, pdf_factory):
    from extract.handling import handle_dead_letter
    from extract.poller import poll_once
    from extract.state import JobStatus

    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 2))
    for _ in range(harness.queue.max_receives):  # a worker that dies on every delivery
        (message,) = harness.receive(READ_QUEUE)
        harness.queue.change_visibility(message, 0)
    assert harness.receive(READ_QUEUE) == []
    (dead,) = harness.receive("read-dlq")
    assert await handle_dead_letter(harness.ctx, dead) is Outcome.ACK
    (unit,) = harness.store.list_units(ingested.job_id)
    assert (unit.status, unit.error_type) == (UnitStatus.FAILED, "dead_letter")
    (decision,) = await poll_once(harness.ctx)
    assert (decision.new, decision.reason) == (JobStatus.FAILED, "dead_letter")


async def test_two_malformed_messages_are_two_failures(tmp_path):
    harness = Harness(tmp_path)
    harness.queue.send_batch(READ_QUEUE, ['{"type": "read_unit"}', "not json"])
    for message in harness.receive(READ_QUEUE):
        await handle_message(harness.ctx, message)
    ids = {f.event_id for f in harness.sink.of_type("failure")}
    assert len(ids) == 2


def test_render_pages_respects_the_pixel_cap(pdf_factory):
    from extract.formats.pdf import render_pages

    path = pdf_factory("a.pdf", 2)
    (normal,) = render_pages(path, [1], dpi=72, max_pixels=10_000_000)
    assert normal.mime_type == "image/png" and normal.image.startswith(b"\x89PNG")
    (capped,) = render_pages(path, [2], dpi=600, max_pixels=100_000, image_format="jpeg")
    assert capped.width * capped.height <= 100_000 * 1.01
    assert capped.scale < 600 / 72 and capped.image.startswith(b"\xff\xd8")


async def test_a_duplicate_read_message_while_the_first_is_being_read_backs_off(tmp_path,
                                                                                pdf_factory):
    """Issue 19: the same unit's read message twice (a split that died between send_batch and
    mark_units_sent sends it again); the second arrives while the first is reading. The second
    backs off without reading a page; the first finishes; the second's retry then finds the
    unit done. Each page is read once. (Before: both read every page.)"""
    import asyncio

    from extract.messages import ReadUnitMessage

    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 5))
    (first,) = harness.receive(READ_QUEUE)
    message = ReadUnitMessage.model_validate_json(first.body)
    harness.queue.send(READ_QUEUE, message.model_dump_json())  # the duplicate
    (second,) = harness.receive(READ_QUEUE)

    reading = asyncio.Event()
    real_run = harness.cpu.run

    async def slow_read(fn, *args, timeout_s):
        reading.set()
        await asyncio.sleep(0.5)  # the first delivery is in the middle of its read
        return await real_run(fn, *args, timeout_s=timeout_s)

    harness.cpu.run = slow_read
    first_task = asyncio.ensure_future(handle_message(harness.ctx, first))
    await reading.wait()
    assert await handle_message(harness.ctx, second) is Outcome.RETRY
    assert await first_task is Outcome.ACK
    reads = [c for c in harness.cpu.calls if c[0] == "read_text_layer"]
    assert len(reads) == 1, reads
    assert harness.store.get_unit(ingested.job_id, message.unit_id).status is UnitStatus.DONE
    failures = harness.sink.of_type("failure")
    assert [(f.error_type, f.final) for f in failures] == [("unit_claimed", False)]
    assert await handle_message(harness.ctx, second) is Outcome.ACK  # the retry: done already
    assert len([c for c in harness.cpu.calls if c[0] == "read_text_layer"]) == 1


async def test_a_final_failure_writes_unit_failed_only_after_the_store_failed_the_unit(
        tmp_path, pdf_factory):
    """Issue 19: the store's transition first, the event after. A read's last delivery fails
    while another delivery has finished the unit meanwhile: the store keeps it done and the lake
    gets no unit_failed row. (Before: UnitFailed was committed before fail_unit was tried.)"""
    from extract.errors import CorruptDocument
    from extract.messages import ReadUnitMessage

    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 3))
    (received,) = harness.receive(READ_QUEUE)
    unit_id = ReadUnitMessage.model_validate_json(received.body).unit_id

    async def finished_elsewhere_then_fails(fn, *args, timeout_s):
        harness.store.finish_unit(ingested.job_id, unit_id)  # the other delivery's write
        raise CorruptDocument("page 2 is broken")

    harness.cpu.run = finished_elsewhere_then_fails
    assert await handle_message(harness.ctx, received) is Outcome.ACK
    assert harness.store.get_unit(ingested.job_id, unit_id).status is UnitStatus.DONE
    assert harness.sink.of_type("unit_failed") == []
    assert [(f.error_type, f.final) for f in harness.sink.of_type("failure")] == [
        ("corrupt", True)]


async def test_a_unit_failed_event_lost_in_a_crash_is_written_by_the_next_delivery(
        tmp_path, pdf_factory):
    """The store failed the unit, then the process died before the event: the redelivery finds
    the unit failed and writes its unit_failed event from the store's record."""
    from extract.messages import ReadUnitMessage

    harness = Harness(tmp_path)
    ingested = await _split_and_read(harness, pdf_factory("a.pdf", 3))
    (received,) = harness.receive(READ_QUEUE)
    unit_id = ReadUnitMessage.model_validate_json(received.body).unit_id
    harness.store.fail_unit(ingested.job_id, unit_id, "corrupt", "page 2 is broken")
    assert await handle_message(harness.ctx, received) is Outcome.ACK
    (event,) = harness.sink.of_type("unit_failed")
    assert (event.unit_id, event.error_type, event.message) == (unit_id, "corrupt",
                                                                "page 2 is broken")
