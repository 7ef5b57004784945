"""A full scan steps aside for changed ticks of its host (channels.md C27): while a
changed tick runs (its marker says ``running``) the scan waits, at most
STEP_ASIDE_SECONDS per look and a third of TIDINGS_FULL_SCAN_SECONDS per scan, so a
changed agent's wake does not share the worker's CPU with the backstop; changed ticks
never wait."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import make_agent
from tidings.jobs import tick
from tidings.jobs.runtime import Runtime
from tidings.jobs.tick import host as host_tick
from tidings.store import keys
from tidings.store.clock import FakeClock
from tidings.store.models import AgentRecord

AGENTS = 25


@pytest.fixture
def agents(rt: Runtime, tmp_path: Path) -> list[AgentRecord]:
    return [make_agent(rt, tmp_path / f"w{n}", agent_id=f"a{n:02d}") for n in range(AGENTS)]


def waited(rt: Runtime, clock: FakeClock, *args: object) -> tuple[float, dict[str, object]]:
    before = clock.monotonic()
    result = tick.sync_host(rt, *args)  # type: ignore[arg-type]
    return clock.monotonic() - before, result


def test_c27_a_full_scan_waits_while_a_changed_tick_runs(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    host = agents[0].host
    rt.redis.set(keys.sync_running(host, changed=True), host_tick.RUNNING)
    seconds, result = waited(rt, clock, host)
    looks = -(-AGENTS // host_tick.STEP_ASIDE_EVERY)
    assert seconds == pytest.approx(looks * host_tick.STEP_ASIDE_SECONDS, abs=0.05)
    assert result["agents"] == AGENTS, "it still visits every agent"


def test_c27_a_full_scan_does_not_wait_when_no_changed_tick_is_pending(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    seconds, result = waited(rt, clock, agents[0].host)
    assert seconds == 0 and result["agents"] == AGENTS


def test_c27_a_queued_changed_tick_does_not_hold_the_scan(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    """The scheduler's marker of a tick not yet started: it may be queued behind this
    very scan on a one-thread worker, so waiting for it would only delay it."""
    host = agents[0].host
    rt.redis.set(keys.sync_running(host, changed=True), "1")
    seconds, _ = waited(rt, clock, host)
    assert seconds == 0


def test_c27_a_changed_tick_marks_its_marker_running_and_clears_it(
    rt: Runtime, agents: list[AgentRecord]
) -> None:
    host = agents[0].host
    marker = keys.sync_running(host, changed=True)
    rt.redis.set(marker, "1", ex=30)
    seen: list[object] = []
    real = host_tick.sync_agent

    def visit(rt_: Runtime, agent: AgentRecord, known: object = None) -> dict[str, object]:
        seen.append((rt.redis.get(marker), rt.redis.ttl(marker) > 0))
        return real(rt_, agent, known)  # type: ignore[arg-type]

    host_tick.sync_agent = visit  # type: ignore[assignment]
    try:
        tick.sync_host(rt, host, [agents[0].agent_id])
    finally:
        host_tick.sync_agent = real
    assert seen == [(host_tick.RUNNING, True)], "running, with the scheduler's expiry kept"
    assert not rt.redis.exists(marker)
    tick.sync_host(rt, host, [agents[0].agent_id])
    assert not rt.redis.exists(marker), "no marker (a direct call) stays none"


def test_c27_the_wait_ends_when_the_changed_tick_does(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    host = agents[0].host
    marker = keys.sync_running(host, changed=True)
    rt.redis.set(marker, host_tick.RUNNING)
    real_sleep = clock.sleep
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        real_sleep(seconds)
        slept.append(seconds)
        if len(slept) == 3:
            rt.redis.delete(marker)  # the changed tick finished

    clock.sleep = sleep  # type: ignore[method-assign]
    seconds, _ = waited(rt, clock, host)
    assert seconds == pytest.approx(3 * host_tick.STEP_ASIDE_POLL_SECONDS)


def test_c27_a_scan_waits_at_most_a_third_of_the_full_scan_interval(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    short = replace(rt, settings=rt.settings.model_copy(update={"full_scan_seconds": 2.4}))
    host = agents[0].host
    # its worker died mid-tick
    rt.redis.set(keys.sync_running(host, changed=True), host_tick.RUNNING)
    seconds, result = waited(short, clock, host)
    assert seconds == pytest.approx(2.4 * host_tick.STEP_ASIDE_SHARE, abs=0.05)
    assert result["agents"] == AGENTS


def test_c27_a_changed_tick_never_waits(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    host = agents[0].host
    rt.redis.set(keys.sync_running(host, changed=True), host_tick.RUNNING)
    seconds, result = waited(rt, clock, host, [a.agent_id for a in agents])
    assert seconds == 0 and result["agents"] == AGENTS
