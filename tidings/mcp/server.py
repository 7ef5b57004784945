"""The MCP server of one agent: handlers, resource subscriptions and the wake watcher.

Both eras of the protocol are served: a client of the handshake era subscribes with
``resources/subscribe`` and gets ``notifications/resources/updated`` on its session;
a 2026-07-28 client listens with ``subscriptions/listen`` and gets the same update
through the SDK's subscription bus. The watcher reads the wake stream without
moving the agent's cursor, so an orchestrator's ``wait_for_wake`` loses nothing.
"""

from __future__ import annotations

import logging
from importlib.metadata import version

import anyio
import mcp_types as types
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from tidings.aio import AsyncAgent
from tidings.errors import TidingsError
from tidings.jobs.consumer import check_placeholder, latest_id, signals_after
from tidings.mcp import tools
from tidings.mcp.token import StaticToken
from tidings.store.jsonfmt import for_model
from tidings.web.body_limit import MAX_BODY_BYTES

log = logging.getLogger("tidings.mcp")

ATTENTION_URI = "tidings://attention"
#: The hosts ``serve_http`` listens on: those the SDK's DNS-rebinding guard covers.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: Pause after a failed read of the wake stream before the watcher tries again (seconds).
WATCH_RETRY_SECONDS = 1.0
#: What the SDK hands each request handler (the default lifespan's state: an empty dict).
Context = ServerRequestContext[dict[str, object]]
INSTRUCTIONS = (
    "tidings keeps you informed. Call `notification` with action `check` to see what is "
    "live, read the `tidings://attention` resource (subscribe to hear of changes), and "
    "use `inbox` for memory changes and other events."
)


class AgentServer:
    """``tidings mcp`` for one agent."""

    def __init__(self, agent: AsyncAgent) -> None:
        self.agent = agent
        self.bus = InMemorySubscriptionBus()
        self.subscribers: set[ServerSession] = set()
        self.server: Server[dict[str, object]] = Server(
            "tidings",
            version=version("tidings"),
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_subscriptions_listen=ListenHandler(self.bus),
        )

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.tools())

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await tools.call(self.agent, params.name, params.arguments)

    async def list_resources(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name="attention",
                    uri=ATTENTION_URI,
                    mime_type="application/json",
                    description="The live notifications (the stamped check result); subscribe to "
                    "hear when a wake signal changes it.",
                )
            ]
        )

    async def read_resource(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != ATTENTION_URI:
            raise ValueError(f"unknown resource {params.uri}")
        stamped = await self.agent.stamp(check_placeholder())
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=ATTENTION_URI, mime_type="application/json", text=for_model(stamped)
                )
            ]
        )

    async def subscribe(
        self, ctx: Context, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if str(params.uri) == ATTENTION_URI:
            self.subscribers.add(ctx.session)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: Context, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribers.discard(ctx.session)
        return types.EmptyResult()

    async def announce(self) -> None:
        """One wake signal: tell every subscriber of either era."""
        await self.bus.publish(ResourceUpdated(uri=ATTENTION_URI))
        for session in list(self.subscribers):
            try:
                await session.send_resource_updated(ATTENTION_URI)
            except Exception as exc:  # a closed session: forget it, keep the others
                log.info("mcp_subscriber_dropped error=%s", type(exc).__name__)
                self.subscribers.discard(session)

    async def watch(self) -> None:
        """Announce each wake signal of the agent, until cancelled."""
        after: str | None = None
        while True:
            try:
                if after is None:
                    after = await latest_id(self.agent.hub.aredis, self.agent.agent_id)
                signals = await signals_after(self.agent.hub.aredis, self.agent.agent_id, after)
            except Exception as exc:
                log.warning("mcp_wake_watch_failed error=%s", type(exc).__name__)
                await anyio.sleep(WATCH_RETRY_SECONDS)
                continue
            if signals:
                after = signals[-1][0]
                await self.announce()

    async def serve_stdio(self) -> None:
        async with stdio_server() as (read, write), anyio.create_task_group() as group:
            group.start_soon(self.watch)
            await self.server.run(read, write, self.server.create_initialization_options())
            group.cancel_scope.cancel()

    def http_app(self, token: str, host: str = "127.0.0.1", port: int = 0) -> Starlette:
        """The streamable HTTP app: Host/Origin checked against DNS rebinding (the SDK's
        loopback default), ``Authorization: Bearer <token>`` required (the SDK's auth
        hooks: 401 without it) and bodies cut at 64 KiB (413), interfaces.md "Local trust"."""
        if host not in LOOPBACK_HOSTS:
            raise TidingsError(
                f"tidings mcp serves HTTP on loopback only, not {host!r}: off loopback the "
                "DNS-rebinding guard is off and the bearer token would cross the network in "
                "clear; put a TLS proxy with its own authentication in front instead",
                reason="not_loopback",
            )
        return self.server.streamable_http_app(
            host=host,
            max_request_body_size=MAX_BODY_BYTES,
            token_verifier=StaticToken(token),
            auth=AuthSettings(
                issuer_url=AnyHttpUrl(f"http://{host}:{port}"), resource_server_url=None
            ),
        )

    async def serve_http(self, port: int, host: str = "127.0.0.1", *, token: str) -> None:
        """Serve until cancelled; ``TidingsError`` (``not_loopback``) for any other host."""
        import uvicorn  # noqa: PLC0415 - only the http transport needs it

        app = self.http_app(token, host, port)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        async with anyio.create_task_group() as group:
            group.start_soon(self.watch)
            await uvicorn.Server(config).serve()
            group.cancel_scope.cancel()
