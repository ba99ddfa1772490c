"""Lambda's own limits in the design (issue 22), through the AWS handlers against moto: a dead
letter fails its job once, a batch's units share one download of their source, the retry
schedule and the functions' timeouts as the synthesized template sets them."""

from __future__ import annotations

import asyncio

import pytest
from support import awsmoto
from support.awsflow import INGEST_QUEUE, Deployment, FakeContext

pytest.importorskip("aws_lambda_powertools")


@pytest.fixture
def deployment(monkeypatch):
    awsmoto.endpoint()
    deployed = Deployment(max_receives=2)
    for name, value in deployed.env().items():
        monkeypatch.setenv(name, value)
    from infra.aws import runtime

    runtime.shared.cache_clear()
    yield deployed
    runtime.shared.cache_clear()


def _upload(deployed: Deployment, name: str, data: bytes) -> None:
    """An upload as the presigned POST leaves it, then the ingest function's batch."""
    from infra.aws.lambdas import ingest

    deployed.s3.put_object(Bucket=deployed.uploads, Key=f"uploads/{awsmoto.unique('d')}/{name}",
                           Body=data)
    records, failed = deployed.invoke_queue(INGEST_QUEUE, ingest.handler)
    assert (records, failed) == (1, 0)


def _poll(runtime) -> None:
    from infra.aws.lambdas.poller import run_passes

    asyncio.run(run_passes(runtime, holder="test", loop_s=0, interval_s=0.01))


def _invoke(deployed: Deployment, queue: str, **context) -> tuple[int, int]:
    from infra.aws.lambdas import extraction

    return deployed.invoke_queue(queue, extraction.handler,
                                 context=FakeContext(function_name="extraction", **context))


def test_a_dead_letter_fails_its_job_once_however_often_the_poller_sees_it(
        deployment, pdf_factory, monkeypatch):
    """The DLQ keeps the message for people; every pass that sees it again (here: each pass,
    its hiding time set to nothing) records nothing more than the first did."""
    from infra.aws.lambdas import poller
    from infra.aws.runtime import shared
    from lake.catalog import query

    _upload(deployment, "poison.pdf", pdf_factory("poison.pdf", 3).read_bytes())
    assert _invoke(deployment, "split")[0] == 1
    for _ in range(deployment.max_receives):  # the read worker dies on every delivery
        deployment.receive("read", visibility_s=0)
    assert deployment.receive("read") == []  # redriven to the DLQ

    monkeypatch.setattr(poller, "MAX_VISIBILITY_S", 0)  # the message is back at every pass
    runtime = shared()
    for _ in range(4):
        _poll(runtime)
    (job,) = runtime.store.list_jobs()
    assert (job.status.value, job.failure_reason) == ("failed", "dead_letter")
    lake = awsmoto.lake_uri(deployment.lake)
    rows = query(lake, "SELECT unit_id, final FROM failures "
                       "WHERE failure_reason = 'dead_letter'").to_pylist()
    assert rows == [{"unit_id": "u00001", "final": True}], rows


def test_the_units_of_one_batch_share_one_download_of_their_source(deployment, pdf_factory):
    """Three read units of one document in one SQS batch: the upload is fetched from S3 once,
    and no copy is left in /tmp when the invocation ends."""
    from pathlib import Path

    from infra.aws.runtime import shared

    _upload(deployment, "long.pdf", pdf_factory("long.pdf", 15).read_bytes())
    assert _invoke(deployment, "split") == (1, 0)
    runtime = shared()
    (job,) = runtime.store.list_jobs()
    assert job.units == 3
    fetched: list[str] = []
    runtime.s3.meta.events.register(
        "provide-client-params.s3.GetObject",
        lambda params, **_: fetched.append(params["Key"]))
    copies = []
    real_open = runtime.downloads.open

    def open_copy(key, fetch):  # note where each copy lands, to see it removed
        return real_open(key, lambda name: (copies.append(name), fetch(name))[1])

    runtime.downloads.open = open_copy
    assert _invoke(deployment, "read") == (3, 0)
    assert fetched.count(job.object_key) == 1, fetched
    assert len(copies) == 1 and not Path(copies[0]).exists()  # removed when the batch ended
    _poll(runtime)
    assert runtime.store.get_job(job.job_id).status.value == "succeeded"


def _reader_for_the_stack(monkeypatch) -> None:
    """The stack's reader, set for every function: the job keeps its run's choices from ingest
    (issue 19), so the upload must be planned with the reader the read function uses."""
    monkeypatch.setenv("DOCLAKE_READER", "gemini")
    from infra.aws import runtime

    runtime.shared.cache_clear()


