"""``tidings demo``: the narrated tour on the embedded store."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    d = subparsers.add_parser("demo", parents=[common], help="a narrated tour of every capability")
    d.set_defaults(handler=demo)


def demo(args: argparse.Namespace) -> int:
    from tidings.demo.chapters import run  # noqa: PLC0415 - only the demo loads the tour

    return run()
