"""``/events``: the Server-Sent Events that drive a page's live updates (poller.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from tidings.web.console import console_of

#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE_SECONDS = 15.0


async def events(request: Request) -> Response:
    """The stream; one opened on a session cookie ends when that session does (logout,
    expiry), so a signed-out page stops receiving at its next event or keep-alive."""
    console = console_of(request)
    poller = console.poller
    session = console.guard.session(request) if console.guard.token else None
    watched = [a for a in request.query_params.get("agents", "").split(",") if a]
    sub = poller.subscribe(watched, deep=request.query_params.get("deep") == "1")

    async def stream() -> AsyncIterator[str]:
        try:
            yield "retry: 1000\n\n"
            while session is None or console.guard.sessions.valid(session):
                try:
                    kind, data = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                yield f"event: {kind}\ndata: {json.dumps(data)}\n\n"
        finally:
            poller.unsubscribe(sub)

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
    )
