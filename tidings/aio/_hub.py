"""``tidings.aio.connect()`` and :class:`AsyncHub`: every :class:`tidings.Hub` method as a
coroutine, plus the ``redis.asyncio`` client that the waits use."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine, Generator, Mapping
from typing import TYPE_CHECKING, Any

from redis import Redis
from redis.asyncio import Redis as AsyncRedis

from tidings._hub import LOCAL_WORKER_THREADS, MOVE_SETTLE_SECONDS, Hub, Moved
from tidings._hub import connect as connect_sync
from tidings.aio._agent import AsyncAgent
from tidings.aio._docs import share_docs
from tidings.store.async_connection import async_client_for, async_client_like
from tidings.store.clock import Clock
from tidings.store.models import AgentRecord
from tidings.store.scripts import AsyncScripts
from tidings.store.settings import Settings
from tidings.workers.turn_group_async import AsyncGroupPreTurn

if TYPE_CHECKING:
    from tidings.inspection.status import Status
    from tidings.jobs.cap import Lane
    from tidings.jobs.guard import ErrorAnswer
    from tidings.jobs.turns import Startup, TurnError, TurnMemory
    from tidings.scheduler.service import EventSink, SchedulerService
    from tidings.workers.dead_letters import DeadLetter, Requeued, RequeueError


class AsyncHub:
    """A :class:`tidings.Hub` (``.sync``) and asyncio clients on the same stores: ``aredis``
    on the state store, ``acontrol`` on the control store (default: ``aredis``).

    Every public :class:`~tidings.Hub` method is here as a coroutine with the same
    parameters (``tests/unit/test_aio_parity.py``); the sync context manager becomes
    ``async with``, and ``close`` is also spelled ``aclose``. ``pre_turn`` is added: the
    awaited worker group behind :meth:`AsyncAgent.prepare_turn`.
    """

    def __init__(self, hub: Hub, aredis: AsyncRedis, acontrol: AsyncRedis | None = None) -> None:
        self.sync = hub
        self.aredis = aredis
        self.acontrol = acontrol if acontrol is not None else aredis
        self.scripts = AsyncScripts(aredis)
        self._pre_turn = AsyncGroupPreTurn(
            hub.broker, self.acontrol, hub.settings.turn_wait_seconds
        )

    async def pre_turn(self, record: AgentRecord, observe: bool) -> tuple[TurnMemory, Lane]:
        """``prepare_turn``'s worker group, awaited (observation, attention)."""
        return await self._pre_turn(record, observe)

    async def agent(
        self,
        workdir: str | os.PathLike[str],
        memory_repo: str | os.PathLike[str] | None = None,
        agent_id: str | None = None,
        host: str | None = None,
        max_events: Mapping[str, int] | None = None,
        inline: bool = False,
    ) -> AsyncAgent:
        agent = await asyncio.to_thread(
            self.sync.agent, workdir, memory_repo, agent_id, host, max_events, inline
        )
        return AsyncAgent(self, agent)

    async def declare_actors(self) -> None:
        await asyncio.to_thread(self.sync.declare_actors)

    async def find_agent(
        self, workdir: str | os.PathLike[str], inline: bool = False
    ) -> AsyncAgent | None:
        agent = await asyncio.to_thread(self.sync.find_agent, workdir, inline)
        return None if agent is None else AsyncAgent(self, agent)

    async def agents(self) -> list[dict[str, str | None]]:
        return await asyncio.to_thread(self.sync.agents)

    async def startup(self, host: str | None = None) -> dict[str, Startup | TurnError]:
        return await asyncio.to_thread(self.sync.startup, host)

    async def move_agent(
        self, agent_id: str, host: str, settle_seconds: float = MOVE_SETTLE_SECONDS
    ) -> Moved | ErrorAnswer:
        return await asyncio.to_thread(self.sync.move_agent, agent_id, host, settle_seconds)

    async def status(self) -> Status:
        return await asyncio.to_thread(self.sync.status)

    async def dead_letters(self) -> list[DeadLetter]:
        return await asyncio.to_thread(self.sync.dead_letters)

    async def requeue_dead(self, message_id: str) -> Requeued | RequeueError:
        return await asyncio.to_thread(self.sync.requeue_dead, message_id)

    async def set_dismiss_guard(self, channel: str, suggested_verb: str) -> None:
        await asyncio.to_thread(self.sync.set_dismiss_guard, channel, suggested_verb)

    async def start_worker(self, threads: int = LOCAL_WORKER_THREADS) -> None:
        await asyncio.to_thread(self.sync.start_worker, threads)

    async def start_scheduler(self, on_event: EventSink | None = None) -> SchedulerService:
        return await asyncio.to_thread(self.sync.start_scheduler, on_event)

    async def close(self) -> None:
        """Close the asyncio client, then the hub (what it started, the client it built)."""
        if self.acontrol is not self.aredis:
            await self.acontrol.aclose()
        await self.aredis.aclose()
        await asyncio.to_thread(self.sync.close)

    async def aclose(self) -> None:
        """:meth:`close` under the name ``redis.asyncio`` and ``contextlib.aclosing`` use."""
        await self.close()

    async def __aenter__(self) -> AsyncHub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


share_docs(AsyncHub, Hub)


async def _open(
    redis_url: str | None,
    broker_url: str | None,
    background: bool,
    client: Redis | None,
    broker_client: Redis | None,
    settings: Settings | None,
    clock: Clock | None,
) -> AsyncHub:
    hub = await asyncio.to_thread(
        connect_sync,
        redis_url,
        broker_url=broker_url,
        background=background,
        client=client,
        broker_client=broker_client,
        settings=settings,
        clock=clock,
    )
    stores = hub.stores
    if stores is None:  # given clients, or the embedded store
        state = async_client_like(hub.redis)
        if hub.control is hub.redis:
            return AsyncHub(hub, state)
        return AsyncHub(hub, state, async_client_like(hub.control))
    state = async_client_for(stores.state_config)
    if stores.shared:
        return AsyncHub(hub, state)
    return AsyncHub(hub, state, async_client_for(stores.control_config))


class Connecting:
    """What :func:`connect` returns: await it for the hub, or ``async with`` it."""

    def __init__(self, opening: Coroutine[Any, Any, AsyncHub]) -> None:
        self._opening = opening
        self._hub: AsyncHub | None = None

    def __await__(self) -> Generator[Any, None, AsyncHub]:
        return self._opening.__await__()

    async def __aenter__(self) -> AsyncHub:
        self._hub = await self._opening
        return self._hub

    async def __aexit__(self, *exc: object) -> None:
        if self._hub is not None:
            await self._hub.aclose()


def connect(
    redis_url: str | None = None,
    *,
    broker_url: str | None = None,
    background: bool = False,
    client: Redis | None = None,
    broker_client: Redis | None = None,
    settings: Settings | None = None,
    clock: Clock | None = None,
) -> Connecting:
    """:func:`tidings.connect` for asyncio: ``hub = await connect(...)`` or
    ``async with connect(...) as hub``. Same arguments; ``client`` may be a redis-py or
    fakeredis client, whose store the asyncio client then shares."""
    return Connecting(
        _open(redis_url, broker_url, background, client, broker_client, settings, clock)
    )
