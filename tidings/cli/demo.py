"""``tidings demo``: the narrated tour on the embedded store."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers


def register(subparsers: Subparsers, common: argparse.ArgumentParser) -> None:
    d = subparsers.add_parser("demo", parents=[common], help="a narrated tour of every capability")
    d.set_defaults(handler=demo)


def demo(args: argparse.Namespace) -> int:
    from tidings.demo.chapters import run  # noqa: PLC0415 - only the demo loads the tour

    return run()
