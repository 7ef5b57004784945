"""``tidings stop`` (or ``down``): stop the ``tidings up`` of the state directory."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tidings.cli._common import EXIT_ERROR, JSON, command, emit, emit_error, settings, wants_json
from tidings.engine import stopping
from tidings.engine.state_paths import StatePaths

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers


def register(subparsers: Subparsers) -> None:
    s = command(
        subparsers,
        "stop",
        "stop the `tidings up` that serves TIDINGS_STATE_DIR",
        JSON,
        aliases=("down",),
        epilog="As Ctrl-C does: worker and scheduler first, then the default store, its "
        "append-only file synced. Exits 1 with reason not_running when no `tidings "
        "up` serves the directory, and stop_timeout when it still runs after "
        "--timeout. An `up` given a Redis URL keeps no state directory: stop it "
        "with a signal or its service manager.",
    )
    s.add_argument(
        "--timeout",
        type=float,
        default=stopping.STOP_SECONDS,
        metavar="SECONDS",
        help="how long to wait for it to stop",
    )
    s.set_defaults(handler=stop)


def stop(args: argparse.Namespace) -> int:
    done = stopping.stop(StatePaths(settings(args).state_dir), args.timeout)
    if done["status"] == "error":
        emit_error(args, done["reason"], done["message"])
        return EXIT_ERROR
    if wants_json(args):
        return emit(args, done)
    print(
        f"tidings: stopped `tidings up` (pid {done['stopped']}) serving {done['state_dir']} "
        f"in {done['seconds']:.1f} s"
    )
    sys.stdout.flush()
    return 0
