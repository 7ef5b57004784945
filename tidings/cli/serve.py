"""``tidings up``, ``tidings worker`` and ``tidings scheduler`` (parsers in processes.py)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from importlib import import_module

from tidings import _logging
from tidings._embedded import NOT_DURABLE_WARNING
from tidings._hub import Hub, connect
from tidings._metrics import serve_metrics
from tidings.cli._common import UsageError, option, settings, wants_json
from tidings.cli._lifecycle import ready, run_until_stopped, say, stop_signals
from tidings.cli.pool import check_rights, run_pool
from tidings.cli.ready_line import UpReady, scheduler_changes, up_line
from tidings.engine.discover import store_url
from tidings.engine.ephemeral import EphemeralStore
from tidings.engine.supervisor import DefaultStore, StoreUnavailable
from tidings.engine.watch import EngineWatch
from tidings.jobs import log
from tidings.store.connection import redact
from tidings.store.roles import Stores, open_stores
from tidings.store.settings import Settings

#: How long ``tidings up`` gives its worker and scheduler to stop once its store failed
#: (seconds): with the engine gone they cannot finish, and the whole exit must stay
#: within interfaces.md's 15 s of the engine's death.
FAILED_STOP_SECONDS = 3.0


def _serve_store(s: Settings, args: argparse.Namespace) -> DefaultStore | EphemeralStore:
    """The default store (or, with ``--ephemeral``, the in-memory one), serving."""
    port = s.store_port if args.port is None else args.port
    store = EphemeralStore(s, port) if args.ephemeral else DefaultStore(s, port, fresh=args.fresh)
    try:
        store.start()
        try:
            # While the engine loads its data, this process loads what its worker runs.
            import_module("tidings.workers.actors")
            return store.wait_ready()
        except BaseException:
            _close_store(store)
            raise
    except StoreUnavailable as exc:
        raise UsageError(str(exc), reason=exc.reason) from None


def _up_workdirs(args: argparse.Namespace) -> list[str]:
    """The ``--workdir`` arguments; ``--memory-repo`` goes with exactly one (interfaces.md)."""
    workdirs = list(args.workdirs)
    if isinstance(option(args, "workdir"), str):
        workdirs.append(option(args, "workdir"))
    if args.memory_repo is not None and len(workdirs) != 1:
        raise UsageError(
            f"--memory-repo goes with exactly one --workdir (got {len(workdirs)}); "
            "register other agents with `tidings agents add --workdir W "
            "--memory-repo R`"
        )
    return workdirs


def up(args: argparse.Namespace) -> int:
    workdirs = _up_workdirs(args)
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
        raise UsageError(
            "--ephemeral serves its own store; it takes no Redis URL", reason="bad_usage"
        )
    exporter, failure, watch = None, None, None
    try:
        hub = connect(s.redis_url, settings=s)
    except BaseException:
        if store is not None:
            _close_store(store)
        raise
    args.store_client = hub.redis
    try:
        check_rights(hub.redis, hub.control, s)
        for workdir in workdirs:
            hub.agent(workdir, memory_repo=args.memory_repo)
        # every agent this host serves, registered now or earlier (interfaces.md, Never silent)
        agents = [record.public for record in hub.registry.on_host(s.host)]
        hub.start_worker(threads=args.threads)
        exporter = serve_metrics(s, hub.redis, hub.control)
        served = isinstance(store, DefaultStore)
        payload: UpReady = {
            "status": "ready",
            "role": "up",
            "url": redact(s.redis_url or ""),
            "embedded": isinstance(store, EphemeralStore),
            "durable": not isinstance(store, EphemeralStore),
            "host": s.host,
            "state_dir": str(store.paths.root) if store is not None else None,
            "engine": store.record()["engine"] if store is not None else None,
            "fsync": s.store_fsync if served else None,
            "agents": agents,
            "metrics_port": exporter.port if exporter else None,
        }
        # A person at a terminal gets one line; pipes and --json the JSON (interfaces.md CLI).
        as_json = wants_json(args)
        ready(payload, text=None if as_json else up_line(payload))
        hub.start_scheduler(on_event=say if as_json else scheduler_changes())
        if isinstance(store, DefaultStore):
            watch = EngineWatch(store, s.store_hang_seconds)
        failure = run_until_stopped(stop, watch.check if watch is not None else _no_problem)
        if failure is not None and watch is not None:
            log.event(watch.reason, logging.ERROR, detail=failure)
            say({"status": "failed", "role": "up", "reason": watch.reason, "message": failure})
            if watch.reason == "store_unresponsive":
                watch.store.kill_engine()
    finally:
        # Worker and scheduler first, then the engine (SHUTDOWN, the AOF synced).
        if exporter is not None:
            exporter.close()
        if watch is not None:
            watch.close()
        drained = _close_hub(hub, failure is not None)
        if store is not None:
            _close_store(store)
    if not drained:
        # Threads still wait on the dead store (dramatiq retries an ack forever): the
        # process ends here, its one line said, rather than wait for them.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    return 0 if failure is None else 1


def _close_hub(hub: Hub, store_failed: bool) -> bool:
    """Stop the worker and scheduler; with the store gone, give them
    :data:`FAILED_STOP_SECONDS` and answer whether they stopped."""
    if not store_failed:
        hub.close()
        return True
    closer = threading.Thread(
        target=_close_quietly, args=(hub,), name="tidings-up-stop", daemon=True
    )
    closer.start()
    closer.join(FAILED_STOP_SECONDS)
    return not closer.is_alive()


def _close_quietly(hub: Hub) -> None:
    try:
        hub.close()
    except Exception as exc:  # the store is gone: what could not be flushed is logged
        log.event("up_stop_incomplete", logging.WARNING, error=type(exc).__name__)


def _close_store(store: DefaultStore | EphemeralStore) -> None:
    """Stop the store; a state directory that cannot be written at stop is one line."""
    problem = store.close()
    if problem is not None:
        print(f"tidings: {problem[0]}: {problem[1]}", file=sys.stderr, flush=True)


def _no_problem() -> str | None:
    return None


def _stores(s: Settings, args: argparse.Namespace) -> Stores:
    stores = open_stores(store_url(s), s.broker_url, hang_seconds=s.store_hang_seconds)
    args.store_client = stores.state
    try:
        check_rights(stores.state, stores.control, s)
    except BaseException:
        stores.close()
        raise
    return stores


def worker(args: argparse.Namespace) -> int:
    from tidings.workers.process import HostWorker  # noqa: PLC0415 - only a single worker

    s = settings(args)
    _logging.configure(s)
    if args.processes > 1:
        return run_pool(args, s)
    stop = stop_signals()
    stores = _stores(s, args)
    # first: a busy port stops nothing half-started
    exporter = serve_metrics(s, stores.state, stores.control)
    host_worker = HostWorker(stores.state, s, threads=args.threads, control=stores.control)
    host_worker.start()
    ready(
        {
            "status": "ready",
            "role": "worker",
            "host": s.host,
            "pid": os.getpid(),
            "metrics_port": exporter.port if exporter else None,
        }
    )
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
    stores = _stores(s, args)
    stop = stop_signals()
    service = SchedulerService(stores.state, s, on_event=say, control=stores.control)
    exporter = serve_metrics(s, stores.state, stores.control)
    service.start()
    ready(
        {
            "status": "ready",
            "role": "scheduler",
            "host": s.host,
            "pid": os.getpid(),
            "holder": service.holder,
            "metrics_port": exporter.port if exporter else None,
        }
    )
    try:
        run_until_stopped(stop)
    finally:
        service.stop()
        if exporter is not None:
            exporter.close()
        stores.close()
    return 0
