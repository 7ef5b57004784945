"""``tidings dead``: dead letters (messages out of retries), and re-enqueueing one.

The web console's re-enqueue action makes the same call (``hub.requeue_dead``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import JSON, STORE, command, emit, open_hub

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers


def register(subparsers: Subparsers) -> None:
    d = command(
        subparsers, "dead", "list dead letters; `dead requeue ID` enqueues one again", STORE, JSON
    )
    sub = d.add_subparsers(dest="dead_command", metavar="ACTION", title="actions")
    d.set_defaults(handler=list_dead)
    r = command(sub, "requeue", "enqueue a dead letter again", STORE, JSON)
    r.add_argument("message_id", help="the dead letter's id (from `tidings dead`)")
    r.set_defaults(handler=requeue_dead)


def list_dead(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, {"status": "ok", "dead_letters": hub.dead_letters()})


def requeue_dead(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, hub.requeue_dead(args.message_id))
