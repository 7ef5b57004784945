"""Depths of tidings' dramatiq queues, read straight from the broker's Redis keys.

dramatiq's Redis broker (its ``dispatch.lua``) keeps, in namespace ``tidings``:
the queue ``tidings:<queue>`` (a list of waiting message ids) with its message
bodies in ``<queue>.msgs`` (a hash that also holds fetched, not yet acknowledged
messages), the delay queue ``<queue>.DQ`` (messages with an eta, e.g. retries,
bodies in ``<queue>.DQ.msgs``) and the dead letters ``<queue>.XQ`` (a sorted set).
A queue leaves no key behind once it is empty, so the queues worth listing are
the ones with keys plus the ones the caller expects (every host's queues).
Everything here only reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from redis import Redis
from redis.exceptions import NoPermissionError

from tidings.store import replies
from tidings.store.keys import NAMESPACE
from tidings.store.registry import AgentRegistry
from tidings.workers.routing import QUEUE_PREFIX, host_queue, scheduler_queue

#: Keys fetched per SCAN round trip while looking for queues.
SCAN_COUNT = 1000
#: Suffixes of a queue's keys, longest first so ``.DQ.msgs`` is not read as ``.msgs``.
KEY_SUFFIXES = (".DQ.msgs", ".XQ.msgs", ".msgs", ".DQ", ".XQ")


def _key(queue: str, suffix: str = "") -> str:
    return f"{NAMESPACE}:{queue}{suffix}"


def queue_of(key: bytes | str) -> str | None:
    """The queue a broker key belongs to, or ``None`` for other keys."""
    text = replies.text(key)
    name = text.removeprefix(f"{NAMESPACE}:")
    if name == text or not name.startswith(QUEUE_PREFIX):
        return None
    for suffix in KEY_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def existing_queues(redis: Redis) -> set[str]:
    """Every tidings queue that has a key in Redis.

    A user refused ``SCAN`` (deploy/redis.conf's ACL users: SCAN would list other
    applications' keys) gets the queues of every registered host instead, delay
    queues included.
    """
    found = set()
    try:
        for key in redis.scan_iter(match=_key(f"{QUEUE_PREFIX}*"), count=SCAN_COUNT):
            queue = queue_of(key)
            if queue is not None:
                found.add(queue)
    except NoPermissionError:
        hosts = {record.host for record in AgentRegistry(redis).all()}
        queues = [q for host in hosts for q in (host_queue(host), scheduler_queue(host))]
        return {*queues, *(f"{q}.DQ" for q in queues)}
    return found


def queue_reads(pipe: Any, names: Iterable[str]) -> None:
    """Queue the four reads of each queue onto ``pipe`` (see :func:`queue_figures_of`)."""
    for name in names:
        pipe.llen(_key(name))
        pipe.hlen(_key(name, ".msgs"))
        pipe.hlen(_key(name, ".DQ.msgs"))
        pipe.zcard(_key(name, ".XQ"))


def queue_figures_of(names: list[str], replies: list[Any]) -> list[dict[str, Any]]:
    """The figures of ``names`` from the replies of :func:`queue_reads`."""
    figures = []
    for i, name in enumerate(names):
        waiting, bodies, delayed, dead = (int(v) for v in replies[4 * i: 4 * i + 4])
        figures.append({"name": name, "depth": waiting, "delayed": delayed, "dead": dead,
                        "in_flight": max(bodies - waiting, 0)})
    return figures


def queue_figures(redis: Redis, expected: Iterable[str] = ()) -> list[dict[str, Any]]:
    """``{"name", "depth", "delayed", "dead", "in_flight"}`` per queue, by name.

    ``depth``: messages waiting; ``in_flight``: fetched by a worker and not yet
    acknowledged; ``delayed``: waiting for their eta; ``dead``: dead letters.
    """
    names = sorted(existing_queues(redis) | set(expected))
    with redis.pipeline(transaction=False) as pipe:
        queue_reads(pipe, names)
        replies = pipe.execute()
    return queue_figures_of(names, replies)
