"""``tidings observe`` and ``tidings inbox [ignore ID]``: the memory inbox from the shell."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import JSON, STORE, WORKDIR, command, emit, open_agent, open_hub

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers

#: Item states (interfaces.md), for ``--state``; the projection refuses any other.
STATES = ("pending", "processing", "deferred", "needs-repair", "handled", "ignored")
#: Items per page of ``tidings inbox`` (the projection's own default).
DEFAULT_PAGE = 30


def register(subparsers: Subparsers) -> None:
    agent = (STORE, WORKDIR, JSON)
    o = command(subparsers, "observe", "observe the agent's memory repository now", *agent)
    o.add_argument("--reason", default="manual", help="the observation's trigger name")
    o.set_defaults(handler=observe)

    i = command(
        subparsers, "inbox", "list the agent's inbox items; `inbox ignore ID` ignores one", *agent
    )
    i.add_argument("--state", choices=STATES, help="only items in this state")
    i.add_argument("--limit", type=int, default=DEFAULT_PAGE, metavar="N", help="items per page")
    i.add_argument("--before", metavar="EVENT_ID", help="start after this event id")
    i.set_defaults(handler=list_inbox)
    actions = i.add_subparsers(dest="inbox_command", metavar="ACTION", title="actions")
    ignore = command(
        actions, "ignore", "ignore one inbox item: the agent will not see it again", *agent
    )
    ignore.add_argument("event_id", help="the item's event id")
    ignore.set_defaults(handler=ignore_item)


def observe(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, open_agent(args, hub).observe_memory(args.reason))


def list_inbox(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        items = open_agent(args, hub).inbox(limit=args.limit, state=args.state, before=args.before)
        return emit(args, {"status": "ok", "items": items})


def ignore_item(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, open_agent(args, hub).ignore(args.event_id))
