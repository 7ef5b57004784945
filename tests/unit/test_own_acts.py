"""The agent's own acts never wake it, under any interleaving (channels.md C23, C53;
issue 11 item 12 and acceptance 4).

A background tick runs every 50 ms while the agent delays and cancels, or
dismisses; no wake may result, and a producer's change to another channel must
still wake. ``TIDINGS_OWN_ACT_REPEAT`` repeats the cycle test (acceptance 4 asks
for 20 runs once before the issue closes).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.support.polling import wait_until
from tidings.jobs import tick
from tidings.jobs.channels import publishing
from tidings.jobs.consumer import (
    check_placeholder,
    dismiss_event,
    own_acts,
    request_delay,
    stamp,
    visit,
    wake_stream,
)
from tidings.jobs.runtime import Runtime
from tidings.store.keys import AgentKeys
from tidings.store.models import AgentRecord

#: Acceptance 4: the tick's period (s) and the number of delay -> delay 0 cycles.
TICK_SECONDS = 0.05
CYCLES = 40
SYSTEM_KEPT = 20
REPEAT = int(os.environ.get("TIDINGS_OWN_ACT_REPEAT", "1"))


def write_direct(agent: AgentRecord, name: str, content: Any) -> None:
    """An outside producer: temp file + rename, no tidings call."""
    d = agent.root / ".notification"
    d.mkdir(exist_ok=True)
    temp = d / f".{name}.outside.tmp"
    temp.write_text(json.dumps(content))
    os.replace(temp, d / name)


def wakes(rt: Runtime, agent: AgentRecord) -> list[Any]:
    entries = rt.redis.xrange(AgentKeys(agent.agent_id).wake_stream)
    return [json.loads(fields[b"entry"]) for _, fields in entries]


@contextmanager
def ticking(rt: Runtime, agent: AgentRecord) -> Iterator[list[dict[str, Any]]]:
    """The host's full sync tick (the batched path, C27) every 50 ms in a thread; yields
    the tick results."""
    stop = threading.Event()
    results: list[dict[str, Any]] = []

    def run() -> None:
        while not stop.is_set():
            results.append(tick.sync_host(rt, agent.host))
            stop.wait(TICK_SECONDS)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield results
    finally:
        stop.set()
        thread.join(timeout=10)


def settle(rt: Runtime, agent: AgentRecord) -> None:
    visit.sync_agent(rt, agent)
    while wake_stream.try_consume(rt, agent) is not None:
        pass
    rt.redis.delete(AgentKeys(agent.agent_id).wake_stream)


@pytest.mark.parametrize("run", range(REPEAT))
def test_delay_cycles_against_a_50ms_tick_never_wake(
    rt: Runtime, agent: AgentRecord, run: int
) -> None:
    """Acceptance 4: 40 x (delay, delay 0) with a tick every 50 ms: zero wakes; then a
    producer's change to another channel wakes."""
    write_direct(agent, "email.json", {"header": "mail", "data": {"n": 1}})
    write_direct(agent, "soul.json", {"header": "soul"})
    settle(rt, agent)
    with ticking(rt, agent) as ticks:
        for _ in range(CYCLES):
            assert request_delay(rt, agent, "email", 300)["action"] == "delayed"
            assert request_delay(rt, agent, "email", 0)["cancelled"] is True
        wait_until(lambda: len(ticks) >= 2, timeout=5)
        assert wakes(rt, agent) == []
        write_direct(agent, "soul.json", {"header": "soul moved"})
        wait_until(lambda: wakes(rt, agent), timeout=10)
    signalled = wakes(rt, agent)
    assert len(signalled) == 1
    attention = signalled[0]["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
    assert attention["soul"]["header"] == "soul moved"
    assert all(t["status"] == "ok" and not t["failed"] for t in ticks)


def test_producer_change_during_the_cycles_still_wakes(rt: Runtime, agent: AgentRecord) -> None:
    """C53: the acts commit only their own channel's wake entry, never a producer's news."""
    write_direct(agent, "email.json", {"header": "mail"})
    settle(rt, agent)
    with ticking(rt, agent):
        for n in range(10):
            request_delay(rt, agent, "email", 300)
            if n == 5:
                write_direct(agent, "soul.json", {"header": "news"})
            request_delay(rt, agent, "email", 0)
        wait_until(lambda: wakes(rt, agent), timeout=10)
    headers = [
        w["result"]["_meta"]["agent_meta"]["notifications"]["attention"]
        .get("soul", {})
        .get("header")
        for w in wakes(rt, agent)
    ]
    assert headers == ["news"]


def test_dismissals_against_a_50ms_tick_never_wake(rt: Runtime, agent: AgentRecord) -> None:
    """C53: the agent's own dismissals never wake it (``system`` keeps 20 events)."""
    for n in range(SYSTEM_KEPT):
        publishing.append_event(rt, agent, "system", {"body": f"b{n}", "event_id": f"e{n}"})
    stamp(rt, agent, check_placeholder())
    settle(rt, agent)
    with ticking(rt, agent):
        for n in range(SYSTEM_KEPT):
            assert dismiss_event(rt, agent, f"e{n}")["removed"] == 1
        assert wakes(rt, agent) == []


class TestTickStopsOnAnOwnAct:
    """C53 at the script: a tick that read around an act never commits a wake."""

    def test_act_in_flight_or_ended_since_the_tick_began(
        self, rt: Runtime, agent: AgentRecord, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        write_direct(agent, "email.json", {"header": "mail"})
        settle(rt, agent)
        real = visit.bare_read

        def act_between(rt_: Runtime, a: AgentRecord, *args: Any) -> Any:
            obs = real(rt_, a, *args)  # the tick has read; now the agent acts
            with own_acts.own_act(rt_, a):
                pass
            return obs

        write_direct(agent, "email.json", {"header": "changed"})
        monkeypatch.setattr(visit, "bare_read", act_between)
        assert visit.sync_agent(rt, agent)["woke"] is False
        monkeypatch.undo()
        assert visit.sync_agent(rt, agent)["woke"] is True  # a real change wakes next tick

    def test_a_dead_act_stops_holding_wakes_back(
        self, rt: Runtime, agent: AgentRecord, clock: Any
    ) -> None:
        settle(rt, agent)
        k = AgentKeys(agent.agent_id)
        now = clock.now()
        rt.scripts(
            "own_act_begin",
            [k.act_generation, k.acts_in_flight],
            ["dead", now + own_acts.ACT_EXPIRY_SECONDS, now],
        )  # never ends
        write_direct(agent, "email.json", {"header": "mail"})
        assert visit.sync_agent(rt, agent)["woke"] is False
        clock.advance(own_acts.ACT_EXPIRY_SECONDS + 1)
        assert visit.sync_agent(rt, agent)["woke"] is True


def test_own_act_keys_are_hash_tagged(agent: AgentRecord) -> None:
    k = AgentKeys(agent.agent_id)
    assert k.act_generation.startswith("{a:a1}:") and k.acts_in_flight.startswith("{a:a1}:")
