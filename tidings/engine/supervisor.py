"""The default store as ``tidings up`` runs it: lock, engine, ``store.json``, stop.

Start: take the owner lock (busy: another ``tidings up`` serves the directory); take
the server lock, stopping an orphaned engine if one holds it; clear what a crash left;
start the engine with the lock; once it answers PING, write ``store.json``. Stop:
SHUTDOWN (append-only file synced), remove ``store.json``, let go of the locks. The
caller stops its worker and scheduler before :meth:`DefaultStore.close`.
"""

from __future__ import annotations

import errno
import os
import socket

from tidings.engine import config, storefile
from tidings.engine.binary import EngineUnavailable, find_engine
from tidings.engine.child import EngineFailed, EngineProcess
from tidings.engine.dir_locks import FileLock
from tidings.engine.orphan import clear_stale, stop_orphan
from tidings.engine.state_paths import StatePaths
from tidings.store.settings import Settings


class StoreUnavailable(Exception):
    """The default store cannot be served; one line, and a machine-readable reason."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def port_busy(port: int) -> StoreUnavailable:
    return StoreUnavailable(f"port {port} is already in use (another `tidings up`?); choose "
                            "another with --port", reason="port_in_use")


def free_port(requested: int) -> int:
    """``requested`` if nothing listens there (0: any free port), else StoreUnavailable."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((config.BIND, requested))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise port_busy(requested) from None
        return int(probe.getsockname()[1])


def claim(paths: StatePaths) -> tuple[FileLock, FileLock]:
    """The owner and server locks of ``paths``, with nothing stale left behind."""
    paths.create()
    owner = FileLock(paths.owner_lock)
    if not owner.acquire():
        raise StoreUnavailable(
            f"another `tidings up` (pid {owner.holder()}) already serves {paths.root}; stop "
            "it first, or give this one its own TIDINGS_STATE_DIR", reason="store_busy")
    owner.note_pid()
    server = FileLock(paths.server_lock)
    if not server.acquire() and not stop_orphan(paths, server):
        owner.release()
        raise StoreUnavailable(f"an engine left by an earlier `tidings up` still holds "
                               f"{paths.server_lock} and does not stop", reason="store_busy")
    clear_stale(paths)
    return owner, server


class DefaultStore:
    """The engine this ``tidings up`` serves, and the files that describe it."""

    def __init__(self, settings: Settings, port: int) -> None:
        self.paths = StatePaths(settings.state_dir)
        self._settings = settings
        self._port = port
        self._locks: tuple[FileLock, FileLock] | None = None
        self.engine: EngineProcess | None = None

    def _started(self) -> EngineProcess:
        if self.engine is None:
            raise RuntimeError("the default store is not started")
        return self.engine

    @property
    def url(self) -> str:
        return self._started().url

    def start(self) -> DefaultStore:
        """Start the engine (it loads its data while the caller goes on; then
        :meth:`wait_ready`). Raises :class:`StoreUnavailable`, leaving nothing running."""
        try:
            engine = find_engine(self._settings.store_server)
        except EngineUnavailable as exc:
            raise StoreUnavailable(str(exc), reason="no_engine") from None
        self._locks = claim(self.paths)
        try:
            port = free_port(self._port)
            secret = config.password(self.paths)
            config.write(self.paths, config.render(self.paths, port, secret,
                                                   self._settings.store_fsync))
            self.engine = EngineProcess(engine, self.paths, port, secret)
            server_fd = self._locks[1].fd
            if server_fd is None:
                raise RuntimeError("the server lock is not held")
            self.engine.spawn(server_fd)
        except BaseException:
            self.close()
            raise
        return self

    def wait_ready(self) -> DefaultStore:
        """Once the engine answers PING, publish ``store.json``."""
        engine = self._started()
        try:
            engine.wait_ready()
        except EngineFailed as exc:
            self.close()
            raise StoreUnavailable(str(exc), reason="engine_failed") from None
        except BaseException:
            self.close()
            raise
        storefile.write(self.paths.store_file, self.record())
        return self

    def record(self) -> storefile.StoreRecord:
        """What ``store.json`` says."""
        engine = self._started()
        return {"url": engine.url, "pid": engine.pid, "engine": engine.engine.label,
                "port": engine.port, "owner_pid": os.getpid(),
                "socket": str(self.paths.socket) if self.paths.socket else None}

    def problem(self) -> str | None:
        return self.engine.problem() if self.engine is not None else None

    def close(self) -> None:
        """Shut the engine down (AOF synced), remove ``store.json``, release the locks."""
        if self.engine is not None:
            self.engine.shutdown()
        storefile.remove(self.paths.store_file)
        if self._locks is not None:
            for lock in reversed(self._locks):
                lock.release()
            self._locks = None
