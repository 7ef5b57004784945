"""Shared CLI plumbing: common options, opening the hub, reading JSON, printing results.

Only the standard library is imported here: ``tidings --help`` and a command's
argument errors never load Redis, pydantic or dramatiq (issue 14).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias
from urllib.parse import urlsplit

from tidings.store import jsonread
from tidings.store.reasons import REASONS

if TYPE_CHECKING:
    from tidings._agent import Agent
    from tidings._hub import Hub
    from tidings.store.settings import Settings

    #: What ``add_subparsers`` returns; each command module registers its parsers on it.
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

#: A subcommand's handler: parsed arguments in, exit code out.
Handler = Callable[[argparse.Namespace], int]

_COMMON_DEFAULTS: dict[str, str | bool | None] = {
    "redis_url": None,
    "broker_url": None,
    "workdir": None,
    "json": None,
    "inline": False,
}

#: The shared option groups (interfaces.md CLI). Each command takes those that mean something
#: to it, after its name or before it: the store's URLs, the agent's workdir, JSON
#: output, flushing in this process.
STORE, WORKDIR, JSON, INLINE = "store", "workdir", "json", "inline"
#: Every group, in the order help lists them.
GROUPS = (STORE, WORKDIR, JSON, INLINE)

#: Each group's options: (flags, add_argument keywords).
GROUP_OPTIONS: dict[str, list[tuple[tuple[str, ...], dict[str, Any]]]] = {
    STORE: [
        (
            ("--redis-url",),
            {
                "metavar": "URL",
                "help": "Redis URL (default: TIDINGS_REDIS_URL, "
                "else the default store that `tidings up` serves from "
                "TIDINGS_STATE_DIR)",
            },
        ),
        (
            ("--broker-url",),
            {
                "metavar": "URL",
                "help": "control Redis: broker, results, "
                "presence (default: TIDINGS_BROKER_URL, else the --redis-url "
                "store; required with a Redis Cluster)",
            },
        ),
    ],
    WORKDIR: [
        (
            ("--workdir",),
            {"metavar": "DIR", "help": "the agent's workdir (default: current directory)"},
        )
    ],
    JSON: [
        (
            ("--json",),
            {"action": "store_true", "help": "print JSON (default when stdout is not a terminal)"},
        )
    ],
    INLINE: [
        (
            ("--inline",),
            {
                "action": "store_true",
                "help": "run the agent's flushes (of what this command "
                "publishes) in this process: no worker needed",
            },
        )
    ],
}
#: The destinations each group's options fill, and the flag of each.
GROUP_DESTS = {
    STORE: ("redis_url", "broker_url"),
    WORKDIR: ("workdir",),
    JSON: ("json",),
    INLINE: ("inline",),
}
FLAGS = {dest: f"--{dest.replace('_', '-')}" for dests in GROUP_DESTS.values() for dest in dests}

#: What a JSON option's help says about ``-`` and ``@PATH`` (interfaces.md, More CLI rules).
JSON_SOURCES = "JSON text, '-' for standard input or '@PATH' for a file"


class UsageError(Exception):
    """Bad command-line input: exit code 2."""

    def __init__(self, message: str, reason: str = "bad_usage") -> None:
        super().__init__(message)
        self.reason = reason


def lazy(target: str) -> Handler:
    """The handler ``"module:function"``, imported when the command runs, so that
    building the parser loads no command's machinery."""
    module, _, name = target.partition(":")

    def run(args: argparse.Namespace) -> int:
        handler: Handler = getattr(import_module(module), name)
        return handler(args)

    return run


class CommandParser(argparse.ArgumentParser):
    """A parser whose ``--help`` starts with its one-line description, then its usage."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_text(self.description)
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        for group in self._action_groups:
            formatter.start_section(group.title)
            formatter.add_text(group.description)
            formatter.add_arguments(group._group_actions)
            formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()

    def error(self, message: str) -> NoReturn:
        """A usage error is an error like any other (interfaces.md, Never silent): its
        JSON on stdout, one ``tidings: bad_usage: ...`` line on stderr, exit 2."""
        text = f"{self.prog}: {message} (see `{self.prog} --help`)"
        sys.stdout.write(
            json.dumps(
                {"status": "error", "reason": "bad_usage", "message": text}, ensure_ascii=False
            )
            + "\n"
        )
        sys.stdout.flush()
        say_error("bad_usage", text)
        sys.exit(EXIT_USAGE)


class HelpFormatter(argparse.HelpFormatter):
    """Says an option's default where it has one that its help does not already give."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        default = action.default
        shown = default not in (None, False, argparse.SUPPRESS) and default != []
        if text and action.option_strings and shown and "(default" not in text:
            text += " (default: %(default)s)"
        return text


