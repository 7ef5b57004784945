"""``tidings mcp``: serve one registered agent over MCP (extra ``tidings[mcp]``).

Stdout is the protocol: every message of this command, errors included, goes to
stderr. Only the standard library is imported until the command runs; the SDK
then, so the core install never needs it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tidings.cli._common import (
    EXIT_ERROR,
    EXIT_USAGE,
    INLINE,
    STORE,
    WORKDIR,
    UsageError,
    command,
    option,
    say_error,
    settings,
)

if TYPE_CHECKING:
    from tidings._hub import Hub
    from tidings.cli._common import Subparsers
    from tidings.store.models import AgentRecord

#: ``--transport http`` port when ``--port`` is not given.
DEFAULT_HTTP_PORT = 8765


def register(subparsers: Subparsers) -> None:
    m = command(
        subparsers,
        "mcp",
        "serve one registered agent over MCP",
        STORE,
        WORKDIR,
        INLINE,
        epilog="Needs the extra tidings[mcp]. Stdout carries the protocol; every "
        "message of this command goes to stderr.",
    )
    m.add_argument("--agent-id", help="the agent to serve (default: the --workdir's agent)")
    m.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio, or streamable HTTP on loopback (bearer token: "
        "TIDINGS_MCP_TOKEN, else one kept in the state directory's mcp-token)",
    )
    m.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help="port of --transport http")
    m.set_defaults(handler=run)


def registered(hub: Hub, agent_id: str | None, workdir: str) -> AgentRecord:
    """The agent to serve; it must already be registered (nothing is written here)."""
    from tidings.errors import UnknownAgentError  # noqa: PLC0415 - see the module docstring

    if agent_id:
        record = hub.registry.get(agent_id)
        if record is None:
            raise UnknownAgentError(
                f"no agent registered as {agent_id!r}; register it with "
                "`tidings agents add --workdir W --agent-id ID`"
            )
        return record
    found = hub.find_agent(workdir)
    if found is None:
        real = os.path.realpath(workdir)
        raise UnknownAgentError(
            f"no agent registered for workdir {real}; register it with "
            f"`tidings agents add --workdir {real}`"
        )
    return found.record


def announced_token(state_dir: Path) -> str:
    """The HTTP bearer token (mcp/token.py); a new one is printed once, to stderr."""
    from tidings.mcp.token import TOKEN_ENV, TOKEN_FILE, http_token  # noqa: PLC0415

    where = state_dir / TOKEN_FILE
    try:
        token, source = http_token(state_dir)
    except OSError as exc:
        raise UsageError(
            f"cannot keep the MCP token in {where} ({exc.strerror}); set "
            f"{TOKEN_ENV} or TIDINGS_STATE_DIR"
        ) from None
    if source == "generated":
        print(
            f"tidings mcp: clients send 'Authorization: Bearer {token}' (kept 0600 in "
            f"{where}; set {TOKEN_ENV} to choose one)",
            file=sys.stderr,
        )
    elif source == "kept":
        print(f"tidings mcp: clients send the bearer token kept in {where}", file=sys.stderr)
    sys.stderr.flush()
    return token


async def serve(args: argparse.Namespace) -> None:
    import tidings.aio  # noqa: PLC0415 - see the module docstring
    from tidings._agent import Agent  # noqa: PLC0415
    from tidings.mcp.server import AgentServer  # noqa: PLC0415

    s = settings(args)
    async with tidings.aio.connect(s.redis_url, settings=s) as hub:
        record = registered(hub.sync, args.agent_id, option(args, "workdir") or os.getcwd())
        agent = Agent(hub.sync, record, inline=bool(option(args, "inline")))
        server = AgentServer(tidings.aio.AsyncAgent(hub, agent))
        if args.transport == "http":
            await server.serve_http(args.port, token=announced_token(s.state_dir))
        else:
            await server.serve_stdio()


def run(args: argparse.Namespace) -> int:
    try:
        import anyio  # noqa: PLC0415 - part of the mcp extra
        import mcp  # noqa: F401, PLC0415 - checked here so the message names the extra
    except ImportError:
        say_error("bad_usage", "`tidings mcp` needs the MCP SDK: pip install 'tidings[mcp]'")
        return EXIT_USAGE
    from tidings import _logging  # noqa: PLC0415
    from tidings.errors import NoStoreError, TidingsError  # noqa: PLC0415

    try:
        _logging.configure(settings(args))
        anyio.run(serve, args)
    # stdout is the MCP channel: an error is its stderr line alone
    except UsageError as exc:
        say_error(exc.reason, str(exc))
        return EXIT_USAGE
    except NoStoreError as exc:
        say_error(exc.reason, exc.message)
        return EXIT_USAGE
    except TidingsError as exc:
        say_error(exc.reason, exc.message)
        return EXIT_USAGE if exc.reason == "auth_failed" else EXIT_ERROR
    return 0
