""":class:`AsyncAgent`: every :class:`tidings.Agent` method as a coroutine.

Waiting is native ``redis.asyncio`` and holds no thread: ``wait_for_wake`` blocks
in ``XREAD`` on the wake stream, ``publish(..., wait=True)`` polls the applied
sequence with ``asyncio.sleep``, and ``prepare_turn`` pops its worker group's
results. The short file and Redis work of every call runs in
``asyncio.to_thread``, through the very same sync code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from redis.asyncio import Redis as AsyncRedis

from tidings._agent import Agent
from tidings._turn import Turn
from tidings.aio._docs import share_docs
from tidings.aio._guard import answering, raising
from tidings.jobs.cap import Lane
from tidings.jobs.channels import PublishResult, pushed_through, wait_applied
from tidings.jobs.consumer import wait_for_wake_async
from tidings.jobs.guard import ErrorAnswer
from tidings.jobs.turns import (
    Begun,
    Startup,
    TurnError,
    TurnMemory,
    begin_turn,
    claim_turn,
    inline_pre_turn,
)
from tidings.store.models import AgentRecord
from tidings.store.scripts import AsyncScripts

if TYPE_CHECKING:
    from tidings.jobs.cap import Block
    from tidings.jobs.consumer import Entry, Notifications, ToolResult
    from tidings.jobs.inbox import Admitted, Ignored, InboxError, PublicItem
    from tidings.jobs.memory import ObservationResult
    from tidings.jobs.turns import SideEffectMarked

#: What a producer call answers through the sync agent's guard.
Pushed = PublishResult | ErrorAnswer


class Waits(Protocol):
    """What an agent needs of its :class:`tidings.aio.AsyncHub`: the asyncio client, its
    scripts and the awaited worker group."""

    aredis: AsyncRedis
    scripts: AsyncScripts

    async def pre_turn(self, record: AgentRecord, observe: bool) -> tuple[TurnMemory, Lane]: ...


class AsyncAgent:
    """An :class:`tidings.Agent` whose methods are coroutines: the same parameters, results
    and reasons (each docstring is the sync one's), with the waits native to asyncio."""

    def __init__(self, hub: Waits, agent: Agent) -> None:
        self.hub = hub
        #: The sync agent whose code every coroutine runs.
        self.sync = agent

    @property
    def agent_id(self) -> str:
        return self.sync.agent_id

    @property
    def workdir(self) -> str:
        return self.sync.workdir

    @property
    def record(self) -> AgentRecord:
        return self.sync.record

    @property
    def inline(self) -> bool:
        return self.sync.inline

    def __repr__(self) -> str:
        return f"<AsyncAgent {self.agent_id} {self.workdir} host={self.record.host}>"

    # -- producers -----------------------------------------------------------------

    async def _settled(self, channel: str, push: Callable[[], Pushed], wait: bool) -> Pushed:
        """Run a producer call without its wait, then await the flush with no thread."""

        def pushed() -> tuple[Pushed, int]:
            result = push()
            pending = wait and result.get("status") == "ok" and result.get("flushed") is False
            if not pending:
                return result, 0
            return result, pushed_through(self.sync.runtime.redis, self.agent_id, channel)

        result, seq = await asyncio.to_thread(pushed)
        if seq and result["status"] == "ok":
            result["flushed"] = await wait_applied(self.hub.aredis, self.agent_id, channel, seq)
        return result

    @answering("publish")
    async def publish(
        self, channel: str, envelope: Mapping[str, object], wait: bool = False
    ) -> Pushed:
        return await self._settled(channel, lambda: self.sync.publish(channel, envelope), wait)

    @answering("publish_event")
    async def publish_event(
        self,
        channel: str,
        event: Mapping[str, object],
        priority: str | None = None,
        idempotency_key: str | None = None,
        wait: bool = False,
    ) -> Pushed:
        return await self._settled(
            channel,
            lambda: self.sync.publish_event(
                channel, event, priority=priority, idempotency_key=idempotency_key
            ),
            wait,
        )

    async def publish_daemon_event(
        self,
        daemon_id: str,
        event: Mapping[str, object],
        priority: str | None = None,
        wait: bool = False,
    ) -> Pushed:
        # Runs in the caller under the daemon locks: final whatever ``wait`` says (C30).
        return await asyncio.to_thread(
            self.sync.publish_daemon_event, daemon_id, event, priority, wait
        )

    # -- consumer reads and the tool ---------------------------------------------------

    async def snapshot(self) -> dict[str, dict[str, object]]:
        return await asyncio.to_thread(self.sync.snapshot)

    async def stamp(
        self, result: dict[str, object], persistent: Mapping[str, object] | None = None
    ) -> ToolResult | ErrorAnswer:
        return await asyncio.to_thread(self.sync.stamp, result, persistent)

    async def render(
        self, persistent: Mapping[str, object] | None = None
    ) -> Notifications | ErrorAnswer:
        return await asyncio.to_thread(self.sync.render, persistent)

    async def cap_persistent(self, block: Mapping[str, object]) -> Block | ErrorAnswer:
        return await asyncio.to_thread(self.sync.cap_persistent, block)

    async def notification(
        self, action: str, input: Mapping[str, object] | None = None
    ) -> ToolResult | ErrorAnswer:
        return await asyncio.to_thread(self.sync.notification, action, input)

    async def call_tool(self, arguments: Mapping[str, object]) -> ToolResult | ErrorAnswer:
        return await asyncio.to_thread(self.sync.call_tool, arguments)

    # -- the orchestrator's turn loop ------------------------------------------------

    async def startup(self) -> Startup | ErrorAnswer:
        return await asyncio.to_thread(self.sync.startup)

    @answering("prepare_turn")
    async def prepare_turn(self, kind: str = "ordinary") -> Turn | TurnError:
        rt, record = self.sync.runtime, self.record
        begun = await asyncio.to_thread(begin_turn, rt, record, kind)
        if not isinstance(begun, Begun):
            return begun
        if self.inline:
            memory, attention = await asyncio.to_thread(
                inline_pre_turn, rt, record, begun.observing
            )
        else:
            memory, attention = await self.hub.pre_turn(record, begun.observing)
        result = await asyncio.to_thread(claim_turn, rt, record, begun, memory, attention)
        return Turn.from_result(result) if result["status"] == "ok" else result

    async def mark_side_effect(
        self, turn: Turn | str
    ) -> SideEffectMarked | TurnError | ErrorAnswer:
        return await asyncio.to_thread(self.sync.mark_side_effect, turn)

    async def finish_turn(
        self,
        turn: Turn | str,
        ok: bool = True,
        side_effects: bool = False,
        ignored: Iterable[str] = (),
        owned: Mapping[str, object] | None = None,
    ) -> TurnError | dict[str, object] | ErrorAnswer:
        return await asyncio.to_thread(
            self.sync.finish_turn, turn, ok, side_effects, tuple(ignored), owned
        )

    async def inbox(
        self, limit: int = 30, state: str | None = None, before: str | None = None
    ) -> list[PublicItem]:
        return await asyncio.to_thread(self.sync.inbox, limit, state, before)

    async def ignore(self, event_id: str) -> Ignored | InboxError | ErrorAnswer:
        return await asyncio.to_thread(self.sync.ignore, event_id)

    async def admit(
        self,
        source_kind: str,
        summary: str,
        payload: Mapping[str, object] | None = None,
        wake: bool = False,
        key: str | None = None,
    ) -> Admitted | InboxError | ErrorAnswer:
        return await asyncio.to_thread(self.sync.admit, source_kind, summary, payload, wake, key)

    async def observe_memory(self, reason: str = "manual") -> ObservationResult | ErrorAnswer:
        return await asyncio.to_thread(self.sync.observe_memory, reason)

    # -- wake signals ----------------------------------------------------------------

    @raising("wait_for_wake")
    async def wait_for_wake(self, timeout: float) -> Entry | None:
        """Await up to ``timeout`` seconds for the oldest unconsumed wake signal (C26)."""
        return await wait_for_wake_async(self.hub.aredis, self.hub.scripts, self.agent_id, timeout)


share_docs(AsyncAgent, Agent)