def common_options(*groups: str) -> argparse.ArgumentParser:
    """The shared options of ``groups`` (all by default), valid before and after the
    subcommand (SUPPRESS keeps either from overwriting the other)."""
    common = argparse.ArgumentParser(add_help=False)
    for group in groups or GROUPS:
        for flags, kwargs in GROUP_OPTIONS[group]:
            common.add_argument(*flags, default=argparse.SUPPRESS, **kwargs)
    return common


def command(
    subparsers: Subparsers,
    name: str,
    summary: str,
    *groups: str,
    epilog: str | None = None,
    aliases: Sequence[str] = (),
) -> argparse.ArgumentParser:
    """A subcommand: ``summary`` is the one line that starts its ``--help`` and lists it in
    its parent's; ``groups`` are the shared options that mean something to it (the only
    ones it takes, before or after its name)."""
    parser = subparsers.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=epilog,
        aliases=list(aliases),
        parents=[common_options(*groups)] if groups else [],
        formatter_class=HelpFormatter,
    )
    parser.set_defaults(
        accepts=frozenset(d for g in groups for d in GROUP_DESTS[g]), command_name=parser.prog
    )
    return parser


def refused_options(args: argparse.Namespace) -> list[str]:
    """Shared options given (before the subcommand) that the subcommand does not take."""
    accepts: frozenset[str] = getattr(args, "accepts", frozenset())
    return [
        FLAGS[dest]
        for group in GROUPS
        for dest in GROUP_DESTS[group]
        if hasattr(args, dest) and dest not in accepts
    ]


def option(args: argparse.Namespace, name: str) -> Any:
    return getattr(args, name, _COMMON_DEFAULTS[name])


def wants_json(args: argparse.Namespace) -> bool:
    value = option(args, "json")
    return bool(value) or not sys.stdout.isatty()


def check_redis_url(url: str, where: str) -> None:
    """Raise :class:`UsageError` (exit 2, one line) for a URL no client could use."""
    from tidings.store.errors import TidingsError  # noqa: PLC0415 - see below
    from tidings.store.settings import (  # noqa: PLC0415 - pydantic, on use only
        RedisConfig,
        refuse_placeholder_password,
    )

    try:
        refuse_placeholder_password(url, where)
        config = RedisConfig.from_url(url)
        parts = urlsplit(url)
        if config.scheme in ("redis", "rediss"):  # the others list several host:port
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
            if not parts.hostname:
                raise ValueError("no host")
        if config.is_cluster and not config.nodes[0][0]:
            raise ValueError("no seed node")
    except TidingsError as exc:  # placeholder_password
        raise UsageError(exc.message, reason=exc.reason) from None
    except ValueError as exc:
        message = f"bad Redis URL in {where}: {exc}"
        if "BROKER" in where.upper():
            raise UsageError(message, reason="invalid_broker_url") from None
        raise UsageError(message, reason="invalid_redis_url") from None


def settings(args: argparse.Namespace) -> Settings:
    """The process settings, with ``--redis-url`` and ``--broker-url`` applied and the
    URLs checked."""
    from pydantic import ValidationError  # noqa: PLC0415 - see check_redis_url

    from tidings.store.settings import Settings  # noqa: PLC0415 - see check_redis_url

    try:
        base = Settings()
    except ValidationError as exc:
        error = exc.errors()[0]
        name = "TIDINGS_" + "_".join(str(p) for p in error["loc"]).upper()
        raise UsageError(f"bad {name}: {error['msg']}", reason="invalid_setting") from None
    for name, flag, variable in (
        ("redis_url", "--redis-url", "TIDINGS_REDIS_URL"),
        ("broker_url", "--broker-url", "TIDINGS_BROKER_URL"),
    ):
        url = option(args, name)
        if url:
            check_redis_url(url, flag)
            base = base.model_copy(update={name: url})
        elif getattr(base, name):
            check_redis_url(getattr(base, name), variable)
    return base


