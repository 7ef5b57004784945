"""Hub-wide event and wake counts in ten-second buckets, for the console's rate charts.

Each bucket is one small Redis counter, ``{tidings:rates}:<kind>:<bucket>``, that
expires after :data:`KEEP_SECONDS`; a reader takes the last ten minutes in one ``MGET``
(the hash tag keeps every bucket in one Cluster slot). Kinds: ``events`` (producer
records written into channel files by a flush) and ``wakes`` (wake signals appended).

Writers count in process (issue 25): :func:`count` adds to a per-client tally, and a
timer thread writes every tally every :data:`FLUSH_SECONDS` in one pipelined round
trip (``INCRBY`` + ``EXPIRE`` per kind and bucket), as do :func:`flush_all` (a clean
stop) and the exit of the process. So a flush or a wake costs no round trip of its
own; a crash loses at most the last few seconds of the rate charts, nothing else, and
so does a write that finds the store unreachable (its tally is dropped, logged at DEBUG:
a timer thread must not wait out a failover for a chart).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Sequence

from redis import Redis
from redis.exceptions import ConnectionError, TimeoutError

from tidings.store.connection import stop_retrying

logger = logging.getLogger("tidings")

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


#: Seconds between two writes of the tallies counted in this process.
FLUSH_SECONDS = 5.0

_lock = threading.Lock()
#: id(client) -> (client, {bucket key: amount}) not yet written.
_tallies: dict[int, tuple[Redis, dict[str, int]]] = {}
_timer: threading.Thread | None = None


def count(redis: Redis, kind: str, amount: int, now: float) -> None:
    """Add ``amount`` to the current bucket of ``kind``: in process, written within
    :data:`FLUSH_SECONDS` (no round trip here)."""
    global _timer
    if amount <= 0:
        return
    name = key(kind, int(now // BUCKET_SECONDS))
    with _lock:
        tally = _tallies.setdefault(id(redis), (redis, {}))[1]
        tally[name] = tally.get(name, 0) + amount
        if _timer is None:
            _timer = threading.Thread(target=_flush_forever, name="tidings-rates", daemon=True)
            _timer.start()


def flush(redis: Redis, level: int = logging.WARNING) -> None:
    """Write what this process counted for ``redis`` (one round trip, none if nothing);
    a failure is logged at ``level``."""
    with _lock:
        entry = _tallies.pop(id(redis), None)
    if entry is None or not entry[1]:
        return
    try:
        with redis.pipeline(transaction=False) as pipe:
            for name, amount in entry[1].items():
                pipe.incrby(name, amount)
                pipe.expire(name, KEEP_SECONDS)
            pipe.execute()
    except Exception as exc:  # a rate chart is not worth a worker: said, and dropped
        gone = isinstance(exc, ConnectionError | TimeoutError)  # a store that went away
        logger.log(
            logging.DEBUG if gone else level,
            "%s",
            "rates_flush_failed",
            extra={
                "event": "rates_flush_failed",
                "fields": {"error": type(exc).__name__, "counts": sum(entry[1].values())},
            },
        )


def flush_all(level: int = logging.WARNING) -> None:
    """Write every tally of this process (a clean stop)."""
    with _lock:
        clients = [client for client, _ in _tallies.values()]
    for client in clients:
        flush(client, level)


def _flush_forever() -> None:
    while True:
        time.sleep(FLUSH_SECONDS)
        flush_all()


def _at_exit() -> None:
    stop_retrying()  # exiting: a Redis that is gone gets no failover wait
    flush_all(logging.DEBUG)  # a store stopped before its clients' process is routine


atexit.register(_at_exit)


def series(
    redis: Redis, now: float, kinds: Sequence[str] = KINDS, window: int = WINDOW_SECONDS
) -> dict[str, list[float]]:
    """Per kind, the rate (per second) of each bucket of the last ``window`` seconds, oldest
    first, ending with the current bucket's rate so far (one ``MGET``, after writing what
    this process counted)."""
    flush(redis)
    current = int(now // BUCKET_SECONDS)
    buckets = list(range(current - window // BUCKET_SECONDS, current + 1))
    elapsed = max(now - current * BUCKET_SECONDS, 1.0)
    names = [key(kind, b) for kind in kinds for b in buckets]
    values = redis.mget(names)
    out: dict[str, list[float]] = {}
    for i, kind in enumerate(kinds):
        chunk = [int(v or 0) for v in values[i * len(buckets) : (i + 1) * len(buckets)]]
        out[kind] = [n / BUCKET_SECONDS for n in chunk[:-1]] + [chunk[-1] / elapsed]
    return out
