"""A dispatcher for unit tests: follow-up jobs run in the caller, requests are recorded."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord


class InlineJobs:
    """Runs follow-up jobs inline, one at a time (a re-enqueue waits its turn instead of
    recursing), and records what it was asked to send elsewhere."""

    #: Follow-up jobs run before the call returns.
    deferred = False

    def __init__(self) -> None:
        self.runtime: Runtime | None = None
        self.alarm_requests: list[tuple[str, dict[str, Any]]] = []
        self.flushes: list[tuple[str, str]] = []
        self.expires: list[tuple[str, str]] = []
        self.run_flushes = True
        self._pending: deque[Callable[[], Any]] = deque()
        self._draining = False

    def _run(self, job: Callable[[], Any]) -> None:
        self._pending.append(job)
        if self._draining:
            return
        self._draining = True
        try:
            while self._pending:
                self._pending.popleft()()
        finally:
            self._draining = False

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        from tidings.jobs.channels.flush import flush_channel

        self.flushes.append((agent.agent_id, channel))
        if self.run_flushes:
            assert self.runtime is not None
            rt = self.runtime
            self._run(lambda: flush_channel(rt, agent, channel))

    def alarm_request(self, host: str, request: Mapping[str, object]) -> None:
        self.alarm_requests.append((host, request))

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        from tidings.jobs.consumer import delay

        self.expires.append((agent.agent_id, request_id))
        assert self.runtime is not None
        rt = self.runtime
        self._run(lambda: delay.expire(rt, agent, request_id))