def open_hub(args: argparse.Namespace) -> Hub:
    """A client hub: it enqueues and reads, and declares no actors (no worker runs here)."""
    from tidings._hub import connect  # noqa: PLC0415 - keeps `tidings --help` light

    s = settings(args)
    hub = connect(s.redis_url, settings=s, declare_actors=False)
    args.store_client = hub.redis  # names the ACL user of a refusal outside a call (main)
    return hub


def open_agent(args: argparse.Namespace, hub: Hub) -> Agent:
    """The registered agent of ``--workdir`` (default: the current directory).

    Only ``agents add`` and ``up --workdir`` register (interfaces.md, More CLI rules).
    """
    from tidings.errors import UnknownAgentError  # noqa: PLC0415 - see open_hub

    workdir = os.path.realpath(option(args, "workdir") or os.getcwd())
    agent = hub.find_agent(workdir, inline=bool(option(args, "inline")))
    if agent is None:
        raise UnknownAgentError(
            f"no agent is registered for {workdir}; register it with "
            f"`tidings agents add --workdir {workdir}`"
        )
    return agent


def parse_json(
    text: str, what: str, *, too_deep_reason: str = "invalid_json", null: bool = False
) -> Any:
    """A JSON option's value through the bounded reader (C47); ``-`` reads standard
    input, ``@PATH`` the file PATH. It must be an object (``null`` too when ``null``):
    other JSON is bad input text like JSON that does not parse (``invalid_json``, exit
    2, interfaces.md). Too deep answers the call's own invalid-input reason."""
    if text == "-":
        text = sys.stdin.read()
    elif text.startswith("@"):
        try:
            text = Path(text[1:]).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"{what}: cannot read {text[1:]!r}: {exc}", reason="unreadable_file"
            ) from None
    parsed = jsonread.parse(text)
    if isinstance(parsed, jsonread.Malformed):
        if parsed.reason == "too_deep":
            raise UsageError(f"{what}: {parsed.message}", reason=too_deep_reason)
        raise UsageError(f"{what} is not valid JSON: {parsed.message}", reason="invalid_json")
    if not isinstance(parsed.value, dict) and not (null and parsed.value is None):
        raise UsageError(
            f"{what} must be a JSON object, not {type(parsed.value).__name__}",
            reason="invalid_json",
        )
    return parsed.value


def _print(args: argparse.Namespace, result: object) -> None:
    if wants_json(args):
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        from rich.console import Console  # noqa: PLC0415 - only a terminal needs rich

        Console().print_json(data=result)
    sys.stdout.flush()


def error_of(result: object) -> tuple[str, str] | None:
    """``(reason, message)`` of an answer that is an error (interfaces.md, Never silent): a
    ``status`` of ``error`` or ``failed``, or a check placeholder whose notifications
    could not be read (C24)."""
    if not isinstance(result, dict):
        return None
    if result.get("status") in ("error", "failed"):
        return str(result.get("reason") or "error"), str(result.get("message") or "")
    meta = result.get("_meta")
    agent_meta = meta.get("agent_meta") if isinstance(meta, dict) else None
    unread = agent_meta.get("notifications_unavailable") if isinstance(agent_meta, dict) else None
    if isinstance(unread, dict):
        return str(unread.get("reason") or "error"), str(unread.get("message") or "")
    return None


def say_error(reason: str, message: str) -> None:
    """The one stderr line of every error (interfaces.md): ``tidings: <reason>: <message>``; an
    answer without a message of its own (an M12 result) gets the reason's sentence."""
    line = " ".join(message.split()) or REASONS.get(reason, "")  # type: ignore[call-overload]
    print(f"tidings: {reason}: {line}", file=sys.stderr)


def emit(args: argparse.Namespace, result: object, note: str = "") -> int:
    """Print ``result`` on stdout; an error answer also gets its one stderr line (interfaces.md,
    Never silent), ``note`` at its end. Exit 1 for an error answer, else 0."""
    _print(args, result)
    failed = error_of(result)
    if failed is None:
        return EXIT_OK
    reason, message = failed
    say_error(reason, f"{message} ({note})" if note else message)
    return EXIT_ERROR


def emit_error(args: argparse.Namespace, reason: str, message: str) -> None:
    """An error with no answer of its own: the error dict on stdout, its line on stderr."""
    _print(args, {"status": "error", "reason": reason, "message": message})
    say_error(reason, message)
