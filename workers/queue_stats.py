"""Depths of tidings' dramatiq queues, read straight from the broker's Redis keys.

dramatiq's Redis broker (its ``dispatch.lua``) keeps, in namespace ``tidings``:
the queue ``tidings:<queue>`` (a list of waiting message ids) with its message
bodies in ``<queue>.msgs`` (a hash that also holds fetched, not yet acknowledged
messages), the delay queue ``<queue>.DQ`` (messages with an eta, e.g. retries,
bodies in ``<queue>.DQ.msgs``) and the dead letters ``<queue>.XQ`` (a sorted set).
dramatiq keeps no set of its queues: the queues listed are every host's, from the
hub-wide host set, and the ones the caller expects.
Everything here only reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypedDict

from redis import Redis
from redis.client import Pipeline

from tidings.store import replies
from tidings.store.keys import HOSTS, NAMESPACE
from tidings.workers.routing import host_queue, scheduler_queue


class QueueFigure(TypedDict):
    """One queue's figures (interfaces.md, ``tidings status --json``)."""

    name: str
    depth: int
    delayed: int
    dead: int
    in_flight: int


def _key(queue: str, suffix: str = "") -> str:
    return f"{NAMESPACE}:{queue}{suffix}"


def known_queues(redis: Redis) -> set[str]:
    """Every queue of every host in the host set (``tidings:hosts``): dramatiq keeps no
    index of its queues, and a keyspace ``SCAN`` would grow with every key (issue 25)."""
    hosts = {replies.text(h) for h in redis.smembers(HOSTS)}
    return {q for host in hosts for q in (host_queue(host), scheduler_queue(host))}


def queue_reads(pipe: Pipeline, names: Iterable[str]) -> None:
    """Queue the four reads of each queue onto ``pipe`` (see :func:`queue_figures_of`)."""
    for name in names:
        pipe.llen(_key(name))
        pipe.hlen(_key(name, ".msgs"))
        pipe.hlen(_key(name, ".DQ.msgs"))
        pipe.zcard(_key(name, ".XQ"))


def queue_figures_of(names: list[str], replies: Sequence[int]) -> list[QueueFigure]:
    """The figures of ``names`` from the replies of :func:`queue_reads`."""
    figures: list[QueueFigure] = []
    for i, name in enumerate(names):
        waiting, bodies, delayed, dead = (int(v) for v in replies[4 * i : 4 * i + 4])
        figures.append(
            {
                "name": name,
                "depth": waiting,
                "delayed": delayed,
                "dead": dead,
                "in_flight": max(bodies - waiting, 0),
            }
        )
    return figures
