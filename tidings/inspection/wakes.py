"""Which watched agents got a wake signal: the console's live stream hears of it at once.

One blocking ``XREAD`` over the watched agents' wake streams, which costs nothing
while they are quiet; on a cluster, where one command cannot span slots, one
non-blocking read per stream in a pipeline (the caller polls).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from redis import Redis
from redis.cluster import RedisCluster

from tidings.store import replies
from tidings.store.keys import AgentKeys

#: The id before every stream entry.
START = "0-0"

#: RESP2 XREAD: ``[[stream, [(id, {field: value}), ...]], ...]``, or nothing.
XReadReply = list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]] | None


def newest_ids(redis: Redis, agent_ids: list[str]) -> dict[str, str]:
    """Each agent's newest wake signal id (:data:`START` when it has none)."""
    with redis.pipeline(transaction=False) as pipe:
        for agent_id in agent_ids:
            pipe.xrevrange(AgentKeys(agent_id).wake_stream, count=1)
        answers = pipe.execute()
    return {
        agent_id: replies.text(newest[0][0]) if newest else START
        for agent_id, newest in zip(agent_ids, answers, strict=True)
    }


def blocks(redis: Redis) -> bool:
    """Whether :func:`woken_after` blocks (else it answers at once: poll it)."""
    return not isinstance(redis, RedisCluster)


def woken_after(redis: Redis, after: Mapping[str, str], block_ms: int) -> dict[str, str]:
    """The agents with a wake signal newer than ``after`` (agent -> id seen), each with
    its newest such id; blocks up to ``block_ms`` for one where :func:`blocks`."""
    if not after:
        return {}
    by_key = {AgentKeys(agent_id).wake_stream: agent_id for agent_id in after}
    reply: XReadReply
    if blocks(redis):
        reply = cast(
            "XReadReply",
            redis.xread(
                {k: after[a] for k, a in by_key.items()}, count=100, block=max(1, block_ms)
            ),
        )
    else:
        with redis.pipeline(transaction=False) as pipe:
            for key, agent_id in by_key.items():
                pipe.xread({key: after[agent_id]}, count=100)
            reply = [stream for answer in pipe.execute() for stream in (answer or [])]
    found: dict[str, str] = {}
    for stream, entries in reply or []:
        if entries:
            found[by_key[replies.text(stream)]] = replies.text(entries[-1][0])
    return found
