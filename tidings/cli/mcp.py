"""``tidings mcp``: serve one registered agent over MCP (extra ``tidings[mcp]``).

Stdout is the protocol: every message of this command, errors included, goes to
stderr. The SDK is imported inside the command, so the core install never needs it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from tidings.cli._common import option, settings
from tidings.store.errors import NoStoreError, TidingsError, UnknownAgentError
from tidings.store.models import AgentRecord, default_agent_id
from tidings.store.registry import AgentRegistry

#: ``--transport http`` port when ``--port`` is not given.
DEFAULT_HTTP_PORT = 8765
EXIT_ERROR, EXIT_USAGE = 1, 2


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    m = subparsers.add_parser("mcp", parents=[common],
                              help="serve one registered agent over MCP (tidings[mcp])")
    m.add_argument("--agent-id", help="the agent to serve (default: the --workdir's agent)")
    m.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default), or streamable HTTP on loopback")
    m.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT,
                   help=f"port of --transport http (default {DEFAULT_HTTP_PORT})")
    m.set_defaults(handler=run)


def registered(registry: AgentRegistry, agent_id: str | None, workdir: str) -> AgentRecord:
    """The agent to serve; it must already be registered (nothing is written here)."""
    if agent_id:
        record = registry.get(agent_id)
        if record is None:
            raise UnknownAgentError(f"no agent registered as {agent_id!r}; register it with "
                                    "`tidings agents add --workdir W --agent-id ID`")
        return record
    real = os.path.realpath(workdir)
    record = registry.get(default_agent_id(real))
    record = record or next((r for r in registry.all() if r.workdir == real), None)
    if record is None:
        raise UnknownAgentError(f"no agent registered for workdir {real}; register it with "
                                f"`tidings agents add --workdir {real}`")
    return record


async def serve(args: argparse.Namespace) -> None:
    import tidings.aio  # noqa: PLC0415 - the command's own imports stay lazy
    from tidings._agent import Agent  # noqa: PLC0415
    from tidings.mcp.server import AgentServer  # noqa: PLC0415

    s = settings(args)
    async with tidings.aio.connect(s.redis_url, settings=s) as hub:
        record = registered(hub.sync.registry, args.agent_id,
                            option(args, "workdir") or os.getcwd())
        agent = tidings.aio.AsyncAgent(hub, Agent(hub.sync, record,
                                                  inline=bool(option(args, "inline"))))
        server = AgentServer(agent)
        if args.transport == "http":
            await server.serve_http(args.port)
        else:
            await server.serve_stdio()


def run(args: argparse.Namespace) -> int:
    try:
        import anyio  # noqa: PLC0415 - part of the mcp extra
        import mcp  # noqa: F401, PLC0415 - checked here so the message names the extra
    except ImportError:
        print("tidings: `tidings mcp` needs the MCP SDK: pip install 'tidings[mcp]'",
              file=sys.stderr)
        return EXIT_USAGE
    from tidings import _logging  # noqa: PLC0415

    _logging.configure(settings(args))
    try:
        anyio.run(serve, args)
    except NoStoreError as exc:
        print(f"tidings: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except TidingsError as exc:
        print(f"tidings: {exc.message} ({exc.reason})", file=sys.stderr)
        return EXIT_ERROR
    return 0
