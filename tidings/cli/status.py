"""``tidings status``: queues, scheduler leaders, agents (run by status_view.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tidings.cli._common import JSON, STORE, command, lazy

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers


def register(subparsers: Subparsers) -> None:
    s = command(
        subparsers,
        "status",
        "queues, scheduler leaders, agents' pending inbox items and live delays",
        STORE,
        JSON,
    )
    s.set_defaults(handler=lazy("tidings.cli.status_view:show_status"))
