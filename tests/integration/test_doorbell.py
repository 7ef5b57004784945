"""The doorbell (issue 33, acceptance 3; workers/doorbell.py): an enqueue wakes an idle
consumer at once although its idle wait is long, a message that comes without a ring is
still fetched within the idle wait, a waiting worker stops at once, and the ACL users of
deploy/redis.conf can ring and wait. Real redis-servers, real dramatiq workers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dramatiq
import pytest
import redis
from dramatiq import Worker
from dramatiq.brokers.redis import RedisBroker

from tests.support.groups import TIMING
from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer
from tidings.store.connection import client_for
from tidings.store.keys import NAMESPACE
from tidings.store.settings import RedisConfig, Settings
from tidings.workers.broker import consuming, make_broker
from tidings.workers.doorbell import DoorbellBroker, bell_key
from tidings.workers.routing import host_queue

pytestmark = [pytest.mark.redis_server, TIMING]

HOST = "bell"
QUEUE = host_queue(HOST)
#: An idle wait far longer than any wake the tests accept.
LONG_WAIT_MS = 5000
#: What "at once" means here, on a shared 2-core machine: well inside the idle wait.
PROMPT_SECONDS = 1.0


@dataclass
class Probe:
    """A dramatiq actor on :data:`QUEUE` that notes when each message ran."""

    broker: DoorbellBroker
    ran: dict[str, float] = field(default_factory=dict)
    done: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        def probe(name: str) -> None:
            with self.done:
                self.ran[name] = time.monotonic()
                self.done.notify_all()

        self.actor = dramatiq.Actor(
            probe, broker=self.broker, actor_name="probe", queue_name=QUEUE, priority=0, options={}
        )

    def message(self, name: str) -> dramatiq.Message:  # type: ignore[type-arg]
        return self.actor.message(name)  # type: ignore[no-any-return]

    def ran_within(self, name: str, seconds: float, started: float) -> float | None:
        """Seconds from ``started`` until ``name`` ran, or ``None`` if not within ``seconds``."""
        with self.done:
            self.done.wait_for(lambda: name in self.ran, timeout=seconds)
        return self.ran[name] - started if name in self.ran else None


def blocked_on_bell(admin: redis.Redis, n: int = 1) -> bool:
    """Whether ``n`` clients wait in ``BLPOP`` (the consumers of a queue and its delay queue)."""
    return sum(1 for c in admin.client_list() if c["cmd"] == "blpop" and "b" in c["flags"]) >= n


@dataclass
class Running:
    probe: Probe
    worker: Worker
    admin: redis.Redis


def start(url: str, admin: redis.Redis, settings: Settings) -> Running:
    broker = make_broker(client_for(RedisConfig.from_url(url)), settings)
    probe = Probe(broker)
    broker.declare_queue(QUEUE)
    worker = consuming(broker, QUEUE, 2)
    worker.start()
    # Both consumers (the queue's and its delay queue's) found nothing and wait.
    wait_until(lambda: blocked_on_bell(admin, 2), timeout=10, what="consumers waiting")
    return Running(probe, worker, admin)


@pytest.fixture
def running(redis_server: RedisServer) -> Iterator[Running]:
    admin = redis_server.client()
    admin.flushall()
    run = start(redis_server.url, admin, Settings(host=HOST, worker_poll_ms=LONG_WAIT_MS))
    yield run
    run.worker.stop()
    run.probe.broker.client.close()
    admin.close()


def test_an_enqueue_wakes_a_waiting_consumer_at_once(running: Running) -> None:
    """The idle wait is 5 s; the ring ends it within a round trip (C27's broker hop)."""
    for n in range(3):
        sent = time.monotonic()
        running.probe.broker.enqueue(running.probe.message(f"m{n}"))
        took = running.probe.ran_within(f"m{n}", LONG_WAIT_MS / 1000, sent)
        assert took is not None and took < PROMPT_SECONDS, took
        wait_until(lambda: blocked_on_bell(running.admin, 2), what="waiting again")


def test_an_enqueue_after_the_scripts_are_gone_still_rings(running: Running) -> None:
    """A restarted or failed-over store has lost dramatiq's script: the pipelined
    ``EVALSHA`` fails, the script is loaded and run, and the bell rung after it."""
    running.admin.script_flush()
    sent = time.monotonic()
    running.probe.broker.enqueue(running.probe.message("reloaded"))
    took = running.probe.ran_within("reloaded", LONG_WAIT_MS / 1000, sent)
    assert took is not None and took < PROMPT_SECONDS, took


def test_a_delayed_message_runs_at_its_eta_not_after_the_idle_wait(running: Running) -> None:
    """The delay queue's consumer waits no longer than the earliest eta it holds (dramatiq's
    retries are delayed messages)."""
    sent = time.monotonic()
    running.probe.broker.enqueue(running.probe.message("later"), delay=300)
    took = running.probe.ran_within("later", LONG_WAIT_MS / 1000, sent)
    assert took is not None and 0.25 < took < 0.3 + PROMPT_SECONDS, took


def test_a_message_without_a_ring_is_fetched_within_the_idle_wait(
    redis_server: RedisServer,
) -> None:
    """An enqueue by a client without the doorbell (plain dramatiq) rings nothing: the
    waiting consumer finds it when its idle wait ends."""
    admin = redis_server.client()
    admin.flushall()
    run = start(redis_server.url, admin, Settings(host=HOST, worker_poll_ms=1000))
    plain = RedisBroker(client=redis_server.client(), namespace=NAMESPACE)
    try:
        sent = time.monotonic()
        plain.enqueue(run.probe.message("unrung"))
        assert not admin.exists(bell_key(NAMESPACE, QUEUE))
        took = run.probe.ran_within("unrung", 5, sent)
        assert took is not None and took < 1.0 + PROMPT_SECONDS, took
    finally:
        run.worker.stop()
        plain.close()
        run.probe.broker.client.close()
        admin.close()


def test_a_dead_workers_message_is_moved_back_and_fetched_without_a_ring(
    redis_server: RedisServer,
) -> None:
    """dramatiq's maintenance moves a dead worker's unacknowledged message back to the
    queue, ringing nothing; a waiting worker's fetch runs maintenance at least four times
    per heartbeat (here every fetch: the heartbeat is below dramatiq's default) and finds
    it within a quarter heartbeat."""
    admin = redis_server.client()
    admin.flushall()
    run = start(
        redis_server.url,
        admin,
        Settings(host=HOST, worker_poll_ms=60_000, broker_heartbeat_ms=2000),
    )
    assert run.probe.broker.idle_wait_ms == 500
    try:
        data = run.probe.message("orphan").copy(options={"redis_message_id": "orphan-id"})
        admin.zadd(f"{NAMESPACE}:__heartbeats__", {"dead-worker": 0})
        admin.sadd(f"{NAMESPACE}:__acks__.dead-worker.{QUEUE}", "orphan-id")
        sent = time.monotonic()
        admin.hset(f"{NAMESPACE}:{QUEUE}.msgs", "orphan-id", data.encode())
        took = run.probe.ran_within("orphan", 5, sent)
        assert took is not None and took < 0.5 + PROMPT_SECONDS, took
    finally:
        run.worker.stop()
        run.probe.broker.client.close()
        admin.close()


def test_a_waiting_worker_stops_at_once(redis_server: RedisServer) -> None:
    """``stop()`` ends the consumers' 5 s waits (their sockets are shut down) instead of
    waiting them out."""
    admin = redis_server.client()
    admin.flushall()
    run = start(redis_server.url, admin, Settings(host=HOST, worker_poll_ms=LONG_WAIT_MS))
    try:
        started = time.monotonic()
        run.worker.stop()
        assert time.monotonic() - started < PROMPT_SECONDS
        assert not any(t.is_alive() for t in run.worker.consumers.values())
    finally:
        run.probe.broker.client.close()
        admin.close()


def test_a_worker_without_the_doorbell_polls(redis_server: RedisServer) -> None:
    """``TIDINGS_WORKER_DOORBELL=false``: no ring is written, no consumer blocks, and the
    poll still finds the message."""
    admin = redis_server.client()
    admin.flushall()
    settings = Settings(host=HOST, worker_poll_ms=20, worker_doorbell=False)
    broker = make_broker(client_for(RedisConfig.from_url(redis_server.url)), settings)
    probe = Probe(broker)
    broker.declare_queue(QUEUE)
    worker = consuming(broker, QUEUE, 2)
    worker.start()
    try:
        broker.enqueue(probe.message("polled"))
        assert probe.ran_within("polled", 5, time.monotonic()) is not None
        assert not admin.exists(bell_key(NAMESPACE, QUEUE))
        assert not blocked_on_bell(admin)
    finally:
        worker.stop()
        broker.client.close()
        admin.close()


def test_the_acl_users_of_deploy_redis_conf_ring_and_wait(tmp_path: Path) -> None:
    """Issue 24's users: the producer (``tidings-producer``) enqueues and rings, the worker
    (``tidings``) waits on the bell with ``BLPOP``; both within their key patterns."""
    server = RedisServer(tmp_path / "redis", acl=True).start()
    admin = server.client()
    try:
        run = start(server.url, admin, Settings(host=HOST, worker_poll_ms=LONG_WAIT_MS))
        producer_client = client_for(RedisConfig.from_url(server.url_as("tidings-producer")))
        producer = make_broker(producer_client, Settings(host=HOST))
        try:
            sent = time.monotonic()
            producer.enqueue(run.probe.message("from-producer"))
            took = run.probe.ran_within("from-producer", LONG_WAIT_MS / 1000, sent)
            assert took is not None and took < PROMPT_SECONDS, took
            names = {c["user"] for c in admin.client_list() if c["cmd"] == "blpop"}
            assert names == {"tidings"}
        finally:
            run.worker.stop()
            producer_client.close()
            run.probe.broker.client.close()
    finally:
        admin.close()
        server.stop()
