"""The agent-facing tool from the shell: ``tidings notification``, ``tidings check``."""

from __future__ import annotations

import argparse
from typing import Any

from tidings.cli._common import emit, open_agent, open_hub, parse_json
from tidings.jobs.view.delivery import check_placeholder


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    n = subparsers.add_parser("notification", parents=[common],
                              help="run one action of the notification tool")
    n.add_argument("action")
    n.add_argument("--input", help="the action's input (JSON object)")
    n.set_defaults(handler=notification)

    c = subparsers.add_parser("check", parents=[common],
                              help="notification check, stamped with the capped payload")
    c.set_defaults(handler=check)


def notification(args: argparse.Namespace) -> int:
    payload = None
    if args.input is not None:
        payload = parse_json(args.input, "--input", too_deep_reason="INVALID_ARGUMENT")
    with open_hub(args) as hub:
        agent = open_agent(args, hub)
        result = agent.notification(args.action, payload)
        if args.action == "check":
            result = agent.stamp(result)
        return emit(args, result)


def check(args: argparse.Namespace) -> int:
    with open_hub(args) as hub:
        return emit(args, open_agent(args, hub).stamp(check_placeholder()))
