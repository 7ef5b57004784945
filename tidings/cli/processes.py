"""Long-running processes: ``tidings up``, ``tidings worker`` and ``tidings scheduler``.

Only the parsers live here; the commands run from :mod:`tidings.cli.serve` and
:mod:`tidings.cli.pool`, loaded when one of them starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tidings.cli._common import JSON, STORE, command, lazy

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers

#: Worker threads per process of ``tidings worker`` (observations hold the GIL).
WORKER_THREADS = 8
#: Worker threads of ``tidings up``'s in-process worker.
UP_THREADS = 4


def register(subparsers: Subparsers) -> None:
    u = command(
        subparsers,
        "up",
        "run a worker and a scheduler; serve the default store unless given a URL",
        STORE,
        JSON,
        epilog="With no Redis URL it starts and supervises the default store: a Valkey or "
        "Redis with an append-only file, kept in TIDINGS_STATE_DIR. On a terminal "
        "it prints one line once ready (JSON for pipes and --json). Ctrl-C or "
        "`tidings stop` stops it: worker and scheduler first, then the store.",
    )
    # `tidings --workdir W up` registers W too (shared options go before the command).
    u.set_defaults(accepts=u.get_default("accepts") | {"workdir"})
    u.add_argument(
        "--workdir",
        action="append",
        dest="workdirs",
        default=[],
        metavar="DIR",
        help="register this agent workdir (repeatable)",
    )
    u.add_argument(
        "--memory-repo",
        metavar="R",
        help="with exactly one --workdir: register that agent with the Git memory "
        "repository R (a work tree's root; '' clears a registered one)",
    )
    u.add_argument(
        "--port",
        type=int,
        default=None,
        help="loopback port of the default store (0: any free port; default: "
        "TIDINGS_STORE_PORT, else 6390)",
    )
    u.add_argument(
        "--ephemeral",
        action="store_true",
        help="serve an in-memory store instead (NOT durable: throwaway runs)",
    )
    u.add_argument(
        "--threads",
        type=int,
        default=UP_THREADS,
        metavar="N",
        help="worker threads of the in-process worker",
    )
    u.add_argument(
        "--fresh",
        action="store_true",
        help="start even though the default store's data is missing from "
        "TIDINGS_STATE_DIR (store_data_missing): an empty store, on purpose",
    )
    u.set_defaults(handler=lazy("tidings.cli.serve:up"))

    a = command(
        subparsers,
        "check-aof",
        "check the default store's append-only file (--fix: repair)",
        epilog="Runs the engine's own checker, while no `tidings up` serves TIDINGS_STATE_DIR.",
    )
    a.add_argument(
        "--fix",
        action="store_true",
        help="cut the file at its first damaged command (asks first; keep a copy)",
    )
    a.set_defaults(handler=lazy("tidings.cli.check_aof:check_aof"))

    w = command(
        subparsers,
        "worker",
        "run a dramatiq worker for this host's queues",
        STORE,
        epilog="With --processes N > 1 a parent runs N worker processes; if one dies, the "
        "parent stops the others (they drain) and exits 1, so the service manager "
        "restarts the pool. Prints one JSON line once ready.",
    )
    w.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="worker processes (a supervising parent when more than 1)",
    )
    w.add_argument(
        "--threads",
        type=int,
        default=WORKER_THREADS,
        metavar="N",
        help="worker threads per process",
    )
    w.set_defaults(handler=lazy("tidings.cli.serve:worker"))

    sc = command(
        subparsers,
        "scheduler",
        "run this host's scheduler (leader-locked; others wait on standby)",
        STORE,
        epilog="Prints one JSON line once ready, and one per change of leadership.",
    )
    sc.set_defaults(handler=lazy("tidings.cli.serve:scheduler"))