def _read_with_gemini(monkeypatch, fake, **settings: str) -> None:
    """The read function's settings as the stack sets them, with the fake Gemini as its model."""
    for name, value in {"DOCLAKE_READER": "gemini", "DOCLAKE_GEMINI_API_KEY": "fake-key",
                        "DOCLAKE_GEMINI_BASE_URL": fake.url, "DOCLAKE_MODEL_MAX_ATTEMPTS": "1",
                        **settings}.items():
        monkeypatch.setenv(name, value)
    from infra.aws import runtime

    runtime.shared.cache_clear()


def _model_calls(deployed: Deployment) -> list[dict]:
    from lake.catalog import query

    return query(awsmoto.lake_uri(deployed.lake),
                 "SELECT job_id, page_number, outcome, http_status, detail "
                 "FROM model_calls").to_pylist()


def test_a_record_still_running_at_the_invocations_deadline_is_retried_and_its_calls_are_on_the_ledger(
        deployment, pdf_factory, monkeypatch):
    """The model hangs; the invocation has 25 s left. The record is cut off at its deadline
    (the remaining time less the flush margin), its three calls in flight get their ledger
    rows, the message goes back with its delay, the job notes when its work is due, and the
    handler returns by itself before Lambda would have killed it."""
    import time

    from support.fake_gemini import FakeGemini, answer

    from infra.aws.lambdas.extraction import FINISH_MARGIN_S

    _reader_for_the_stack(monkeypatch)
    _upload(deployment, "slow.pdf", pdf_factory("slow.pdf", 3).read_bytes())
    assert _invoke(deployment, "split") == (1, 0)
    with FakeGemini(lambda call: answer("late"), delay=lambda call: 120.0) as fake:
        _read_with_gemini(monkeypatch, fake, DOCLAKE_MODEL_TIMEOUT_S="100")
        from infra.aws.runtime import shared

        remaining_s = FINISH_MARGIN_S + 10
        started = time.monotonic()
        assert _invoke(deployment, "read", remaining_ms=int(remaining_s * 1000)) == (1, 1)
        took = time.monotonic() - started
        assert took < remaining_s, f"the invocation ran {took:.1f} s of its {remaining_s:g} s"
        assert fake.count() == 3  # the three pages were sent and were in flight
        calls = _model_calls(deployment)
        assert sorted(c["page_number"] for c in calls) == [1, 2, 3]
        assert {c["outcome"] for c in calls} == {"timeout"}
        assert all("deadline" in c["detail"] for c in calls)
        (job,) = shared().store.list_jobs()
        assert job.retry_at is not None and job.status.value == "queued"
        assert deployment.receive("read") == []  # hidden for its retry delay


