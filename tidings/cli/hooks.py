"""Shortcuts for tool actions: ``tidings hooks ...``, ``tidings settings``, ``tidings delay``.

Each runs exactly the ``notification`` tool action it names (channels.md C40,
C42; delay.md D4), so results and exit codes are the tool's.
"""

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
    open_agent,
    open_hub,
    parse_json,
)
from tidings.store import jsonread

if TYPE_CHECKING:
    from tidings.cli._common import Handler, Subparsers


def register(subparsers: Subparsers) -> None:
    # A tool action's read may publish an overdue delay's alarm (D9): --inline flushes it.
    agent = (STORE, WORKDIR, JSON, INLINE)
    h = command(subparsers, "hooks", "list, add, edit or drop the agent's hook channels")
    sub = h.add_subparsers(dest="hooks_command", metavar="ACTION", required=True, title="actions")
    ls = command(sub, "list", "list the agent's hooks", *agent)
    ls.set_defaults(handler=_action("list"))
    add = command(sub, "add", "register a hook from its manifest", *agent)
    add.add_argument("--input", required=True, help=f"the manifest, a JSON object ({JSON_SOURCES})")
    add.set_defaults(handler=_action("add"))
    edit = command(sub, "edit", "change fields of a hook", *agent)
    edit.add_argument("name", help="the hook's name")
    edit.add_argument(
        "--input", required=True, help=f"fields to change, a JSON object ({JSON_SOURCES})"
    )
    edit.set_defaults(handler=_action("edit"))
    drop = command(sub, "drop", "revoke a hook's channel", *agent)
    drop.add_argument("name", help="the hook's name")
    drop.set_defaults(handler=_action("drop"))

    s = command(subparsers, "settings", "show the agent's notification settings", *agent)
    s.set_defaults(handler=_action("settings"))

    d = command(
        subparsers,
        "delay",
        "hold one channel's notifications back for SECONDS",
        *agent,
        epilog="0 cancels the live delay (delay.md).",
    )
    d.add_argument("channel", help="the channel to delay")
    d.add_argument("seconds", help="whole seconds; 0 cancels the live delay")
    d.set_defaults(handler=_action("delay"))


def _seconds(text: str) -> object:
    """An integer when it is one; anything else goes through for the job to refuse."""
    parsed = jsonread.parse(text)
    return parsed.value if isinstance(parsed, jsonread.Parsed) else text


def _payload(action: str, args: argparse.Namespace) -> dict[str, object]:
    if action == "delay":
        return {"channel": args.channel, "seconds": _seconds(args.seconds)}
    if action in ("add", "edit"):
        payload = parse_json(args.input, "--input", too_deep_reason="invalid_argument")
        return {**payload, "name": args.name} if action == "edit" else payload
    if action == "drop":
        return {"name": args.name}
    return {}


def _action(action: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        payload = _payload(action, args)
        with open_hub(args) as hub:
            return emit(args, open_agent(args, hub).notification(action, payload))

    return run
