"""The dramatiq-backed :class:`tidings.jobs.runtime.Dispatcher`.

It builds messages by actor name and imports no job: a producer that only enqueues
(``tidings publish`` from a hook) loads dramatiq's broker and nothing of the worker.
"""

from __future__ import annotations

from collections.abc import Mapping

from dramatiq import Broker, Message

from tidings.store.models import AgentRecord
from tidings.workers import actor_names
from tidings.workers.routing import host_queue, scheduler_queue


def route(broker: Broker, actor_name: str, queue: str, *args: object) -> Message[object]:
    """Build a message for ``actor_name`` addressed to ``queue``.

    The actor need not be declared in this process (the scheduler's actors are
    not declared in clients), so the message is built from its name.
    """
    broker.declare_queue(queue)
    return Message(queue_name=queue, actor_name=actor_name, args=args, kwargs={}, options={})


def send(broker: Broker, actor_name: str, queue: str, *args: object) -> Message[object]:
    return broker.enqueue(route(broker, actor_name, queue, *args))


class BrokerDispatcher:
    """Enqueues follow-up jobs on the agent's host queue."""

    #: Jobs run later on a worker (:attr:`tidings.jobs.runtime.Dispatcher.deferred`).
    deferred = True

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        send(
            self.broker, actor_names.FLUSH_CHANNEL, host_queue(agent.host), agent.agent_id, channel
        )

    def alarm_request(self, host: str, request: Mapping[str, object]) -> None:
        send(self.broker, actor_names.ALARM_REQUEST, scheduler_queue(host), request)

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        send(
            self.broker,
            actor_names.EXPIRE_DELAY,
            host_queue(agent.host),
            agent.agent_id,
            request_id,
        )
