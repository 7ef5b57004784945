"""The console's routes (api.md, "Web console"), as a Starlette app.

Pages are rendered on the server with Jinja2 (autoescape on: every value a producer
wrote is escaped), and the only script is ``static/console.js``; the Content Security
Policy forbids inline scripts, so even a value that escaped escaping would not run.
Read-only unless ``allow_actions``: then ignoring an inbox item and re-enqueueing a
dead letter are POST forms that ask for confirmation, carry a per-process form key
(against cross-site posts) and are logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tidings._agent import Agent
from tidings._hub import Hub
from tidings.jobs import log
from tidings.jobs.cap.spill import ATTENTION_STEM, LOGS_DIR
from tidings.store.jsonfmt import utc_stamp
from tidings.store.rates import BUCKET_SECONDS, WINDOW_SECONDS
from tidings.web import auth
from tidings.web.agent_view import agent_page
from tidings.web.agents_list import agents_page
from tidings.web.charts import sparkline
from tidings.web.poller import Poller
from tidings.web.summary import Summary
from tidings.workers.dead_letters import dead_letters

#: Host names a loopback console answers to (DNS rebinding guard).
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]
#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE_SECONDS = 15.0
STATIC = Path(__file__).parent / "static"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def pretty(value: Any) -> str:
    """JSON for people (escaped by the template like any other text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def templates() -> Environment:
    env = Environment(loader=PackageLoader("tidings.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["pretty"] = pretty
    env.filters["stamp"] = utc_stamp
    return env


@dataclass
class Console:
    """What every route shares: the hub, the template environment, the poller."""

    hub: Hub
    allow_actions: bool
    env: Environment
    poller: Poller
    form_key: str

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(
            allow_actions=self.allow_actions, form_key=self.form_key,
            server_now=self.hub.clock.now(), **context)
        return HTMLResponse(html, status_code=status_code)


def overview_context(figures: dict[str, Any]) -> dict[str, Any]:
    rates = figures.get("rates", {})
    charts = {kind: sparkline(rates.get(kind, [])) for kind in ("events", "wakes")}
    return {"o": figures, "charts": charts, "window_minutes": WINDOW_SECONDS // 60,
            "bucket_seconds": BUCKET_SECONDS}


def build_app(hub: Hub, *, allow_actions: bool = False, token: str | None = None,
              loopback: bool = True) -> Starlette:
    """The console over ``hub``; ``token`` gates every request, ``loopback`` pins Host."""
    env = templates()
    summary = Summary(hub.redis)

    def read_summary() -> dict[str, Any]:
        figures = summary.read(hub.clock.now())
        html = env.get_template("_overview_live.html").render(**overview_context(figures))
        return {"at": figures["at"], "dead": figures["dead"], "html": html}

    console = Console(hub, allow_actions, env, Poller(hub.runtime, read_summary),
                      secrets.token_urlsafe(24))

    async def overview(request: Request) -> Response:
        figures = await anyio.to_thread.run_sync(summary.read, hub.clock.now())
        return console.page("overview.html", **overview_context(figures))

    async def agents(request: Request) -> Response:
        q = request.query_params.get("q", "")
        try:
            page = int(request.query_params.get("page", "1"))
        except ValueError:
            page = 1
        listing = await anyio.to_thread.run_sync(agents_page, hub.redis, hub.clock.now(), q,
                                                 page)
        name = "_agents_table.html" if request.query_params.get("part") else "agents.html"
        return console.page(name, listing=listing)

    async def agent(request: Request) -> Response:
        record = hub.registry.get(request.path_params["agent_id"])
        if record is None:
            return console.page("missing.html", status_code=404,
                                what=f"agent {request.path_params['agent_id']}")
        view = await anyio.to_thread.run_sync(agent_page, hub.runtime, record)
        name = "_agent_live.html" if request.query_params.get("part") else "agent.html"
        return console.page(name, v=view)

    async def spill(request: Request) -> Response:
        record = hub.registry.get(request.path_params["agent_id"])
        name = request.path_params["name"]
        if record is None or not name.startswith(ATTENTION_STEM) or "/" in name \
                or not name.endswith(".json"):
            return PlainTextResponse("no such spill file", status_code=404)
        path = record.root / LOGS_DIR / name
        if path.is_symlink() or not path.is_file():
            return PlainTextResponse("no such spill file (not written yet)", status_code=404)
        return FileResponse(path, media_type="text/plain; charset=utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})

    async def dead(request: Request) -> Response:
        letters = await anyio.to_thread.run_sync(dead_letters, hub.redis)
        return console.page("dead.html", letters=letters)

    async def api_status(request: Request) -> Response:
        return JSONResponse(await anyio.to_thread.run_sync(hub.status))

    async def events(request: Request) -> Response:
        watched = [a for a in request.query_params.get("agents", "").split(",") if a]
        sub = console.poller.subscribe(watched, deep=request.query_params.get("deep") == "1")

        async def stream() -> AsyncIterator[str]:
            try:
                yield "retry: 1000\n\n"
                while True:
                    try:
                        kind, data = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
                    except TimeoutError:
                        yield ": keep-alive\n\n"
                        continue
                    yield f"event: {kind}\ndata: {json.dumps(data)}\n\n"
            finally:
                console.poller.unsubscribe(sub)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    async def act(request: Request, what: str, run: Any, **fields: Any) -> Response:
        if not allow_actions:
            return PlainTextResponse("actions are off (start with --allow-actions)",
                                     status_code=403)
        form = await auth.form_fields(request)
        if not secrets.compare_digest(form.get("form_key", ""), console.form_key):
            return PlainTextResponse("stale or foreign form", status_code=403)
        result = await anyio.to_thread.run_sync(run)
        log.event("web_action", level=logging.INFO, action=what, result=result.get("status"),
                  reason=result.get("reason"), client=request.client.host
                  if request.client else None, **fields)
        return console.page("action.html", status_code=200 if result.get("status") == "ok"
                            else 409, what=what, result=result, back=form.get("back", "/"))

    async def ignore(request: Request) -> Response:
        agent_id, event_id = request.path_params["agent_id"], request.path_params["event_id"]
        record = hub.registry.get(agent_id)
        if record is None:
            return console.page("missing.html", status_code=404, what=f"agent {agent_id}")
        return await act(request, "ignore", lambda: Agent(hub, record).ignore(event_id),
                         agent_id=agent_id, event_id=event_id)

    async def requeue_dead(request: Request) -> Response:
        message_id = request.path_params["message_id"]
        return await act(request, "requeue", lambda: hub.requeue_dead(message_id),
                         message_id=message_id)

    async def login(request: Request) -> Response:
        if request.method == "POST":
            form = await auth.form_fields(request)
            answer = auth.login_response(token, form.get("token", ""))
            if answer is not None:
                return answer  # type: ignore[no-any-return]
            return console.page("login.html", status_code=401, failed=True)
        if token is None:
            return RedirectResponse("/", status_code=303)
        return console.page("login.html", failed=False)

    routes = [
        Route("/", overview),
        Route("/agents", agents),
        Route("/agents/{agent_id}", agent),
        Route("/agents/{agent_id}/spill/{name}", spill),
        Route("/agents/{agent_id}/inbox/{event_id}/ignore", ignore, methods=["POST"]),
        Route("/dead", dead),
        Route("/dead/{message_id}/requeue", requeue_dead, methods=["POST"]),
        Route("/events", events),
        Route("/api/status", api_status),
        Route("/login", login, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(auth.TokenGate, token=token)]
    if loopback:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_NAMES))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.console = console
    return app


class SecurityHeaders:
    """Adds the Content Security Policy and friends to every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(b"content-security-policy", CSP.encode()),
                            (b"x-content-type-options", b"nosniff"),
                            (b"referrer-policy", b"no-referrer"),
                            (b"x-frame-options", b"DENY")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
