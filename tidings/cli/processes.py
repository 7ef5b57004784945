"""Long-running processes: ``tidings up``, ``tidings worker`` and ``tidings scheduler``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from tidings import _logging
from tidings.cli._common import common_options, option, settings
from tidings.store.connection import client_for, ping, redact
from tidings.store.settings import EMBEDDED_DEFAULT_URL, RedisConfig
from tidings.workers import metrics

#: The embedded store's default port (``redis://127.0.0.1:6390/0``).
EMBEDDED_PORT = 6390


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    up_common = common_options(workdir=False)
    u = subparsers.add_parser(
        "up", parents=[up_common],
        help="worker + scheduler in one process; embedded store when no Redis URL",
    )
    u.add_argument("--workdir", action="append", dest="workdirs", default=[],
                   help="register this agent workdir (repeatable)")
    u.add_argument("--port", type=int, default=EMBEDDED_PORT,
                   help="port of the embedded store (0: any free port)")
    u.add_argument("--threads", type=int, default=4)
    u.set_defaults(handler=up)

    w = subparsers.add_parser("worker", parents=[common], help="dramatiq worker for this host")
    w.add_argument("--processes", type=int, default=1)
    w.add_argument("--threads", type=int, default=8)
    w.set_defaults(handler=worker)

    sc = subparsers.add_parser("scheduler", parents=[common],
                               help="this host's scheduler (leader-locked; others wait as standby)")
    sc.set_defaults(handler=scheduler)


def _say(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def _wait_for_signal() -> None:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


def up(args: argparse.Namespace) -> int:
    # Each process command loads its own machinery, so `tidings --help` stays light.
    from tidings._embedded import NOT_DURABLE_WARNING, EmbeddedServer  # noqa: PLC0415
    from tidings._hub import connect  # noqa: PLC0415

    s = settings(args)
    _logging.configure(s)
    server = None
    if not s.redis_url:
        server = EmbeddedServer(port=args.port).start()
        s = s.model_copy(update={"redis_url": server.url})
        print(f"tidings: {NOT_DURABLE_WARNING}", file=sys.stderr, flush=True)
    workdirs = list(args.workdirs)
    if isinstance(option(args, "workdir"), str):
        workdirs.append(option(args, "workdir"))
    hub = connect(s.redis_url, settings=s)
    exporter = None
    try:
        agents = [hub.agent(w).record.public for w in workdirs]
        hub.start_worker(threads=args.threads)
        exporter = metrics.serve(s.metrics_port)
        _say({"status": "ready", "role": "up", "url": redact(s.redis_url or ""),
              "embedded": server is not None, "durable": server is None, "host": s.host,
              "agents": agents,
              "metrics_port": exporter.port if exporter else None})
        hub.start_scheduler(on_event=_say)
        _wait_for_signal()
    finally:
        if exporter is not None:
            exporter.close()
        hub.close()
        if server is not None:
            server.close()
    return 0


def worker(args: argparse.Namespace) -> int:
    from tidings.workers.process import HostWorker  # noqa: PLC0415 - see up()

    s = settings(args)
    _logging.configure(s)
    url = s.redis_url or EMBEDDED_DEFAULT_URL
    if args.processes > 1:
        return _supervise(args, url, s.metrics_port)
    client = client_for(RedisConfig.from_url(url))
    ping(client, url)
    host_worker = HostWorker(client, s, threads=args.threads)
    host_worker.start()
    exporter = metrics.serve(s.metrics_port)
    _say({"status": "ready", "role": "worker", "host": s.host, "pid": os.getpid(),
          "metrics_port": exporter.port if exporter else None})
    try:
        _wait_for_signal()
    finally:
        if exporter is not None:
            exporter.close()
        host_worker.stop()
    return 0


def scheduler(args: argparse.Namespace) -> int:
    from tidings.scheduler.service import SchedulerService  # noqa: PLC0415 - see up()

    s = settings(args)
    _logging.configure(s)
    url = s.redis_url or EMBEDDED_DEFAULT_URL
    client = client_for(RedisConfig.from_url(url))
    ping(client, url)
    service = SchedulerService(client, s, on_event=_say)
    exporter = metrics.serve(s.metrics_port)
    _say({"status": "ready", "role": "scheduler", "host": s.host, "pid": os.getpid(),
          "holder": service.holder, "metrics_port": exporter.port if exporter else None})
    service.start()
    try:
        _wait_for_signal()
    finally:
        service.stop()
        if exporter is not None:
            exporter.close()
        client.close()
    return 0


def _supervise(args: argparse.Namespace, url: str, metrics_port: int | None) -> int:
    """``--processes N``: N single-process workers, stopped together. With a metrics
    port the children record into one multiprocess directory and this process serves
    their sum."""
    command = [sys.executable, "-m", "tidings", "worker", "--processes", "1",
               "--threads", str(args.threads)]
    # The URL goes in the environment, where a password is not on every `ps` listing.
    env = {k: v for k, v in os.environ.items() if k != "TIDINGS_METRICS_PORT"}
    env["TIDINGS_REDIS_URL"] = url
    with tempfile.TemporaryDirectory(prefix="tidings-metrics-") as directory:
        if metrics_port is not None:
            env[metrics.MULTIPROC_ENV] = directory
        children = [subprocess.Popen(command, env=env) for _ in range(args.processes)]
        exporter = (
            metrics.serve_children(metrics_port, Path(directory))
            if metrics_port is not None else None
        )
        _say({"status": "ready", "role": "workers", "pids": [c.pid for c in children],
              "metrics_port": exporter.port if exporter else None})
        try:
            _wait_for_signal()
        finally:
            for child in children:
                child.terminate()
            for child in children:
                child.wait(timeout=30)
            if exporter is not None:
                exporter.close()
    return 0
