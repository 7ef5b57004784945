"""The embedded store: fakeredis's TCP server on loopback.

It speaks the Redis protocol, so other processes (``tidings publish``, an
orchestrator) reach it like any Redis, but it keeps everything in memory:
nothing survives the process.
"""

from __future__ import annotations

import threading

from fakeredis import TcpFakeServer

from tidings.store import lua_sandbox

#: What ``tidings up`` prints when it serves the embedded store.
NOT_DURABLE_WARNING = (
    "embedded store: state lives in this process's memory and is NOT durable; "
    "point TIDINGS_REDIS_URL at a Redis with AOF for anything that must survive a restart"
)


class EmbeddedServer:
    """A Redis-compatible endpoint served from a background thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 6390) -> None:
        lua_sandbox.install()  # scripts get what a real server gives them ("Local trust")
        self._server = TcpFakeServer((host, port))
        self.host = host
        self.port = int(self._server.server_address[1])
        self.url = f"redis://{host}:{self.port}/0"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="tidings-embedded-store", daemon=True
        )

    def start(self) -> EmbeddedServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
