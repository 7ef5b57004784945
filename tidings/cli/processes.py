"""Long-running processes: ``tidings up``, ``tidings worker`` and ``tidings scheduler``.

Only the parsers live here; the commands run from :mod:`tidings.cli.serve` and
:mod:`tidings.cli.pool`, loaded when one of them starts.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tidings.cli._common import common_options, lazy

if TYPE_CHECKING:
    from tidings.cli._common import Subparsers

#: Worker threads per process of ``tidings worker`` (observations hold the GIL).
WORKER_THREADS = 8
#: Worker threads of ``tidings up``'s in-process worker.
UP_THREADS = 4


def register(subparsers: Subparsers, common: argparse.ArgumentParser) -> None:
    up_common = common_options(workdir=False)
    u = subparsers.add_parser(
        "up", parents=[up_common],
        help="worker + scheduler in one process; with no Redis URL it starts and supervises "
             "the default store (a Valkey/Redis with an append-only file in TIDINGS_STATE_DIR)",
    )
    u.add_argument("--workdir", action="append", dest="workdirs", default=[],
                   help="register this agent workdir (repeatable)")
    u.add_argument("--port", type=int, default=None,
                   help="loopback port of the default store (0: any free port; default: "
                        "TIDINGS_STORE_PORT, else 6390)")
    u.add_argument("--ephemeral", action="store_true",
                   help="serve an in-memory store instead (NOT durable: throwaway runs)")
    u.add_argument("--threads", type=int, default=UP_THREADS,
                   help="worker threads of the in-process worker")
    u.set_defaults(handler=lazy("tidings.cli.serve:up"))

    w = subparsers.add_parser(
        "worker", parents=[common], help="dramatiq worker for this host",
        description="dramatiq worker for this host's queue. With --processes N > 1 a parent "
                    "runs N worker processes; if one dies, the parent stops the others "
                    "(they drain) and exits 1, so the service manager restarts the pool.",
    )
    w.add_argument("--processes", type=int, default=1,
                   help="worker processes (a supervising parent when more than 1)")
    w.add_argument("--threads", type=int, default=WORKER_THREADS,
                   help="worker threads per process")
    w.set_defaults(handler=lazy("tidings.cli.serve:worker"))

    sc = subparsers.add_parser("scheduler", parents=[common],
                               help="this host's scheduler (leader-locked; others wait as standby)")
    sc.set_defaults(handler=lazy("tidings.cli.serve:scheduler"))
