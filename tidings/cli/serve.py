"""``tidings up``, ``tidings worker`` and ``tidings scheduler`` (parsers in processes.py)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from importlib import import_module

from tidings import _logging
from tidings._embedded import NOT_DURABLE_WARNING
from tidings._hub import connect
from tidings._metrics import serve_metrics
from tidings.cli._common import UsageError, option, settings
from tidings.cli._lifecycle import ready, run_until_stopped, say, stop_signals
from tidings.cli.pool import run_pool
from tidings.engine.discover import store_url
from tidings.engine.ephemeral import EphemeralStore
from tidings.engine.supervisor import DefaultStore, StoreUnavailable
from tidings.jobs import log
from tidings.store.connection import redact
from tidings.store.roles import Stores, open_stores
from tidings.store.settings import Settings


def _serve_store(s: Settings, args: argparse.Namespace) -> DefaultStore | EphemeralStore:
    """The default store (or, with ``--ephemeral``, the in-memory one), serving."""
    port = s.store_port if args.port is None else args.port
    store = EphemeralStore(s, port) if args.ephemeral else DefaultStore(s, port)
    try:
        store.start()
        try:
            # While the engine loads its data, this process loads what its worker runs.
            import_module("tidings.workers.actors")
            return store.wait_ready()
        except BaseException:
            store.close()
            raise
    except StoreUnavailable as exc:
        raise UsageError(str(exc), reason=exc.reason) from None


def up(args: argparse.Namespace) -> int:
    s = settings(args)
    stop = stop_signals()
    _logging.configure(s)
    store = None
    if not s.redis_url:
        # Before any thread starts: the engine's parent-death signal follows this thread.
        store = _serve_store(s, args)
        s = s.model_copy(update={"redis_url": store.url})
        if args.ephemeral:
            print(f"tidings: {NOT_DURABLE_WARNING}", file=sys.stderr, flush=True)
    elif args.ephemeral:
        raise UsageError("--ephemeral serves its own store; it takes no Redis URL",
                         reason="bad_usage")
    workdirs = list(args.workdirs)
    if isinstance(option(args, "workdir"), str):
        workdirs.append(option(args, "workdir"))
    exporter, failure = None, None
    try:
        hub = connect(s.redis_url, settings=s)
    except BaseException:
        if store is not None:
            store.close()
        raise
    try:
        agents = [hub.agent(w).record.public for w in workdirs]
        hub.start_worker(threads=args.threads)
        exporter = serve_metrics(s, hub.redis, hub.control)
        ready({"status": "ready", "role": "up", "url": redact(s.redis_url or ""),
               "embedded": isinstance(store, EphemeralStore),
               "durable": not isinstance(store, EphemeralStore), "host": s.host,
               "state_dir": str(store.paths.root) if store is not None else None,
               "engine": store.record()["engine"] if store is not None else None,
               "agents": agents, "metrics_port": exporter.port if exporter else None})
        hub.start_scheduler(on_event=say)
        failure = run_until_stopped(stop, store.problem if store is not None else _no_problem)
        if failure is not None:
            log.event("store_engine_died", logging.ERROR, detail=failure)
            say({"status": "failed", "role": "up", "reason": "store_engine_died",
                 "message": failure})
    finally:
        # Worker and scheduler first, then the engine (SHUTDOWN, the AOF synced).
        if exporter is not None:
            exporter.close()
        hub.close()
        if store is not None:
            store.close()
    return 0 if failure is None else 1


def _no_problem() -> str | None:
    return None


def _stores(s: Settings) -> Stores:
    return open_stores(store_url(s), s.broker_url)


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
