"""``tidings web``: the live console (extra ``tidings[web]``)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from tidings.cli._common import EXIT_USAGE, STORE, command, emit_error, open_hub

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers

#: interfaces.md: the console's default address.
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8377


def register(subparsers: Subparsers) -> None:
    w = command(
        subparsers,
        "web",
        "serve the live web console (read-only unless --allow-actions)",
        STORE,
        epilog="Needs the extra tidings[web]. Prints one JSON line once ready.",
    )
    w.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to listen on (non-loopback needs TIDINGS_WEB_TOKEN)",
    )
    w.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free port)")
    w.add_argument(
        "--allow-actions",
        action="store_true",
        help="allow ignoring inbox items and re-enqueueing dead letters (needs "
        "TIDINGS_WEB_TOKEN, else prints a login URL with a new token)",
    )
    w.set_defaults(handler=web)


def web(args: argparse.Namespace) -> int:
    try:
        from tidings.web.serve import StartError, check_token, serve  # noqa: PLC0415 - extra
    except ImportError as exc:
        emit_error(
            args,
            "bad_usage",
            f"the web console needs its extra: pip install 'tidings[web]' ({exc})",
        )
        return EXIT_USAGE
    try:
        check_token(args.host, os.environ.get("TIDINGS_WEB_TOKEN") or None)
        with open_hub(args) as hub:
            return serve(hub, args.host, args.port, args.allow_actions)
    except StartError as exc:
        emit_error(args, exc.reason, str(exc))
        return EXIT_USAGE
