"""Lambda's own limits in the design (issue 22), on the deployment built from the synthesized
template (``support.awsstack``): IAM enforced, each handler with its function's environment,
role, timeout and memory, each SQS mapping with its batch size, each queue with its visibility
timeout and redrive. A dead letter fails its job once; a batch's units share one download of
their source; a record still running at the invocation's deadline is retried with its calls on
the ledger; a 30-minute brownout played on the template's own retry schedule (``SimClock``:
minutes jump, seconds are real); a poller pass bounded by its lease."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")
pytest.importorskip("moto.server", reason="moto[server] is not installed")
pytest.importorskip("aws_lambda_powertools")
pytest.importorskip("time_machine")
httpx = pytest.importorskip("httpx")

from support.awsstack import PIPELINE, IamMoto, StackDeployment, synth  # noqa: E402
from support.simclock import SimClock  # noqa: E402


@pytest.fixture
def clocked_moto():
    """A server of the test's own: its clock is moved forward (``SimClock``)."""
    server = IamMoto()
    yield server
    server.close()


def _upload(deployed: StackDeployment, name: str, data: bytes) -> dict:
    """A slot from the presigner function, the bytes POSTed to it, the ingest function's batch."""
    answer = deployed.invoke("presigner", {"body": json.dumps({
        "source_name": name, "content_type": "application/pdf"})})
    assert answer["statusCode"] == 201, answer
    slot = json.loads(answer["body"])
    upload = slot["upload"]
    response = httpx.post(upload["url"], data=upload["fields"],
                          files={"file": ("ignored.pdf", data, "application/pdf")})
    assert response.status_code in (200, 201, 204), response.text
    assert deployed.drain("ingest") == (1, 0)
    return slot


def _jobs(deployed: StackDeployment) -> list:
    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        return shared().store.list_jobs()


def _query(deployed: StackDeployment, sql: str) -> list[dict]:
    from lake.catalog import query

    with deployed.as_deployer():
        return query(deployed.lake_uri(), sql).to_pylist()


def _model_calls(deployed: StackDeployment) -> list[dict]:
    return _query(deployed, "SELECT job_id, page_number, outcome, http_status, detail "
                            "FROM model_calls")


def _queue_url(deployed: StackDeployment, name: str) -> str:
    return deployed.resource("AWS::SQS::Queue", name)["QueueUrl"]


def _with_gemini(server: IamMoto, fake) -> StackDeployment:
    """``-c reader=gemini``: the fake Gemini is the model, its key in the stack's secret."""
    deployed = StackDeployment(synth((("reader", "gemini"),)), server,
                               environment={"DOCLAKE_GEMINI_BASE_URL": fake.url})
    deployed.client("secretsmanager").put_secret_value(
        SecretId=deployed.functions["read"].environment["DOCLAKE_GEMINI_API_KEY_SECRET"],
        SecretString="fake-key")
    return deployed


def test_a_dead_letter_fails_its_job_once_however_often_the_poller_sees_it(
        clocked_moto, pdf_factory):
    """The DLQ keeps the message for people, hidden 12 h at each pass that sees it; two days of
    the poller's passes (the clock jumps the 12 h) record nothing more than the first did."""
    from infra.aws.sqs import MAX_VISIBILITY_S

    deployed = StackDeployment(synth(), clocked_moto)
    _upload(deployed, "poison.pdf", pdf_factory("poison.pdf", 3, textless=[1]).read_bytes())
    assert deployed.drain("split") == (1, 0)
    deployed.dies_on_every_delivery("read")
    with SimClock(clocked_moto) as clock:
        for _ in range(4):
            deployed.poll()
            assert 0 < clock.next_visible_s() <= MAX_VISIBILITY_S  # the poller hid it again
            clock.advance(MAX_VISIBILITY_S + 1)
    (job,) = _jobs(deployed)
    assert (job.status.value, job.failure_reason) == ("failed", "dead_letter")
    rows = _query(deployed, "SELECT unit_id, final FROM failures "
                            "WHERE failure_reason = 'dead_letter'")
    assert rows == [{"unit_id": "u00001", "final": True}], rows


