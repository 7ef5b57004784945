"""``tidings observe`` and ``tidings inbox [ignore ID]``: the memory inbox from the shell."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import emit, open_agent, open_hub

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers

#: Item states (interfaces.md), for ``--state``; the projection refuses any other.
STATES = ("pending", "processing", "deferred", "needs-repair", "handled", "ignored")
#: Items per page of ``tidings inbox`` (the projection's own default).
DEFAULT_PAGE = 30


def register(subparsers: Subparsers, common: argparse.ArgumentParser) -> None:
    o = subparsers.add_parser("observe", parents=[common],
                              help="observe the memory repository now")
    o.add_argument("--reason", default="manual", help="the observation's trigger name")
    o.set_defaults(handler=observe)

    i = subparsers.add_parser("inbox", parents=[common], help="the inbox projection")
    i.add_argument("--state", choices=STATES, help="only items in this state")
    i.add_argument("--limit", type=int, default=DEFAULT_PAGE, help="items per page")
    i.add_argument("--before", help="start after this event id")
    i.set_defaults(handler=list_inbox)
    actions = i.add_subparsers(dest="inbox_command", metavar="ACTION")
    ignore = actions.add_parser("ignore", parents=[common], help="ignore one item")
    ignore.add_argument("event_id", help="the item's event id")
    ignore.set_defaults(handler=ignore_item)


def observe(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, open_agent(args, hub).observe_memory(args.reason))


def list_inbox(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        items = open_agent(args, hub).inbox(limit=args.limit, state=args.state,
                                            before=args.before)
        return emit(args, {"status": "ok", "items": items})


def ignore_item(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, open_agent(args, hub).ignore(args.event_id))
