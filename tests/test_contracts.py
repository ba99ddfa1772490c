"""The ports' contracts (``extract/ports.py``), one suite per port, run against every adapter.

Each fixture is parametrized over the factories in ``ADAPTERS``: the local adapters today; the AWS
issue adds its moto-backed ones to the same lists, and every test below then runs against them
unchanged. A test here states what the handlers rely on, not how one adapter does it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support import awsmoto, cpu_tasks

from extract.errors import TransientError, WorkerTimeout
from extract.handlers.split import plan_pdf_units
from extract.ports import NewVersion
from extract.state import ClaimStatus, JobStatus, UnitStatus
from infra.aws.cpu import SubprocessRunner
from infra.local.cpu import ProcessPoolRunner
from infra.local.jobstore import SqliteJobStore
from infra.local.objectstore import FolderObjectStore
from infra.local.queue import SqliteQueue
from infra.local.search import Fts5SearchIndex
from lake.catalog import query
from lake.events import JobCreated, utc_now
from lake.writer import GroupCommitter, ParquetEventWriter

ADAPTERS = {
    "object_store": {"folder": lambda tmp: FolderObjectStore(tmp / "objects"),
                     "s3_moto": awsmoto.s3_object_store},
    "queue": {"sqlite": lambda tmp: SqliteQueue(tmp / "queue.db", max_receives=2),
              "sqs_moto": awsmoto.sqs_queue},
    "job_store": {"sqlite": lambda tmp: SqliteJobStore(tmp / "jobs.db"),
                  "dynamodb_moto": awsmoto.dynamo_job_store},
    "search_index": {"fts5": lambda tmp: Fts5SearchIndex(tmp / "search.db")},
    "cpu_runner": {"process_pool": lambda tmp: ProcessPoolRunner(2),
                   "lambda_subprocess": lambda tmp: SubprocessRunner(2)},
    "event_sink": {"group_commit_parquet": lambda tmp: (
        GroupCommitter(ParquetEventWriter.for_uri(str(tmp / "lake")), max_delay_s=0.01),
        str(tmp / "lake")),
        "invocation_s3_moto": awsmoto.s3_event_sink},
}


def _adapter(port: str):
    factories = ADAPTERS[port]
    return pytest.fixture(params=sorted(factories))(
        lambda request, tmp_path: factories[request.param](tmp_path))


object_store = _adapter("object_store")
queue = _adapter("queue")
job_store = _adapter("job_store")
search_index = _adapter("search_index")
cpu_runner = _adapter("cpu_runner")
event_sink = _adapter("event_sink")


# --- object store ------------------------------------------------------------------------------


def test_object_store_round_trip_metadata_listing_and_delete(object_store, tmp_path: Path):
    object_store.put("pages/d/j/00002.md", b"two", metadata={"reader": "text", "chars": "3"})
    object_store.put("pages/d/j/00001.md", b"one")
    source = tmp_path / "upload.pdf"
    source.write_bytes(b"%PDF-1.7 bytes")
    object_store.put_file("uploads/d/j/source", source)
    assert object_store.get("pages/d/j/00002.md") == b"two"
    assert object_store.head("pages/d/j/00002.md") == {"reader": "text", "chars": "3"}
    assert object_store.head("pages/d/j/00001.md") == {}
    assert object_store.head("pages/d/j/00003.md") is None
    assert object_store.list("pages/d/j/") == ["pages/d/j/00001.md", "pages/d/j/00002.md"]
    with object_store.local_path("uploads/d/j/source") as path:
        assert path.read_bytes() == b"%PDF-1.7 bytes"
    with pytest.raises(KeyError):
        object_store.get("pages/d/j/00009.md")
    assert object_store.delete_prefix("pages/d/") == 2
    assert object_store.list("pages/") == []


def test_object_store_put_many_stores_each_object_with_its_metadata(object_store):
    object_store.put_many([(f"pages/d/j/{n:05d}.md", f"page {n}".encode(),
                            {"reader": "text", "chars": str(n)}) for n in range(1, 6)])
    assert object_store.list("pages/d/j/") == [f"pages/d/j/{n:05d}.md" for n in range(1, 6)]
    assert object_store.get("pages/d/j/00003.md") == b"page 3"
    assert object_store.head("pages/d/j/00004.md") == {"reader": "text", "chars": "4"}


def test_object_store_lists_by_key_prefix_across_folders(object_store):
    for key in ("pages/d/j/00001.md", "pages/d/j2/00001.md", "pages/dx/j/00001.md",
                "uploads/d/j/source"):
        object_store.put(key, b"x")
    assert object_store.list("pages/d/") == ["pages/d/j/00001.md", "pages/d/j2/00001.md"]
    assert object_store.list("pages/d") == ["pages/d/j/00001.md", "pages/d/j2/00001.md",
                                            "pages/dx/j/00001.md"]
    assert object_store.list("pages/d/j/0") == ["pages/d/j/00001.md"]
    assert object_store.list("pages/none/") == [] and object_store.list("nothing") == []
    assert len(object_store.list("")) == 4


def test_folder_store_lists_no_link_and_no_temporary_file(tmp_path):
    """A link inside the store (to a file or a folder, here one outside it) is not an object,
    and a temporary file of an unfinished write is not either."""
    store = FolderObjectStore(tmp_path / "objects")
    store.put("pages/d/j/00001.md", b"one")
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret.md").write_text("not ours")
    folder = tmp_path / "objects" / "pages" / "d" / "j"
    (folder / "00002.md").symlink_to(outside / "deep" / "secret.md")
    (folder / "more").symlink_to(outside / "deep")
    (folder / ".00003.md.0f.tmp").write_text("half")
    assert store.list("pages/") == ["pages/d/j/00001.md"]


def test_folder_store_without_xattrs_keeps_metadata_in_a_sidecar(tmp_path):
    store = FolderObjectStore(tmp_path / "objects")
    store._xattrs = False  # a filesystem without user extended attributes
    store.put("pages/d/j/00001.md", b"text", metadata={"reader": "ocr"})
    assert store.head("pages/d/j/00001.md") == {"reader": "ocr"}
    assert store.list("pages/") == ["pages/d/j/00001.md"]
    assert FolderObjectStore(tmp_path / "objects").head("pages/d/j/00001.md") == {"reader": "ocr"}


def test_object_store_put_files_stores_each_file_whole_or_to_the_limit(object_store, tmp_path):
    sources = []
    for n in range(3):
        source = tmp_path / f"upload{n}.pdf"
        source.write_bytes(b"%PDF-1.7 " + b"x" * (10 * n))
        sources.append((f"uploads/d{n}/j{n}", source))
    object_store.put_files(sources)
    assert object_store.list("uploads/") == [key for key, _ in sources]
    assert object_store.get("uploads/d2/j2") == b"%PDF-1.7 " + b"x" * 20
    object_store.put_files([("uploads/big/j", sources[2][1])], max_bytes=11)
    assert object_store.get("uploads/big/j") == b"%PDF-1.7 xxx"  # the limit and one byte


def test_object_store_put_files_stores_only_the_bytes_that_were_hashed(object_store, tmp_path):
    import errno
    import hashlib

    source = tmp_path / "upload.pdf"
    source.write_bytes(b"%PDF-1.7 as hashed")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    object_store.put_files([("uploads/d/j", source)], digests={"uploads/d/j": digest})
    assert object_store.get("uploads/d/j") == b"%PDF-1.7 as hashed"
    source.write_bytes(b"%PDF-1.7 rewritten since")  # after its hash, before its copy
    with pytest.raises(OSError) as changed:
        object_store.put_files([("uploads/e/j", source)], digests={"uploads/e/j": digest})
    assert changed.value.errno == errno.ESTALE
    assert object_store.list("uploads/") == ["uploads/d/j"]


def test_folder_store_put_files_fsyncs_a_shared_parent_once(tmp_path, monkeypatch):
    """A batch of uploads, a new folder each under ``uploads/``: every rename and every new
    folder durable, for one fsync of ``uploads/`` (a file at a time fsynced it once a file)."""
    from infra.local import durable

    synced: list[Path] = []
    real = durable.fsync_dir
    monkeypatch.setattr(durable, "fsync_dir", lambda folder: (synced.append(folder), real(folder)))
    monkeypatch.setattr(durable, "_syncfs", lambda: None)  # a system without syncfs
    store = FolderObjectStore(tmp_path / "objects")
    store.put("uploads/.keep", b"")  # uploads/ exists already, as after a home's first batch
    synced.clear()
    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF-1.7")
    store.put_files([(f"uploads/d{n:02d}/j", source) for n in range(16)])
    uploads = tmp_path / "objects" / "uploads"
    assert sorted(synced) == [uploads] + [uploads / f"d{n:02d}" for n in range(16)]
    assert (uploads / "d07" / "j").read_bytes() == b"%PDF-1.7"
    assert oct((uploads / "d07").stat().st_mode & 0o777) == oct(0o700)


def test_folder_store_put_files_stores_none_when_one_source_is_a_link(tmp_path):
    store = FolderObjectStore(tmp_path / "objects")
    good = tmp_path / "good.pdf"
    good.write_bytes(b"%PDF-1.7")
    link = tmp_path / "link.pdf"
    link.symlink_to(good)
    with pytest.raises(OSError):
        store.put_files([("uploads/a/j", good), ("uploads/b/j", link)])
    assert store.list("uploads/") == []
    leftovers = [p for p in (tmp_path / "objects").rglob("*") if p.is_file()]
    assert leftovers == []  # no temporary file either


def test_object_store_overwrite_is_whole(object_store):
    object_store.put("k/a", b"first version")
    object_store.put("k/a", b"2nd")
    assert object_store.get("k/a") == b"2nd"


def test_folder_store_makes_renames_and_new_folders_durable(tmp_path, monkeypatch):
    """A rename is durable only once its folder is fsynced, and a new folder once its parent is."""
    from infra.local import durable

    synced: list[Path] = []
    real = durable.fsync_dir
    monkeypatch.setattr(durable, "fsync_dir", lambda folder: (synced.append(folder), real(folder)))
    store = FolderObjectStore(tmp_path / "objects")
    store.put("pages/d/j/00001.md", b"text")
    root = tmp_path / "objects"
    for folder in (root, root / "pages", root / "pages" / "d", root / "pages" / "d" / "j"):
        assert folder in synced, folder


# --- queue -------------------------------------------------------------------------------------


def test_queue_hides_a_received_message_and_redelivers_it_counted(queue):
    # Whole seconds: SQS counts visibility timeouts in seconds (the SQLite twin takes fractions).
    queue.send("work", "a")
    (first,) = queue.receive("work", visibility_timeout_s=1)
    assert (first.body, first.receive_count) == ("a", 1)
    assert queue.receive("work", visibility_timeout_s=1) == []
    time.sleep(1.2)
    (again,) = queue.receive("work", visibility_timeout_s=30)
    assert (again.body, again.receive_count) == ("a", 2)
    queue.delete(first)  # a stale receipt is ignored
    assert queue.depth("work").in_flight == 1
    queue.delete(again)
    assert (queue.depth("work").visible, queue.depth("work").in_flight) == (0, 0)


def test_queue_redrives_after_max_receives(queue):
    queue.send("work", "poison")
    for _ in range(queue.max_receives):
        (message,) = queue.receive("work", visibility_timeout_s=30)
        queue.change_visibility(message, 0)
    assert queue.receive("work") == []
    assert queue.depth("work").dead_letter == 1
    (dead,) = queue.receive("work-dlq", visibility_timeout_s=30)
    assert dead.body == "poison"


def test_queue_batch_send_and_receive(queue):
    ids = queue.send_batch("work", [f"m{i}" for i in range(10)], group="job")
    assert len(set(ids)) == 10
    got = queue.receive("work", max_messages=10, visibility_timeout_s=30)
    assert sorted(m.body for m in got) == sorted(f"m{i}" for i in range(10))


# --- job store ---------------------------------------------------------------------------------


def _version(job_id: str = "j") -> NewVersion:
    return NewVersion(document_id="d", job_id=job_id, source_name="a.pdf", source_key="/a.pdf",
                      sha256="s", bytes=10, version=1, object_key=f"uploads/d/{job_id}",
                      created_at=utc_now())


def _units(pages: int):
    return [u.model_copy(update={"job_id": "j"}) for u in plan_pdf_units(pages, 5)]


def test_job_store_transitions_are_conditional(job_store):
    job_store.create_job(_version())
    assert job_store.add_units("j", _units(12), pages=12, detected_format="pdf")
    assert not job_store.add_units("j", _units(12), pages=12, detected_format="pdf")
    assert job_store.start_unit("j", "u00001", 1)
    assert job_store.finish_unit("j", "u00001") and not job_store.finish_unit("j", "u00001")
    assert job_store.fail_unit("j", "u00002", "corrupt", "bad page")
    assert not job_store.start_unit("j", "u00002", 2)
    now = utc_now()
    assert job_store.transition_job("j", JobStatus.QUEUED, JobStatus.EXTRACTING, at=now)
    assert not job_store.transition_job("j", JobStatus.QUEUED, JobStatus.FAILED, at=now)
    assert job_store.transition_job("j", JobStatus.EXTRACTING, JobStatus.FAILED,
                                    failure_reason="corrupt", at=now)
    job = job_store.get_job("j")
    assert (job.status, job.failure_reason, job.finished_at) == (JobStatus.FAILED, "corrupt", now)
    assert job_store.active_jobs() == []


def test_job_store_keeps_a_password_only_while_the_job_runs(job_store):
    assert not job_store.set_job_password("missing", "pw") and job_store.job_password("missing") is None
    job_store.create_job(_version())
    assert job_store.job_password("j") is None
    assert job_store.set_job_password("j", "first") and job_store.set_job_password("j", "s3cret")
    assert job_store.job_password("j") == "s3cret"
    assert "s3cret" not in job_store.get_job("j").model_dump_json()
    now = utc_now()
    assert job_store.transition_job("j", JobStatus.QUEUED, JobStatus.EXTRACTING, at=now)
    assert job_store.job_password("j") == "s3cret"
    assert job_store.transition_job("j", JobStatus.EXTRACTING, JobStatus.SUCCEEDED, at=now)
    assert job_store.job_password("j") is None
    assert not job_store.set_job_password("j", "later") and job_store.job_password("j") is None


def test_job_store_outbox_flags(job_store):
    job_store.create_job(_version())
    assert [j.job_id for j in job_store.unsent_jobs()] == ["j"]
    job_store.mark_split_sent(["j"])
    assert job_store.unsent_jobs() == []
    job_store.add_units("j", _units(12), pages=12, detected_format="pdf")
    job_store.mark_units_sent("j", ["u00001"])
    assert [u.unit_id for u in job_store.unsent_units("j")] == ["u00002", "u00003"]
    for unit in ("u00001", "u00002", "u00003"):
        job_store.finish_unit("j", unit)
    job_store.transition_job("j", JobStatus.QUEUED, JobStatus.SUCCEEDED, at=utc_now())
    assert [j.job_id for j in job_store.jobs_missing_status_event()] == ["j"]
    job_store.mark_status_events([("j", JobStatus.SUCCEEDED)])
    assert job_store.jobs_missing_status_event() == []
    assert [j.job_id for j in job_store.unsent_index_jobs()] == ["j"]
    job_store.mark_index_sent(["j"])
    assert job_store.unsent_index_jobs() == []
    assert [j.job_id for j in job_store.jobs_to_index()] == ["j"]
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    job_store.mark_indexed_many(["j", "no-such-job"], when)
    assert job_store.jobs_to_index() == [] and job_store.get_job("j").indexed_at == when
    job_store.mark_indexed_many(["j"], utc_now())  # marked once: the first time stays
    assert job_store.get_job("j").indexed_at == when


def test_job_store_records_units_read_while_planning_done_with_the_plan(job_store):
    """``add_units(done=...)``: the units read at the split are done, by that delivery's
    attempt, flagged sent and counted on the job, in the plan's own write; the rest pending."""
    job_store.create_job(_version())
    before = job_store.get_job("j").last_progress_at
    assert job_store.add_units("j", _units(12), pages=12, detected_format="pdf",
                               done=["u00001", "u00002"], attempt=2)
    units = {u.unit_id: u for u in job_store.list_units("j")}
    assert {k: (u.status.value, u.attempts) for k, u in units.items()} == {
        "u00001": ("done", 2), "u00002": ("done", 2), "u00003": ("pending", 0)}
    assert [u.unit_id for u in job_store.unsent_units("j")] == ["u00003"]
    assert not job_store.start_unit("j", "u00001", 3)  # done is terminal
    (progress,) = job_store.active_jobs()
    assert (progress.units_planned, progress.units_done, progress.units_running) == (3, 2, 0)
    assert job_store.get_job("j").last_progress_at >= before
    assert job_store.finish_unit("j", "u00003")
    assert job_store.active_jobs()[0].units_done == 3
    assert not job_store.add_units("j", _units(12), pages=12, detected_format="pdf",
                                   done=["u00003"])


