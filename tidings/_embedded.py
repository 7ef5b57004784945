"""The in-memory store on request (``tidings up --ephemeral``): fakeredis's TCP server
on loopback, behind a password.

It speaks the Redis protocol, so other processes (``tidings publish``, an orchestrator)
reach it like any Redis, but it keeps everything in memory: nothing survives the
process. Every fakeredis server tidings serves is built here, in :class:`EmbeddedServer`.

fakeredis takes ``requirepass`` only as what ``AUTH`` compares with; it lets a client
that never authenticates run every command. Here each connection answers ``NOAUTH``
to anything but ``AUTH`` and ``QUIT`` until it has given the password, as a real server
does (interfaces.md "Local trust").
"""

from __future__ import annotations

import hmac
import threading
from typing import Any

from fakeredis import TcpFakeServer
from fakeredis._clients._tcp_server import TCPFakeRequestHandler
from fakeredis._helpers import SimpleError

from tidings.store import lua_sandbox

#: What ``tidings up --ephemeral`` prints.
NOT_DURABLE_WARNING = (
    "ephemeral store: state lives in this process's memory and is NOT durable; "
    "run `tidings up` without --ephemeral (the default store, with an append-only file) "
    "or point TIDINGS_REDIS_URL at a Redis for anything that must survive a restart"
)
#: The reply to a command before ``AUTH``, as a real server words it.
NOAUTH = "NOAUTH Authentication required."
#: Commands a connection may send before it has authenticated.
BEFORE_AUTH = frozenset({b"auth", b"quit"})


def _password_in(name: bytes, fields: list[bytes]) -> bytes | None:
    """The password an ``AUTH [user] pass`` or ``HELLO n AUTH user pass`` carries."""
    if name == b"auth" and len(fields) in (2, 3):
        return fields[-1]
    words = [f.lower() for f in fields]
    if name == b"hello" and b"auth" in words:
        at = words.index(b"auth")
        return fields[at + 2] if len(fields) > at + 2 else None
    return None


def _gate(sock: Any, password: bytes) -> None:
    """Make the fake socket of one connection refuse commands until ``AUTH``."""
    process = sock._process_command
    state = {"authenticated": False}

    def gated(fields: list[bytes]) -> None:
        if not state["authenticated"] and fields:
            name = fields[0].lower()
            given = _password_in(name, fields)
            if given is not None:
                state["authenticated"] = hmac.compare_digest(given, password)
            elif name not in BEFORE_AUTH:
                sock.put_response(sock._decode_result(SimpleError(NOAUTH)))
                return
        process(fields)

    sock._process_command = gated


class _AuthHandler(TCPFakeRequestHandler):
    def setup(self) -> None:
        super().setup()
        server: EmbeddedTcpServer = self.server  # type: ignore[assignment]
        _gate(self.current_client.get_socket(), server.password)


class EmbeddedTcpServer(TcpFakeServer):
    password: bytes


class EmbeddedServer:
    """A Redis-compatible endpoint with a password, served from a background thread."""

    def __init__(self, password: str, host: str = "127.0.0.1", port: int = 6390) -> None:
        lua_sandbox.install()  # scripts get what a real server gives them ("Local trust")
        self._server = EmbeddedTcpServer((host, port))
        self._server.password = password.encode()
        self._server.RequestHandlerClass = _AuthHandler
        self._server.fake_server.config[b"requirepass"] = password.encode()
        self.host = host
        self.port = int(self._server.server_address[1])
        self.url = f"redis://:{password}@{host}:{self.port}/0"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="tidings-embedded-store", daemon=True
        )

    def start(self) -> EmbeddedServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
