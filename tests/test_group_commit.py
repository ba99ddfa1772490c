"""Group commit: an idle committer writes at once; a busy one batches what arrives meanwhile."""

from __future__ import annotations

import asyncio
import threading

from lake.events import JobCreated
from lake.writer import GroupCommitter


class SlowWriter:
    """Records each flush; every write takes ``seconds`` (a slow disk)."""

    def __init__(self, seconds: float = 0.0, fail: bool = False):
        self.seconds = seconds
        self.fail = fail
        self.batches: list[int] = []
        self.lock = threading.Lock()

    def write(self, events):
        import time

        time.sleep(self.seconds)
        if self.fail:
            raise OSError(28, "No space left on device")
        with self.lock:
            self.batches.append(len(events))


def _events(n: int, prefix: str = "j"):
    return [JobCreated(document_id="d", job_id=f"{prefix}{i}") for i in range(n)]


async def test_an_idle_committer_flushes_at_once_not_after_a_window():
    writer = SlowWriter()
    committer = GroupCommitter(writer, max_delay_s=10.0)  # a window would wait 10 s
    await asyncio.wait_for(committer.commit(_events(3)), timeout=2)
    assert writer.batches == [3]
    await committer.close()


async def test_commits_spaced_out_below_the_rate_each_flush_at_once():
    """The burst's readers finish a few a second: none of them waits for a window."""
    writer = SlowWriter()
    committer = GroupCommitter(writer, max_delay_s=1.0, burst=5)
    loop = asyncio.get_running_loop()
    waits = []
    for n in range(4):
        started = loop.time()
        await committer.commit(_events(1, f"s{n}-"))
        waits.append(loop.time() - started)
        await asyncio.sleep(0.01)
    assert writer.batches == [1, 1, 1, 1]
    assert max(waits) < 0.5  # a fixed one-second window would have held the second commit
    await committer.close()


