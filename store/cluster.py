"""The state store on a Redis Cluster (interfaces.md "Past one Redis"): one client class that
the layers use as they use a plain one.

redis-py's cluster client retries a failed command at once, a fixed number of times,
with no pause: against a dead primary that is over in milliseconds, long before the
cluster has promoted its replica (``cluster-node-timeout`` plus an election). This
client hands every command and every pipeline to the same time-bounded, stoppable
:class:`~tidings.store.connection.FailoverRetry` as the Sentinel clients, after
redis-py has re-read the slot map. ``XREAD`` (a wait) is routed by its one stream's
slot, without the two ``COMMAND GETKEYS`` round trips redis-py spends on commands
whose keys move.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.backoff import NoBackoff
from redis.cluster import ClusterPipeline, RedisCluster
from redis.exceptions import (
    ClusterDownError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.retry import Retry
from redis.typing import EncodableT, ResponseT

from tidings.store.settings import RedisConfig

#: Errors a cluster answers while it fails a primary over, besides the Sentinel ones.
CLUSTER_RETRY_ON: tuple[type[Exception], ...] = (
    ClusterDownError,
    SlotNotCoveredError,
    TryAgainError,
)
#: redis-py's own retry inside one attempt: none (every attempt re-reads the slot map).
NO_RETRY = Retry(NoBackoff(), 0)


def stream_keys(args: Sequence[EncodableT]) -> list[EncodableT] | None:
    """The stream keys of an ``XREAD``/``XREADGROUP`` command, else ``None``."""
    if str(args[0]).upper() not in ("XREAD", "XREADGROUP"):
        return None
    words = [a.upper() if isinstance(a, str) else a for a in args]
    for marker in ("STREAMS", b"STREAMS"):
        if marker in words:
            rest = list(args[words.index(marker) + 1 :])
            return rest[: len(rest) // 2]
    return None


class StateCluster(RedisCluster):
    """A :class:`RedisCluster` whose commands and pipelines ride out a failover."""

    def __init__(self, *, config: RedisConfig, failover_retry: Retry, **kwargs: Any) -> None:
        #: The configuration it was built from (an asyncio twin is built from it too).
        self.config = config
        self.failover_retry = failover_retry  # the constructor already sends commands
        super().__init__(retry=NO_RETRY, **kwargs)

    def get_retry(self) -> Retry:
        return self.failover_retry

    def set_retry(self, retry: Retry) -> None:
        self.failover_retry = retry

    def execute_command(self, *args: EncodableT, **kwargs: object) -> ResponseT:
        run = super().execute_command
        return self.failover_retry.call_with_retry(
            lambda: run(*args, **kwargs),  # type: ignore[no-untyped-call]
            lambda _error: None,
        )

    def determine_slot(self, *args: EncodableT) -> int | None:
        streams = stream_keys(args)
        if streams:
            slots = {self.keyslot(key) for key in streams}  # type: ignore[no-untyped-call]
            if len(slots) != 1:
                raise RedisClusterException(f"{args[0]!s} - all keys must map to the same key slot")
            slot: int = slots.pop()
            return slot
        found: int | None = super().determine_slot(*args)
        return found

    def pipeline(
        self, transaction: bool | None = None, shard_hint: str | None = None
    ) -> StatePipeline:
        pipe: StatePipeline = super().pipeline(transaction, shard_hint)  # type: ignore[no-untyped-call]
        # The same pipeline with an execute that retries; redis-py offers no factory hook.
        pipe.__class__ = StatePipeline
        pipe.failover_retry = self.failover_retry
        return pipe


class StatePipeline(ClusterPipeline):
    """A cluster pipeline that runs again, whole, after a failover error (as a plain
    pipeline does on a reconnect)."""

    failover_retry: Retry

    def execute(self, raise_on_error: bool = True) -> list[object]:
        queued = [(c.args, c.options) for c in self._execution_strategy.command_queue]
        attempts = 0

        def attempt() -> list[object]:
            nonlocal attempts
            if attempts:  # a failed execute emptied the queue
                for args, options in queued:
                    self.pipeline_execute_command(*args, **options)  # type: ignore[no-untyped-call]
            attempts += 1
            return super(StatePipeline, self).execute(raise_on_error)

        return self.failover_retry.call_with_retry(attempt, lambda _error: None)
