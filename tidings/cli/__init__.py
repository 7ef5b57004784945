"""The ``tidings`` command line.

Shared options (``--redis-url``, ``--broker-url``, ``--workdir``, ``--json``,
``--inline``) are accepted before and after the subcommand, by the subcommands they
mean something to (``_common.command``); before one that does not take it, an option
is a usage error. Exit codes: 0 success, 1 a result with ``status: error`` (or
``failed``), 2 bad usage or no store.

Building the parser imports nothing beyond the standard library; each command
loads what it uses when it runs (``tests/unit/test_cli_imports.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from tidings.cli import (
    agents,
    dead,
    demo,
    hooks,
    mcp,
    memory,
    processes,
    producers,
    status,
    stop,
    tool,
    web,
)
from tidings.cli._common import (
    EXIT_ERROR,
    EXIT_USAGE,
    CommandParser,
    HelpFormatter,
    UsageError,
    common_options,
    emit_error,
    refused_options,
)
from tidings.store.errors import NoStoreError, TidingsError

#: Reasons of tidings errors that are bad usage or set-up (exit 2), not a result (exit 1).
USAGE_REASONS = frozenset({"metrics_address_unavailable", "broker_url_required",
                           "broker_on_cluster", "invalid_broker_url"})

#: Subcommand modules, in the order ``tidings --help`` lists them; each has
#: ``register(subparsers)``.
COMMANDS = (processes, stop, agents, producers, tool, hooks, memory, status, dead, web, demo,
            mcp)


class _Version(argparse.Action):
    """``--version``: looks the installed version up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from tidings import __version__  # noqa: PLC0415 - importlib.metadata, on request

        print(f"tidings {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="tidings", parents=[common_options()], formatter_class=HelpFormatter,
        description="Keep long-running LLM agents informed.",
        epilog="Shared options go before or after COMMAND, where COMMAND takes them; "
               "`tidings COMMAND --help` lists what each takes.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                       title="commands")
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    refused = refused_options(args)
    if refused:
        usage = f"{refused[0]} means nothing to `{args.command_name}`; see " \
                f"`{args.command_name} --help`"
        parser.error(usage)
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
        return EXIT_USAGE if exc.reason in USAGE_REASONS else EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
