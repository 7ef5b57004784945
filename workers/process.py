"""The worker process: dramatiq worker threads on this host's queue."""

from __future__ import annotations

from redis import Redis

from tidings.jobs import metrics
from tidings.jobs.runtime import Runtime
from tidings.jobs.tick import start_prompt_visits
from tidings.store import rates
from tidings.store.clock import SystemClock
from tidings.store.registry_migration import migrate_legacy
from tidings.store.settings import Settings
from tidings.workers.actors import declare_actors
from tidings.workers.broker import consuming, make_broker
from tidings.workers.dispatch import BrokerDispatcher
from tidings.workers.routing import host_queue

#: Worker threads per process (observations hold the GIL; keep it modest).
DEFAULT_THREADS = 8


class HostWorker:
    """A started dramatiq worker consuming ``tidings.host.<host>``: jobs on the state
    store ``client``, the broker on ``control`` (default: the same client)."""

    def __init__(
        self,
        client: Redis,
        settings: Settings,
        threads: int = DEFAULT_THREADS,
        control: Redis | None = None,
    ) -> None:
        """Its flushes start prompt visits in this process (channels.md C27)."""
        # Every metric exists (at zero) from the start: a ``--processes N`` child's
        # files are then there for the parent's sum before its first message.
        metrics.registry()
        control = control if control is not None else client
        migrate_legacy(client, control)  # before any message reads an agent record (issue 25)
        self.broker = make_broker(control, settings)
        self.runtime = Runtime(
            client, SystemClock(), settings, BrokerDispatcher(self.broker), control
        )
        self.visits = start_prompt_visits(self.runtime)
        declare_actors(self.broker, self.runtime, lambda: self.visits)
        queue = host_queue(settings.host)
        self.broker.declare_queue(queue)
        self.worker = consuming(self.broker, queue, threads)

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()
        if self.visits is not None:
            self.visits.close()
        rates.flush_all()
        self.broker.close()

    def problem(self) -> str | None:
        """``None`` while every consumer and worker thread runs, else which one stopped
        (the process then exits non-zero and its service manager restarts it)."""
        threads = [*self.worker.consumers.values(), *self.worker.workers]
        dead = [t.name for t in threads if not t.is_alive()]
        return f"worker threads stopped: {', '.join(dead)}" if dead else None
