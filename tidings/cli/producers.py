"""``tidings publish`` and ``tidings daemon-event``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import (
    INLINE,
    JSON,
    JSON_SOURCES,
    STORE,
    WORKDIR,
    UsageError,
    command,
    emit,
    open_agent,
    open_hub,
    parse_json,
)

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers

#: Event priorities (channels.md).
PRIORITIES = ("low", "normal", "high")


def register(subparsers: Subparsers) -> None:
    p = command(
        subparsers,
        "publish",
        "publish an event, or a whole envelope, to a channel",
        STORE,
        WORKDIR,
        JSON,
        INLINE,
    )
    p.add_argument("channel", help="the channel's name")
    body = p.add_mutually_exclusive_group(required=True)
    body.add_argument("--envelope", help=f"the whole envelope, a JSON object ({JSON_SOURCES})")
    body.add_argument("--event", help=f"one event to append, a JSON object ({JSON_SOURCES})")
    p.add_argument("--priority", choices=PRIORITIES, help="the event's priority (default: normal)")
    p.add_argument(
        "--idempotency-key", help="a key that makes a repeated publish of this event a no-op"
    )
    p.add_argument("--wait", action="store_true", help="return once the record is in the file")
    p.set_defaults(handler=publish)

    d = command(
        subparsers, "daemon-event", "publish an event of a daemon run", STORE, WORKDIR, JSON, INLINE
    )
    d.add_argument("daemon_id", help="the daemon run's id")
    d.add_argument("--event", required=True, help=f"the event, a JSON object ({JSON_SOURCES})")
    d.add_argument("--priority", choices=PRIORITIES, help="the event's priority (default: normal)")
    d.add_argument("--wait", action="store_true", help="return once the record is in the file")
    d.set_defaults(handler=daemon_event)


def publish(args: argparse.Namespace) -> int:
    if args.envelope is not None:
        envelope = parse_json(args.envelope, "--envelope", too_deep_reason="invalid_envelope")
        if args.priority or args.idempotency_key:
            raise UsageError("--priority and --idempotency-key go with --event")
        with open_hub(args) as hub:
            return emit(args, open_agent(args, hub).publish(args.channel, envelope, wait=args.wait))
    event = parse_json(args.event, "--event", too_deep_reason="invalid_event")
    with open_hub(args) as hub:
        result = open_agent(args, hub).publish_event(
            args.channel,
            event,
            priority=args.priority,
            idempotency_key=args.idempotency_key,
            wait=args.wait,
        )
        return emit(args, result)


def daemon_event(args: argparse.Namespace) -> int:
    event = parse_json(args.event, "--event", too_deep_reason="invalid_event")
    with open_hub(args) as hub:
        agent = open_agent(args, hub)
        return emit(
            args,
            agent.publish_daemon_event(
                args.daemon_id, event, priority=args.priority, wait=args.wait
            ),
        )