def test_job_store_flags_status_events_of_many_jobs_at_once_but_not_a_moved_one(job_store):
    for job_id in ("a", "b", "c"):
        job_store.create_job(_version(job_id))
        job_store.transition_job(job_id, JobStatus.QUEUED, JobStatus.EXTRACTING, at=utc_now())
    job_store.transition_job("c", JobStatus.EXTRACTING, JobStatus.FAILED, at=utc_now())
    # The poller read c as extracting, then c failed: its flag must wait for the failed event.
    job_store.mark_status_events([("a", JobStatus.EXTRACTING), ("b", JobStatus.EXTRACTING),
                                  ("c", JobStatus.EXTRACTING)])
    assert [j.job_id for j in job_store.jobs_missing_status_event()] == ["c"]
    job_store.mark_status_events([])
    job_store.mark_status_events([("c", JobStatus.FAILED)])
    assert job_store.jobs_missing_status_event() == []


def test_job_store_stall_clock_and_lease(job_store):
    job_store.create_job(_version())
    read = job_store.get_job("j").last_progress_at
    assert job_store.add_stall([("j", 1.5, read)]) == 1
    assert job_store.add_stall([("j", 1.5, read - timedelta(seconds=1))]) == 0
    assert job_store.get_job("j").stalled_s == 1.5
    assert job_store.acquire_lease("poller", "one", ttl_s=60)
    assert not job_store.acquire_lease("poller", "two", ttl_s=60)
    job_store.release_lease("poller", "one")
    assert job_store.acquire_lease("poller", "two", ttl_s=60)