def test_the_units_of_one_batch_share_one_download_of_their_source(
        iam_moto, pdf_factory, monkeypatch):
    """Three read units of one document in one batch of the read mapping: the upload is fetched
    from S3 once, and no copy is left in /tmp when the invocation ends. A page of each unit has
    no text layer, so the split leaves all three to the read stage."""
    from pathlib import Path

    from botocore.client import BaseClient

    from infra.aws.s3 import SharedDownloads
    from lake.layout import unpinned

    deployed = StackDeployment(synth(), iam_moto)
    _upload(deployed, "long.pdf", pdf_factory("long.pdf", 15, textless=[1, 6, 11]).read_bytes())
    assert deployed.drain("split") == (1, 0)
    (job,) = _jobs(deployed)
    assert job.units == 3
    fetched: list[str] = []
    real_call = BaseClient._make_api_call

    def call(client, operation, params):  # every S3 GetObject any client makes
        if operation == "GetObject":
            fetched.append(params["Key"])
        return real_call(client, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", call)
    copies = []
    real_open = SharedDownloads.open

    def open_copy(downloads, key, fetch):  # note where each copy lands, to see it removed
        return real_open(downloads, key, lambda name: (copies.append(name), fetch(name))[1])

    monkeypatch.setattr(SharedDownloads, "open", open_copy)
    assert deployed.drain("read") == (3, 0)
    assert fetched.count(unpinned(job.object_key)[0]) == 1, fetched  # the key, at its version
    assert len(copies) == 1 and not Path(copies[0]).exists()  # removed when the batch ended
    deployed.poll()
    (job,) = _jobs(deployed)
    assert job.status.value == "succeeded"


def test_a_record_still_running_at_the_invocations_deadline_is_retried_and_its_calls_are_on_the_ledger(
        iam_moto, pdf_factory):
    """The model hangs and the read invocation has 25 s left (the rest of its template timeout
    spent). The record is cut off at its deadline (the remaining time less the flush margin),
    its three calls in flight get their ledger rows, the message goes back with the schedule's
    first delay, the job notes when its work is due, and the handler returns by itself before
    Lambda would have killed it."""
    from support.fake_gemini import FakeGemini, answer

    from infra.aws.lambdas.extraction import FINISH_MARGIN_S
    from infra.aws.sqs import retry_visibility_s
    from lake.events import utc_now

    with FakeGemini(lambda call: answer("late"), delay=lambda call: 120.0) as fake:
        deployed = _with_gemini(iam_moto, fake)
        _upload(deployed, "slow.pdf", pdf_factory("slow.pdf", 3).read_bytes())
        assert deployed.drain("split") == (1, 0)
        remaining_s = FINISH_MARGIN_S + 10
        assert deployed.drain("read", remaining_s=remaining_s) == (1, 1)
        (invocation,) = [i for i in deployed.invocations if i.function == "read"]
        assert not invocation.timed_out, f"the invocation ran {invocation.took_s:.1f} s"
        assert fake.count() == 3  # the three pages were sent and were in flight
    calls = _model_calls(deployed)
    assert sorted(c["page_number"] for c in calls) == [1, 2, 3]
    assert {c["outcome"] for c in calls} == {"timeout"}
    assert all("deadline" in c["detail"] for c in calls)
    (job,) = _jobs(deployed)
    assert job.retry_at is not None and job.status.value == "queued"
    due_in_s = (job.retry_at - utc_now()).total_seconds()
    assert retry_visibility_s(1) - 60 < due_in_s <= retry_visibility_s(1)
    sqs = deployed.client("sqs")
    assert sqs.receive_message(QueueUrl=_queue_url(deployed, "ReadQueue")).get(
        "Messages", []) == []  # hidden for its retry delay


def _rate_s(expression: str) -> float:
    """``rate(1 minute)`` -> 60."""
    import re

    number, unit = re.fullmatch(r"rate\((\d+) (\w+?)s?\)", expression).groups()
    return int(number) * {"minute": 60, "hour": 3600, "day": 86_400}[unit]


def _poller_every_s(deployed: StackDeployment) -> float:
    arn = deployed.physical[deployed.functions["poller"].logical]["Arn"]
    (every,) = [_rate_s(p["ScheduleExpression"]) for p in deployed.schedules.values()
                if any(t["Arn"] == arn for t in p.get("Targets", []))]
    return every


def _poll(deployed: StackDeployment) -> list:
    """A poller pass, as the poller's role; the jobs as it left them."""
    from infra.aws.lambdas.poller import run_passes

    with deployed.running_as("poller"):
        from infra.aws.runtime import shared

        runtime = shared()
        asyncio.run(run_passes(runtime, holder="test", loop_s=0, interval_s=0.01))
        return runtime.store.list_jobs()


def test_a_30_minute_brownout_through_the_aws_handlers_on_the_templates_own_schedule(
        clocked_moto, pdf_factory):
    """The fake Gemini answers 503 for 30 minutes from its first call. Everything else is the
    template's: one model attempt per delivery, each read message hidden by the retry schedule
    between its deliveries, the read queue's maxReceiveCount, the functions' timeouts and
    environments, the roles. Lambda is played as its mappings would: every queue drained as soon
    as a message is visible, a poller pass after anything moved; ``SimClock`` jumps the waits
    between (to the next message due); an invocation's own seconds are real. Every document
    succeeds, no page is paid twice, every 503 is on the ledger, and no invocation reaches its
    timeout.

    The poller runs a pass when something moved, not each minute of a wait: in a wait every job
    has its retry scheduled, which the no-progress rule does not count
    (``test_no_progress_never_fails_a_job_whose_retry_is_scheduled``).

    With the old schedule (60 + 180 + 540 + 900 s) the fifth and last delivery falls inside the
    brownout and the pages fail."""
    import time

    from support.fake_gemini import FakeGemini, answer, error

    brownout_s = 30 * 60
    first: list[float] = []
    sent_503 = 0

    def respond(call):
        nonlocal sent_503
        now = time.time()  # the simulation's clock
        first[:] = first or [now]
        if now - first[0] < brownout_s:
            sent_503 += 1
            return error(503)
        return answer(f"page text {call.n}")

    with FakeGemini(respond) as fake:
        deployed = _with_gemini(clocked_moto, fake)
        for n in range(2):
            _upload(deployed, f"doc{n}.pdf", pdf_factory(f"doc{n}.pdf", 3, word="brownout")
                    .read_bytes())
        every_s = _poller_every_s(deployed)
        read_deliveries = 0
        with SimClock(clocked_moto) as clock:
            moved_since_pass = True
            while clock.now() < 3 * 3600:
                moved = 0
                for function in PIPELINE:
                    records, _ = deployed.drain(function, batches=10)
                    moved += records
                    read_deliveries += records if function == "read" else 0
                moved_since_pass = moved_since_pass or moved > 0
                if moved:
                    continue
                if moved_since_pass:  # a poller pass over what moved (it may queue more)
                    jobs = _poll(deployed)
                    moved_since_pass = False
                    if all(j.status.terminal for j in jobs):
                        break
                    continue
                due = clock.next_visible_s()  # nothing to do until a message is due
                clock.advance(every_s if due is None else due + 0.01)
            took_s = clock.now()
        calls = fake.calls
    assert [(j.status.value, j.failure_reason) for j in jobs] == [("succeeded", None)] * 2
    ledger = _model_calls(deployed)
    paid = [(c["job_id"], c["page_number"]) for c in ledger if c["outcome"] == "ok"]
    assert len(paid) == 6 and len(set(paid)) == 6, "a page was paid twice"
    assert sum(1 for c in ledger if c["http_status"] == 503) == sent_503 > 0
    assert not [c for c in ledger if "deadline" in (c["detail"] or "")]
    timed_out = [i for i in deployed.invocations if i.timed_out]
    assert timed_out == [], timed_out
    longest = max(deployed.invocations, key=lambda i: i.took_s)
    print(f"\nbrownout {brownout_s} s simulated in {took_s:.0f} s of the clock: {sent_503} 503s, "
          f"{len(calls)} model calls, {read_deliveries} read deliveries, longest invocation "
          f"{longest.function} {longest.took_s:.1f} s of {longest.timeout_s:g} s")


def test_the_sparse_indexes_spread_their_keys_over_shards_and_read_them_all(iam_moto):
    """On the template's table and indexes: each job's index attributes take its own shard's
    value, so the writes of many jobs land on many partitions of an index; the readers merge
    every shard, in the index's order. The ingest function's role writes the jobs, the poller's
    reads and moves them."""
    from datetime import timedelta

    from extract.ports import NewVersion
    from extract.state import JobStatus
    from lake.events import utc_now

    deployed = StackDeployment(synth(), iam_moto)
    start = utc_now()
    ids = [f"job-{n:02d}" for n in range(30)]
    with deployed.running_as("ingest"):
        from infra.aws.runtime import shared

        store = shared().store
        for n, job_id in enumerate(ids):
            store.create_job(NewVersion(
                document_id=f"d{n}", job_id=job_id, source_name="a.pdf", source_key=f"/a{n}.pdf",
                sha256=f"s{n}", bytes=1, version=1, object_key=f"uploads/d{n}/{job_id}",
                created_at=start + timedelta(seconds=n)))
    table = deployed.functions["poller"].environment["DOCLAKE_TABLE"]
    items = deployed.client("dynamodb").scan(TableName=table)["Items"]
    shards = {item["gsi_active"]["S"] for item in items if "gsi_active" in item}
    assert len(shards) > 3, shards
    with deployed.running_as("poller"):
        store = shared().store
        assert [p.job.job_id for p in store.active_jobs()] == ids  # every shard, oldest first
        assert [j.job_id for j in store.unsent_jobs()] == ids
        for job_id in ids[:5]:
            store.transition_job(job_id, JobStatus.QUEUED, JobStatus.FAILED, at=utc_now())
        assert {j.job_id for j in store.jobs_missing_status_event()} == set(ids[:5])
        assert [p.job.job_id for p in store.active_jobs()] == ids[5:]


def test_a_poller_pass_stops_at_the_first_step_its_lease_no_longer_covers(
        iam_moto, pdf_factory, monkeypatch):
    """The pass's first step outlasts the lease and another poller takes it meanwhile: the
    rest of the pass (the dead letters here) is left to the lease's new holder."""
    import time

    from infra.aws.lambdas import poller

    deployed = StackDeployment(synth(), iam_moto)
    _upload(deployed, "poison.pdf", pdf_factory("poison.pdf", 3, textless=[1]).read_bytes())
    assert deployed.drain("split") == (1, 0)
    deployed.dies_on_every_delivery("read")
    real = poller.poll_once

    with deployed.running_as("poller"):  # the poller's role and environment
        from infra.aws.runtime import shared

        runtime = shared()

        async def slow_pass(ctx, **kwargs):
            decisions = await real(ctx, **kwargs)
            time.sleep(1.2)  # past the 1 s lease
            assert runtime.store.acquire_lease(poller.LEASE, "other", ttl_s=60)
            return decisions

        monkeypatch.setattr(poller, "poll_once", slow_pass)
        asyncio.run(poller.run_passes(runtime, holder="slow", loop_s=0, interval_s=0.01,
                                      lease_s=1.0))
        (job,) = runtime.store.list_jobs()
        (unit,) = runtime.store.list_units(job.job_id)
    assert unit.status.value == "pending"  # the slow pass did not act without its lease
    # three pages: a small document, dead-lettered from the read queue's small twin
    dlq = deployed.client("sqs").receive_message(QueueUrl=_queue_url(deployed, "ReadSmallDlq"),
                                                 VisibilityTimeout=0)
    assert len(dlq["Messages"]) == 1  # left for the holder


NO_SEMAPHORES = """
import asyncio
import sys

import _multiprocessing


class NoSemaphores:
    # What Lambda answers: no /dev/shm, so no POSIX semaphores.

    SEM_VALUE_MAX = 2**31 - 1

    def __init__(self, *args, **kwargs):
        raise OSError(38, "Function not implemented")


_multiprocessing.SemLock = NoSemaphores
from support import cpu_tasks  # noqa: E402

kind = sys.argv[1]
if kind == "pool":
    from infra.local.cpu import ProcessPoolRunner as Runner
else:
    from infra.aws.cpu import SubprocessRunner as Runner


async def main():
    runner = Runner(1)
    try:
        print(await runner.run(cpu_tasks.square, 7, timeout_s=60))
    finally:
        runner.close()

asyncio.run(main())
"""


@pytest.mark.parametrize(("runner", "works"), [("sub", True), ("pool", False)])
def test_the_lambda_cpu_runner_needs_no_posix_semaphores(tmp_path, runner, works):
    """Lambda has no /dev/shm: multiprocessing's semaphores fail with ENOSYS there, and with
    them every pool and queue (the local runner, shown failing); a child process over pipes
    does not need one."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "no_semaphores.py"
    script.write_text(NO_SEMAPHORES)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests")])}
    done = subprocess.run([sys.executable, str(script), runner], env=env, capture_output=True,
                          text=True, timeout=120)
    if works:
        assert (done.returncode, done.stdout.strip()) == (0, "49"), done.stderr[-2000:]
    else:
        assert done.returncode != 0 and "Function not implemented" in done.stderr


def test_a_batch_of_several_documents_holds_one_documents_source_in_tmp_at_a_time(
        iam_moto, pdf_factory, monkeypatch):
    """Three uploads in one batch of the split mapping: their records take the source one
    document at a time (``infra.aws.tmp_budget``), and each document's copy is gone from /tmp
    before the next one's is downloaded; every document is split all the same."""
    from pathlib import Path

    from infra.aws.s3 import SharedDownloads

    deployed = StackDeployment(synth(), iam_moto)
    for n in range(3):
        _upload(deployed, f"doc{n}.pdf", pdf_factory(f"doc{n}.pdf", 2).read_bytes())
    on_disk_at_each_fetch: list[int] = []
    copies: list[str] = []
    real_open = SharedDownloads.open

    def fetch_noting(name: str, fetch) -> None:
        on_disk_at_each_fetch.append(sum(Path(c).exists() for c in copies))
        copies.append(name)
        fetch(name)

    def open_copy(downloads, key, fetch):
        return real_open(downloads, key, lambda name: fetch_noting(name, fetch))

    monkeypatch.setattr(SharedDownloads, "open", open_copy)
    assert deployed.drain("split") == (3, 0)  # one batch: the three records together
    assert len(copies) == 3 and on_disk_at_each_fetch == [0, 0, 0]
    assert not any(Path(c).exists() for c in copies)
    assert [j.units for j in _jobs(deployed)] == [1, 1, 1]  # each split into its unit


def test_a_source_larger_than_tmp_is_refused_before_it_is_downloaded(iam_moto, pdf_factory):
    """The function's /tmp (``DOCLAKE_EPHEMERAL_BYTES``, from its ephemeral storage) less the
    room kept for reading: a larger source fails its job ``file_too_large`` with both sizes in
    the message, and nothing is downloaded."""
    from infra.aws.tmp_budget import MIB, RESERVE_BYTES

    deployed = StackDeployment(synth(), iam_moto, environment={
        "DOCLAKE_EPHEMERAL_BYTES": str(RESERVE_BYTES + MIB)})
    pdf = pdf_factory("big.pdf", 1).read_bytes() + b"\n%" + b"x" * (2 * MIB)  # after %%EOF
    _upload(deployed, "big.pdf", pdf)
    assert deployed.drain("split") == (1, 0)
    deployed.poll()
    (job,) = _jobs(deployed)
    assert (job.status.value, job.failure_reason) == ("failed", "file_too_large")
    (failure,) = _query(deployed, "SELECT message FROM failures")
    assert "MiB" in failure["message"] and "/tmp" in failure["message"], failure


def test_a_source_that_fits_tmp_but_not_its_free_space_now_is_retried(monkeypatch, tmp_path):
    import shutil
    from collections import namedtuple

    from extract.errors import LimitExceeded, TransientError
    from infra.aws.tmp_budget import MIB, check_fits

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: usage(512 * MIB, 500 * MIB,
                                                                   12 * MIB))
    with pytest.raises(TransientError) as busy:
        check_fits(100 * MIB, 512 * MIB, folder=str(tmp_path))
    assert not isinstance(busy.value, LimitExceeded) and busy.value.error_type == "tmp_full"
    with pytest.raises(LimitExceeded):
        check_fits(500 * MIB, 512 * MIB, folder=str(tmp_path))
