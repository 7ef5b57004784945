"""What every job gets: clients, clock, settings and a way to enqueue follow-ups.

Jobs never import the worker layer. When a job must start another job (a flush
after a publish, an alarm request after a delay) it asks its :class:`Dispatcher`;
the worker layer provides one backed by dramatiq, tests and ``inline=True``
provide one that runs the job in the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from redis import Redis

from tidings.jobs import thread_alarm
from tidings.store.clock import Clock
from tidings.store.models import AgentRecord
from tidings.store.scripts import Scripts
from tidings.store.settings import Settings


class Dispatcher(Protocol):
    """Follow-up work a job may start."""

    #: Whether follow-up jobs run later elsewhere (on a worker) rather than before the call
    #: returns: a publish whose flush was only enqueued skips reading whether its record is
    #: in the file yet (one round trip less, issue 25).
    deferred: bool

    def flush_channel(self, agent: AgentRecord, channel: str) -> None:
        """Run or enqueue ``flush_channel`` on the agent's host."""

    def alarm_request(self, host: str, request: Mapping[str, object]) -> None:
        """Send an alarm request to the host's scheduler (delay.md D15)."""

    def expire_delay(self, agent: AgentRecord, request_id: str) -> None:
        """Run or enqueue ``expire_delay`` on the agent's host (delay.md D17)."""


@dataclass(frozen=True)
class Runtime:
    """The ports a job uses. Build one per process (or per test).

    ``redis`` is the state store (every ``{a:…}`` and ``{h:…}`` key); ``control_store``
    the control store (rate counters, dismiss guards: hub-wide keys), by default the
    same client (guide.md "Placement and scale").
    """

    redis: Redis
    clock: Clock
    settings: Settings
    dispatch: Dispatcher
    control_store: Redis | None = None
    scripts: Scripts = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scripts", Scripts(self.redis))
        # A process builds its runtime on its main thread (a hub, a worker process): the
        # one place the handler that lets a memory observation be interrupted can be set
        # (M55, :mod:`tidings.jobs.thread_alarm`); elsewhere this does nothing.
        thread_alarm.install()

    @property
    def control(self) -> Redis:
        """The control store's client."""
        return self.control_store if self.control_store is not None else self.redis

    def with_dispatch(self, dispatch: Dispatcher) -> Runtime:
        """The same ports with another dispatcher (inline agents)."""
        return Runtime(self.redis, self.clock, self.settings, dispatch, self.control_store)
