"""The live progress says what runs and what waits (``infra.local.activity``)."""

from __future__ import annotations

import asyncio
import json

from infra.local.activity import CURRENT_WORK, ActivityBoard, WatchedCpu
from infra.local.queue import SqliteQueue

JOBS = {"j-scan": ("cardinal_rotated_4p.pdf", 4), "j-memo": ("memo.docx", None)}


def _body(job_id: str) -> str:
    return json.dumps({"type": "read_unit", "job_id": job_id, "document_id": "d",
                       "unit_id": "u00001"})


def _ocr_one(path, number, *rest):  # the OCR reader's call, by name
    return number


class _Cpu:
    async def run(self, fn, *args, timeout_s):
        return fn(*args)


def test_the_line_names_the_ocr_page_the_conversion_and_the_documents_waiting():
    board = ActivityBoard(JOBS.get, waiting=lambda: 2, cpu_waiting=lambda: 0)
    scan = board.start("read", _body("j-scan"))
    board.start("convert", _body("j-memo"))
    cpu = WatchedCpu(_Cpu(), board)

    async def ocr_page_three() -> None:
        token = CURRENT_WORK.set(scan)
        try:
            await cpu.run(_ocr_one, "scan.pdf", 3, None, timeout_s=5)
        finally:
            CURRENT_WORK.reset(token)

    asyncio.run(ocr_page_three())
    line = board.describe()
    assert line.startswith("OCR: cardinal_rotated_4p.pdf page 3 of 4; convert: memo.docx (")
    assert line.endswith("; 2 documents waiting for a worker")


def test_work_that_ended_is_no_longer_named_and_calls_waiting_for_a_process_are_counted():
    board = ActivityBoard(JOBS.get, waiting=lambda: 0, cpu_waiting=lambda: 3)
    entry = board.start("convert", _body("j-memo"))
    board.end(entry)
    assert board.describe() == "3 waiting for a CPU process"


def test_waiting_documents_counts_documents_not_messages(tmp_path):
    queue = SqliteQueue(tmp_path / "q.db")
    queue.send_batch("read", ["a", "b", "c"], group="book", pages=352)
    queue.send_batch("read", ["d"], group="letter", pages=1)
    queue.send("split", "e")
    assert queue.waiting_documents(("read", "split")) == 3
    queue.receive("read", max_messages=1)  # the letter's: taken by a worker
    assert queue.waiting_documents(("read", "split")) == 2
