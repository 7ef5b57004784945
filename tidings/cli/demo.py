"""``tidings demo``: the narrated tour on the embedded store."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import command

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers


def register(subparsers: Subparsers) -> None:
    d = command(
        subparsers,
        "demo",
        "a narrated tour of every capability, on an in-memory store",
        epilog="It touches neither your state directory nor any Redis.",
    )
    d.set_defaults(handler=demo)


def demo(args: argparse.Namespace) -> int:
    from tidings.demo.chapters import run  # noqa: PLC0415 - only the demo loads the tour

    return run()
