"""``prepare_turn``'s worker group, awaited on ``redis.asyncio`` (interfaces.md, ``tidings.aio``).

The group is enqueued as :class:`GroupPreTurn` does; its results are awaited with a
blocking pop on the results backend's own keys, so the wait holds a pooled
connection and no thread. Degrades exactly like the threaded wait.
"""

from __future__ import annotations

import asyncio
from typing import cast

from dramatiq import Broker, Message
from dramatiq.results import ResultError
from redis.asyncio import Redis as AsyncRedis

from tidings.jobs import log
from tidings.jobs.cap import Lane
from tidings.jobs.memory import result
from tidings.jobs.turns import TurnMemory, skipped
from tidings.store.models import AgentRecord
from tidings.workers.turn_group import _WAIT_SLICE_SECONDS, GroupPreTurn, observation_of

#: Shortest blocking pop (seconds; Redis takes fractional timeouts).
_MIN_SLICE_SECONDS = 0.01


class AsyncGroupPreTurn:
    """The awaited counterpart of :class:`GroupPreTurn`."""

    def __init__(self, broker: Broker, aredis: AsyncRedis, wait_seconds: float) -> None:
        self.group = GroupPreTurn(broker)
        self.aredis = aredis
        self.wait_seconds = wait_seconds

    async def __call__(self, agent: AgentRecord, observe: bool) -> tuple[TurnMemory, Lane]:
        observation, render = await asyncio.to_thread(self.group.send, agent, observe)
        deadline = asyncio.get_running_loop().time() + self.wait_seconds
        memory: TurnMemory = skipped()
        if observation is not None:
            answer = await self._wait(observation, deadline, agent)
            memory = (
                observation_of(answer)
                if answer
                else result("error", "pre_turn", reason="worker_timeout")
            )
        attention = await self._wait(render, deadline, agent) or {}
        return memory, attention

    async def _wait(
        self, message: Message[object], deadline: float, agent: AgentRecord
    ) -> dict[str, object] | None:
        backend = self.group.broker.get_results_backend()
        key = backend.build_message_key(message)
        loop = asyncio.get_running_loop()
        while True:
            left = deadline - loop.time()
            if left <= 0:
                log.event("pre_turn_timeout", agent_id=agent.agent_id, actor=message.actor_name)
                return None
            slice_seconds = max(_MIN_SLICE_SECONDS, min(left, _WAIT_SLICE_SECONDS))
            # The backend's own read: pop and push back, so the result stays readable.
            data = await self.aredis.brpoplpush(key, key, timeout=slice_seconds)
            if data is None:
                continue
            try:
                # The asyncio client decodes no responses: the reply is bytes.
                value = backend.unwrap_result(backend.encoder.decode(cast("bytes", data)))
            except ResultError as exc:
                log.event(
                    "pre_turn_failed",
                    agent_id=agent.agent_id,
                    actor=message.actor_name,
                    error=type(exc).__name__,
                )
                return None
            return value if isinstance(value, dict) else None
