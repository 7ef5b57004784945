"""``tidings agents add | list | remove``: the agent registry."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from tidings.cli._common import JSON, STORE, WORKDIR, UsageError, command, emit, open_hub, option

if TYPE_CHECKING:
    from tidings._hub import Hub
    from tidings.cli._common import Subparsers


def register(subparsers: Subparsers) -> None:
    a = command(subparsers, "agents", "register, list, remove or move agents")
    sub = a.add_subparsers(dest="agents_command", metavar="ACTION", required=True, title="actions")

    add = command(
        sub,
        "add",
        "register an agent: its workdir, host and memory repository",
        STORE,
        WORKDIR,
        JSON,
    )
    add.add_argument(
        "--memory-repo",
        metavar="REPO",
        help="the agent's memory Git repository: the root of a work tree (a "
        "missing path, a plain folder or a bare repository is refused "
        "with invalid_memory_repo); '' clears a registered one",
    )
    add.add_argument(
        "--agent-id", metavar="ID", help="the agent's id (default: a digest of the workdir)"
    )
    add.add_argument("--host", help="the host that serves the agent (default: TIDINGS_HOST)")
    add.set_defaults(handler=add_agent)

    ls = command(sub, "list", "list registered agents", STORE, JSON)
    ls.set_defaults(handler=list_agents)

    rm = command(
        sub, "remove", "forget an agent (by --agent-id or --workdir)", STORE, WORKDIR, JSON
    )
    rm.add_argument("--agent-id", metavar="ID", help="the agent to forget (or give --workdir)")
    rm.set_defaults(handler=remove_agent)

    mv = command(
        sub,
        "move",
        "serve an agent from another host (safe with messages in flight)",
        STORE,
        WORKDIR,
        JSON,
    )
    mv.add_argument("--agent-id", metavar="ID", help="the agent to move (or give --workdir)")
    mv.add_argument("--host", required=True, help="the agent's new host (its TIDINGS_HOST)")
    mv.add_argument(
        "--settle-seconds",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the old host's running jobs of the agent",
    )
    mv.set_defaults(handler=move_agent)


def add_agent(args: argparse.Namespace) -> int:
    workdir = option(args, "workdir") or os.getcwd()
    with open_hub(args) as hub:
        agent = hub.agent(
            workdir, memory_repo=args.memory_repo, agent_id=args.agent_id, host=args.host
        )
        return emit(args, {"status": "ok", "agent": agent.record.public})


def list_agents(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, {"status": "ok", "agents": hub.agents()})


def _agent_id(args: argparse.Namespace, hub: Hub) -> str | None:
    """The agent named by exactly one of ``--agent-id`` and ``--workdir``."""
    workdir = option(args, "workdir")
    if bool(args.agent_id) == bool(workdir):
        raise UsageError("give exactly one of --agent-id and --workdir")
    if args.agent_id:
        return str(args.agent_id)
    real = os.path.realpath(workdir)
    return next((a["agent_id"] for a in hub.agents() if a["workdir"] == real), None)


def _unknown(args: argparse.Namespace) -> int:
    named = args.agent_id or os.path.realpath(option(args, "workdir"))
    return emit(
        args,
        {
            "status": "error",
            "reason": "unknown_agent",
            "message": f"no agent registered for {named}",
        },
    )


def remove_agent(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        agent_id = _agent_id(args, hub)
        if agent_id is None:
            return _unknown(args)
        removed = hub.registry.remove(agent_id)
        if not removed:
            return emit(
                args,
                {
                    "status": "error",
                    "reason": "unknown_agent",
                    "message": f"no agent registered as {agent_id}",
                },
            )
        return emit(args, {"status": "ok", "removed": agent_id})


def move_agent(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        agent_id = _agent_id(args, hub)
        if agent_id is None:
            return _unknown(args)
        return emit(args, hub.move_agent(agent_id, args.host, args.settle_seconds))
