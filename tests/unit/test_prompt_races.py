"""Prompt visits racing the tick, each other and the agent's own acts (channels.md
C23-C27, C53; delay.md D14; issue 33 acceptance 2): never a wake signal for the agent's
own act, never two for one change, and every change still wakes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.polling import wait_until
from tests.unit.test_own_acts import settle, wakes, write_direct
from tidings.jobs import tick
from tidings.jobs.channels import flush_channel, publishing
from tidings.jobs.consumer import dismiss
from tidings.jobs.consumer.delay import request_delay
from tidings.jobs.runtime import Runtime
from tidings.jobs.tick import PromptVisits, prompt_visit
from tidings.store.models import AgentRecord

DEBOUNCE = 0.01
#: Rounds of "a change, then a prompt visit and a tick at the same instant".
ROUNDS = 5
BURST = 1000
CYCLES = 10


@contextmanager
def prompt_visits(rt: Runtime) -> Iterator[PromptVisits]:
    visits = PromptVisits(lambda agent_ids: prompt_visit(rt, agent_ids), DEBOUNCE, threads=2)
    try:
        yield visits
    finally:
        visits.close()


@contextmanager
def poking(visits: PromptVisits, agent: AgentRecord) -> Iterator[None]:
    """What a watcher does while the agent acts: its own writes poke it, again and again."""
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            visits.poke([agent.agent_id])
            stop.wait(0.002)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
        wait_until(lambda: visits.pending() == 0, timeout=10, what="the last visit")


def at_once(*calls: Callable[[], object]) -> list[object]:
    """Run ``calls`` in threads released at the same instant; their answers."""
    start = threading.Barrier(len(calls))
    answers: list[object] = []

    def run(call: Callable[[], object]) -> None:
        start.wait()
        answers.append(call())

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return answers


def test_c27_a_prompt_visit_and_a_tick_at_once_wake_once(rt: Runtime, agent: AgentRecord) -> None:
    settle(rt, agent)
    for n in range(1, ROUNDS + 1):
        write_direct(agent, "email.json", {"header": f"mail {n}"})
        answers = at_once(
            lambda: prompt_visit(rt, [agent.agent_id]), lambda: tick.sync_host(rt, agent.host)
        )
        assert len(answers) == 2
        tick.sync_host(rt, agent.host)  # the backstop: a visit that lost its race retries
        signalled = wakes(rt, agent)
        assert len(signalled) == n, f"round {n}: {len(signalled)} signals"
        attention = signalled[-1]["result"]["_meta"]["agent_meta"]["notifications"]
        assert attention["attention"]["email"]["header"] == f"mail {n}"


def test_c27_a_burst_of_1000_events_to_one_agent(
    rt: Runtime, agent: AgentRecord, jobs_dispatch: Any
) -> None:
    """Flushes commit while the events arrive and poke the agent each time; its visits
    are coalesced (at most one per debounce window), no two signals are for one change,
    and the last signal shows the last event."""
    settle(rt, agent)
    jobs_dispatch.run_flushes = False  # a worker's flushes run beside the publisher
    done = threading.Event()
    with prompt_visits(rt) as visits:

        def flusher() -> None:
            while not done.is_set():
                if flush_channel(rt, agent, "mcp.burst")["applied"]:
                    visits.poke([agent.agent_id])
            if flush_channel(rt, agent, "mcp.burst")["applied"]:
                visits.poke([agent.agent_id])

        thread = threading.Thread(target=flusher, daemon=True)
        thread.start()
        started = time.monotonic()
        for n in range(BURST):
            result = publishing.append_event(
                rt, agent, "mcp.burst", {"body": f"event {n}", "event_id": f"e{n}"}
            )
            assert result["status"] == "ok", result
        done.set()
        thread.join(30)
        elapsed = time.monotonic() - started
        wait_until(lambda: visits.pending() == 0, timeout=10, what="the last visit")
        assert visits.visits <= elapsed / DEBOUNCE + 2
    signalled = wakes(rt, agent)
    assert 1 <= len(signalled) <= visits.visits
    shown = [
        json.dumps(w["result"]["_meta"]["agent_meta"]["notifications"], sort_keys=True)
        for w in signalled
    ]
    assert len(set(shown)) == len(shown), "two signals for one change"
    last = signalled[-1]["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
    assert f"event {BURST - 1}" in json.dumps(last)


def test_c53_own_delay_and_dismissal_during_prompt_visits_never_wake(
    rt: Runtime, agent: AgentRecord
) -> None:
    """The agent's delay, cancel and dismissals poke its prompt visits (their files
    change); none wakes it, and a producer's change afterwards wakes it once."""
    write_direct(agent, "email.json", {"header": "mail"})
    for n in range(5):
        publishing.append_event(rt, agent, "system", {"body": f"b{n}", "event_id": f"s{n}"})
    settle(rt, agent)
    with prompt_visits(rt) as visits:
        with poking(visits, agent):
            for n in range(CYCLES):
                assert request_delay(rt, agent, "email", 300)["action"] == "delayed"
                assert request_delay(rt, agent, "email", 0)["cancelled"] is True
                if n < 5:
                    assert dismiss.dismiss_event(rt, agent, f"s{n}")["removed"] == 1
        assert visits.visits >= 2
        assert wakes(rt, agent) == []
        write_direct(agent, "soul.json", {"header": "news"})
        visits.poke([agent.agent_id])
        wait_until(lambda: wakes(rt, agent), timeout=10, what="the producer's wake")
        wait_until(lambda: visits.pending() == 0, timeout=10)
    signalled = wakes(rt, agent)
    assert len(signalled) == 1
    attention = signalled[0]["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
    assert attention["soul"]["header"] == "news"