def test_job_store_no_progress_write_is_conditioned_on_what_was_read(job_store):
    """The poller decides from a read that may be stale (DynamoDB's index): its no-progress
    failure is written only if the job has not moved since that read and no retry of its work
    is scheduled; a scheduled retry keeps the later time."""
    job_store.create_job(_version())
    job_store.add_units("j", _units(10), pages=10, detected_format="pdf")
    read = job_store.get_job("j").last_progress_at
    job_store.start_unit("j", "u00001", 1)  # it moved after the read
    now = utc_now()
    assert not job_store.transition_job("j", JobStatus.QUEUED, JobStatus.FAILED,
                                        failure_reason="no_progress", at=now, unmoved_since=read)
    read = job_store.get_job("j").last_progress_at
    later = now + timedelta(minutes=15)
    assert job_store.schedule_retry("j", later)
    assert not job_store.schedule_retry("j", now + timedelta(minutes=1))  # the later one stays
    assert job_store.get_job("j").retry_at == later
    assert not job_store.transition_job("j", JobStatus.QUEUED, JobStatus.FAILED,
                                        failure_reason="no_progress", at=now, unmoved_since=read)
    assert job_store.get_job("j").status is JobStatus.QUEUED
    assert job_store.transition_job("j", JobStatus.QUEUED, JobStatus.FAILED,
                                    failure_reason="no_progress", at=later + timedelta(seconds=1),
                                    unmoved_since=read)
    assert not job_store.schedule_retry("j", later + timedelta(hours=1))  # terminal


