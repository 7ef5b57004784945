"""``tidings up --ephemeral``: the in-memory store, served on the same contract as the
default store (one ``tidings up`` per state directory, a fresh password, ``store.json``
0600), so clients find it the same way."""

from __future__ import annotations

import errno
import os
import secrets

from tidings._embedded import EmbeddedServer
from tidings.engine import storefile
from tidings.engine.config import BIND, PASSWORD_BYTES
from tidings.engine.dir_locks import FileLock
from tidings.engine.state_paths import StatePaths
from tidings.engine.supervisor import claim, port_busy, state_dir_faults
from tidings.store.settings import Settings

#: What ``store.json`` names as the engine.
ENGINE_LABEL = "fakeredis (in memory, not durable)"


class EphemeralStore:
    """fakeredis over TCP, with the locks and ``store.json`` of the default store."""

    def __init__(self, settings: Settings, port: int) -> None:
        self.paths = StatePaths(settings.state_dir)
        self._port = port
        self._locks: tuple[FileLock, FileLock] | None = None
        self.server: EmbeddedServer | None = None

    def _running(self) -> EmbeddedServer:
        if self.server is None:
            raise RuntimeError("the ephemeral store is not started")
        return self.server

    @property
    def url(self) -> str:
        return self._running().url

    def start(self) -> EphemeralStore:
        with state_dir_faults(self.paths.root):
            self._locks = claim(self.paths)
        try:
            self.server = EmbeddedServer(
                secrets.token_hex(PASSWORD_BYTES), BIND, self._port
            ).start()
        except OSError as exc:
            self.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            raise port_busy(self._port) from None
        storefile.write(self.paths.store_file, self.record())
        return self

    def wait_ready(self) -> EphemeralStore:
        """Ready as soon as it is started (nothing to load)."""
        return self

    def record(self) -> storefile.StoreRecord:
        server = self._running()
        return {
            "url": server.url,
            "pid": os.getpid(),
            "engine": ENGINE_LABEL,
            "port": server.port,
            "owner_pid": os.getpid(),
            "socket": None,
        }

    def problem(self) -> str | None:
        return None

    def close(self) -> tuple[str, str] | None:
        """Stop serving, remove ``store.json``, release the locks (nothing to report)."""
        if self.server is not None:
            self.server.close()
            self.server = None
        storefile.remove(self.paths.store_file)
        if self._locks is not None:
            for lock in reversed(self._locks):
                lock.release()
            self._locks = None
        return None
