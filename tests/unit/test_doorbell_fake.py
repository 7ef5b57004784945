"""The doorbell on fakeredis (workers/doorbell.py; issue 33): the unit and contract tiers
run workers on an in-process store, whose connections have no socket to shut down. A
ring still wakes a waiting consumer, and a stop still ends the wait at once (by a ring)."""

from __future__ import annotations

import threading
import time

import dramatiq
import fakeredis

from tests.support.polling import wait_until
from tidings.store.settings import Settings
from tidings.workers.broker import consuming, make_broker
from tidings.workers.routing import host_queue

QUEUE = host_queue("fake-bell")
#: An idle wait far longer than any wake or stop the test accepts.
LONG_WAIT_MS = 5000
PROMPT_SECONDS = 1.0


def test_a_ring_wakes_and_a_stop_ends_a_wait_on_fakeredis() -> None:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), version=(7,))
    broker = make_broker(client, Settings(host="fake-bell", worker_poll_ms=LONG_WAIT_MS))
    ran = threading.Event()
    dramatiq.Actor(
        lambda: ran.set(),
        broker=broker,
        actor_name="probe",
        queue_name=QUEUE,
        priority=0,
        options={},
    )
    broker.declare_queue(QUEUE)
    worker = consuming(broker, QUEUE, 1)
    worker.start()
    try:
        # The queue's and the delay queue's consumers both wait.
        wait_until(lambda: len(broker._waiting) == 2, what="consumers waiting")
        broker.enqueue(
            dramatiq.Message(queue_name=QUEUE, actor_name="probe", args=(), kwargs={}, options={})
        )
        assert ran.wait(PROMPT_SECONDS)
        wait_until(lambda: len(broker._waiting) == 2, what="consumers waiting again")
    finally:
        started = time.monotonic()
        worker.stop()
    assert time.monotonic() - started < PROMPT_SECONDS