def _succeeded(job_store, job_id: str = "j") -> None:
    job_store.create_job(_version(job_id))
    job_store.add_units(job_id, [u.model_copy(update={"job_id": job_id})
                                 for u in plan_pdf_units(3, 5)], pages=3, detected_format="pdf")
    job_store.finish_unit(job_id, "u00001")
    job_store.transition_job(job_id, JobStatus.QUEUED, JobStatus.SUCCEEDED, at=utc_now())


def test_job_store_fields_claim_is_one_conditional_write_never_taken_over(job_store):
    """claim -> done|failed, only by its claimant; a second claim, however late, is refused."""
    _succeeded(job_store)
    at = utc_now()
    assert job_store.get_field_claim("j", "rules") is None
    assert job_store.claim_fields("j", "rules", document_id="d", claimant="w1", at=at)
    assert not job_store.claim_fields("j", "rules", document_id="d", claimant="w2",
                                      at=at + timedelta(days=1))
    row = job_store.get_field_claim("j", "rules")
    assert (row.status, row.claimant, row.document_id) == (ClaimStatus.CLAIMED, "w1", "d")
    assert job_store.claim_fields("j", "agentic", document_id="d", claimant="w2", at=at)

    assert not job_store.release_fields("j", "rules", "w2")  # not theirs
    assert not job_store.settle_fields("j", "rules", document_id="d", status=ClaimStatus.DONE,
                                       result="{}", claimant="w2", at=at)
    assert job_store.settle_fields("j", "rules", document_id="d", status=ClaimStatus.DONE,
                                   result='{"a": 1}', claimant="w1", at=at)
    for claimant in ("w1", None):  # terminal: nobody writes it again, a dead letter included
        assert not job_store.settle_fields("j", "rules", document_id="d",
                                           status=ClaimStatus.FAILED, result="{}",
                                           claimant=claimant, at=at)
    row = job_store.get_field_claim("j", "rules")
    assert (row.status, row.result, row.finished_at is not None) == (ClaimStatus.DONE, '{"a": 1}',
                                                                     True)

    assert job_store.release_fields("j", "agentic", "w2")  # an attempt that will be retried
    assert job_store.get_field_claim("j", "agentic") is None
    assert job_store.settle_fields("j", "agentic", document_id="d", status=ClaimStatus.FAILED,
                                   result='{"why": "dead_letter"}', claimant=None, at=at)
    assert job_store.get_field_claim("j", "agentic").status is ClaimStatus.FAILED


