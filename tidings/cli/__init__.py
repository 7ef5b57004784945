"""The ``tidings`` command line.

Shared options (``--redis-url``, ``--broker-url``, ``--workdir``, ``--json``,
``--inline``) are accepted before and after the subcommand, by the subcommands they
mean something to (``_common.command``); before one that does not take it, an option
is a usage error. Exit codes: 0 success, 1 a result with ``status: error`` (or
``failed``), 2 bad usage, bad input text, no store or refused credentials. Every error
prints its JSON answer on stdout and one ``tidings: <reason>: <message>`` line on stderr
(interfaces.md, Never silent).

Building the parser imports nothing beyond the standard library; each command
loads what it uses when it runs (``tests/unit/test_cli_imports.py``).
"""

from __future__ import annotations

import argparse
import logging
import os
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
USAGE_REASONS = frozenset(
    {
        "metrics_address_unavailable",
        "broker_url_required",
        "broker_on_cluster",
        "invalid_broker_url",
        "auth_failed",
        "weak_token",
    }
)

#: Subcommand modules, in the order ``tidings --help`` lists them; each has
#: ``register(subparsers)``.
COMMANDS = (processes, stop, agents, producers, tool, hooks, memory, status, dead, web, demo, mcp)


class _Version(argparse.Action):
    """``--version``: looks the installed version up only when asked."""

    def __init__(
        self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from tidings import __version__  # noqa: PLC0415 - importlib.metadata, on request

        print(f"tidings {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="tidings",
        parents=[common_options()],
        formatter_class=HelpFormatter,
        description="Keep long-running LLM agents informed.",
        epilog="Shared options go before or after COMMAND, where COMMAND takes them; "
        "`tidings COMMAND --help` lists what each takes. Exit codes: 0 success; 1 an "
        "answer with an error reason (no_permission included); 2 bad usage, bad JSON "
        "text, no reachable store, auth_failed. Every error: its JSON on stdout and "
        "one 'tidings: <reason>: <message>' line on stderr. TIDINGS_LOG_LEVEL=DEBUG "
        "shows a short command's log lines.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, title="commands"
    )
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def quiet_logs() -> None:
    """A command's error is its one stderr line (interfaces.md, Never silent): log records of a
    short-lived command go nowhere, unless ``TIDINGS_LOG_LEVEL=DEBUG`` asks for them
    (tracebacks included). The long-running commands install their own handler."""
    if os.environ.get("TIDINGS_LOG_LEVEL", "").strip().upper() == "DEBUG":
        logging.basicConfig(level=logging.DEBUG)
    else:
        logging.getLogger().addHandler(logging.NullHandler())


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    refused = refused_options(args)
    if refused:
        usage = (
            f"{refused[0]} means nothing to `{args.command_name}`; see `{args.command_name} --help`"
        )
        parser.error(usage)
    quiet_logs()
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
    except Exception as exc:
        return _store_failure(args, exc)


def _store_failure(args: argparse.Namespace, exc: Exception) -> int:
    """A store error raised outside a guarded call (a listing, a registry write): one
    line with its reason (``no_permission``, ``auth_failed``, ``store_error``), no
    traceback (interfaces.md, Never silent); so is a store fault (``store_unresponsive``,
    ``store_refuses_writes``). Anything else is a bug, and propagates."""
    from redis.exceptions import RedisError  # noqa: PLC0415 - the parser loads no Redis

    from tidings.store import refusals  # noqa: PLC0415 - as above

    if not isinstance(exc, RedisError):
        raise exc
    refusal = refusals.refusal(exc, getattr(args, "store_client", None)) or refusals.store_fault(
        exc
    )
    if refusal is None:
        emit_error(
            args,
            refusals.STORE_ERROR,
            f"the store failed underneath the command ({type(exc).__name__}: {str(exc)[:200]})",
        )
        return EXIT_ERROR
    emit_error(args, refusal.reason, refusal.message)
    return EXIT_USAGE if refusal.reason in USAGE_REASONS else EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
