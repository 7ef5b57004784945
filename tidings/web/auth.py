"""Who may use the console: a bearer token or a signed-in session, when a token is in force.

A token is in force off loopback (``TIDINGS_WEB_TOKEN``) and with ``--allow-actions``
on any address (``TIDINGS_WEB_TOKEN``, else one generated at start). Then every
request but ``/login`` and the static files carries ``Authorization: Bearer <token>``
or the session cookie ``/login`` sets (a random session id kept server-side, never
the token); anything else gets 401. A read-only console on loopback has no token.
Wrong tokens count as failed sign-ins (sessions.py): past ten a minute, 429.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tidings.web.sessions import SESSION_SECONDS, Sessions, Throttle

COOKIE = "tidings_web"
#: Paths served without the token: the login form and the static files.
OPEN_PATHS = ("/login", "/static/")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def client_address(conn: HTTPConnection) -> str:
    return conn.client.host if conn.client else "unknown"


@dataclass
class Guard:
    """The console's credential (``None``: open) and its sign-in state."""

    token: str | None
    #: The session cookie is ``Secure`` (off loopback).
    secure: bool = False
    sessions: Sessions = field(default_factory=Sessions)
    throttle: Throttle = field(default_factory=Throttle)

    def is_token(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def bearer(self, conn: HTTPConnection) -> str | None:
        scheme, _, given = conn.headers.get("authorization", "").partition(" ")
        return given.strip() if scheme.lower() == "bearer" else None

    def session(self, conn: HTTPConnection) -> str | None:
        session = conn.cookies.get(COOKIE)
        return session if session and self.sessions.valid(session) else None

    def slowed(self, conn: HTTPConnection) -> Response | None:
        """429 while the client's address has failed too often (sessions.Throttle)."""
        wait = self.throttle.blocked(client_address(conn))
        if not wait:
            return None
        return PlainTextResponse(
            "429: too many failed sign-ins; try again in a minute",
            status_code=429,
            headers={"Retry-After": str(math.ceil(wait))},
        )

    def sign_in(self, conn: HTTPConnection, given: str) -> Response | None:
        """A session cookie and the overview for the right token; ``None`` (counted) if wrong."""
        if not self.is_token(given):
            self.throttle.failed(client_address(conn))
            return None
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE,
            self.sessions.start(),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=self.secure,
        )
        return response

    def sign_out(self, conn: HTTPConnection) -> Response:
        session = conn.cookies.get(COOKIE)
        if session:
            self.sessions.end(session)
        response = RedirectResponse("/login" if self.token else "/", status_code=303)
        response.delete_cookie(COOKIE, httponly=True, samesite="strict", secure=self.secure)
        return response


def unauthorised(request: Request) -> Response:
    response: Response
    if "text/html" in request.headers.get("accept", ""):
        response = HTMLResponse(
            "<!doctype html><title>tidings: sign in</title>"
            '<p>Sign in: <a href="/login">/login</a></p>',
            status_code=401,
        )
    else:
        response = PlainTextResponse("401: the console's token is required", status_code=401)
    response.headers["WWW-Authenticate"] = 'Bearer realm="tidings"'
    return response


class TokenGate:
    """ASGI middleware: 401 unless the request carries the token (see the module doc)."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.guard.token is None
            or scope["type"] != "http"
            or scope["path"].startswith(OPEN_PATHS)
        ):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = self.guard.bearer(request)
        answer: Response | None = None
        if given is None:  # a stale cookie is no failed sign-in (the browser just sent it)
            allowed = self.guard.session(request) is not None
        else:
            answer = self.guard.slowed(request)
            allowed = answer is None and self.guard.is_token(given)
            if answer is None and not allowed:
                self.guard.throttle.failed(client_address(request))
        if allowed:
            await self.app(scope, receive, send)
            return
        await (answer or unauthorised(request))(scope, receive, send)


def same_origin(request: Request) -> bool:
    """A browser's POST came from the console's own pages: ``Sec-Fetch-Site`` (set by the
    browser, never by a page) when sent, else ``Origin``; a client that sends neither is no
    browser, so no page made it post, and passes (its token or cookie was checked)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    return hmac.compare_digest(origin.lower().encode(), own.lower().encode())


async def form_fields(request: Request) -> dict[str, str]:
    """An urlencoded form body (bounded by limits.BodyLimit), first value of each field."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body).items()}
