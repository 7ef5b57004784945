"""``prepare_turn``'s pre-turn work as a dramatiq group on the agent's host queue.

The observation (observing kinds) and the attention render run in parallel on a
worker of the agent's host; the caller waits for both results. A result that does
not come in time degrades the turn instead of failing it: memory ``error``
(``worker_timeout``), or an empty attention lane. Late results are harmless: the
observation still commits under its compare-and-set and the next turn claims it.
"""

from __future__ import annotations

import time
from typing import Any, cast

from dramatiq import Broker, Message
from dramatiq import group as _untyped_group
from dramatiq.results import ResultError, ResultTimeout

from tidings.jobs import log
from tidings.jobs.cap import Lane
from tidings.jobs.memory import ObservationResult, result
from tidings.jobs.runtime import Runtime
from tidings.jobs.turns import TurnMemory, skipped
from tidings.store.models import AgentRecord
from tidings.workers import actor_names
from tidings.workers.dispatch import route
from tidings.workers.routing import host_queue

#: Longest single blocking read of a result (below the client's 30 s socket timeout).
_WAIT_SLICE_SECONDS = 20
#: The backend blocks in whole seconds; a shorter wait would poll without blocking.
_MIN_SLICE_MS = 1000

#: dramatiq's composition API carries no annotations.
group: Any = _untyped_group


def observation_of(value: dict[str, object]) -> ObservationResult:
    """The ``observe_memory`` actor's answer as the results backend hands it back: the
    JSON of :func:`tidings.jobs.memory.memory_admission.observe_memory`'s M12 result."""
    return cast("ObservationResult", value)


class GroupPreTurn:
    """The worker-backed :class:`tidings.jobs.turns.prepare.PreTurn`."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def send(
        self, agent: AgentRecord, observe: bool
    ) -> tuple[Message[object] | None, Message[object]]:
        """Enqueue the group: ``(observation message or None, render message)``."""
        queue = host_queue(agent.host)
        render = route(self.broker, actor_names.RENDER_ATTENTION, queue, agent.agent_id)
        observation = (
            route(self.broker, actor_names.OBSERVE_MEMORY, queue, agent.agent_id, "pre_turn")
            if observe
            else None
        )
        group([m for m in (observation, render) if m is not None], broker=self.broker).run()
        return observation, render

    def __call__(self, rt: Runtime, agent: AgentRecord, observe: bool) -> tuple[TurnMemory, Lane]:
        observation, render = self.send(agent, observe)
        deadline = time.monotonic() + rt.settings.turn_wait_seconds
        memory: TurnMemory = skipped()
        if observation is not None:
            answer = self._wait(observation, deadline, agent)
            memory = (
                observation_of(answer)
                if answer
                else result("error", "pre_turn", reason="worker_timeout")
            )
        attention = self._wait(render, deadline, agent) or {}
        return memory, attention

    def _wait(
        self, message: Message[object], deadline: float, agent: AgentRecord
    ) -> dict[str, object] | None:
        backend = self.broker.get_results_backend()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                log.event("pre_turn_timeout", agent_id=agent.agent_id, actor=message.actor_name)
                return None
            slice_ms = max(_MIN_SLICE_MS, int(min(left, _WAIT_SLICE_SECONDS) * 1000))
            try:
                value = message.get_result(backend=backend, block=True, timeout=slice_ms)
            except ResultTimeout:
                continue
            except ResultError as exc:
                log.event(
                    "pre_turn_failed",
                    agent_id=agent.agent_id,
                    actor=message.actor_name,
                    error=type(exc).__name__,
                )
                return None
            return value if isinstance(value, dict) else None
