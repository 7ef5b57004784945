"""``connect()`` and the :class:`Hub`: one Redis, its broker and its agent registry."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

from pydantic import ValidationError
from redis import Redis

from tidings._agent import Agent
from tidings.engine.discover import store_url
from tidings.jobs.channels import name_error
from tidings.jobs.guard import ErrorAnswer, raising
from tidings.jobs.runtime import Runtime
from tidings.store import keys, lua_sandbox, rates, replies
from tidings.store.clock import Clock, SystemClock
from tidings.store.errors import TidingsError
from tidings.store.inbox_keys import InboxKeys
from tidings.store.models import AgentRecord, default_agent_id
from tidings.store.placement import RunFence
from tidings.store.registry import AgentRegistry
from tidings.store.registry_migration import migrate_legacy
from tidings.store.roles import Stores, open_stores
from tidings.store.settings import Settings
from tidings.workers import actor_names, dead_letters
from tidings.workers.broker import consuming, make_broker
from tidings.workers.dispatch import BrokerDispatcher
from tidings.workers.routing import host_queue

if TYPE_CHECKING:
    from dramatiq import Worker

    from tidings.inspection.status import Status
    from tidings.jobs.tick import PromptVisits
    from tidings.jobs.turns import Startup, TurnError
    from tidings.scheduler.service import EventSink, SchedulerService
    from tidings.workers.dead_letters import DeadLetter, Requeued, RequeueError

#: Worker threads of an in-process worker (embedded hubs, ``tidings up``).
LOCAL_WORKER_THREADS = 4
#: How long ``move_agent`` waits for the old host's runs of the agent to end (seconds).
MOVE_SETTLE_SECONDS = 30.0


class Moved(TypedDict):
    """What :meth:`Hub.move_agent` answers when the agent is known."""

    status: Literal["ok"]
    agent_id: str
    from_host: str
    to_host: str
    #: False when the agent was on ``to_host`` already.
    moved: bool
    #: Whether the old host's runs of the agent all ended within the settle time.
    settled: bool
    in_flight: int


def connect(
    redis_url: str | None = None,
    *,
    broker_url: str | None = None,
    background: bool = False,
    client: Redis | None = None,
    broker_client: Redis | None = None,
    settings: Settings | None = None,
    clock: Clock | None = None,
    declare_actors: bool = True,
) -> Hub:
    """Open a hub.

    ``redis_url=None`` takes ``TIDINGS_REDIS_URL``, else the default store that a
    running ``tidings up`` serves from ``TIDINGS_STATE_DIR`` (its ``store.json``;
    :class:`~tidings.errors.NoStoreError` when none runs); ``"embedded"`` keeps an
    in-memory store in this process, not durable (tests and demos). A ready-made
    redis-py compatible ``client`` may be passed instead of a URL; the hub then leaves
    closing it to the caller.
    ``broker_url`` (default ``TIDINGS_BROKER_URL``, else the store's own URL) is the
    control store: broker, results, presence, rates; required when ``redis_url`` is a
    Redis Cluster (interfaces.md "Past one Redis"). With ``client``, ``broker_client`` is the
    control store's client (default: ``client``).

    ``background=True`` also runs this host's worker and scheduler here, stopped
    by :meth:`Hub.close`. Without it no call of the hub starts a thread, and an
    embedded hub's agents run inline, since no worker would serve their queue.
    ``declare_actors=False`` makes a client that only enqueues and reads (the CLI):
    the actors load every job, pygit2 included; starting a worker declares them.
    """
    settings = settings or Settings()
    if client is not None:
        hub = Hub(client, settings, clock=clock, url="client", control=broker_client)
    elif redis_url == "embedded":
        import fakeredis  # noqa: PLC0415 - the embedded store only; a real Redis never loads it

        lua_sandbox.install()  # scripts get what a real server gives them ("Local trust")
        store = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
        hub = Hub(
            store,
            settings,
            clock=clock,
            url="embedded",
            owns_client=True,
            inline_agents=not background,
        )
    else:
        url = redis_url or store_url(settings)
        stores = open_stores(
            url, broker_url or settings.broker_url, hang_seconds=settings.store_hang_seconds
        )
        hub = Hub(
            stores.state,
            settings,
            clock=clock,
            url=url,
            owns_client=True,
            declare_actors=declare_actors,
            control=stores.control,
        )
        hub.stores = stores
    if background:
        hub.start_worker()
        hub.start_scheduler()
    return hub


class Hub:
    """Agents, registry and broker over the state store (``redis``) and the control
    store (``control``: broker, results, presence, rates; by default the same client)."""

    def __init__(
        self,
        client: Redis,
        settings: Settings | None = None,
        *,
        clock: Clock | None = None,
        url: str = "",
        owns_client: bool = False,
        inline_agents: bool = False,
        declare_actors: bool = True,
        control: Redis | None = None,
    ) -> None:
        self.redis = client
        self.control = control if control is not None else client
        #: The clients and configurations :func:`connect` opened from URLs, if it did.
        self.stores: Stores | None = None
        self.url = url
        self.settings = settings or Settings()
        self.clock = clock or SystemClock()
        self.broker = make_broker(self.control, self.settings)
        self.runtime = Runtime(
            client, self.clock, self.settings, BrokerDispatcher(self.broker), self.control
        )
        self._visits: PromptVisits | None = None
        if declare_actors:
            self.declare_actors()
        self.registry = AgentRegistry(client, self.control)
        # a store written before issue 25 (one EXISTS when none)
        migrate_legacy(client, self.control)
        self._owns_client = owns_client
        self._inline_agents = inline_agents
        self._worker: Worker | None = None
        self._scheduler: SchedulerService | None = None
        self._worker_lock = threading.Lock()

    def declare_actors(self) -> None:
        """Declare the host actors on this hub's broker (a worker consumes them; a client
        that only enqueues, like ``tidings publish``, need not load them)."""
        # Actors load every job, pygit2 included: only hubs that may run them pay for it.
        from tidings.workers.actors import declare_actors  # noqa: PLC0415

        if actor_names.FLUSH_CHANNEL not in self.broker.actors:
            declare_actors(self.broker, self.runtime, lambda: self._visits)

    def _prompt_visits(self) -> PromptVisits | None:
        """The prompt visits (channels.md C27) this process's worker and scheduler share,
        so a flush and the watcher's report of it make one visit; caller holds the lock."""
        if self._visits is None:
            from tidings.jobs.tick import start_prompt_visits  # noqa: PLC0415 - loads the jobs

            self._visits = start_prompt_visits(self.runtime)
        return self._visits

    # -- agents ---------------------------------------------------------------

    @raising("agent")
    def agent(
        self,
        workdir: str | os.PathLike[str],
        memory_repo: str | os.PathLike[str] | None = None,
        agent_id: str | None = None,
        host: str | None = None,
        max_events: Mapping[str, int] | None = None,
        inline: bool = False,
    ) -> Agent:
        """Register (idempotently) and return the agent of ``workdir``; starts nothing.

        ``memory_repo``: the git work tree whose changes reach the inbox (M10); a path
        that is not one (missing, a plain folder, a bare repository) raises
        ``invalid_memory_repo`` and registers nothing; ``""`` clears a registered one,
        ``None`` keeps it;
        ``agent_id``: defaults to a stable digest of the workdir's real path; ``host``: the
        host whose workers serve it (default: this one); ``max_events``: per-channel caps
        of ``data.events``; ``inline``: run its jobs in the caller instead of a worker. On an
        embedded hub without a background worker every agent runs inline. Bad input
        raises :class:`tidings.TidingsError` (``invalid_workdir``, ``agent_id_conflict``,
        ``invalid_agent``, ...).
        """
        real = os.path.realpath(workdir)
        if not os.path.isdir(real):
            raise TidingsError(
                f"workdir {str(workdir)!r} is not a directory", reason="invalid_workdir"
            )
        agent_id = agent_id or default_agent_id(real)
        existing = self.registry.get(agent_id)
        if existing is not None and existing.workdir != real:
            raise TidingsError(
                f"agent {agent_id!r} is registered with workdir {existing.workdir}",
                reason="agent_id_conflict",
            )
        for channel in max_events or {}:
            if name_error(channel) is not None:
                raise TidingsError(f"max_events: bad channel {channel!r}", reason="invalid_agent")
        clear = memory_repo is not None and os.fspath(memory_repo) == ""
        repo = os.path.realpath(memory_repo) if memory_repo is not None and not clear else None
        for name, path in (("workdir", real), ("memory_repo", repo)):
            if path is not None and not _is_text(path):
                raise TidingsError(
                    f"{name} {os.fsencode(path)!r} is not valid UTF-8 (agent records keep "
                    "their paths as JSON text)",
                    reason=f"invalid_{name}",
                )
        if repo is not None:
            _check_memory_repo(repo)
        elif existing is not None and not clear:
            repo = existing.memory_repo
        try:
            record = AgentRecord(
                agent_id=agent_id,
                workdir=real,
                memory_repo=repo,
                host=host or (existing.host if existing else self.settings.host),
                max_events=dict(max_events)
                if max_events is not None
                else (existing.max_events if existing else {}),
            )
        except ValidationError as exc:
            raise TidingsError(str(exc.errors()[0]["msg"]), reason="invalid_agent") from None
        if record != existing:
            self.registry.put(record)
            if existing is not None and existing.memory_repo != record.memory_repo:
                # the old repository's unavailability is not the new one's
                self.redis.delete(InboxKeys(agent_id).memory_unavailable)
        else:  # a crash between the record and its index leaves it unlisted: list it again
            self.registry.ensure_indexed(record)
        return Agent(self, record, inline=inline or self._inline_agents)

    def find_agent(self, workdir: str | os.PathLike[str], inline: bool = False) -> Agent | None:
        """The agent registered for ``workdir``, or ``None``; registers nothing.

        ``workdir`` is resolved (symlinks followed) before the lookup, by agent id first,
        then by the per-host workdir index. ``inline=True`` runs the agent's jobs in the
        calling thread, as :meth:`agent` does.
        """
        real = os.path.realpath(workdir)
        record = self.registry.get(default_agent_id(real))
        if record is None or record.workdir != real:
            record = self.registry.find_by_workdir(real)
        if record is None:
            return None
        return Agent(self, record, inline=inline or self._inline_agents)

    @raising("agents")
    def agents(self) -> list[dict[str, str | None]]:
        """Every registered agent on every host, one mapping each: ``agent_id``,
        ``workdir``, ``memory_repo`` (or ``None``) and ``host``. Walks the host set and
        each host's index (no keyspace scan)."""
        return [record.public for record in self.registry.all()]

    def startup(self, host: str | None = None) -> dict[str, Startup | TurnError]:
        """``Agent.startup()`` for every agent registered on ``host`` (default: this host),
        by agent id; a failing agent is logged and reported, the others go on (M51)."""
        from tidings.jobs.turns import startup_all  # noqa: PLC0415 - loads pygit2

        records = self.registry.on_host(host or self.settings.host)
        return startup_all(self.runtime, records)

    def move_agent(
        self, agent_id: str, host: str, settle_seconds: float = MOVE_SETTLE_SECONDS
    ) -> Moved | ErrorAnswer:
        """Serve ``agent_id`` from ``host`` from now on; safe while messages are in flight.

        Messages already queued for the old host are forwarded by its workers; runs
        already under way there are waited for (up to ``settle_seconds``: ``settled``
        says whether they all ended); channels with buffered records get a flush on the
        new host at once. Move the workdir (and memory repository) first.
        """
        existing = self.registry.get(agent_id)
        if existing is None:
            return {
                "status": "error",
                "reason": "unknown_agent",
                "message": f"no agent registered as {agent_id!r}",
            }
        try:
            record = AgentRecord.model_validate({**existing.model_dump(), "host": host})
        except ValidationError as exc:
            return {
                "status": "error",
                "reason": "invalid_host",
                "message": str(exc.errors()[0]["msg"]),
            }
        if record.host == existing.host:
            return Moved(
                status="ok",
                agent_id=agent_id,
                from_host=existing.host,
                to_host=host,
                moved=False,
                settled=True,
                in_flight=0,
            )
        self.registry.put(record)
        in_flight = RunFence(self.redis, self.clock).settle(agent_id, existing.host, settle_seconds)
        for raw in self.redis.smembers(keys.AgentKeys(agent_id).buffered_channels):
            self.runtime.dispatch.flush_channel(record, replies.text(raw))
        return Moved(
            status="ok",
            agent_id=agent_id,
            from_host=existing.host,
            to_host=host,
            moved=True,
            settled=in_flight == 0,
            in_flight=in_flight,
        )

    def status(self) -> Status:
        """Queues, scheduler leaders, agents' pending inbox items and live delays
        (``tidings status --json``); reads only."""
        from tidings.inspection.status import status  # noqa: PLC0415 - loads the scheduler's job store

        return status(self.redis, self.clock, self.control)

    def dead_letters(self) -> list[DeadLetter]:
        """Messages that ran out of retries: ``message_id``, ``queue``, ``actor``, ``error``,
        ``traceback``, ``died_at``, ``args``; newest first; reads only."""
        return dead_letters.dead_letters(self.control)

    def requeue_dead(self, message_id: str) -> Requeued | RequeueError:
        """Enqueue dead letter ``message_id`` again with fresh retries (``not_found`` if
        there is none by that id)."""
        return dead_letters.requeue(self.broker, message_id)

    def set_dismiss_guard(self, channel: str, suggested_verb: str) -> None:
        """Guard ``channel`` against non-forced dismissal (channels.md C37); last wins.

        A non-forced dismissal of ``channel`` is then refused with ``guarded`` and
        the answer names ``suggested_verb`` (what the agent should do instead). Raises
        :class:`TidingsError` (``invalid_channel``, ``invalid_guard``) on bad input.
        """
        problem = name_error(channel)
        if problem is not None:
            raise TidingsError(problem, reason="invalid_channel")
        if not isinstance(suggested_verb, str) or not suggested_verb.strip():
            raise TidingsError("suggested_verb must be a non-empty string", reason="invalid_guard")
        self.control.hset(keys.DISMISS_GUARDS, channel, suggested_verb)

    # -- in-process worker ------------------------------------------------------

    def start_worker(self, threads: int = LOCAL_WORKER_THREADS) -> None:
        """Consume this host's queue in this process (embedded hubs, ``tidings up``).

        ``threads`` is dramatiq's worker thread count; a second call does nothing.
        :meth:`close` stops the worker.
        """
        with self._worker_lock:
            if self._worker is not None:
                return
            self._prompt_visits()
            self.declare_actors()
            queue = host_queue(self.settings.host)
            self.broker.declare_queue(queue)
            worker = consuming(self.broker, queue, threads)
            worker.start()
            self._worker = worker

    def start_scheduler(self, on_event: EventSink | None = None) -> SchedulerService:
        """Run this host's scheduler in this process (embedded hubs, ``tidings up``).

        It is leader-locked like ``tidings scheduler``: if another scheduler of
        this host is active, this one waits as standby. ``on_event`` receives the
        scheduler's state changes as JSON objects (``leader`` with start-up counts,
        ``standby``); the running service is returned, and a second call returns it again.
        """
        from tidings.scheduler.service import SchedulerService  # noqa: PLC0415 - APScheduler

        with self._worker_lock:
            if self._scheduler is None:
                self._scheduler = SchedulerService(
                    self.redis,
                    self.settings,
                    clock=self.clock,
                    on_event=on_event,
                    control=self.control,
                    visits=self._prompt_visits(),
                )
                self._scheduler.start()
            return self._scheduler

    def close(self) -> None:
        """Stop what this hub started (worker, scheduler), flush this process's rate
        counters, and close the clients that :func:`connect` built (a client passed in
        stays open)."""
        with self._worker_lock:
            if self._scheduler is not None:
                self._scheduler.stop()
                self._scheduler = None
            if self._worker is not None:
                self._worker.stop()
                self._worker = None
            if self._visits is not None:
                self._visits.close()
                self._visits = None
        rates.flush(self.redis)  # what this process counted, before the client goes
        self.broker.close()
        if self._owns_client:
            if self.control is not self.redis:
                self.control.close()
            self.redis.close()

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_memory_repo(path: str) -> None:
    """Raise ``invalid_memory_repo`` unless ``path`` is a Git work tree's root (interfaces.md,
    Never silent: a typo must not turn the memory inbox off quietly)."""
    # pygit2 loads only for a registration that names a memory repository
    from tidings.jobs.memory import repository_problem  # noqa: PLC0415

    problem = repository_problem(path)
    if problem is not None:
        raise TidingsError(
            f'{problem}; nothing was registered (`--memory-repo ""` clears a registered one)',
            reason="invalid_memory_repo",
        )


def _is_text(path: str) -> bool:
    """True when ``path`` (undecodable bytes as lone surrogates) is valid UTF-8."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
