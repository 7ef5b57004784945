"""``tidings up``, ``tidings worker`` and ``tidings scheduler`` (parsers in processes.py)."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

from tidings import _logging
from tidings._embedded import NOT_DURABLE_WARNING, EmbeddedServer
from tidings._hub import connect
from tidings._metrics import serve_metrics
from tidings.cli._common import UsageError, option, settings
from tidings.cli._lifecycle import ready, run_until_stopped, say, stop_signals
from tidings.cli.pool import run_pool
from tidings.jobs import log
from tidings.store.connection import redact
from tidings.store.roles import Stores, open_stores
from tidings.store.settings import EMBEDDED_DEFAULT_URL, Settings


def _embedded(port: int) -> EmbeddedServer:
    try:
        return EmbeddedServer(port=port).start()
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise UsageError(f"port {port} is already in use (another `tidings up`?); "
                         "choose another with --port", reason="port_in_use") from None


def up(args: argparse.Namespace) -> int:
    s = settings(args)
    stop = stop_signals()
    _logging.configure(s)
    server = None
    if not s.redis_url:
        server = _embedded(args.port)
        s = s.model_copy(update={"redis_url": server.url})
        print(f"tidings: {NOT_DURABLE_WARNING}", file=sys.stderr, flush=True)
    workdirs = list(args.workdirs)
    if isinstance(option(args, "workdir"), str):
        workdirs.append(option(args, "workdir"))
    exporter = None
    try:
        hub = connect(s.redis_url, settings=s)
    except BaseException:
        if server is not None:
            server.close()
        raise
    try:
        agents = [hub.agent(w).record.public for w in workdirs]
        hub.start_worker(threads=args.threads)
        exporter = serve_metrics(s, hub.redis, hub.control)
        ready({"status": "ready", "role": "up", "url": redact(s.redis_url or ""),
               "embedded": server is not None, "durable": server is None, "host": s.host,
               "agents": agents, "metrics_port": exporter.port if exporter else None})
        hub.start_scheduler(on_event=say)
        run_until_stopped(stop)
    finally:
        if exporter is not None:
            exporter.close()
        hub.close()
        if server is not None:
            server.close()
    return 0


def _stores(s: Settings) -> Stores:
    return open_stores(s.redis_url or EMBEDDED_DEFAULT_URL, s.broker_url)


def worker(args: argparse.Namespace) -> int:
    from tidings.workers.process import HostWorker  # noqa: PLC0415 - only a single worker

    s = settings(args)
    _logging.configure(s)
    if args.processes > 1:
        return run_pool(args, s)
    stop = stop_signals()
    stores = _stores(s)
    # first: a busy port stops nothing half-started
    exporter = serve_metrics(s, stores.state, stores.control)
    host_worker = HostWorker(stores.state, s, threads=args.threads, control=stores.control)
    host_worker.start()
    ready({"status": "ready", "role": "worker", "host": s.host, "pid": os.getpid(),
           "metrics_port": exporter.port if exporter else None})
    try:
        failure = run_until_stopped(stop, host_worker.problem)
        if failure is not None:
            log.event("worker_failed", logging.ERROR, detail=failure)
    finally:
        if exporter is not None:
            exporter.close()
        host_worker.stop()
    return 0 if failure is None else 1


def scheduler(args: argparse.Namespace) -> int:
    from tidings.scheduler.service import SchedulerService  # noqa: PLC0415 - APScheduler

    s = settings(args)
    _logging.configure(s)
    stores = _stores(s)
    stop = stop_signals()
    service = SchedulerService(stores.state, s, on_event=say, control=stores.control)
    exporter = serve_metrics(s, stores.state, stores.control)
    service.start()
    ready({"status": "ready", "role": "scheduler", "host": s.host, "pid": os.getpid(),
           "holder": service.holder, "metrics_port": exporter.port if exporter else None})
    try:
        run_until_stopped(stop)
    finally:
        service.stop()
        if exporter is not None:
            exporter.close()
        stores.close()
    return 0
