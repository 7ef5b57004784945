"""Starting the console: address checks, the store, the app, uvicorn."""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
import threading
from typing import TYPE_CHECKING

import uvicorn

from tidings.jobs import log
from tidings.web.app import build_app
from tidings.web.auth import is_loopback

if TYPE_CHECKING:
    from tidings._hub import Hub

TOKEN_ENV = "TIDINGS_WEB_TOKEN"
EXIT_USAGE = 2
#: Seconds open event streams get to end when the console stops.
GRACE_SECONDS = 3


#: interfaces.md, Never silent: the shortest TIDINGS_WEB_TOKEN a console off loopback accepts.
MIN_TOKEN_CHARS = 32


class StartError(Exception):
    """The console cannot start: one line for the operator, exit code 2."""

    def __init__(self, message: str, reason: str = "bad_usage") -> None:
        super().__init__(message)
        self.reason = reason


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``0``: any free port)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise StartError(f"cannot resolve --host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise StartError(
            f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port",
            reason="port_in_use",
        ) from None
    sock.listen(128)
    return sock


def check_token(host: str, token: str | None) -> None:
    """Off loopback the console needs a token of at least :data:`MIN_TOKEN_CHARS`."""
    if is_loopback(host):
        return
    if not token:
        raise StartError(
            f"refusing to serve on non-loopback {host} without {TOKEN_ENV}; set "
            f"it (clients then send 'Authorization: Bearer <token>') or use "
            "--host 127.0.0.1",
            reason="bad_usage",
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise StartError(
            f"refusing to serve on non-loopback {host}: {TOKEN_ENV} has "
            f"{len(token)} characters, at least {MIN_TOKEN_CHARS} are needed "
            "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)",
            reason="weak_token",
        )


def console_token(host: str, allow_actions: bool) -> tuple[str | None, bool]:
    """The token in force and whether it was generated here (interfaces.md "Local trust"):
    ``TIDINGS_WEB_TOKEN``; else, for actions on loopback, a new random one; else none
    (a read-only loopback console is open)."""
    token = os.environ.get(TOKEN_ENV) or None
    check_token(host, token)
    if token is None and allow_actions:
        return secrets.token_urlsafe(32), True
    return token, False


def serve(hub: Hub, host: str, port: int, allow_actions: bool) -> int:
    """Serve until interrupted; ``StartError`` before anything is served."""
    token, generated = console_token(host, allow_actions)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    app = build_app(hub, allow_actions=allow_actions, token=token, loopback=is_loopback(host))
    if generated:
        # Printed once, to stderr only: stdout carries the machine-readable ready line.
        sys.stderr.write(
            f"tidings web: actions need the console's token; sign in at "
            f"http://{shown}:{bound}/login?token={token}\n"
        )
        sys.stderr.flush()
    sys.stdout.write(
        json.dumps(
            {
                "status": "ready",
                "role": "web",
                "url": f"http://{shown}:{bound}/",
                "allow_actions": allow_actions,
                "token": token is not None,
            }
        )
        + "\n"
    )
    sys.stdout.flush()
    log.event("web_started", level=20, host=host, port=bound, allow_actions=allow_actions)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    uvicorn.Server(config).run(sockets=[sock])
    return 0


class Background:
    """The console served from a thread of this process (``tidings demo``, tests)."""

    def __init__(self, hub: Hub, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = bind(host, port)
        self.url = f"http://{host}:{self.sock.getsockname()[1]}/"
        config = uvicorn.Config(
            build_app(hub, loopback=is_loopback(host)),
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=GRACE_SECONDS,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="tidings-web", daemon=True
        )

    def __enter__(self) -> Background:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
