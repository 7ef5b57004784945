"""The sync tick (channels.md C27): one ``sync_host`` message per interval, unless the
host's previous one still runs.

The tick sets ``{h:<host>}:sync:running`` with NX and an expiry before it
enqueues; the ``sync_host`` actor deletes it when done. The expiry only matters
when a message is lost (or no worker runs): ticks then resume after it.
"""

from __future__ import annotations

import math
from typing import Any

from dramatiq import Broker
from redis import Redis

from tidings.store.keys import sync_running
from tidings.workers.dispatch import send
from tidings.workers.routing import host_queue

#: The least lifetime (s) of the "sync running" flag.
MIN_FLAG_TTL_SECONDS = 30
#: Id of the tick's job in the in-memory job store.
TICK_JOB_ID = "sync-tick"


def flag_ttl(interval: float) -> int:
    return max(MIN_FLAG_TTL_SECONDS, math.ceil(3 * interval))


def tick(redis: Redis, broker: Broker, host: str, interval: float) -> bool:
    """Enqueue ``sync_host(host)`` unless one is still pending; ``True`` if enqueued."""
    if not redis.set(sync_running(host), "1", nx=True, ex=flag_ttl(interval)):
        return False
    send(broker, "sync_host", host_queue(host), host)
    return True


def add_tick_job(scheduler: Any, redis: Redis, broker: Broker, host: str, interval: float,
                 jobstore: str) -> None:
    scheduler.add_job(
        tick, "interval", seconds=interval, args=[redis, broker, host, interval],
        id=TICK_JOB_ID, name="sync tick", jobstore=jobstore, coalesce=True, max_instances=1,
        misfire_grace_time=None, replace_existing=True,
    )