async def test_a_stream_of_commits_is_held_to_the_flush_rate_once_the_bucket_is_empty():
    writer = SlowWriter()
    committer = GroupCommitter(writer, max_delay_s=0.1, burst=3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    commits = []
    while loop.time() - started < 0.5:  # a commit every 5 ms for half a second
        commits.append(asyncio.ensure_future(committer.commit(_events(1, f"t{len(commits)}-"))))
        await asyncio.sleep(0.005)
    await asyncio.gather(*commits)
    elapsed = loop.time() - started
    await committer.close()
    assert sum(writer.batches) == len(commits)
    # 3 at once from the bucket, then one per 0.1 s (however slowly the loop ran the commits),
    # and one more at close: a handful of flushes, not one per commit.
    assert len(writer.batches) <= 3 + elapsed / 0.1 + 2
    assert len(writer.batches) < len(commits) / 2


async def test_commits_that_arrive_during_a_flush_share_the_next_one():
    writer = SlowWriter(seconds=0.2)
    committer = GroupCommitter(writer, max_delay_s=0.0)
    first = asyncio.ensure_future(committer.commit(_events(1, "a")))
    await asyncio.sleep(0.05)  # the first flush is running now
    rest = [asyncio.ensure_future(committer.commit(_events(2, f"b{n}-"))) for n in range(10)]
    await asyncio.gather(first, *rest)
    assert writer.batches == [1, 20]
    await committer.close()


async def test_a_failed_write_reaches_every_waiting_handler_and_the_next_flush_works():
    writer = SlowWriter(fail=True)
    committer = GroupCommitter(writer, max_delay_s=0.0)
    results = await asyncio.gather(committer.commit(_events(1)), committer.commit(_events(1, "k")),
                                   return_exceptions=True)
    assert all(isinstance(r, OSError) for r in results)
    writer.fail = False
    await committer.commit(_events(2, "z"))
    assert writer.batches == [2]
    await committer.close()


async def test_close_flushes_what_is_waiting():
    writer = SlowWriter(seconds=0.1)
    committer = GroupCommitter(writer, max_delay_s=5.0, burst=1)
    first = asyncio.ensure_future(committer.commit(_events(1)))
    await asyncio.sleep(0.02)
    second = asyncio.ensure_future(committer.commit(_events(4, "x")))  # waits out the interval
    await asyncio.sleep(0.02)
    await asyncio.wait_for(committer.close(), timeout=2)
    await asyncio.gather(first, second)
    assert writer.batches == [1, 4]


async def test_an_empty_commit_writes_nothing():
    writer = SlowWriter()
    committer = GroupCommitter(writer)
    await committer.commit([])
    await committer.close()
    assert writer.batches == []


async def _commit_relaxed(committer: GroupCommitter, events) -> None:
    """A commit from a handler that has given back its slot (as the runtime marks it)."""
    from lake.writer import RELAXED_COMMIT

    RELAXED_COMMIT.set(True)  # this task's context only
    await committer.commit(events)


async def test_relaxed_commits_on_a_busy_committer_wait_for_a_fuller_batch():
    """The first relaxed commit on an idle committer is written at once; the ones that follow
    within ``relaxed_delay_s`` of that write's start go together, in one flush, at its end."""
    writer = SlowWriter()
    committer = GroupCommitter(writer, max_delay_s=0.001, burst=10, relaxed_delay_s=0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.create_task(_commit_relaxed(committer, _events(1, "first-")))
    assert loop.time() - started < 0.2 and writer.batches == [1]
    later = []
    for n in range(5):  # spaced out: each would find a token and be written alone
        later.append(asyncio.create_task(_commit_relaxed(committer, _events(1, f"r{n}-"))))
        await asyncio.sleep(0.02)
    await asyncio.gather(*later)
    waited = loop.time() - started
    assert writer.batches == [1, 5]
    assert 0.25 <= waited < 1.5
    await committer.close()


async def test_a_commit_holding_a_slot_brings_a_relaxed_batch_forward():
    writer = SlowWriter()
    committer = GroupCommitter(writer, max_delay_s=0.001, burst=10, relaxed_delay_s=5.0)
    loop = asyncio.get_running_loop()
    await asyncio.create_task(_commit_relaxed(committer, _events(1, "first-")))
    waiting = asyncio.create_task(_commit_relaxed(committer, _events(2, "relaxed-")))
    await asyncio.sleep(0.05)
    assert writer.batches == [1]  # held for a fuller batch
    started = loop.time()
    await asyncio.wait_for(committer.commit(_events(1, "urgent-")), timeout=2)
    await asyncio.wait_for(waiting, timeout=1)
    assert writer.batches == [1, 3] and loop.time() - started < 1.0
    await committer.close()


async def test_a_shorter_relaxed_delay_brings_a_waiting_batch_forward():
    """The runtime lengthens the relaxed wait while every worker slot is taken and shortens it
    the moment one is free: a batch already waiting under the long wait goes out then."""
    writer = SlowWriter()
    committer = GroupCommitter(writer, max_delay_s=0.001, burst=10, relaxed_delay_s=0.1)
    loop = asyncio.get_running_loop()
    committer.set_relaxed_delay(5.0)  # saturated
    await asyncio.create_task(_commit_relaxed(committer, _events(1, "first-")))
    waiting = asyncio.create_task(_commit_relaxed(committer, _events(2, "relaxed-")))
    await asyncio.sleep(0.3)
    assert writer.batches == [1]  # held: the long wait is in force
    committer.set_relaxed_delay(5.0)  # unchanged: nothing is planned again
    started = loop.time()
    committer.set_relaxed_delay(0.1)  # a slot is free
    await asyncio.wait_for(waiting, timeout=2)
    assert writer.batches == [1, 2] and loop.time() - started < 1.0
    planned = asyncio.create_task(_commit_relaxed(committer, _events(1, "next-")))
    await asyncio.sleep(0)  # planned under the short wait
    started = loop.time()
    committer.set_relaxed_delay(5.0)  # lengthening never delays a batch already planned
    await asyncio.wait_for(planned, timeout=2)
    assert writer.batches == [1, 2, 1] and loop.time() - started < 1.0
    await committer.close()
