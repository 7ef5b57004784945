"""The console's two actions, its login form and logout.

Actions run only with ``--allow-actions``; each is a POST form that asks for
confirmation, carries the per-process form key and comes from the console's own
origin (``Origin``/``Sec-Fetch-Site``: both against cross-site posts), and is logged.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from tidings._agent import Agent
from tidings.jobs import log
from tidings.web import auth
from tidings.web.console import console_of


def foreign() -> Response:
    return PlainTextResponse("403: a post from another site", status_code=403)


async def act(
    request: Request, what: str, run: Callable[[], Mapping[str, object]], **fields: Any
) -> Response:
    console = console_of(request)
    if not console.allow_actions:
        return PlainTextResponse("actions are off (start with --allow-actions)", status_code=403)
    if not auth.same_origin(request):
        return foreign()
    form = await auth.form_fields(request)
    if not secrets.compare_digest(form.get("form_key", ""), console.form_key):
        return PlainTextResponse("stale or foreign form", status_code=403)
    result = await anyio.to_thread.run_sync(run)
    log.event(
        "web_action",
        level=logging.INFO,
        action=what,
        result=result.get("status"),
        reason=result.get("reason"),
        client=request.client.host if request.client else None,
        **fields,
    )
    return console.page(
        "action.html",
        status_code=200 if result.get("status") == "ok" else 409,
        what=what,
        result=result,
        back=form.get("back", "/"),
    )


async def ignore(request: Request) -> Response:
    console = console_of(request)
    agent_id, event_id = request.path_params["agent_id"], request.path_params["event_id"]
    record = console.hub.registry.get(agent_id)
    if record is None:
        return console.page("missing.html", status_code=404, what=f"agent {agent_id}")
    return await act(
        request,
        "ignore",
        lambda: Agent(console.hub, record).ignore(event_id),
        agent_id=agent_id,
        event_id=event_id,
    )


async def requeue_dead(request: Request) -> Response:
    message_id = request.path_params["message_id"]
    hub = console_of(request).hub
    return await act(
        request, "requeue", lambda: hub.requeue_dead(message_id), message_id=message_id
    )


async def login(request: Request) -> Response:
    """``GET /login`` (the form, or ``?token=``: the printed login URL) and ``POST /login``."""
    console = console_of(request)
    guard = console.guard
    if guard.token is None:
        return RedirectResponse("/", status_code=303)
    given = request.query_params.get("token")
    if request.method == "POST":
        if not auth.same_origin(request):
            return foreign()
        given = (await auth.form_fields(request)).get("token", "")
    if given is None:
        return console.page("login.html", failed=False)
    slowed = guard.slowed(request)
    if slowed is not None:
        return slowed
    answer = guard.sign_in(request, given)
    if answer is not None:
        log.event("web_sign_in", level=logging.INFO, client=auth.client_address(request))
        return answer
    return console.page("login.html", status_code=401, failed=True)


async def logout(request: Request) -> Response:
    if not auth.same_origin(request):
        return foreign()
    return console_of(request).guard.sign_out(request)
