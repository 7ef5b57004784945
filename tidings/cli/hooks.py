"""Shortcuts for tool actions: ``tidings hooks ...``, ``tidings settings``, ``tidings delay``.

Each runs exactly the ``notification`` tool action it names (channels.md C40,
C42; delay.md D4), so results and exit codes are the tool's.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import JSON_SOURCES, emit, open_agent, open_hub, parse_json
from tidings.store import jsonread

if TYPE_CHECKING:
    from tidings.cli._common import Handler, Subparsers


def register(subparsers: Subparsers, common: argparse.ArgumentParser) -> None:
    h = subparsers.add_parser("hooks", parents=[common], help="the hook channel registry")
    sub = h.add_subparsers(dest="hooks_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", parents=[common], help="list registered hooks")
    ls.set_defaults(handler=_action("list"))
    add = sub.add_parser("add", parents=[common], help="register a hook (manifest JSON)")
    add.add_argument("--input", required=True,
                     help=f"the manifest, a JSON object ({JSON_SOURCES})")
    add.set_defaults(handler=_action("add"))
    edit = sub.add_parser("edit", parents=[common], help="change fields of a hook")
    edit.add_argument("name", help="the hook's name")
    edit.add_argument("--input", required=True,
                      help=f"fields to change, a JSON object ({JSON_SOURCES})")
    edit.set_defaults(handler=_action("edit"))
    drop = sub.add_parser("drop", parents=[common], help="revoke a hook's channel")
    drop.add_argument("name", help="the hook's name")
    drop.set_defaults(handler=_action("drop"))

    s = subparsers.add_parser("settings", parents=[common], help="show notification settings")
    s.set_defaults(handler=_action("settings"))

    d = subparsers.add_parser("delay", parents=[common], help="delay one channel (0 cancels)")
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
