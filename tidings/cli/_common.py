"""Shared CLI plumbing: common options, opening the hub, printing results."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from tidings.store import jsonread
from tidings.store.settings import Settings

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2

_COMMON_DEFAULTS: dict[str, Any] = {
    "redis_url": None,
    "workdir": None,
    "json": None,
    "inline": False,
}


class UsageError(Exception):
    """Bad command-line input: exit code 2."""

    def __init__(self, message: str, reason: str = "bad_usage") -> None:
        super().__init__(message)
        self.reason = reason


def common_options(*, workdir: bool = True) -> argparse.ArgumentParser:
    """Options valid before and after the subcommand (SUPPRESS keeps either from
    overwriting the other)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--redis-url", default=argparse.SUPPRESS,
                        help="Redis URL (default: TIDINGS_REDIS_URL, else the embedded store)")
    if workdir:
        common.add_argument("--workdir", default=argparse.SUPPRESS,
                            help="agent workdir (default: current directory)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON (default when stdout is not a terminal)")
    common.add_argument("--inline", action="store_true", default=argparse.SUPPRESS,
                        help="run flushes in this process (no worker needed)")
    return common


def option(args: argparse.Namespace, name: str) -> Any:
    return getattr(args, name, _COMMON_DEFAULTS[name])


def wants_json(args: argparse.Namespace) -> bool:
    value = option(args, "json")
    return bool(value) or not sys.stdout.isatty()


def settings(args: argparse.Namespace) -> Settings:
    base = Settings()
    url = option(args, "redis_url")
    return base.model_copy(update={"redis_url": url}) if url else base


def open_hub(args: argparse.Namespace) -> Any:
    from tidings._hub import connect  # noqa: PLC0415 - keeps `tidings --help` light

    s = settings(args)
    return connect(s.redis_url, settings=s)


def open_agent(args: argparse.Namespace, hub: Any) -> Any:
    workdir = option(args, "workdir") or os.getcwd()
    return hub.agent(workdir, inline=bool(option(args, "inline")))


def parse_json(text: str, what: str, *, too_deep_reason: str = "invalid_json") -> Any:
    """A JSON option's value through the bounded reader (C47): too deep answers the
    call's own invalid-input reason, anything else unreadable ``invalid_json``."""
    parsed = jsonread.parse(text)
    if isinstance(parsed, jsonread.Malformed):
        if parsed.reason == "too_deep":
            raise UsageError(f"{what}: {parsed.message}", reason=too_deep_reason)
        raise UsageError(f"{what} is not valid JSON: {parsed.message}", reason="invalid_json")
    return parsed.value


def emit(args: argparse.Namespace, result: Any) -> int:
    """Print ``result``; the exit code follows its ``status``."""
    if wants_json(args):
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        from rich.console import Console  # noqa: PLC0415 - only a terminal needs rich

        Console().print_json(data=result)
    sys.stdout.flush()
    status = result.get("status") if isinstance(result, dict) else None
    return EXIT_ERROR if status in ("error", "failed") else EXIT_OK


def emit_error(args: argparse.Namespace, reason: str, message: str) -> None:
    payload = {"status": "error", "reason": reason, "message": message}
    if wants_json(args):
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    print(f"tidings: {message}", file=sys.stderr)