def test_job_store_a_fields_claim_older_than_its_lease_is_taken_over(job_store):
    """Issue 19: a claim left by a killed worker is taken over once older than the lease the
    caller gives (``stale_before``); a younger one, or a terminal row, never is."""
    _succeeded(job_store)
    at = utc_now()
    assert job_store.claim_fields("j", "rules", document_id="d", claimant="dead", at=at)
    assert not job_store.claim_fields("j", "rules", document_id="d", claimant="w2",
                                      at=at + timedelta(seconds=5),
                                      stale_before=at - timedelta(seconds=60))
    assert job_store.claim_fields("j", "rules", document_id="d", claimant="w2",
                                  at=at + timedelta(hours=1),
                                  stale_before=at + timedelta(seconds=1))
    assert job_store.get_field_claim("j", "rules").claimant == "w2"
    assert not job_store.settle_fields("j", "rules", document_id="d", status=ClaimStatus.DONE,
                                       result="{}", claimant="dead", at=at)
    assert job_store.settle_fields("j", "rules", document_id="d", status=ClaimStatus.DONE,
                                   result="{}", claimant="w2", at=at)
    assert not job_store.claim_fields("j", "rules", document_id="d", claimant="w3",
                                      at=at + timedelta(days=9), stale_before=at + timedelta(days=8))
    assert job_store.get_field_claim("j", "rules").status is ClaimStatus.DONE


