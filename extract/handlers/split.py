"""Prepare and split: sniff the real format, then route the document by it.

- PDF: count the pages, plan five-page units, send one read message a unit.
- Office (doc, docx, ppt, pptx, odt, odp, rtf): hand it to the convert queue (LibreOffice has
  its own concurrency); the convert step splits the PDF the same way (``plan_pdf``).
- Images (PNG, JPEG, TIFF): one image-only PDF page a frame, made and stored here
  (``extract.handlers.image_pdf``), then split as a PDF: read like scanned pages.
- Spreadsheets and CSV: open the workbook once, plan one unit a sheet, read sheet 1 here and
  send sheets 2..n to the sheet queue; an old .xls (parsed whole on open anyway), a
  single-sheet workbook and a CSV file are read whole here.
- Encrypted Office files are decrypted first when a password was given: the document's own
  (kept with its job by ingest, ``job_context``) before the run's ``--password``.

The name's extension is used only in messages, as a hint of what the sender thought it was.
A redelivered split message finds the units already planned and only sends the messages never
confirmed sent (the first delivery may have died between planning and sending).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path, PurePath

from pydantic import SecretStr

from extract import run_choices
from extract.context import Delivery, HandlerContext, release_slot
from extract.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    LimitExceeded,
    TerminalError,
    UnsupportedFormat,
)
from extract.formats.document_text import read_text_document
from extract.formats.office import decrypt_office
from extract.formats.pdf import count_pages
from extract.formats.scratch import scratch_folder
from extract.formats.sniff import (
    IMAGE_FORMATS,
    OFFICE_FORMATS,
    SHEET_FORMATS,
    TEXT_DOCUMENT_FORMATS,
    Format,
    Sniffed,
    read_head,
    sniff_file,
    sniff_head,
)
from extract.formats.spreadsheet import READER as SHEET_READER
from extract.formats.spreadsheet import SheetInfo, SheetLimits, WorkbookPlan, plan_workbook
from extract.formats.text import read_csv
from extract.handlers.image_pdf import stored_image_pdf
from extract.handlers.sources import decrypted_key, local_copy, readable_key
from extract.handlers.stored_pages import stored_pages
from extract.messages import (
    CONVERT_QUEUE,
    READ_QUEUE,
    SHEET_QUEUE,
    ConvertMessage,
    ReadSheetMessage,
    ReadUnitMessage,
    SplitMessage,
)
from extract.readers.base import page_object
from extract.readers.text import READER as TEXT_READER
from extract.readers.text import TextLayerReader, count_and_read_first_pages
from extract.scheduling import guess_pages
from extract.state import Job, Unit
from lake.events import FormatDetected, JobSplit, PageRead, UnitDone, UnitPlanned, UnitStarted
from lake.layout import page_key

__all__ = ["SHEET_KIND", "PDF_KIND", "CSV_READER", "TEXT_DOCUMENT_READER", "SEND_BATCH", "plan_pdf_units",
           "send_unit_messages", "job_context", "plain_first_plan", "job_to_plan", "handle_split",
           "plan_pdf", "PdfPlan", "emit_pdf_plan", "record_pdf_plan", "pages_read_at_split",
           "sheet_limits", "sheet_unit_id", "plan_sheets"]

SHEET_KIND = "sheet"
PDF_KIND = "pdf_pages"  # a run of a PDF's pages (units.kind)
CSV_READER = "csv"
TEXT_DOCUMENT_READER = "text_file"  # plain text, Markdown, HTML and e-mail files
SEND_BATCH = 10  # unit messages flagged sent together (the outbox's step): one SQS request


def plan_pdf_units(pages: int, pages_per_unit: int) -> list[Unit]:
    """Consecutive runs of ``pages_per_unit`` pages; the last one may be shorter."""
    if pages_per_unit < 1:
        raise ValueError("pages_per_unit must be at least 1")
    units = []
    for index, first in enumerate(range(1, pages + 1, pages_per_unit), start=1):
        last = min(first + pages_per_unit - 1, pages)
        units.append(Unit(job_id="", unit_id=f"u{index:05d}", kind=PDF_KIND,
                          first_page=first, last_page=last))
    return units


async def send_unit_messages(ctx: HandlerContext, job: Job, units: Sequence[Unit]) -> None:
    """Send, batch by batch, then flag each batch sent (the outbox rule: a redelivery or a
    crash re-sends only what was never confirmed, so no unit is read twice for it). A sheet
    unit goes to the sheet queue, a run of pages to the read queue. Each message carries the
    pages its document has left to read (``extract.scheduling``): the queues take the
    document with the least work left first."""
    pages_left = sum(max(1, len(u.page_numbers)) for u in units)
    for queue, kind_units in ((SHEET_QUEUE, [u for u in units if u.kind == SHEET_KIND]),
                              (READ_QUEUE, [u for u in units if u.kind != SHEET_KIND])):
        message_cls = ReadSheetMessage if queue == SHEET_QUEUE else ReadUnitMessage
        for start in range(0, len(kind_units), SEND_BATCH):
            batch = kind_units[start:start + SEND_BATCH]
            bodies = [message_cls(document_id=job.document_id, job_id=job.job_id,
                                  unit_id=u.unit_id).model_dump_json() for u in batch]
            ctx.queue.send_batch(queue, bodies, group=job.job_id, pages=pages_left,
                                 arrived_at=job.created_at.timestamp())
            ctx.store.mark_units_sent(job.job_id, [u.unit_id for u in batch])


def job_context(ctx: HandlerContext, job: Job) -> HandlerContext:
    """The context to handle ``job`` with: the choices of the run that created it (its reader,
    models, pages per unit: ``extract.run_choices``) over this process's settings, and, when
    ingest kept a password for this document, that one (it wins over the run's ``--password``)."""
    config = run_choices.apply(ctx.config, job.run_choices)
    password = ctx.store.job_password(job.job_id)
    if password:
        config = config.model_copy(update={"password": SecretStr(password)})
    if config is ctx.config:
        return ctx
    return dataclasses.replace(ctx, config=config)


# Names of binary formats: text content under such a name is a placeholder or a damaged file
# (an Enron-style "Attachment ... not found!" .xls, a PDF without its header), not a document.
_BINARY_SUFFIXES = frozenset({".pdf", ".doc", ".docx", ".xls", ".xlsx", ".xlsm", ".xlsb", ".ppt",
                              ".pptx", ".odt", ".ods", ".odp", ".zip", ".png", ".jpg", ".jpeg",
                              ".tif", ".tiff", ".gif"})


def _claims_binary(job: Job) -> bool:
    return PurePath(job.source_name).suffix.lower() in _BINARY_SUFFIXES


def _hint(job: Job) -> str:
    suffix = PurePath(job.source_name).suffix.lower()
    return f" (the name says {suffix})" if suffix else ""


def plain_first_plan(job: Job | None, delivery: Delivery) -> bool:
    """A first delivery for a job still to plan (not planned, failed or gone): the only one a
    batch (``split_together``, ``convert_together``) takes; any other goes through
    ``job_to_plan`` alone, which knows what a redelivery or a planned job still needs."""
    return (job is not None and delivery.attempt <= 1 and not job.status.terminal
            and not job.error and job.units is None)


async def job_to_plan(ctx: HandlerContext, job_id: str) -> Job | None:
    """The job a split or conversion message should plan, or None when there is nothing to do.

    A job already planned by an earlier delivery (which may have died before sending everything)
    gets only the unit messages never confirmed sent; a terminal or errored job gets nothing."""
    job = ctx.store.get_job(job_id)
    if job is None:
        raise TerminalError(f"no job {job_id}", error_type="unknown_job")
    if job.status.terminal or job.error:
        return None
    if job.units is not None:
        await send_unit_messages(ctx, job, ctx.store.unsent_units(job.job_id))
        return None
    return job


async def handle_split(ctx: HandlerContext, message: SplitMessage, delivery: Delivery) -> None:
    job = await job_to_plan(ctx, message.job_id)
    if job is None:
        return

    ctx = job_context(ctx, job)
    config = ctx.config
    async with local_copy(ctx.objects, job.object_key) as path:
        size = path.stat().st_size
        # The head is read here (a few KB of a file just stored): a PDF is routed by it without
        # a worker call; anything else is parsed in a worker, with a time limit.
        sniffed = sniff_head(read_head(path)) or await ctx.cpu.run(
            sniff_file, path, timeout_s=config.split_timeout_s)
        if sniffed.encrypted and sniffed.format is not Format.PDF:
            try:
                sniffed = await _decrypt(ctx, job, path, sniffed)
            except TerminalError:
                delivery.emit(FormatDetected, detected_format=sniffed.format.value,
                              mime_type=sniffed.mime_type)
                raise
        delivery.emit(FormatDetected, detected_format=sniffed.format.value,
                      mime_type=sniffed.mime_type)
        detected = sniffed.format
        if detected is Format.EMPTY:
            raise EmptyDocument("the file is empty (0 bytes)")
        if size > config.max_file_bytes:
            document = ctx.store.get_document(job.document_id)
            total = max(size, document.bytes if document is not None else 0)
            # Ingest stored no more than the limit and a byte of it: that part goes now, so a
            # rejected file leaves nothing in the store (a retry copies it again).
            ctx.objects.delete_prefix(job.object_key)
            raise LimitExceeded(
                f"the file has {total} bytes, over the limit of {config.max_file_bytes}",
                error_type="file_too_large",
            )
        if sniffed.damaged:
            raise CorruptDocument(f"{sniffed.detail}{_hint(job)}")
        if sniffed.empty:
            raise EmptyDocument(f"{sniffed.detail}{_hint(job)}", error_type="no_content")
        if detected is Format.PDF:
            await plan_pdf(ctx, job, delivery, path, detected.value)
        elif detected in IMAGE_FORMATS:  # one image-only PDF page a frame, then as a PDF
            key, made = await stored_image_pdf(ctx, job, path)
            async with local_copy(ctx.objects, key) as pdf:
                await plan_pdf(ctx, job, delivery, pdf, detected.value,
                               converter=made.get("converter"),
                               conversion_ms=float(made.get("conversion_ms", 0) or 0),
                               converted_bytes=int(made.get("bytes", 0) or 0))
        elif detected in OFFICE_FORMATS:
            # Converted on its own queue; a duplicate convert message is a no-op there.
            await delivery.commit()
            ctx.queue.send(CONVERT_QUEUE, ConvertMessage(
                document_id=job.document_id, job_id=job.job_id).model_dump_json(),
                pages=guess_pages(size), arrived_at=job.created_at.timestamp())
        elif detected in TEXT_DOCUMENT_FORMATS and _claims_binary(job):
            raise UnsupportedFormat(f"the content is {detected.value}, but the name claims a "
                                    f"binary format{_hint(job)}: not read as a text document")
        elif detected in SHEET_FORMATS or detected in TEXT_DOCUMENT_FORMATS or \
                detected is Format.CSV:
            source = readable_key(ctx.objects, job)
            if source == job.object_key:
                await plan_sheets(ctx, job, delivery, path, sniffed)
            else:
                async with local_copy(ctx.objects, source) as decrypted:
                    await plan_sheets(ctx, job, delivery, decrypted, sniffed)
        else:
            detail = f": {sniffed.detail}" if sniffed.detail else ""
            raise UnsupportedFormat(
                f"the content is {detected.value}{detail}, not a format doclake reads{_hint(job)}")
    ctx.notify()


async def _decrypt(ctx: HandlerContext, job: Job, path: Path, sniffed: Sniffed) -> Sniffed:
    """Decrypt an encrypted Office file with the run's password, store the copy, and sniff it."""
    password = ctx.config.password_value
    what = "an encrypted Office file" if sniffed.format is Format.ENCRYPTED_OFFICE else \
        f"a password-protected {sniffed.format.value} file"
    if not password:
        raise EncryptedDocument(f"{what}{_hint(job)} and no password was given "
                                "(--password, or one for this file in --passwords)")
    if sniffed.format in (Format.ODT, Format.ODS, Format.ODP):
        raise EncryptedDocument(f"{what}: decrypting OpenDocument files is not supported")
    folder = str(scratch_folder("decrypt"))
    target = Path(folder) / "decrypted"
    try:
        await ctx.cpu.run(decrypt_office, path, target, password,
                          ctx.config.max_parse_memory_bytes, timeout_s=ctx.config.split_timeout_s)
        inner = await ctx.cpu.run(sniff_file, target, timeout_s=ctx.config.split_timeout_s)
        if inner.encrypted or inner.format in (Format.UNKNOWN, Format.ZIP, Format.EMPTY):
            raise CorruptDocument(f"{what} decrypted to {inner.format.value} content")
        await asyncio.to_thread(ctx.objects.put_file, decrypted_key(job.document_id, job.job_id),
                                target)
    finally:
        with contextlib.suppress(OSError):
            target.unlink()
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return inner


async def plan_pdf(ctx: HandlerContext, job: Job, delivery: Delivery, path: Path,
                   detected_format: str, **split_fields: object) -> None:
    """Count the PDF's pages, plan its units, record them, send their messages.

    While the file is open, the text layer of its first pages is read too
    (``text_pages_at_split``, when the job's reader starts with the text layer): a unit whose
    every page has text is finished here, as a workbook's first sheet is (``plan_sheets``), and
    gets no read message; a small document is then one message, not one a unit, and its file
    is opened once. A unit with a page without text (a scan, a blank page) is sent as before:
    its read finds the pages with text stored and reads only the others. The order is the read
    handler's: pages stored, events durable, then the plan recorded with those units done, in
    one write (``add_units(done=...)``)."""
    config = ctx.config
    first_pages = pages_read_at_split(ctx)
    # (chars, milliseconds) of each page with text read here; an earlier delivery's stored pages
    # are not read or written again (their event is re-emitted from the stored metadata).
    texts: dict[int, tuple[int, float | None]] = {}
    if first_pages:
        earlier = await _stored_pages(ctx, job)
        # The split's own limit, and a unit read's for the pages (delivery_limits allows both).
        pages, read = await ctx.cpu.run(
            count_and_read_first_pages, path, config.password_value, first_pages,
            config.max_pages, ctx.worker_objects, job.document_id, job.job_id, sorted(earlier),
            timeout_s=config.split_timeout_s + config.read_timeout_s)
        texts.update((n, (chars, None)) for n, chars in earlier.items() if chars)
    else:
        pages, read = await ctx.cpu.run(count_pages, path, config.password_value,
                                        timeout_s=config.split_timeout_s), []
    planned = await emit_pdf_plan(ctx, job, delivery, pages, read, texts, **split_fields)
    release_slot()  # what is left waits (the events' flush) or is quick (the store, the sends)
    await delivery.commit()
    await record_pdf_plan(ctx, job, delivery.attempt, planned, detected_format)


@dataclasses.dataclass(frozen=True)
class PdfPlan:
    """A PDF's units, those finished at the split (every page read here), and its page count."""

    units: list[Unit]
    read_here: list[Unit]
    pages: int


async def emit_pdf_plan(ctx: HandlerContext, job: Job, delivery: Delivery, pages: int,
                        read: Sequence[tuple[int, str, float, bool]],
                        texts: dict[int, tuple[int, float | None]],
                        **split_fields: object) -> PdfPlan:
    """Plan the units of a PDF of ``pages`` pages, store the pages read here that the worker
    did not, and emit the plan's events (the split, each unit, and the units finished here with
    their pages); the caller commits them, then records the plan (``record_pdf_plan``).
    ``texts``: pages an earlier delivery stored, by number (characters, no time)."""
    config = ctx.config
    if pages > config.max_pages:
        raise LimitExceeded(f"{pages} pages, over the limit of {config.max_pages}",
                            error_type="too_many_pages")
    units = [u.model_copy(update={"job_id": job.job_id})
             for u in plan_pdf_units(pages, config.pages_per_unit)]
    with_text = [(number, text, ms, stored) for number, text, ms, stored in read if text.strip()]
    texts = {**texts, **{number: (len(text), ms) for number, text, ms, _ in with_text}}
    read_here = [u for u in units if all(n in texts for n in u.page_numbers)]
    unstored = [(number, text) for number, text, _, stored in with_text if not stored]
    if unstored:  # no worker-side store (a Lambda): the pages go in from here, before events
        await asyncio.to_thread(ctx.objects.put_many, [
            page_object(job.document_id, job.job_id, number, text, TEXT_READER)
            for number, text in unstored])
    delivery.emit(JobSplit, pages=pages, units=len(units), pages_per_unit=config.pages_per_unit,
                  **split_fields)
    for unit in units:
        delivery.emit(UnitPlanned, unit_id=unit.unit_id, kind=unit.kind,
                      first_page=unit.first_page, last_page=unit.last_page)
    for unit in read_here:
        delivery.emit(UnitStarted, unit_id=unit.unit_id, kind=unit.kind)
        for number in unit.page_numbers:
            chars, ms = texts[number]
            delivery.emit(PageRead, unit_id=unit.unit_id, page_number=number,
                          reader=TEXT_READER, chars=chars, duration_ms=ms,
                          object_key=page_key(job.document_id, job.job_id, number))
        skipped = sum(texts[n][1] is None for n in unit.page_numbers)
        delivery.emit(UnitDone, unit_id=unit.unit_id, pages=len(unit.page_numbers),
                      pages_skipped=skipped,
                      duration_ms=sum(texts[n][1] or 0.0 for n in unit.page_numbers))
    return PdfPlan(units, read_here, pages)


async def record_pdf_plan(ctx: HandlerContext, job: Job, attempt: int, plan: PdfPlan,
                          detected_format: str) -> None:
    """Once the plan's events are durable: record the units, those read here done, in one
    write, then send the others' read messages (none when another delivery planned it)."""
    if not ctx.store.add_units(job.job_id, plan.units, pages=plan.pages,
                               detected_format=detected_format,
                               done=[u.unit_id for u in plan.read_here], attempt=attempt):
        return  # planned by another delivery meanwhile: it sends the messages
    await send_unit_messages(ctx, job, [u for u in plan.units if u not in plan.read_here])


async def _stored_pages(ctx: HandlerContext, job: Job) -> dict[int, int]:
    """The job's text pages stored by an earlier delivery of its split (one that died before
    it recorded its units), by number, with their characters: a first delivery finds none."""
    stored = await stored_pages(ctx.objects, job.document_id, job.job_id)
    return {number: int(metadata.get("chars", 0)) for number, metadata in stored.items()
            if metadata.get("reader") == TEXT_READER}


def pages_read_at_split(ctx: HandlerContext) -> int:
    """Pages to read at the split: ``text_pages_at_split`` rounded down to whole units, when the
    job's readers start with the text layer; else 0."""
    config = ctx.config
    chain = ctx.reader_chain()
    if not chain.readers or not isinstance(chain.readers[0], TextLayerReader):
        return 0
    return config.text_pages_at_split - config.text_pages_at_split % config.pages_per_unit


def sheet_limits(ctx: HandlerContext) -> SheetLimits:
    config = ctx.config
    return SheetLimits(max_cells=config.max_sheet_cells, max_chars=config.max_sheet_chars,
                       max_memory_bytes=config.max_parse_memory_bytes)


def sheet_unit_id(position: int) -> str:
    return f"s{position:05d}"


async def plan_sheets(ctx: HandlerContext, job: Job, delivery: Delivery, path: Path,
                      sniffed: Sniffed) -> None:
    """One unit a sheet. The sheets read while the workbook was open are stored and their
    units finished here; the others are sent to the sheet queue.

    The order keeps a crash harmless: texts stored, events durable, then the units recorded,
    those read here done and flagged sent in the same write (``add_units(done=...)``). A
    delivery dying after the units were recorded leaves the others unsent, and the redelivery
    sends them: the sheet reader then finds their text stored and reads nothing again.
    """
    config = ctx.config
    limits = sheet_limits(ctx)
    fmt = sniffed.format
    if fmt is Format.CSV:
        name = PurePath(job.source_name).stem or job.source_name
        text = await ctx.cpu.run(read_csv, path, name, limits, sniffed.encoding,
                                 timeout_s=config.split_timeout_s)
        plan = WorkbookPlan([SheetInfo(1, name, "visible", "worksheet")], [text])
        reader = CSV_READER
    elif fmt in TEXT_DOCUMENT_FORMATS:  # one page, read here (plain text, Markdown, HTML, e-mail)
        name = PurePath(job.source_name).name or job.source_name
        text = await ctx.cpu.run(read_text_document, path, fmt.value, limits, sniffed.encoding,
                                 timeout_s=config.split_timeout_s)
        plan = WorkbookPlan([SheetInfo(1, name, "visible", "document")], [text])
        reader = TEXT_DOCUMENT_READER
    else:
        plan = await ctx.cpu.run(plan_workbook, path, fmt, limits, fmt is Format.XLS,
                                 timeout_s=config.split_timeout_s)
        reader = SHEET_READER
    if not plan.sheets:
        raise EmptyDocument("the workbook has no sheets", error_type="no_content")
    if len(plan.texts) == len(plan.sheets) and not any(t.cells for t in plan.texts):
        raise EmptyDocument(f"no cell of the {fmt.value} file holds a value",
                            error_type="no_content")

    units = [Unit(job_id=job.job_id, unit_id=sheet_unit_id(s.position), kind=SHEET_KIND,
                  first_page=s.position, last_page=s.position, sheet_name=s.name)
             for s in plan.sheets]
    by_position = {u.first_page: u for u in units}
    read_here = [by_position[t.position] for t in plan.texts]
    await asyncio.to_thread(ctx.objects.put_many, [
        page_object(job.document_id, job.job_id, t.position, t.text, reader)
        for t in plan.texts])

    delivery.emit(JobSplit, pages=len(units), units=len(units), pages_per_unit=1)
    for unit in units:
        delivery.emit(UnitPlanned, unit_id=unit.unit_id, kind=unit.kind,
                      first_page=unit.first_page, last_page=unit.last_page,
                      sheet_name=unit.sheet_name)
    for text in plan.texts:
        unit = by_position[text.position]
        delivery.emit(UnitStarted, unit_id=unit.unit_id, kind=unit.kind)
        delivery.emit(PageRead, unit_id=unit.unit_id, page_number=text.position, reader=reader,
                      chars=len(text.text), duration_ms=text.duration_ms,
                      object_key=page_key(job.document_id, job.job_id, text.position),
                      sheet_name=unit.sheet_name)
        delivery.emit(UnitDone, unit_id=unit.unit_id, pages=1, pages_skipped=0,
                      duration_ms=text.duration_ms)
    await delivery.commit()
    if not ctx.store.add_units(job.job_id, units, pages=len(units), detected_format=fmt.value,
                               done=[u.unit_id for u in read_here], attempt=delivery.attempt):
        return  # planned by another delivery meanwhile: it sends the messages
    await send_unit_messages(ctx, job, [u for u in units if u not in read_here])
