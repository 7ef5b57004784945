"""The console's read-only routes: pages, the spill files, the status JSON."""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from tidings.inspection.agent import agent_page
from tidings.inspection.agents import agents_page
from tidings.jobs.cap import ATTENTION_STEM, LOGS_DIR
from tidings.store import files
from tidings.web.console import console_of, overview_context
from tidings.workers.dead_letters import dead_letters

#: The largest spill file the console serves; a larger one answers 404 (read it on disk).
MAX_SPILL_BYTES = 16 * 1_048_576


async def overview(request: Request) -> Response:
    console = console_of(request)
    figures = await anyio.to_thread.run_sync(console.summary.read, console.hub.clock.now())
    attention = await anyio.to_thread.run_sync(lambda: console.attention.read(fresh=True))
    return console.page("overview.html", **overview_context(figures, attention))


async def agents(request: Request) -> Response:
    console = console_of(request)
    q = request.query_params.get("q", "")
    try:
        page = int(request.query_params.get("page", "1"))
    except ValueError:
        page = 1
    listing = await anyio.to_thread.run_sync(
        agents_page, console.hub.redis, console.hub.clock.now(), q, page, console.hub.control
    )
    name = "_agents_table.html" if request.query_params.get("part") else "agents.html"
    return console.page(name, listing=listing)


async def agent(request: Request) -> Response:
    console = console_of(request)
    record = console.hub.registry.get(request.path_params["agent_id"])
    if record is None:
        return console.page(
            "missing.html", status_code=404, what=f"agent {request.path_params['agent_id']}"
        )
    view = await anyio.to_thread.run_sync(agent_page, console.hub.runtime, record)
    name = "_agent_live.html" if request.query_params.get("part") else "agent.html"
    return console.page(name, v=view)


async def spill(request: Request) -> Response:
    """A spill file's bytes, read through the no-follow walk (interfaces.md "Local trust"):
    no link on any component, non-blocking, a regular file, at most the spill cap."""
    record = console_of(request).hub.registry.get(request.path_params["agent_id"])
    name = request.path_params["name"]
    if (
        record is None
        or not name.startswith(ATTENTION_STEM)
        or "/" in name
        or not name.endswith(".json")
    ):
        return PlainTextResponse("no such spill file", status_code=404)
    read = await anyio.to_thread.run_sync(
        files.safe_read, record.root, f"{LOGS_DIR}/{name}", MAX_SPILL_BYTES
    )
    if not read.ok:
        return PlainTextResponse(f"no such spill file ({read.what or read.kind})", status_code=404)
    return Response(read.data, media_type="text/plain; charset=utf-8")


async def dead(request: Request) -> Response:
    console = console_of(request)
    letters = await anyio.to_thread.run_sync(dead_letters, console.hub.control)
    return console.page("dead.html", letters=letters)


async def api_status(request: Request) -> Response:
    return JSONResponse(await anyio.to_thread.run_sync(console_of(request).hub.status))