def test_job_store_a_dead_claim_is_settled_only_without_a_claimant(job_store):
    _succeeded(job_store)
    job_store.claim_fields("j", "rules", document_id="d", claimant="dead", at=utc_now())
    assert job_store.settle_fields("j", "rules", document_id="d", status=ClaimStatus.FAILED,
                                   result="{}", claimant=None, at=utc_now())
    assert not job_store.settle_fields("j", "rules", document_id="d", status=ClaimStatus.DONE,
                                       result="{}", claimant="dead", at=utc_now())


def test_job_store_fields_request_outbox_and_publication_settle_the_job(job_store):
    _succeeded(job_store)
    job_store.create_job(_version("k"))  # still queued
    assert job_store.request_fields(["j", "k"], "nda", "rules") == 2
    assert job_store.request_fields(["j", "k"], "nda", "rules") == 0  # the same: no change
    assert not job_store.get_job("j").settled
    # Succeeded: its text is final, so the fields go out beside the index message ("k" waits).
    assert [j.job_id for j in job_store.unsent_fields_jobs()] == ["j"]
    job_store.mark_fields_sent(["j"])
    assert job_store.unsent_fields_jobs() == []
    assert job_store.fields_pending() == 1

    job_store.claim_fields("j", "rules", document_id="d", claimant="w", at=utc_now())
    assert job_store.unpublished_results() == []  # claimed is not a result yet
    job_store.settle_fields("j", "rules", document_id="d", status=ClaimStatus.DONE,
                            result="{}", claimant="w", at=utc_now())
    assert [(r.job_id, r.strategy) for r in job_store.unpublished_results()] == [("j", "rules")]
    assert job_store.mark_result_published("j", "rules", utc_now())
    assert not job_store.mark_result_published("j", "rules", utc_now())  # once
    assert job_store.unpublished_results() == [] and job_store.fields_pending() == 0
    assert not job_store.get_job("j").settled  # published, but its indexing is not over yet
    job_store.mark_indexed("j", utc_now())
    assert job_store.get_job("j").settled

    # Asked again with another strategy: pending again; back to the first: already published.
    assert job_store.request_fields(["j"], "nda", "agentic") == 1
    assert not job_store.get_job("j").settled
    assert [j.job_id for j in job_store.unsent_fields_jobs()] == ["j"]
    assert job_store.request_fields(["j"], "nda", "rules") == 1
    assert job_store.get_job("j").settled and job_store.unsent_fields_jobs() == []


