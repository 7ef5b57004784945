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
    """Per kind, the rate (per second) of each bucket of the last ``window`` seconds, oldest
    first, ending with the current bucket's rate so far (one ``MGET``)."""
    current = int(now // BUCKET_SECONDS)
    buckets = list(range(current - window // BUCKET_SECONDS, current + 1))
    elapsed = max(now - current * BUCKET_SECONDS, 1.0)
    names = [key(kind, b) for kind in kinds for b in buckets]
    values = redis.mget(names)
    out: dict[str, list[float]] = {}
    for i, kind in enumerate(kinds):
        chunk = [int(v or 0) for v in values[i * len(buckets): (i + 1) * len(buckets)]]
        out[kind] = [n / BUCKET_SECONDS for n in chunk[:-1]] + [chunk[-1] / elapsed]
    return out
