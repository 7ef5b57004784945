"""Dead letters: dramatiq messages that ran out of retries, listed and re-enqueued.

dramatiq's Redis broker keeps a queue's dead letters in ``tidings:<queue>.XQ`` (message
ids by the time they died) with their bodies in ``tidings:<queue>.XQ.msgs``; the
Retries middleware leaves the last traceback in the message's options.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal, TypedDict

from dramatiq import Message
from dramatiq.brokers.redis import RedisBroker
from dramatiq.common import q_name
from redis import Redis

from tidings.store import replies
from tidings.store.jsonfmt import utc_stamp
from tidings.store.keys import NAMESPACE
from tidings.workers.queue_stats import known_queues

#: Dead letters listed per queue, newest first.
DEFAULT_LIMIT = 100
#: Characters of a traceback kept in a listing (its last lines: where it raised).
ERROR_CHARS = 2000
#: Options that belong to a message's earlier life and are dropped on a re-enqueue.
SPENT_OPTIONS = ("retries", "traceback", "redis_message_id", "eta")


class DeadLetter(TypedDict):
    """One dead letter as listed (``actor``, ``traceback`` and ``args`` stay ``None`` for a
    body dramatiq cannot decode)."""

    message_id: str
    queue: str
    died_at: str
    actor: str | None
    error: str | None
    traceback: object
    args: list[object] | None


class Requeued(TypedDict):
    """:func:`requeue` done: the message is on ``queue`` again."""

    status: Literal["ok"]
    message_id: str
    queue: str
    actor: str


class RequeueError(TypedDict):
    """:func:`requeue` refused: no such dead letter, or its body cannot be decoded."""

    status: Literal["error"]
    reason: Literal["not_found", "undecodable"]
    message: str


def _xq(queue: str) -> str:
    return f"{NAMESPACE}:{queue}.XQ"


def _error(options: Mapping[str, object]) -> str | None:
    trace = options.get("traceback")
    if not isinstance(trace, str):
        return None
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:ERROR_CHARS]


def dead_letters(redis: Redis, limit: int = DEFAULT_LIMIT) -> list[DeadLetter]:
    """``{"message_id", "queue", "actor", "error", "traceback", "died_at", "args"}`` of every
    queue's dead letters (up to ``limit`` each, newest first)."""
    queues = sorted(known_queues(redis))
    with redis.pipeline(transaction=False) as pipe:
        for queue in queues:
            pipe.zrevrange(_xq(queue), 0, limit - 1, withscores=True)
        listed = pipe.execute()
    with redis.pipeline(transaction=False) as pipe:
        for queue, entries in zip(queues, listed, strict=True):
            pipe.hmget(f"{_xq(queue)}.msgs", [m for m, _ in entries] or ["-"])
        bodies = pipe.execute()
    out: list[DeadLetter] = []
    for queue, entries, raws in zip(queues, listed, bodies, strict=True):
        for (member, score), raw in zip(entries, raws, strict=False):
            row: DeadLetter = {
                "message_id": replies.text(member),
                "queue": queue,
                "died_at": utc_stamp(score / 1000),
                "actor": None,
                "error": None,
                "traceback": None,
                "args": None,
            }
            if raw is not None:
                try:
                    message = Message.decode(raw)
                except Exception:  # a body dramatiq cannot decode is listed as it is
                    row["error"] = "undecodable message body"
                else:
                    row["actor"] = message.actor_name
                    row["error"] = _error(message.options)
                    row["traceback"] = message.options.get("traceback")
                    row["args"] = list(message.args)
            out.append(row)
    return sorted(out, key=lambda r: r["died_at"], reverse=True)


def requeue(broker: RedisBroker, message_id: str) -> Requeued | RequeueError:
    """Enqueue dead letter ``message_id`` again (fresh retries), then forget the dead copy.

    Every actor is idempotent, so a re-enqueue that races a second one runs the job twice
    at worst, harmlessly.
    """
    redis = broker.client
    for queue in sorted(known_queues(redis)):
        raw = redis.hget(f"{_xq(queue)}.msgs", message_id)
        if raw is None:
            continue
        try:
            message = Message.decode(replies.data(raw))
        except Exception:
            return {
                "status": "error",
                "reason": "undecodable",
                "message": f"dead letter {message_id} cannot be decoded",
            }
        options = {k: v for k, v in message.options.items() if k not in SPENT_OPTIONS}
        fresh = dataclasses.replace(message, queue_name=q_name(message.queue_name), options=options)
        broker.enqueue(fresh)
        with redis.pipeline(transaction=True) as pipe:
            pipe.zrem(_xq(queue), message_id)
            pipe.hdel(f"{_xq(queue)}.msgs", message_id)
            pipe.execute()
        return {
            "status": "ok",
            "message_id": message_id,
            "queue": fresh.queue_name,
            "actor": fresh.actor_name,
        }
    return {"status": "error", "reason": "not_found", "message": f"no dead letter {message_id}"}
