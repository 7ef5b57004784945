"""Worker presence: each running worker process says, every few seconds, that it is alive.

A dramatiq middleware: when a worker boots it starts a heartbeat thread that writes
``HSET tidings:workers "<host> <node>:<pid>" <epoch>`` (a process that runs a second
worker, e.g. ``tidings up`` with its scheduler's, counts once); at shutdown it removes
its field. Readers (the web console) count the fields of a host seen within
:data:`FRESH_SECONDS`; a killed process simply goes stale. Each heartbeat also drops
fields older than :data:`FORGET_SECONDS`, so the hash stays as small as the fleet.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Mapping

from dramatiq import Broker, Middleware, Worker
from redis import Redis

from tidings.store import keys, replies

#: Seconds between heartbeats.
HEARTBEAT_SECONDS = 5.0
#: A worker whose last heartbeat is older than this is not counted.
FRESH_SECONDS = 3 * HEARTBEAT_SECONDS
#: A field older than this is deleted by the next heartbeat of any worker.
FORGET_SECONDS = 3600.0


def worker_counts(fields: Mapping[bytes | str, bytes | str], now: float) -> dict[str, int]:
    """Fresh workers per host, from the raw ``tidings:workers`` hash."""
    counts: dict[str, int] = {}
    for raw_field, raw_seen in fields.items():
        name = replies.text(raw_field)
        try:
            seen = float(raw_seen)
        except ValueError:
            continue
        if now - seen <= FRESH_SECONDS:
            host = name.split(" ", 1)[0]
            counts[host] = counts.get(host, 0) + 1
    return counts


class Presence(Middleware):
    """Heartbeats ``tidings:workers`` while a worker of this broker runs."""

    def __init__(self, client: Redis, host: str) -> None:
        self.client = client
        self.field = f"{host} {socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        now = time.time()
        with self.client.pipeline(transaction=False) as pipe:
            pipe.hset(keys.WORKERS, self.field, f"{now:.3f}")
            pipe.hgetall(keys.WORKERS)
            fields = pipe.execute()[1]
        stale = [f for f, seen in fields.items() if now - float(seen or 0) > FORGET_SECONDS]
        if stale:
            self.client.hdel(keys.WORKERS, *stale)

    def _run(self) -> None:
        while not self._stop.is_set():
            # A lost heartbeat only makes the worker look absent for a while.
            with contextlib.suppress(Exception):
                self._beat()
            self._stop.wait(HEARTBEAT_SECONDS)

    def after_worker_boot(self, broker: Broker, worker: Worker) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="tidings-presence", daemon=True)
        self._thread.start()

    def before_worker_shutdown(self, broker: Broker, worker: Worker) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        with contextlib.suppress(Exception):  # else the field goes stale on its own
            self.client.hdel(keys.WORKERS, self.field)
