"""A full scan steps aside for changed ticks of its host (channels.md C27): while the
host's changed-tick marker is set it waits, at most STEP_ASIDE_SECONDS per look and a
third of TIDINGS_FULL_SCAN_SECONDS per scan, so a changed agent's wake does not share
the worker's CPU with the backstop; changed ticks never wait."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import make_agent
from tidings.jobs.runtime import Runtime
from tidings.jobs.wake import tick as sync
from tidings.store import keys
from tidings.store.clock import FakeClock
from tidings.store.models import AgentRecord

AGENTS = 25


@pytest.fixture
def agents(rt: Runtime, tmp_path: Path) -> list[AgentRecord]:
    return [make_agent(rt, tmp_path / f"w{n}", agent_id=f"a{n:02d}") for n in range(AGENTS)]


def waited(rt: Runtime, clock: FakeClock, *args: object) -> tuple[float, dict[str, object]]:
    before = clock.monotonic()
    result = sync.sync_host(rt, *args)  # type: ignore[arg-type]
    return clock.monotonic() - before, result


def test_c27_a_full_scan_waits_while_a_changed_tick_is_queued_or_running(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    host = agents[0].host
    rt.redis.set(keys.sync_running(host, changed=True), "1")
    seconds, result = waited(rt, clock, host)
    looks = -(-AGENTS // sync.STEP_ASIDE_EVERY)
    assert seconds == pytest.approx(looks * sync.STEP_ASIDE_SECONDS, abs=0.05)
    assert result["agents"] == AGENTS, "it still visits every agent"


def test_c27_a_full_scan_does_not_wait_when_no_changed_tick_is_pending(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    seconds, result = waited(rt, clock, agents[0].host)
    assert seconds == 0 and result["agents"] == AGENTS


def test_c27_the_wait_ends_when_the_changed_tick_does(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    host = agents[0].host
    marker = keys.sync_running(host, changed=True)
    rt.redis.set(marker, "1")
    real_sleep = clock.sleep
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        real_sleep(seconds)
        slept.append(seconds)
        if len(slept) == 3:
            rt.redis.delete(marker)  # the changed tick finished

    clock.sleep = sleep  # type: ignore[method-assign]
    seconds, _ = waited(rt, clock, host)
    assert seconds == pytest.approx(3 * sync.STEP_ASIDE_POLL_SECONDS)


def test_c27_a_scan_waits_at_most_a_third_of_the_full_scan_interval(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    short = replace(rt, settings=rt.settings.model_copy(update={"full_scan_seconds": 2.4}))
    host = agents[0].host
    rt.redis.set(keys.sync_running(host, changed=True), "1")  # a lost message's marker
    seconds, result = waited(short, clock, host)
    assert seconds == pytest.approx(2.4 * sync.STEP_ASIDE_SHARE, abs=0.05)
    assert result["agents"] == AGENTS


def test_c27_a_changed_tick_never_waits(
    rt: Runtime, clock: FakeClock, agents: list[AgentRecord]
) -> None:
    host = agents[0].host
    rt.redis.set(keys.sync_running(host, changed=True), "1")
    seconds, result = waited(rt, clock, host, [a.agent_id for a in agents])
    assert seconds == 0 and result["agents"] == AGENTS
