"""Bounded request bodies (interfaces.md "Local trust"): at most 64 KiB read from any request.

An ASGI middleware outside the whole console, ``/login`` included: a declared
``Content-Length`` past the limit is refused before a byte is read; otherwise the
stream is counted as it arrives and refused the moment it passes the limit. What
was read (never more than the limit plus one chunk) is then handed to the app.
"""

from __future__ import annotations

from collections import deque

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The most bytes read from one request body (interfaces.md "Local trust").
MAX_BODY_BYTES = 65_536


def declared_too_large(scope: Scope, limit: int) -> bool:
    """``Content-Length`` says more than ``limit`` (an unparsable one is left to the count)."""
    declared = Headers(scope=scope).get("content-length")
    try:
        return declared is not None and int(declared) > limit
    except ValueError:
        return False


class BodyLimit:
    """413 for a request body past ``limit`` bytes; nothing buffered beyond it."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if declared_too_large(scope, self.limit):
            await self.refuse(scope, receive, send)
            return
        read: deque[Message] = deque()
        size = 0
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.limit:
                await self.refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return read.popleft() if read else await receive()

        await self.app(scope, replay, send)

    async def refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = PlainTextResponse(
            f"413: request body over {self.limit} bytes",
            status_code=413,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)
