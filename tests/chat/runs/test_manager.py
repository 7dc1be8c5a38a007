"""RunManager after a Redis restart: a follower waits for the alive owner to write the lost log again, and the
owner's writer, backing off through the outage, retries as soon as the log answers."""
from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chat.events import TextDeltaEvent
from chat.models import Conversation, Run
from chat.runs.manager import RunManager, owner_rewrite_grace
from tests.chat.runs.test_handle import RecordingLog


@pytest.fixture
def ended_run(user: Any) -> Run:
    """A run its owner finished a moment ago (the owner's process is still alive)."""
    conv = Conversation.objects.create(owner=user, title="restart")
    return Run.objects.create(conversation=conv, status=Run.Status.COMPLETED, finished_at=timezone.now())


@pytest.mark.django_db(transaction=True)
async def test_a_log_lost_while_its_run_went_on_is_waited_for_from_the_runs_end(ended_run: Run, settings: Any) -> None:
    """The regression: the log vanished in a Redis restart while the run was still going (its heartbeat kept the
    follower waiting), the run then ended before its owner's writer, backing off, wrote the log again. Counting the
    owner's grace from the first miss gave up at once: a resync mid-stream, which callers turn into a gap."""
    settings.CHAT_HEARTBEAT_INTERVAL = 0.5
    manager = RunManager()
    run_id = str(ended_run.pk)
    missing_since_long_before_the_end = 30.0
    assert await manager._settle(run_id, missing_since_long_before_the_end) == "running"
    assert await manager._settle(run_id, 0.1) == "running"
    # the owner had its grace after the end: the log is not coming back (expired, or its owner let go of it)
    await Run.objects.filter(pk=run_id).aupdate(finished_at=timezone.now() - timedelta(seconds=owner_rewrite_grace() + 1))
    assert await manager._settle(run_id, missing_since_long_before_the_end) == "gone"
    # a swept run's owner is dead: nobody will write its log again
    await Run.objects.filter(pk=run_id).aupdate(status=Run.Status.INTERRUPTED, finished_at=timezone.now())
    assert await manager._settle(run_id, 0.1) == "gone"


async def test_a_writer_backing_off_retries_as_soon_as_the_heartbeat_finds_the_log_answering(settings: Any) -> None:
    settings.CHAT_RUN_LOG_BACKEND = "tests.chat.runs.test_handle.RecordingLog"
    manager = RunManager()
    shared = manager.run_log()
    assert isinstance(shared, RecordingLog)
    shared.fail = 5  # down: attempts at about 0, 0.1, 0.3, 0.7 and 1.5 s fail, then the writer waits 1.6 s
    handle = manager.create("r-down", 1, 1)
    seq = handle.append(TextDeltaEvent.wire, text="during the outage")
    for _ in range(300):
        if not shared.fail:
            break
        await asyncio.sleep(0.01)
    assert not shared.fail
    await asyncio.sleep(0.05)  # the writer is in its 1.6 s wait
    await manager._verify_logs(shared)  # the heartbeat: the log answers again
    assert await handle.wait_durable(seq, timeout=0.5)
    assert shared.entries["r-down"] == handle.events
    assert not handle.write_pending
    handle.task = None
    manager.clear()


@pytest.mark.django_db(transaction=True)
async def test_answers_a_lost_doorbell_missed_reach_their_runs_on_the_heartbeat(ended_run: Run) -> None:
    """An approval and a tab's answer stored by another process whose doorbell never arrived: the owner's heartbeat
    finds them in the database and hands them to the waiting run; unanswered waits stay waiting."""
    from chat.models import ClientToolWait, PendingApproval

    await Run.objects.filter(pk=ended_run.pk).aupdate(status=Run.Status.RUNNING, finished_at=None)
    manager = RunManager()
    run_id = str(ended_run.pk)
    handle = manager.create(run_id, ended_run.conversation_id, 1)
    handle.task = asyncio.get_running_loop().create_future()  # "running" (not done)
    loop = asyncio.get_running_loop()
    approval, answer, waiting = loop.create_future(), loop.create_future(), loop.create_future()
    handle.approvals["toolu_a"] = approval
    handle.tab_answers["toolu_t"] = answer
    handle.tab_answers["toolu_w"] = waiting
    await PendingApproval.objects.acreate(run_id=run_id, tool_use_id="toolu_a", tool_name="x", approved=True, answered_at=timezone.now())
    await ClientToolWait.objects.acreate(run_id=run_id, tool_use_id="toolu_t", tool_name="x", tab_id="t",
                                         result={"output": "done", "is_error": False}, answered_at=timezone.now())
    await ClientToolWait.objects.acreate(run_id=run_id, tool_use_id="toolu_w", tool_name="x", tab_id="t")
    await manager.tick()
    assert approval.result() is True
    assert answer.result() == {"output": "done", "is_error": False}
    assert not waiting.done()
    handle.task.cancel()
    handle.task = None
    manager.clear()
