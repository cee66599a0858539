"""Temporal: the Python SDK's `Replayer` over the history of a workflow of n activity steps.

Temporal runs a workflow live only against a Temporal server. None is reachable here: the SDK's
`WorkflowEnvironment.start_time_skipping()` and `start_local()` download their server binary on
first use (temporal.download), and this machine has no network. So the live figures (durable step,
fan-out, throughput) have no Temporal column, and the history is built here as the server would
record it, event by event (the protobuf messages of temporalio.api.history.v1: started, then per
activity a workflow task scheduled/started/completed and the activity scheduled/started/completed,
then the workflow completed). The `Replayer` runs the workflow's code against it and checks each
command against the recorded events, as Temporal replays a workflow on a worker that lost its
cache: that is what is timed (recovery/replay per step), and the history's protobuf bytes are
its size. A history that does not match the code is refused (checked once at start)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from temporalio import workflow

with workflow.unsafe.imports_passed_through():  # the sandbox re-imports this module; not these
    from common import Timer
from temporalio.api.common.v1 import ActivityType, WorkflowType
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.client import WorkflowHistory
from temporalio.converter import default as default_converter
from temporalio.worker import Replayer

QUEUE = "peers"


@workflow.defn(name="Chain")
class Chain:
    @workflow.run
    async def run(self, n: int) -> int:
        s = 0
        for i in range(n):
            s += await workflow.execute_activity("noop", i, start_to_close_timeout=timedelta(seconds=10))
        return s


@workflow.defn(name="Fan")
class Fan:
    @workflow.run
    async def run(self, n: int) -> int:
        calls = [
            workflow.execute_activity("noop", i, start_to_close_timeout=timedelta(seconds=10))
            for i in range(n)
        ]
        return sum(await asyncio.gather(*calls))


@workflow.defn(name="Chain")
class Wrong:
    """The same name, one step more: replaying Chain's history with it must fail (the SDK's core
    checks the commands against the events; it does not compare activity type names)."""

    @workflow.run
    async def run(self, n: int) -> int:
        s = 0
        for i in range(n + 1):
            s += await workflow.execute_activity("noop", i, start_to_close_timeout=timedelta(seconds=10))
        return s


class _Builder:
    def __init__(self, workflow_type: str, n: int):
        self.h = History()
        self.conv = default_converter().payload_converter
        self.tq = TaskQueue(name=QUEUE)
        ev = self._add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)
        a = ev.workflow_execution_started_event_attributes
        a.workflow_type.CopyFrom(WorkflowType(name=workflow_type))
        a.task_queue.CopyFrom(self.tq)
        a.input.payloads.extend(self.conv.to_payloads([n]))
        a.workflow_task_timeout.FromSeconds(10)
        a.attempt = 1
        a.original_execution_run_id = a.first_execution_run_id = "run-1"

    def _add(self, kind) -> HistoryEvent:
        ev = self.h.events.add()
        ev.event_id = len(self.h.events)
        ev.event_time.FromSeconds(1_700_000_000 + ev.event_id)
        ev.event_type = kind
        return ev

    def workflow_task(self) -> int:
        s = self._add(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
        s.workflow_task_scheduled_event_attributes.task_queue.CopyFrom(self.tq)
        s.workflow_task_scheduled_event_attributes.start_to_close_timeout.FromSeconds(10)
        s.workflow_task_scheduled_event_attributes.attempt = 1
        st = self._add(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
        st.workflow_task_started_event_attributes.scheduled_event_id = s.event_id
        st.workflow_task_started_event_attributes.identity = "bench"
        c = self._add(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        c.workflow_task_completed_event_attributes.scheduled_event_id = s.event_id
        c.workflow_task_completed_event_attributes.started_event_id = st.event_id
        c.workflow_task_completed_event_attributes.identity = "bench"
        return c.event_id

    def schedule(self, seq: int, arg: int, wft: int) -> int:
        ev = self._add(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        a = ev.activity_task_scheduled_event_attributes
        a.activity_id = str(seq)
        a.activity_type.CopyFrom(ActivityType(name="noop"))
        a.task_queue.CopyFrom(self.tq)
        a.input.payloads.extend(self.conv.to_payloads([arg]))
        a.start_to_close_timeout.FromSeconds(10)
        a.workflow_task_completed_event_id = wft
        return ev.event_id

    def complete(self, scheduled: int, result: int) -> None:
        st = self._add(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
        st.activity_task_started_event_attributes.scheduled_event_id = scheduled
        st.activity_task_started_event_attributes.attempt = 1
        c = self._add(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
        c.activity_task_completed_event_attributes.scheduled_event_id = scheduled
        c.activity_task_completed_event_attributes.started_event_id = st.event_id
        c.activity_task_completed_event_attributes.result.payloads.extend(self.conv.to_payloads([result]))

    def finish(self, result: int, wft: int) -> WorkflowHistory:
        ev = self._add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
        a = ev.workflow_execution_completed_event_attributes
        a.result.payloads.extend(self.conv.to_payloads([result]))
        a.workflow_task_completed_event_id = wft
        return WorkflowHistory("wf-1", list(self.h.events))


def chain_history(n: int) -> tuple[WorkflowHistory, int]:
    b = _Builder("Chain", n)
    wft = b.workflow_task()
    for i in range(n):
        b.complete(b.schedule(i + 1, i, wft), i)
        wft = b.workflow_task()
    return b.finish(n * (n - 1) // 2, wft), b.h.ByteSize()


def fan_history(n: int) -> WorkflowHistory:
    b = _Builder("Fan", n)
    wft = b.workflow_task()
    scheduled = [b.schedule(i + 1, i, wft) for i in range(n)]
    for i, s in enumerate(scheduled):
        b.complete(s, i)
    return b.finish(n * (n - 1) // 2, b.workflow_task())


class Peer:
    def __init__(self, backend: str, workdir: Path, pg: str | None):
        self.replayer = Replayer(workflows=[Chain, Fan])
        self.loop = asyncio.new_event_loop()
        self._replay(chain_history(3)[0])
        try:
            self.loop.run_until_complete(Replayer(workflows=[Wrong]).replay_workflow(chain_history(3)[0]))
        except Exception:  # noqa: BLE001  (a nondeterminism error, as it should be)
            pass
        else:
            raise RuntimeError("Temporal's Replayer accepted a history that does not match the code")

    def _replay(self, history: WorkflowHistory) -> None:
        self.loop.run_until_complete(self.replayer.replay_workflow(history))

    def replay(self, n: int) -> dict:
        history, _ = chain_history(n)
        with Timer() as t:
            self._replay(history)
        return t.per(n)

    def replay_fanout(self, n: int) -> dict:
        history = fan_history(n)
        with Timer() as t:
            self._replay(history)
        return t.per(n)

    def bytes_per_step(self, n: int) -> float:
        """Protobuf bytes of the history, less the history of no step, per step."""
        return (chain_history(n)[1] - chain_history(0)[1]) / n

    def close(self) -> None:
        self.loop.close()