def test_a_30_minute_brownout_through_the_aws_handlers_compressed_sixty_times(
        pdf_factory, monkeypatch):
    """The queue's own schedule (one model attempt per delivery, the message hidden 2, 6, 15,
    15 min between deliveries) at 1/60 of real time against a brownout of 30 min (30 s here),
    with the poller's 30-minute no-progress rule (30 s) running beside it: every document
    succeeds, no page is paid twice, every 503 is on the ledger, no invocation outruns its
    time, and the stall rule fails no job whose retry is scheduled.

    Only the queue's delays are compressed: each invocation's own seconds (moto, the lake) are
    real, so this shows the mechanics; that the schedule alone outlasts 30 minutes is asserted
    on the template's values (``test_aws_lambda_template``)."""
    import threading
    import time

    from support.fake_gemini import FakeGemini, answer, error

    scale = 60
    brownout_s = 30 * 60 / scale
    awsmoto.endpoint()
    deployed = Deployment(max_receives=5)
    for name, value in deployed.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DOCLAKE_RETRY_DELAY_SCALE", str(1 / scale))
    monkeypatch.setenv("DOCLAKE_NO_PROGRESS_TIMEOUT_S", str(30 * 60 / scale))
    first: list[float] = []
    sent_503 = 0

    def respond(call):
        nonlocal sent_503
        first[:] = first or [call.at]
        if call.at - first[0] < brownout_s:
            sent_503 += 1
            return error(503)
        return answer(f"page text {call.n}")

    for n in range(2):
        _reader_for_the_stack(monkeypatch)
        _upload(deployed, f"doc{n}.pdf", pdf_factory(f"doc{n}.pdf", 6, word="brownout")
                .read_bytes())
    with FakeGemini(respond) as fake:
        _read_with_gemini(monkeypatch, fake)
        from infra.aws.config import AwsSettings
        from infra.aws.lambdas.poller import run_passes
        from infra.aws.runtime import AwsRuntime, shared

        runtime = shared()
        stop = threading.Event()

        async def sleep(seconds: float) -> None:
            if stop.wait(seconds):
                raise asyncio.CancelledError

        def poller() -> None:  # the scheduled poller: its own container, looping meanwhile
            with contextlib.suppress(asyncio.CancelledError):
                asyncio.run(run_passes(AwsRuntime(AwsSettings()), holder="poller", loop_s=600,
                                       interval_s=0.5, sleep=sleep))

        import contextlib

        thread = threading.Thread(target=poller, daemon=True)
        thread.start()
        remaining_ms = 300_000  # the read function's timeout
        longest = 0.0
        receives = 0
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                jobs = runtime.store.list_jobs()
                if jobs and all(j.status.terminal for j in jobs):
                    break
                for queue in ("split", "read", "index"):
                    started = time.monotonic()
                    records, _ = _invoke(deployed, queue, remaining_ms=remaining_ms)
                    longest = max(longest, time.monotonic() - started)
                    receives += records if queue == "read" else 0
                time.sleep(0.5)
        finally:
            stop.set()
            thread.join(30)
        jobs = runtime.store.list_jobs()
        assert [(j.status.value, j.failure_reason) for j in jobs] == [("succeeded", None)] * 2
        calls = _model_calls(deployed)
        paid = [(c["job_id"], c["page_number"]) for c in calls if c["outcome"] == "ok"]
        assert len(paid) == 12 and len(set(paid)) == 12, "a page was paid twice"
        assert sum(1 for c in calls if c["http_status"] == 503) == sent_503 > 0
        errors_at = [c.at for c in fake.calls if c.at - first[0] < brownout_s]
        assert max(errors_at) - first[0] >= brownout_s * 0.5  # the retries reached into it
        assert receives > 4  # the read messages came back, each after its delay
        assert longest < remaining_ms / 1000
        print(f"\nbrownout {brownout_s:g} s (30 min / {scale}): {sent_503} 503s, "
              f"{receives} read deliveries, longest invocation {longest:.1f} s")


def test_the_sparse_indexes_spread_their_keys_over_shards_and_read_them_all(tmp_path):
    """Each job's index attributes take its own shard's value, so the writes of many jobs land
    on many partitions of an index; the readers merge every shard, in the index's order."""
    from datetime import timedelta

    from extract.ports import NewVersion
    from extract.state import JobStatus
    from lake.events import utc_now

    store = awsmoto.dynamo_job_store(tmp_path)
    start = utc_now()
    ids = [f"job-{n:02d}" for n in range(30)]
    for n, job_id in enumerate(ids):
        store.create_job(NewVersion(
            document_id=f"d{n}", job_id=job_id, source_name="a.pdf", source_key=f"/a{n}.pdf",
            sha256=f"s{n}", bytes=1, version=1, object_key=f"uploads/d{n}/{job_id}",
            created_at=start + timedelta(seconds=n)))
    items = store.client.scan(TableName=store.table)["Items"]
    shards = {item["gsi_active"]["S"] for item in items if "gsi_active" in item}
    assert len(shards) > 3, shards
    assert [p.job.job_id for p in store.active_jobs()] == ids  # every shard, oldest first
    assert [j.job_id for j in store.unsent_jobs()] == ids
    for job_id in ids[:5]:
        store.transition_job(job_id, JobStatus.QUEUED, JobStatus.FAILED, at=utc_now())
    assert {j.job_id for j in store.jobs_missing_status_event()} == set(ids[:5])
    assert [p.job.job_id for p in store.active_jobs()] == ids[5:]


def test_a_poller_pass_stops_at_the_first_step_its_lease_no_longer_covers(
        deployment, pdf_factory, monkeypatch):
    """The pass's first step outlasts the lease and another poller takes it meanwhile: the
    rest of the pass (the dead letters here) is left to the lease's new holder."""
    import time

    from infra.aws.lambdas import poller
    from infra.aws.runtime import shared

    _upload(deployment, "poison.pdf", pdf_factory("poison.pdf", 3).read_bytes())
    assert _invoke(deployment, "split")[0] == 1
    for _ in range(deployment.max_receives):
        deployment.receive("read", visibility_s=0)
    assert deployment.receive("read") == []  # redriven to the DLQ
    runtime = shared()
    real = poller.poll_once

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
    assert len(deployment.receive("read-dlq", visibility_s=0)) == 1  # left for the holder


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
