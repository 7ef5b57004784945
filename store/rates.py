"""Hub-wide event and wake counts in ten-second buckets, for the console's rate charts.

Each bucket is one small Redis counter, ``{tidings:rates}:<kind>:<bucket>``, that
expires after :data:`KEEP_SECONDS`; a writer adds with one pipelined
``INCRBY`` + ``EXPIRE`` and a reader takes the last ten minutes in one ``MGET``
(the hash tag keeps every bucket in one Cluster slot). Kinds: ``events`` (producer
records written into channel files by a flush) and ``wakes`` (wake signals appended).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Width of one bucket (seconds).
BUCKET_SECONDS = 10
#: How long a bucket is kept (seconds): the charts' ten minutes, and some slack.
KEEP_SECONDS = 900
#: The window the console charts (seconds).
WINDOW_SECONDS = 600
EVENTS, WAKES = "events", "wakes"
KINDS = (EVENTS, WAKES)


def key(kind: str, bucket: int) -> str:
    return f"{{tidings:rates}}:{kind}:{bucket}"


def count(redis: Any, kind: str, amount: int, now: float) -> None:
    """Add ``amount`` to the current bucket of ``kind`` (one round trip)."""
    if amount <= 0:
        return
    name = key(kind, int(now // BUCKET_SECONDS))
    with redis.pipeline(transaction=False) as pipe:
        pipe.incrby(name, amount)
        pipe.expire(name, KEEP_SECONDS)
        pipe.execute()


def series(redis: Any, now: float, kinds: Sequence[str] = KINDS,
           window: int = WINDOW_SECONDS) -> dict[str, list[float]]:
    """Per kind, the rate (per second) of each complete bucket of the last ``window``
    seconds, oldest first (one ``MGET``)."""
    last = int(now // BUCKET_SECONDS) - 1
    buckets = list(range(last - window // BUCKET_SECONDS + 1, last + 1))
    names = [key(kind, b) for kind in kinds for b in buckets]
    values = redis.mget(names)
    out: dict[str, list[float]] = {}
    for i, kind in enumerate(kinds):
        chunk = values[i * len(buckets): (i + 1) * len(buckets)]
        out[kind] = [int(v or 0) / BUCKET_SECONDS for v in chunk]
    return out
