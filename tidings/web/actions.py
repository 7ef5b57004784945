"""The console's two actions and its login form.

Actions run only with ``--allow-actions``; each is a POST form that asks for
confirmation, carries the per-process form key (against cross-site posts) and is
logged.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from tidings._agent import Agent
from tidings.jobs import log
from tidings.web import auth
from tidings.web.console import console_of


async def act(request: Request, what: str, run: Callable[[], dict[str, Any]],
              **fields: Any) -> Response:
    console = console_of(request)
    if not console.allow_actions:
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
    console = console_of(request)
    agent_id, event_id = request.path_params["agent_id"], request.path_params["event_id"]
    record = console.hub.registry.get(agent_id)
    if record is None:
        return console.page("missing.html", status_code=404, what=f"agent {agent_id}")
    return await act(request, "ignore", lambda: Agent(console.hub, record).ignore(event_id),
                     agent_id=agent_id, event_id=event_id)


async def requeue_dead(request: Request) -> Response:
    message_id = request.path_params["message_id"]
    hub = console_of(request).hub
    return await act(request, "requeue", lambda: hub.requeue_dead(message_id),
                     message_id=message_id)


async def login(request: Request) -> Response:
    console = console_of(request)
    if request.method == "POST":
        form = await auth.form_fields(request)
        answer = auth.login_response(console.token, form.get("token", ""))
        if answer is not None:
            return answer  # type: ignore[no-any-return]
        return console.page("login.html", status_code=401, failed=True)
    if console.token is None:
        return RedirectResponse("/", status_code=303)
    return console.page("login.html", failed=False)
