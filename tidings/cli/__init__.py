"""The ``tidings`` command line.

Common options (``--redis-url``, ``--workdir``, ``--json``, ``--inline``) are
accepted before and after the subcommand. Exit codes: 0 success, 1 a result with
``status: error`` (or ``failed``), 2 bad usage or no store.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tidings.cli import (
    agents,
    dead,
    demo,
    hooks,
    memory,
    processes,
    producers,
    status,
    tool,
    web,
)
from tidings.cli._common import EXIT_USAGE, UsageError, common_options, emit_error
from tidings.store.errors import NoStoreError, TidingsError

#: Subcommand modules; each has ``register(subparsers, common)``.
COMMANDS = (processes, agents, producers, tool, hooks, memory, status, dead, web, demo)


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(
        prog="tidings", parents=[common], description="Keep long-running LLM agents informed."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except UsageError as exc:
        emit_error(args, exc.reason, str(exc))
        return EXIT_USAGE
    except NoStoreError as exc:
        emit_error(args, exc.reason, exc.message)
        return EXIT_USAGE
    except TidingsError as exc:
        emit_error(args, exc.reason, exc.message)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
