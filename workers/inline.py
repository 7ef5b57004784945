"""The dispatcher of ``inline=True`` agents: their own jobs run in the caller."""

from __future__ import annotations

from collections.abc import Callable

from dramatiq import Broker

from tidings.jobs.channels import flush_channel
from tidings.jobs.consumer import expire
from tidings.jobs.runtime import Runtime
from tidings.store.models import AgentRecord
from tidings.workers.dispatch import BrokerDispatcher


class InlineDispatcher(BrokerDispatcher):
    """The agent's own flushes and delay expiries run in the caller; messages for other
    processes (the scheduler) still go through the broker."""

    #: A flush has run by the time :meth:`flush_channel` returns.
    deferred = False

    def __init__(self, broker: Broker, runtime_factory: Callable[[], Runtime]) -> None:
        super().__init__(broker)
        self._runtime_factory = runtime_factory

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        flush_channel(self._runtime_factory(), agent, channel)

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        expire(self._runtime_factory(), agent, request_id)
