"""The state store on a Redis Cluster for ``tidings.aio``: the asyncio twin of
:class:`tidings.store.cluster.StateCluster`.

Two things redis-py's asyncio cluster client does not do, this one does:

- **Waits that queue.** Its per-node pool raises ``MaxConnectionsError`` once
  ``max_connections`` commands are under way on a node, so a thousand waiting agents
  fail instead of waiting their turn. Here every command first takes a slot of one
  bounded semaphore (as ``redis.asyncio.BlockingConnectionPool`` does for one server),
  so no node is ever asked for more connections than its pool holds.
- **Failover.** Every command retries with capped back-off for the same time budget
  as the sync clients (the cluster's own retries have no pause), and stops retrying
  once the process is stopping.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import RedisClusterException
from redis.typing import EncodableT, ResponseT

from tidings.store.cluster import stream_keys

#: redis-py's own retry inside one attempt: none (each attempt re-reads the slot map).
NO_RETRY = Retry(NoBackoff(), 0)


class AsyncStateCluster(RedisCluster):
    """A :class:`redis.asyncio.cluster.RedisCluster` whose commands wait for a free
    connection and ride out a failover."""

    def __init__(
        self,
        *,
        max_connections: int,
        retry_seconds: float,
        retry_on: tuple[type[Exception], ...],
        backoff: ExponentialBackoff,
        stopping: threading.Event,
        **kwargs: Any,
    ) -> None:
        self._slots = asyncio.Semaphore(max_connections)
        self._retry_seconds = retry_seconds
        self._retry_on = retry_on
        self._backoff = backoff
        self._stopping = stopping
        super().__init__(retry=NO_RETRY, max_connections=max_connections, **kwargs)

    async def execute_command(self, *args: EncodableT, **kwargs: object) -> ResponseT:
        async with self._slots:
            failures = 0
            deadline: float | None = None
            while True:
                try:
                    if self._initialize:
                        # Read the slot map first: redis-py routes a command sent before
                        # it to no node in particular, and many such commands at once
                        # tear each other's connections down.
                        await self.initialize()
                    return await super().execute_command(*args, **kwargs)
                except self._retry_on:
                    failures += 1
                    now = time.monotonic()
                    deadline = deadline if deadline is not None else now + self._retry_seconds
                    if now >= deadline or self._stopping.is_set():
                        raise
                    await asyncio.sleep(min(self._backoff.compute(failures), deadline - now))

    async def _determine_slot(self, command: str, *args: EncodableT) -> int:
        streams = stream_keys((command, *args))
        if streams:
            slots = {self.keyslot(key) for key in streams}
            if len(slots) != 1:
                raise RedisClusterException(f"{command} - all keys must map to the same key slot")
            return slots.pop()
        slot: int = await super()._determine_slot(command, *args)
        return slot