# --- search index ------------------------------------------------------------------------------


def test_search_index_replaces_a_documents_pages(search_index):
    search_index.replace_document("d", "j1", "a.pdf", iter([(1, "old zebra"), (2, "old text")]))
    assert search_index.replace_document("d", "j2", "a.pdf", iter([(1, "new giraffe")])) == 1
    assert search_index.search("zebra") == []
    (hit,) = search_index.search("giraffe")
    assert (hit.document_id, hit.job_id, hit.page_number) == ("d", "j2", 1)


# --- CPU runner --------------------------------------------------------------------------------


async def test_cpu_runner_returns_times_out_and_recovers(cpu_runner):
    try:
        assert await cpu_runner.run(cpu_tasks.square, 6, timeout_s=30) == 36
        with pytest.raises(WorkerTimeout):
            await cpu_runner.run(cpu_tasks.sleep_for, 30, timeout_s=0.5)
        with pytest.raises(TransientError):
            await cpu_runner.run(cpu_tasks.die, timeout_s=30)
        assert await cpu_runner.run(cpu_tasks.square, 2, timeout_s=30) == 4
    finally:
        cpu_runner.close()


async def test_cpu_runner_kills_a_timed_out_call_without_delaying_the_calls_beside_it(
        cpu_runner, tmp_path):
    """A batch's records share the runner: one parse past its limit is stopped (its process
    killed, not left running) while the other records' calls go on and finish meanwhile."""
    try:
        marker = tmp_path / "slow.pid"
        started = time.monotonic()
        slow = asyncio.create_task(cpu_runner.run(cpu_tasks.sleep_then_touch, 10.0, str(marker),
                                                  timeout_s=8.0))
        await asyncio.sleep(0)  # the slow call takes its worker first
        fast = [asyncio.create_task(cpu_runner.run(cpu_tasks.square, n, timeout_s=60))
                for n in range(6)]
        results = []
        for task in asyncio.as_completed(fast):
            results.append(await task)
            assert not slow.done(), "a fast call waited for the slow one's time limit"
        assert sorted(results) == [n * n for n in range(6)]
        with pytest.raises(WorkerTimeout):
            await slow
        await asyncio.sleep(max(0.0, 11.0 - (time.monotonic() - started)))  # past its end
        assert not marker.exists(), "the timed-out call kept running"
    finally:
        cpu_runner.close()


