"""The console's routes (interfaces.md, "Web console"), as a Starlette app.

Pages are rendered on the server with Jinja2 (autoescape on: every value a producer
wrote is escaped), and the only script is ``static/console.js``; the Content Security
Policy forbids inline scripts, so even a value that escaped escaping would not run.
Read-only unless ``allow_actions`` (actions.py). The routes are module functions that
find the process's :class:`~tidings.web.console.Console` on ``app.state``.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tidings._hub import Hub
from tidings.web import actions, auth, pages
from tidings.web.body_limit import BodyLimit
from tidings.web.console import Console
from tidings.web.sse import events

#: Host names a loopback console answers to (DNS rebinding guard).
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]
STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

ROUTES: list[BaseRoute] = [
    Route("/", pages.overview),
    Route("/agents", pages.agents),
    Route("/agents/{agent_id}", pages.agent),
    Route("/agents/{agent_id}/spill/{name}", pages.spill),
    Route("/agents/{agent_id}/inbox/{event_id}/ignore", actions.ignore, methods=["POST"]),
    Route("/dead", pages.dead),
    Route("/dead/{message_id}/requeue", actions.requeue_dead, methods=["POST"]),
    Route("/events", events),
    Route("/api/status", pages.api_status),
    Route("/login", actions.login, methods=["GET", "POST"]),
    Route("/logout", actions.logout, methods=["POST"]),
    Mount("/static", StaticFiles(directory=STATIC), name="static"),
]


def build_app(
    hub: Hub, *, allow_actions: bool = False, token: str | None = None, loopback: bool = True
) -> Starlette:
    """The console over ``hub``; ``token`` gates every request, ``loopback`` pins Host
    (and, off loopback, makes the session cookie ``Secure``)."""
    guard = auth.Guard(token, secure=not loopback)
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(BodyLimit),
        Middleware(auth.TokenGate, guard=guard),
    ]
    if loopback:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_NAMES))
    app = Starlette(routes=ROUTES, middleware=middleware)
    app.state.console = Console.over(hub, allow_actions=allow_actions, guard=guard)
    return app


class SecurityHeaders:
    """Adds the Content Security Policy and friends to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                # same-origin, not no-referrer: under no-referrer a browser's own form
                # posts carry ``Origin: null`` and the Origin check could not tell them apart.
                headers += [
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
