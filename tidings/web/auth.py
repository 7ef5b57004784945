"""Who may read the console: a bearer token or the login form's cookie, when one is set.

On a loopback address no token is needed. Elsewhere ``TIDINGS_WEB_TOKEN`` is required
and every request must carry ``Authorization: Bearer <token>`` or the cookie the login
form sets (a digest of the token, never the token itself); anything else gets 401.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "tidings_web"
#: Paths served without the token: the login form and the static files.
OPEN_PATHS = ("/login", "/static/")
#: Cookie lifetime (seconds).
COOKIE_SECONDS = 12 * 3600


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cookie_value(token: str) -> str:
    return hashlib.sha256(f"tidings-web:{token}".encode()).hexdigest()


def authorised(request: Request, token: str) -> bool:
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                          token.encode()):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return hmac.compare_digest(cookie.encode(), cookie_value(token).encode())


class TokenGate:
    """ASGI middleware: 401 unless the request carries the token (see the module doc)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] != "http" or scope["path"].startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if authorised(request, self.token):
            await self.app(scope, receive, send)
            return
        response: Response
        if "text/html" in request.headers.get("accept", ""):
            response = HTMLResponse(
                '<!doctype html><title>tidings: sign in</title>'
                '<p>Sign in: <a href="/login">/login</a></p>', status_code=401)
        else:
            response = PlainTextResponse("401: TIDINGS_WEB_TOKEN required", status_code=401)
        response.headers["WWW-Authenticate"] = 'Bearer realm="tidings"'
        await response(scope, receive, send)


async def form_fields(request: Request) -> dict[str, str]:
    """An urlencoded form body, first value of each field."""
    body = (await request.body())[:65536].decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body).items()}


def login_response(token: str | None, given: str) -> Any:
    """The login form's answer: a cookie and the overview, or 401."""
    if token is None or not hmac.compare_digest(given.encode(), token.encode()):
        return None
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, cookie_value(token), max_age=COOKIE_SECONDS, httponly=True,
                        samesite="strict")
    return response