# --- event sink --------------------------------------------------------------------------------


async def test_event_sink_commit_is_durable_on_return(event_sink):
    sink, lake = event_sink
    events = [JobCreated(document_id="d", job_id=f"j{i}") for i in range(50)]
    await asyncio.gather(*(sink.commit(events[i:i + 5]) for i in range(0, 50, 5)))
    count = query(lake, "SELECT count(*) AS n FROM events WHERE event_type = 'job_created'")
    assert count.to_pylist() == [{"n": 50}]
    await sink.close()


def test_job_store_keeps_the_runs_choices_with_the_job(job_store):
    """A job keeps the choices of the run that created it (issue 19): a resumed worker or a
    Lambda reads it with them, not with its own settings."""
    from extract import run_choices
    from extract.config import ExtractConfig

    recorded = run_choices.record(ExtractConfig(reader="simulated", pages_per_unit=3))
    job_store.create_job(dataclasses.replace(_version(), run_choices=recorded))
    job = job_store.get_job("j")
    assert job.run_choices == recorded
    applied = run_choices.apply(ExtractConfig(), job.run_choices)
    assert (applied.reader, applied.pages_per_unit) == ("simulated", 3)


def test_job_store_a_read_claims_its_unit_with_an_owner_and_a_lease(job_store):
    """Issue 19: a read claims its unit by a conditional write; a second claim while the first
    owner's lease is live is refused (HELD), a lapsed lease is taken over, a terminal unit is
    CLOSED. (Before: start_unit let RUNNING go to RUNNING for anyone.)"""
    from extract.state import UnitClaim

    job_store.create_job(_version())
    job_store.add_units("j", _units(10), pages=10, detected_format="pdf")
    assert job_store.claim_unit("j", "u00001", 1, "first", 30) is UnitClaim.CLAIMED
    assert job_store.claim_unit("j", "u00001", 1, "duplicate", 30) is UnitClaim.HELD
    assert job_store.claim_unit("j", "u00001", 2, "first", 30) is UnitClaim.CLAIMED  # its own
    assert job_store.renew_unit("j", "u00001", "first", 30)
    assert not job_store.renew_unit("j", "u00001", "duplicate", 30)
    assert job_store.get_unit("j", "u00001").status is UnitStatus.RUNNING
    # A lapsed lease (the holder let go, or hung past it) goes to the next delivery.
    assert job_store.renew_unit("j", "u00001", "first", 0)
    time.sleep(0.05)
    assert job_store.claim_unit("j", "u00001", 3, "second", 30) is UnitClaim.CLAIMED
    assert job_store.claim_unit("j", "u00001", 3, "first", 30) is UnitClaim.HELD
    assert job_store.finish_unit("j", "u00001")
    assert job_store.claim_unit("j", "u00001", 4, "third", 30) is UnitClaim.CLOSED
    assert job_store.claim_unit("j", "nope", 1, "third", 30) is UnitClaim.CLOSED
    # A failed read lets go: pending again, and only its owner can do that.
    assert job_store.claim_unit("j", "u00002", 1, "reader", 30) is UnitClaim.CLAIMED
    assert not job_store.release_unit("j", "u00002", "someone-else")
    assert job_store.release_unit("j", "u00002", "reader")
    assert job_store.get_unit("j", "u00002").status is UnitStatus.PENDING
    assert job_store.claim_unit("j", "u00002", 2, "retry", 30) is UnitClaim.CLAIMED
    progress = {p.job.job_id: p for p in job_store.active_jobs()}["j"]
    assert (progress.units_done, progress.units_running) == (1, 1)
