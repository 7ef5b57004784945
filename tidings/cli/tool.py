"""The agent-facing tool from the shell: ``tidings notification``, ``tidings check``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import (
    INLINE,
    JSON,
    JSON_SOURCES,
    STORE,
    WORKDIR,
    command,
    emit,
    error_of,
    open_agent,
    open_hub,
    parse_json,
)

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers

#: The tool's actions (channels.md C44), listed by ``notification --help``; the tool
#: itself answers an unknown action (tests/unit/test_cli_rules.py keeps the two equal).
ACTIONS = (
    "check",
    "dismiss_channel",
    "dismiss_event",
    "dismiss_ref",
    "add",
    "list",
    "edit",
    "drop",
    "delay",
    "settings",
    "manual",
)


def register(subparsers: Subparsers) -> None:
    listing = ", ".join(ACTIONS)
    n = command(
        subparsers,
        "notification",
        "run one action of the agent's notification tool",
        STORE,
        WORKDIR,
        JSON,
        INLINE,
        epilog="Prints the tool's result unchanged (check: the bare placeholder; "
        f"`tidings check` stamps it). Actions: {listing}.",
    )
    n.add_argument("action", metavar="ACTION", help=f"one of: {listing}")
    n.add_argument("--input", help=f"the action's input, a JSON object ({JSON_SOURCES})")
    n.set_defaults(handler=notification)

    c = command(
        subparsers,
        "check",
        "what the agent's notification check shows, stamped",
        STORE,
        WORKDIR,
        JSON,
        INLINE,
        epilog="The capped attention payload, as the model receives it (C24). When "
        "the notifications cannot be read (the store refuses or is "
        "unreachable, the read stays unstable) the placeholder carries "
        "notifications_unavailable and the exit code is 1: never the bare "
        "placeholder as if none were active.",
    )
    c.set_defaults(handler=check)


def notification(args: argparse.Namespace) -> int:
    """The tool's result exactly as the tool returns it (interfaces.md, More CLI rules; C45)."""
    payload = None
    if args.input is not None:
        payload = parse_json(args.input, "--input", too_deep_reason="invalid_argument", null=True)
    with open_hub(args) as hub:
        return emit(args, open_agent(args, hub).notification(args.action, payload))


def check(args: argparse.Namespace) -> int:
    """The stamped check (C24); a refused read's line also names the user and the role
    that may read (interfaces.md, Never silent), which the model's sentence leaves out."""
    from tidings.store import refusals  # noqa: PLC0415 - redis-py, once the command runs

    with open_hub(args) as hub:
        agent = open_agent(args, hub)
        stamped = agent.stamp(dict(agent.notification("check")))
        failed = error_of(stamped)
        refused = failed is not None and failed[0] == "no_permission"
        return emit(args, stamped, refusals.who(hub.redis) if refused else "")
