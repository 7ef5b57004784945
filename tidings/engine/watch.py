"""What ``tidings up`` watches while it serves the default store (interfaces.md, The default store).

Every health check (about twice a second) it asks, in order:

* has the engine exited? — a failure, ``store_engine_died``;
* does it answer PING? One that has not answered for ``TIDINGS_STORE_HANG_SECONDS`` is
  hung: a failure, ``store_unresponsive``. One that answers ``MISCONF`` refuses writes
  (it cannot write its AOF: a full or read-only disk): said once on stderr, and again
  once writes work;
* is ``store.json`` still there and true? Deleted or damaged, it is written again, so
  clients keep finding the store (said once on stderr);
* is the data still there? A state directory deleted under the running engine
  (``store/store-id`` gone) is said once on stderr with ``store_data_missing``; the next
  start then refuses to begin empty (:mod:`tidings.engine.supervisor`).

A failure ends ``tidings up`` (exit 1), for its service manager to restart it.
"""

from __future__ import annotations

import logging
import sys
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tidings.engine import disk, storefile
from tidings.engine.config import BIND
from tidings.engine.supervisor import DefaultStore
from tidings.jobs import log

#: Longest wait for one PING's answer (seconds); the hang budget is counted across them.
PING_SECONDS = 1.0


def line(event: str, message: str, reason: str | None = None) -> None:
    """One ``tidings: [<reason>: ]<message>`` line on stderr, and ``event`` in the log."""
    log.event(event, logging.WARNING, detail=message, reason=reason)
    print(f"tidings: {reason + ': ' if reason else ''}{message}", file=sys.stderr, flush=True)


class EngineWatch:
    """The health check of ``tidings up`` over its default store."""

    def __init__(self, store: DefaultStore, hang_seconds: float) -> None:
        self.store = store
        self.hang_seconds = hang_seconds
        engine = store.engine
        if engine is None:
            raise RuntimeError("the default store is not started")
        self._engine = engine
        self._probe = redis.Redis(
            host=BIND,
            port=engine.port,
            password=engine.secret,
            protocol=2,
            retry=Retry(NoBackoff(), 0),
            socket_timeout=min(PING_SECONDS, hang_seconds),
            socket_connect_timeout=min(PING_SECONDS, hang_seconds),
        )
        self._answered = time.monotonic()
        self._refusing = False
        self._data_missing = False
        #: The reason of the failure :meth:`check` last named.
        self.reason = "store_engine_died"

    def check(self) -> str | None:
        """``None`` while the store serves, else the one line saying why ``up`` stops."""
        died = self.store.problem()
        if died is not None:
            self.reason = "store_engine_died"
            return died
        hung = self._ping()
        if hung is not None:
            self.reason = "store_unresponsive"
            return hung
        self._keep_store_file()
        self._watch_data()
        return None

    def _ping(self) -> str | None:
        try:
            self._probe.ping()
        except redis.ResponseError as exc:
            self._answered = time.monotonic()
            if str(exc).startswith("MISCONF") and not self._refusing:
                self._refusing = True
                fault = disk.probe(self.store.paths.data_dir)
                cause = f"{fault[0]}: {fault[1]}" if fault else str(exc)[:160]
                line(
                    "store_refuses_writes",
                    "the store engine refuses writes (MISCONF): it "
                    "cannot write its append-only file; every write answers "
                    f"store_refuses_writes until it can ({cause})",
                    "store_refuses_writes",
                )
            return None
        except (redis.TimeoutError, redis.ConnectionError):
            silent = time.monotonic() - self._answered
            if silent < self.hang_seconds:
                return None
            return (
                f"the store engine (pid {self._engine.pid}) has answered no PING for "
                f"{silent:.0f}s (TIDINGS_STORE_HANG_SECONDS={self.hang_seconds:g}): it hung; "
                "`tidings up` stops for its service manager to restart it"
            )
        self._answered = time.monotonic()
        if self._refusing:
            self._refusing = False
            line("store_accepts_writes", "the store engine accepts writes again")
        return None

    def _keep_store_file(self) -> None:
        """Write ``store.json`` again if it is gone or says something else."""
        path = self.store.paths.store_file
        try:
            current = storefile.read(path)
        except storefile.StoreFileError:
            current = None
        record = self.store.record()
        if current is not None and current.get("url") == record["url"]:
            return
        try:
            storefile.write(path, record)
        except OSError:
            return  # a full or read-only directory: the engine's MISCONF line says so
        line("store_file_rewritten", f"{path} was missing or damaged: written again")

    def _watch_data(self) -> None:
        """Once the marker file is gone, say so and put it back: the next start then
        finds the data missing and refuses to begin empty (``store_data_missing``)."""
        paths = self.store.paths
        if self._data_missing or paths.marker.exists():
            return
        self._data_missing = True
        line(
            "store_data_missing",
            f"the data of {paths.root} vanished under this `tidings up` (its store folder "
            "was deleted): the engine serves on from memory until it stops, what it "
            "writes from now on is lost then, and the next `tidings up` refuses to start "
            "empty unless --fresh",
            "store_data_missing",
        )
        try:
            paths.create()
            self.store.write_marker()
        except OSError:
            pass  # the directory cannot be written: its own fault line follows

    def close(self) -> None:
        self._probe.close()
