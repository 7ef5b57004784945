"""The dramatiq-backed :class:`tidings.jobs.runtime.Dispatcher`."""

from __future__ import annotations

from typing import Any

from dramatiq import Broker, Message

from tidings.jobs.actions import delay
from tidings.jobs.channels import flush
from tidings.store.models import AgentRecord
from tidings.workers.routing import host_queue, scheduler_queue


def route(broker: Broker, actor_name: str, queue: str, *args: Any) -> Message[Any]:
    """Build a message for ``actor_name`` addressed to ``queue``.

    The actor need not be declared in this process (the scheduler's actors are
    not declared in clients), so the message is built from its name.
    """
    broker.declare_queue(queue)
    return Message(queue_name=queue, actor_name=actor_name, args=args, kwargs={}, options={})


def send(broker: Broker, actor_name: str, queue: str, *args: Any) -> Message[Any]:
    return broker.enqueue(route(broker, actor_name, queue, *args))


class BrokerDispatcher:
    """Enqueues follow-up jobs on the agent's host queue."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        send(self.broker, "flush_channel", host_queue(agent.host), agent.agent_id, channel)

    def alarm_request(self, host: str, request: dict[str, Any]) -> None:
        send(self.broker, "alarm_request", scheduler_queue(host), request)

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        send(self.broker, "expire_delay", host_queue(agent.host), agent.agent_id, request_id)


class InlineDispatcher(BrokerDispatcher):
    """``inline=True``: the agent's own flushes run in the caller; messages for other
    processes (the scheduler) still go through the broker."""

    def __init__(self, broker: Broker, runtime_factory: Any) -> None:
        super().__init__(broker)
        self._runtime_factory = runtime_factory

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        flush.flush_channel(self._runtime_factory(), agent, channel)

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        delay.expire(self._runtime_factory(), agent, request_id)
