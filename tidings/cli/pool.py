"""``tidings worker --processes N``: N worker processes under one supervising parent.

When a child dies (killed, crashed, out of memory) the parent does not limp on at
reduced capacity: it stops the other children (SIGTERM: they finish their running
messages and hand prefetched ones back), reports the death and exits 1, as
dramatiq's own CLI does. Restarting is the service manager's job: systemd's
``Restart=on-failure`` with ``RestartSec=`` (back-off) and ``StartLimitBurst=``
(the limit), or compose's ``restart: on-failure``. SIGTERM to the parent drains
every child and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from redis import Redis

from tidings._metrics import serve_pool_metrics
from tidings._sdnotify import NOTIFY_VARIABLES
from tidings.cli._lifecycle import ready, run_until_stopped, say, stop_signals
from tidings.engine.discover import store_url
from tidings.jobs import log
from tidings.store import refusals
from tidings.store.connection import redact
from tidings.store.roles import open_stores
from tidings.store.settings import Settings
from tidings.workers.exposition import MULTIPROC_ENV

#: How long the parent waits for children to drain after SIGTERM (seconds); below
#: the units' TimeoutStopSec.
DRAIN_SECONDS = 100.0
#: Exit code of a pool that lost a child.
EXIT_CHILD_DIED = 1


def _first_death(children: list[subprocess.Popen[bytes]]) -> str | None:
    for child in children:
        code = child.poll()
        if code is not None:
            return f"worker process {child.pid} exited with {code}"
    return None


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        if child.poll() is None:
            child.terminate()
    for child in children:
        try:
            child.wait(timeout=DRAIN_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def check_rights(state: Redis, control: Redis, s: Settings) -> None:
    """A credential without the workers' rights stops a long-running command at once, in
    one line (interfaces.md, Never silent), before any thread or child starts."""
    refusals.preflight(state, redact(s.redis_url or ""))
    if control is not state:
        refusals.preflight(control, redact(s.broker_url or s.redis_url or ""))


def run_pool(args: argparse.Namespace, s: Settings) -> int:
    """Run ``args.processes`` single-process workers until a signal or a child's death.

    With a metrics port the children record into one multiprocess directory and
    this process serves their sum with its own process metrics and the status gauges.
    """
    command = [
        sys.executable,
        "-m",
        "tidings",
        "worker",
        "--processes",
        "1",
        "--threads",
        str(args.threads),
    ]
    # The URL goes in the environment, where a password is not on every `ps` listing.
    hidden = {"TIDINGS_METRICS_PORT", *NOTIFY_VARIABLES}
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    url = env["TIDINGS_REDIS_URL"] = store_url(s)
    if s.broker_url:
        env["TIDINGS_BROKER_URL"] = s.broker_url
    stores = open_stores(url, s.broker_url, hang_seconds=s.store_hang_seconds)
    args.store_client = stores.state
    try:  # no child starts with a credential that lacks the workers' rights
        check_rights(stores.state, stores.control, s.model_copy(update={"redis_url": url}))
    except BaseException:
        stores.close()
        raise
    stop = stop_signals()
    with tempfile.TemporaryDirectory(prefix="tidings-metrics-") as directory:
        exporter, failure = None, None
        if s.metrics_port is not None:
            env[MULTIPROC_ENV] = directory
            exporter = serve_pool_metrics(s, Path(directory), stores.state, stores.control)
        children = [subprocess.Popen(command, env=env) for _ in range(args.processes)]
        try:
            ready(
                {
                    "status": "ready",
                    "role": "workers",
                    "pids": [c.pid for c in children],
                    "metrics_port": exporter.port if exporter else None,
                }
            )
            failure = run_until_stopped(stop, lambda: _first_death(children))
            if failure is not None:
                log.event("worker_process_died", logging.ERROR, detail=failure)
                say(
                    {
                        "status": "failed",
                        "role": "workers",
                        "reason": "worker_process_died",
                        "message": failure,
                    }
                )
        finally:
            _stop(children)
            if exporter is not None:
                exporter.close()
            stores.close()
    return EXIT_CHILD_DIED if failure is not None else 0
