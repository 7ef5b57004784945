"""``tidings status``: queues, scheduler leaders, agents (run by status_view.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import lazy

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers


def register(subparsers: Subparsers, common: argparse.ArgumentParser) -> None:
    s = subparsers.add_parser(
        "status", parents=[common],
        help="queues, scheduler leaders, agents' pending inbox items and live delays",
    )
    s.set_defaults(handler=lazy("tidings.cli.status_view:show_status"))
